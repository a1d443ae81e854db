#pragma once
/** @file
 * SchedulerState: the distributed scheduler as a pure state machine. */
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/distributed/events.hpp"

namespace tessera::distributed {

namespace detail {
class SchedulerStateImpl;
}

/** @brief Scheduler-side task states, as in Dask (no-worker included). */
enum class TaskStatus : std::uint8_t {
  Released,    ///< known, not wanted right now (kept for lineage)
  Waiting,     ///< wanted; some dependency not in memory yet
  NoWorker,    ///< runnable, but no connected worker satisfies its op/restrictions/resources
  Queued,      ///< runnable, held on the scheduler until a suitable worker has room
  Processing,  ///< sent to a worker
  Memory,      ///< held by one or more workers
  Erred,
  Forgotten,
};

const char* task_status_name(TaskStatus s) noexcept;

/** @brief Tunables; defaults follow Dask's distributed.yaml. */
struct SchedulerConfig {
  int allowed_failures = 3;          ///< a task processing on this many dying workers errs (KilledWorker)
  double worker_saturation = 1.1;    ///< root tasks in flight per worker: max(1, ceil(nthreads * this))
  double root_queue_seconds = 0.002; ///< ...or, for measured ops, enough for this much work per thread
  int max_root_slots = 256;          ///< cap on that, per thread
  double bandwidth = 100e6;          ///< bytes/s, for the transfer cost of placing a task
  double default_task_duration = 0.5;  ///< seconds, until an op has been measured
  double worker_ttl = 300;           ///< a worker silent this long (seconds) is removed on Tick
  /** A worker silent this long (seconds; 0 = never) gets no new tasks until its next heartbeat,
   *  as a paused one; it keeps those it has until worker_ttl removes it. */
  double worker_silent = 0;
  bool work_stealing = true;         ///< balance on Tick
  std::size_t scan_limit = 64;       ///< bound on candidate scans per decision
  bool validate = false;             ///< check_invariants() after every event (tests)
  std::size_t transition_log_length = 100000;  ///< task state changes kept for story() (0 = none)
};

/** @brief One task state change: what story() returns. */
struct TransitionRecord {
  Key key;
  TaskStatus from = TaskStatus::Released;
  TaskStatus to = TaskStatus::Released;
  std::string stimulus;  ///< the event that caused it, e.g. "task-finished-tcp://10.0.0.1:9000-42"
  Time time = 0;         ///< the scheduler's clock (the latest time an event carried)
};

/** @brief One worker as the scheduler sees it (for scheduler_info and tests). */
struct WorkerSummary {
  std::string address;
  std::string name;
  int nthreads = 0;
  std::map<std::string, double> resources;
  std::map<std::string, double> resources_used;
  std::size_t memory_limit = 0;
  std::size_t memory = 0;      ///< last heartbeat
  std::size_t nbytes = 0;      ///< bytes of keys the scheduler knows it holds
  std::size_t processing = 0;  ///< tasks assigned and not finished
  std::size_t has_what = 0;
  double occupancy = 0;        ///< estimated seconds of assigned work
  bool paused = false;
  Time last_seen = 0;
};

/**
 * @brief The scheduler's state machine: tasks, workers, clients; events in, actions out.
 *
 * Not thread-safe: one server thread owns it. handle() never throws for bad input from the
 * network (unknown keys and workers are logged and ignored); it throws only on internal
 * inconsistency: a task transition the scheduler's transitions table does not allow, or a
 * failed validation. Each event gets a stimulus id (its kind, sender and sequence number) that
 * the task state changes it causes are logged with; story() reads that log.
 */
class SchedulerState {
 public:
  explicit SchedulerState(SchedulerConfig config = {});
  ~SchedulerState();
  SchedulerState(SchedulerState&&) noexcept;
  SchedulerState& operator=(SchedulerState&&) noexcept;

  /** @brief Applies one event, appending the resulting actions to `out`. */
  void handle(SchedulerEvent event, std::vector<SchedulerAction>& out);
  /** @brief Convenience overload returning the actions. */
  std::vector<SchedulerAction> handle(SchedulerEvent event);

  /**
   * @brief Throws tessera::Error describing the first inconsistency found, followed by the
   * offending task's story when one task is at fault.
   */
  void check_invariants() const;

  /**
   * @brief The logged state changes of `key`, oldest first (from, to, stimulus id, time), like
   * Dask's Scheduler.story. Bounded by SchedulerConfig::transition_log_length, shared by all tasks.
   */
  std::vector<TransitionRecord> story(const Key& key) const;

  // ---- Queries --------------------------------------------------------------------------------
  /** @brief The task's state; nullopt when the key is unknown or forgotten. */
  std::optional<TaskStatus> status(const Key& key) const;
  /** @brief Addresses of the workers holding the key. */
  std::vector<std::string> who_has(const Key& key) const;
  /** @brief Address of the worker processing the key, empty when not processing. */
  std::string processing_on(const Key& key) const;
  /** @brief Exception text of an erred key (empty otherwise). */
  std::string exception(const Key& key) const;
  /** @brief Number of tasks known (not forgotten). */
  std::size_t task_count() const noexcept;
  /** @brief Number of tasks in each state, indexed by TaskStatus. */
  std::vector<std::size_t> status_counts() const;
  /**
   * @brief status_counts() per operation (Task::op, the dashboards' "prefix"), operations in the
   * order first seen; those with no live task are left out. One pass over the tasks, as
   * status_counts().
   */
  std::vector<std::pair<std::string, std::vector<std::size_t>>> status_counts_by_op() const;
  /** @brief The operation of a known task ("" when the key is unknown). O(1). */
  const std::string& op_of(const Key& key) const;
  std::vector<WorkerSummary> workers() const;
  std::size_t worker_count() const noexcept;
  /** @brief Worker records held, live or free for reuse: at most the most workers ever
   *  connected at once (a departed worker's record is reused, not kept). */
  std::size_t worker_slot_count() const noexcept;
  /** @brief Client records held: the connected clients (a departed client's record is freed). */
  std::size_t client_count() const noexcept;
  std::size_t queued_count() const noexcept;
  const SchedulerConfig& config() const noexcept;

  // ---- adaptive scaling (scheduler_state_retire.cpp) ---------------------------------------------
  /**
   * @brief The n workers cheapest to retire: idle ones first, then those holding the least data
   * (Dask's workers_to_close). Workers already retiring are not counted.
   */
  std::vector<std::string> workers_to_close(std::size_t n) const;
  /**
   * @brief How many workers the scheduler wants, as Dask's adaptive_target: enough threads to
   * run the processing and queued work (each task at its operation's measured duration) in
   * `target_duration` seconds, converted to workers at the cluster's threads per worker; twice
   * the workers when the data held passes 60% of their memory limits; when that is fewer than
   * now, no fewer than the busy workers and those needed to hold the data. A cluster manager
   * bounds it by its own minimum and maximum.
   */
  std::size_t adaptive_target(double target_duration = 5) const;
  /** @brief True while a RetireWorkers for this worker is under way (or it was told to close). */
  bool retiring(const std::string& address) const;

 private:
  std::unique_ptr<detail::SchedulerStateImpl> impl_;
};

}  // namespace tessera::distributed
