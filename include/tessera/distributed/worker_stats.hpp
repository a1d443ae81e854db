#pragma once
/** @file
 * WorkerStats: one worker's counters (Worker::stats(), its dashboard's /metrics). */
#include <cstddef>

namespace tessera::distributed {

/** @brief Counters of one worker, for tests and benchmarks. */
struct WorkerStats {
  std::size_t executed = 0;
  std::size_t failed = 0;
  std::size_t fetched_keys = 0;
  std::size_t fetched_bytes = 0;
  std::size_t fetches = 0;          ///< get-data requests to peers answered (transfers in)
  std::size_t served_keys = 0;
  std::size_t served_requests = 0;  ///< get-data requests answered (transfers out)
  std::size_t served_bytes = 0;
  std::size_t memory_bytes = 0;
  std::size_t spilled_bytes = 0;
  std::size_t spilled = 0;  ///< values written to disk so far
  bool paused = false;
  int device = -1;                     ///< this worker's GPU (CUDA ordinal), -1 without one
  std::size_t device_bytes = 0;        ///< bytes of results held in device memory
  std::size_t device_spilled = 0;      ///< results moved from device to host memory so far
  std::size_t device_spilled_bytes = 0;
};

}  // namespace tessera::distributed
