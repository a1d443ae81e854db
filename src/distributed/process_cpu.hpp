#pragma once
/**
 * @file This process's CPU use and resident memory from /proc/self (Linux), for the dashboards'
 * CPU column, as Dask's SystemMonitor reports them (psutil reads the same files). Private to
 * libtessera.
 */
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace tessera::distributed {

/** @brief user + system CPU seconds so far, parsed from a /proc/<pid>/stat line; nullopt when it is not one. */
std::optional<double> cpu_seconds_from_stat(const std::string& stat_line);

/** @brief The process's resident set in bytes (/proc/self/statm), 0 when unreadable. */
std::size_t resident_bytes();

/**
 * @brief CPU use between two calls of sample(), in percent of one core (a process busy on four
 * cores shows 400, as in Dask). Not thread-safe: one owner samples it.
 */
class ProcessCpu {
 public:
  ProcessCpu();
  /** @brief Percent since the previous call (or construction); the last figure when called again within 50 ms; -1 without /proc. */
  double sample();

 private:
  std::chrono::steady_clock::time_point last_time_;
  double last_cpu_ = -1;
  double last_percent_ = 0;
};

}  // namespace tessera::distributed
