#pragma once
/**
 * @file What the dashboards serve, as pure functions of a snapshot: Prometheus' text format
 * (through prometheus-cpp) and the JSON API (through nlohmann-json). The metric names are
 * Dask's with the prefix `tessera_` instead of `dask_` (docs/dashboard.md lists them). Private
 * to libtessera.
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessera/distributed/worker_stats.hpp"
#include "wire.hpp"

namespace tessera::distributed {

/** @brief The scheduler as the dashboard sees it: what scheduler_info() answers, and the clients. */
struct SchedulerSnapshot {
  wire::ClusterInfo info;
  std::size_t clients = 0;
  /** Tasks by operation and state (SchedulerState::status_counts_by_op). */
  std::vector<std::pair<std::string, std::vector<std::size_t>>> by_op;
  std::uint64_t tasks_finished = 0;  ///< tasks run so far (transfers not counted)
  std::uint64_t stream_newest = 0;   ///< the task stream's newest id (tasks and transfers)
  std::size_t adaptive_target = 0;   ///< SchedulerState::adaptive_target() (/api/v1/adaptive-target)
  double tasks_per_second = 0;       ///< tasks finished over the last 3 s
  double event_loop_latency = 0;     ///< seconds the last tick fired late
  double event_loop_latency_max = 0; ///< the worst lately (decays by half every 2 s)
};

/** @brief One worker as its dashboard sees it. */
struct WorkerSnapshot {
  std::string address;
  std::string name;
  int nthreads = 0;
  std::size_t memory_limit = 0;
  WorkerStats stats;
  /** Every worker task state by name, zeros included (the state machine's status_counts()). */
  std::vector<std::pair<std::string, std::size_t>> task_states;
  std::size_t transfer_incoming_count = 0;  ///< peers being fetched from now
  ProcessUsage usage;                       ///< CPU, resident memory, GPU at the last heartbeat
  std::vector<std::pair<std::string, std::string>> running;  ///< key, operation of tasks executing now
  std::string scheduler;                    ///< the scheduler's address
  double uptime = 0;
};

/** @brief Prometheus text: tessera_scheduler_workers, _clients, _tasks{state=...}, ... */
std::string scheduler_metrics_text(const SchedulerSnapshot& s);
/** @brief Prometheus text: tessera_worker_tasks{state=...}, _threads, _memory_bytes{type=...}, transfers. */
std::string worker_metrics_text(const WorkerSnapshot& s);

/** @brief {"num_workers": n, "workers": [{address, name, nthreads, memory, ...}]}, the fields of scheduler_info(). */
std::string workers_json(const wire::ClusterInfo& info);
/** @brief {"total": n, "states": {"released": n, "waiting": n, ...}} with every state, zeros included. */
std::string tasks_json(const wire::ClusterInfo& info);

/**
 * @brief {"uptime": s, "finished": n, "clients": n, "prefixes": [{"name": op, "total": n, "released": n, "waiting": n,
 * "no-worker": n, "queued": n, "processing": n, "memory": n, "erred": n}]}: Dask's progress by prefix.
 */
std::string progress_json(const SchedulerSnapshot& s);
/**
 * @brief {"newest": id, "dropped": n, "next": id, "tasks": [{"id", "key", "prefix", "worker", "thread",
 * "start", "stop", "nbytes"}]}; "next" is the since= of the following request.
 */
std::string task_stream_json(const TaskStreamPage& page, std::uint64_t since);
/**
 * @brief The task stream for the live page, compact: {"newest", "from", "dropped", "skipped", "workers": [address...],
 * "prefixes": [op...], "bars": [[worker index, thread, start, stop, prefix index], ...]}: the bars' ids are from+1,
 * from+2, ...; times rounded to 0.1 ms:
 * a third of task_stream_json's bytes per bar.
 */
std::string compact_bars_json(const TaskStreamPage& page, std::uint64_t skipped);
/** @brief The JSON of one task-stream entry, as task_stream_json's "tasks" hold them. */
nlohmann::json task_stream_entry_json(const TaskStreamEntry& e);
/** @brief A worker's own page's figures: {"address", "name", "nthreads", "running": [...], "states": {...}, "memory", ...}. */
std::string worker_status_json(const WorkerSnapshot& s);

/** @brief The Content-Type of Prometheus' text exposition format. */
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace tessera::distributed
