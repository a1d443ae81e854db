// The worker's limits from their command-line forms: --memory-limit, --device-memory-limit
// (Dask's and dask-cuda's), the machine's memory and --resources.
#include "data_store_limits.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>

#include "../core/logging.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {

namespace fs = std::filesystem;

namespace {

std::size_t fraction_of(double f, std::size_t total) {
  return static_cast<std::size_t>(std::floor(f * static_cast<double>(total)));
}

/** The whole of s as a finite double (no leading '+', no hex, no inf/nan); nullopt otherwise. */
std::optional<double> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> unit_multiplier(const std::string& unit) {
  static const std::map<std::string, double> units = {
      {"", 1.0},          {"b", 1.0},
      {"k", 1e3},         {"kb", 1e3},         {"m", 1e6},          {"mb", 1e6},
      {"g", 1e9},         {"gb", 1e9},         {"t", 1e12},         {"tb", 1e12},
      {"p", 1e15},        {"pb", 1e15},
      {"ki", 0x1p10},     {"kib", 0x1p10},     {"mi", 0x1p20},      {"mib", 0x1p20},
      {"gi", 0x1p30},     {"gib", 0x1p30},     {"ti", 0x1p40},      {"tib", 0x1p40},
      {"pi", 0x1p50},     {"pib", 0x1p50},
  };
  auto it = units.find(unit);
  if (it == units.end()) return std::nullopt;
  return it->second;
}

}  // namespace

namespace {

// parse_memory_limit and parse_device_memory_limit: `device` changes "auto" (0.8 of the device
// instead of total / nworkers) and the wording of messages.
std::size_t parse_limit(const std::string& text, std::size_t total_memory, int nworkers, bool device) {
  auto fail = [&](const std::string& why) {
    return Error(std::string(device ? "invalid device memory limit \"" : "invalid memory limit \"") + text +
                 "\": " + why + " (expected 0, auto, a fraction such as 0.5, or bytes such as 4GB, 512MiB, 10e9)");
  };
  if (nworkers < 1) throw fail("nworkers must be at least 1, got " + std::to_string(nworkers));
  std::string s;  // spaces removed, lower case, as Dask's parse_bytes
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty()) throw fail("empty");
  std::size_t limit = 0;
  if (s == "none") return 0;
  if (device && (s == "auto" || s == "default")) {
    limit = fraction_of(kDefaultDeviceMemoryFraction, total_memory);
  } else if (!device && s == "auto") {
    limit = total_memory / static_cast<std::size_t>(nworkers);
  } else {
    // Trailing letters are the unit, the rest the number, as Dask's parse_bytes.
    std::size_t u = s.size();
    while (u > 0 && std::isalpha(static_cast<unsigned char>(s[u - 1]))) --u;
    const std::string unit = s.substr(u);
    const std::string number = s.substr(0, u);
    if (number.empty()) throw fail("no number");
    auto value = parse_number(number);
    if (!value) throw fail("'" + number + "' is not a number");
    if (*value < 0) throw fail("negative");
    auto mult = unit_multiplier(unit);
    if (!mult) throw fail("unknown unit '" + unit + "'");
    if (unit.empty() && *value <= 1.0) {
      limit = fraction_of(*value, total_memory);  // a fraction of the machine's memory
    } else if ((unit.empty() || unit == "b") && *value != std::floor(*value)) {
      // Dask's parse_bytes reads "1.5" as 1 byte; no one means that.
      throw fail("a number of bytes must be whole, and a fraction of memory at most 1 (did you mean " + number +
                 "GB?)");
    } else {
      const double bytes = std::floor(*value * *mult);
      if (bytes >= 0x1p64) throw fail("too large");
      limit = static_cast<std::size_t>(bytes);
    }
  }
  if (limit > 0 && total_memory > 0 && limit > total_memory) {
    logging::warn("{} \"{}\" ({} bytes) exceeds the total {} memory ({} bytes); using the latter",
                 device ? "device memory limit" : "memory limit", text, limit, device ? "device" : "system",
                 total_memory);
    limit = total_memory;
  }
  return limit;
}

}  // namespace

std::size_t parse_memory_limit(const std::string& text, std::size_t total_memory, int nworkers) {
  return parse_limit(text, total_memory, nworkers, false);
}

std::size_t parse_device_memory_limit(const std::string& text, std::size_t total_device_memory) {
  return parse_limit(text, total_device_memory, 1, true);
}

void check_worker_memory_limit(std::size_t limit, const std::string& text, int nworkers) {
  if (limit == 0 || limit >= kMinWorkerMemoryLimit) return;
  constexpr std::size_t MiB = std::size_t{1} << 20;
  const std::string share =
      nworkers > 1 ? " is " + std::to_string(limit) + " bytes for each of " + std::to_string(nworkers) + " workers,"
                   : " is " + std::to_string(limit) + " bytes,";
  throw Error("memory limit \"" + text + "\"" + share + " below the " + std::to_string(kMinWorkerMemoryLimit / MiB) +
              " MiB a worker needs to run (an idle worker holds tens of MB; its nanny would kill it and give up): give "
              "at least " + std::to_string(kMinWorkerMemoryLimit / MiB) + "MiB per worker, or 0 for no limit");
}

namespace {

std::optional<std::uint64_t> read_limit_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || ptr != word.data() + word.size() || v == 0) return std::nullopt;
  return v;
}

}  // namespace

std::size_t system_memory() {
  std::uint64_t total = 0;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) total = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  auto clamp = [&](std::optional<std::uint64_t> v) {
    if (v && (total == 0 || *v < total)) total = *v;
  };
  // cgroup v1 (an unlimited group reports a huge number, which the comparison ignores).
  clamp(read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  // cgroup v2: this process's group ("0::/path" in /proc/self/cgroup), and the mount root.
  {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) != 0) continue;
      std::string group = line.substr(3);
      if (!group.empty() && group != "/") clamp(read_limit_file(fs::path("/sys/fs/cgroup") / group.substr(1) / "memory.max"));
    }
    clamp(read_limit_file("/sys/fs/cgroup/memory.max"));
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_RSS, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > 0)
    clamp(static_cast<std::uint64_t>(rl.rlim_max));
  return static_cast<std::size_t>(total);
}

std::map<std::string, double> parse_resources(const std::string& text) {
  std::map<std::string, double> out;
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream in(spaced);
  std::string entry;
  auto fail = [&](const std::string& why) {
    return Error("invalid resources \"" + text + "\": entry \"" + entry + "\" " + why +
                 " (expected NAME=NUMBER entries separated by spaces or commas, e.g. \"GPU=2 MEM=10e9\")");
  };
  while (in >> entry) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) throw fail("has no '='");
    const std::string name = entry.substr(0, eq);
    const std::string value = entry.substr(eq + 1);
    if (name.empty()) throw fail("has no name");
    auto v = parse_number(value);
    if (!v) throw fail("has a value that is not a number");
    if (*v < 0) throw fail("is negative");
    if (!out.emplace(name, *v).second) throw fail("repeats resource " + name);
  }
  return out;
}

}  // namespace tessera::distributed
