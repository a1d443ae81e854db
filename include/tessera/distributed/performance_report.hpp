#pragma once
/**
 * @file
 * A computation's task stream and summary as one self-contained HTML page (Dask's
 * performance_report): inline SVG and styles, nothing fetched from elsewhere, so it opens
 * offline and can be attached to an issue.
 *
 *     {
 *       tessera::distributed::PerformanceReport report(client, "report.html");
 *       x.sum().compute(client);
 *     }  // report.html now shows what ran where and when
 */
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/distributed/task_stream.hpp"

namespace tessera::distributed {

class Client;

/**
 * @brief The page for `entries` (oldest first, as get_task_stream returns them): a summary (tasks,
 * wall time, compute time, workers, threads), a table per operation and per worker, and the task
 * stream as SVG, one row per worker thread, bars coloured by operation with the key in a tooltip.
 */
std::string performance_report_html(const std::vector<TaskStreamEntry>& entries, const std::string& title,
                                    double wall_seconds);

/**
 * @brief Records from construction to save() (or destruction) and writes the page there.
 * save() throws tessera::Error when the file cannot be written; the destructor saves only if
 * save() was not called, and logs instead of throwing.
 */
class PerformanceReport {
 public:
  PerformanceReport(Client& client, std::string path, std::string title = "Tessera performance report");
  ~PerformanceReport();
  PerformanceReport(const PerformanceReport&) = delete;
  PerformanceReport& operator=(const PerformanceReport&) = delete;
  /** @brief Fetches what ran since construction and writes the page. */
  void save();

 private:
  Client& client_;
  std::string path_, title_;
  std::uint64_t since_ = 0;
  std::chrono::steady_clock::time_point started_;
  bool saved_ = false;
};

}  // namespace tessera::distributed
