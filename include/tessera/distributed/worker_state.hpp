#pragma once
/** @file
 * WorkerState: a distributed worker as a pure state machine. */
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/distributed/events.hpp"

namespace tessera::distributed {

/** @brief Worker-side task states (a subset of Dask's worker_state_machine). */
enum class WorkerTaskStatus : std::uint8_t {
  Released,
  Waiting,    ///< to compute here; some dependency not local yet
  Fetch,      ///< a dependency to fetch from a peer
  Flight,     ///< being fetched
  Missing,    ///< a dependency no known peer could provide (the scheduler was told)
  Ready,      ///< all dependencies local; waiting for a thread (and resources)
  Executing,
  Memory,
  Error,
};

const char* worker_task_status_name(WorkerTaskStatus s) noexcept;

/** @brief A worker's identity and limits. */
struct WorkerConfig {
  std::string address;
  int nthreads = 1;
  std::map<std::string, double> resources;       ///< e.g. {"GPU", 1}
  std::size_t transfer_incoming_count_limit = 10;  ///< peers fetched from at once
  std::size_t transfer_message_bytes_limit = 50'000'000;  ///< batch size per gather
  bool validate = false;  ///< check_invariants() after every event (tests)
};

/**
 * @brief The worker's state machine: which keys to fetch, which to run, what to tell the
 * scheduler. The driver owns the data and the threads; it reports back with events.
 */
class WorkerState {
 public:
  explicit WorkerState(WorkerConfig config);
  ~WorkerState();
  WorkerState(WorkerState&&) noexcept;
  WorkerState& operator=(WorkerState&&) noexcept;

  void handle(WorkerEvent event, std::vector<WorkerAction>& out);
  std::vector<WorkerAction> handle(WorkerEvent event);

  /** @brief Throws tessera::Error describing the first inconsistency found. */
  void check_invariants() const;

  std::optional<WorkerTaskStatus> status(const Key& key) const;
  /** @brief Keys in memory, sorted. */
  std::vector<Key> data_keys() const;
  /** @brief Tasks in each state, indexed by WorkerTaskStatus (one pass over the tasks). */
  std::vector<std::size_t> status_counts() const;
  std::size_t executing_count() const noexcept;
  std::size_t in_flight_peers() const noexcept;
  std::size_t task_count() const noexcept;
  bool paused() const noexcept;
  const WorkerConfig& config() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::distributed
