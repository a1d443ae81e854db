#include "process_cpu.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace tessera::distributed {
namespace {

std::optional<double> read_cpu_seconds() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return cpu_seconds_from_stat(line);
}

}  // namespace

std::optional<double> cpu_seconds_from_stat(const std::string& stat_line) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields are counted
  // from the last ')'. utime and stime are fields 14 and 15 (proc(5)), the 12th and 13th after it.
  auto close = stat_line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat_line.substr(close + 1));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 1; i <= 13; ++i) {
    if (!(fields >> f)) return std::nullopt;
    try {
      if (i == 12) utime = std::stoull(f);
      if (i == 13) stime = std::stoull(f);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  return static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
}

std::size_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

ProcessCpu::ProcessCpu() : last_time_(std::chrono::steady_clock::now()), last_cpu_(read_cpu_seconds().value_or(-1)) {}

double ProcessCpu::sample() {
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - last_time_).count();
  // The kernel counts in clock ticks (10 ms): a shorter interval gives noise, not a figure.
  if (wall < 0.05) return last_percent_;
  auto cpu = read_cpu_seconds();
  if (!cpu || last_cpu_ < 0) {
    last_cpu_ = cpu.value_or(-1);
    last_time_ = now;
    return last_percent_ = cpu ? 0 : -1;
  }
  last_percent_ = 100.0 * (*cpu - last_cpu_) / wall;
  last_cpu_ = *cpu;
  last_time_ = now;
  return last_percent_;
}

}  // namespace tessera::distributed
