// The command lines' value parsers: durations (src/distributed/cli_values.cpp), memory limits,
// device memory limits and resources (data_store_limits.cpp). Anything but tessera::Error on a
// bad value is a bug: the binaries report that error and exit 1. The first byte picks.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "distributed/cli_values.hpp"
#include "distributed/data_store_limits.hpp"
#include "tessera/core/error.hpp"

using namespace tessera::distributed;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t pick = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::size_t total = std::size_t{16} << 30;
  try {
    switch (pick % 5) {
      case 0: {
        const double s = parse_duration(text, "--death-timeout");
        if (!(s >= 0) || !std::isfinite(s)) __builtin_trap();
        break;
      }
      case 1: {
        const double s = parse_positive_duration(text, "--worker-ttl");
        if (!(s > 0) || !std::isfinite(s)) __builtin_trap();
        break;
      }
      case 2: {
        const int nworkers = 1 + pick / 5 % 8;
        if (parse_memory_limit(text, total, nworkers) > total) __builtin_trap();  // capped to the machine
        break;
      }
      case 3:
        if (parse_device_memory_limit(text, total) > total) __builtin_trap();
        break;
      default:
        for (const auto& [name, amount] : parse_resources(text))
          if (name.empty() || !(amount >= 0) || !std::isfinite(amount)) __builtin_trap();
        break;
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
