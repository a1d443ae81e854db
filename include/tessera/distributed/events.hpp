#pragma once
/**
 * @file
 * Events and actions of the distributed scheduler and worker state machines.
 *
 * The state machines (scheduler_state.hpp, worker_state.hpp) are pure: a server hands them an
 * event, they update their state and append actions for the server to carry out (send a
 * message, start a thread, fetch data). Time enters only as fields of events. Several structs
 * are both an action of one machine and an event of the other (a ComputeTask the scheduler
 * emits is the event the worker receives; a TaskFinished the worker emits is the event the
 * scheduler receives), so a driver forwards them unchanged.
 *
 * The scheduler names each event it handles with a stimulus id made of the event's kind, its
 * sender and a sequence number ("task-finished-tcp://10.0.0.1:9000-42"), logged with the task
 * transitions it causes (SchedulerState::story).
 */
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tessera/core/key.hpp"
#include "tessera/graph/task.hpp"

namespace tessera::distributed {

/** @brief Seconds on the driver's clock (any epoch; only differences matter). */
using Time = double;

/**
 * @brief Scheduling priority: lower runs first. Compared field by field: the negated user
 * priority (higher user priority first), the submission generation (earlier update-graph
 * first), then the graph order from tessera::order.
 */
struct Priority {
  std::int32_t user = 0;  ///< minus Annotations::priority
  std::int64_t generation = 0;
  std::int64_t order = 0;
  auto operator<=>(const Priority&) const = default;
  bool operator==(const Priority&) const = default;
};

/** @brief Where a dependency lives: the workers (addresses) holding it and its size. */
struct WhoHas {
  Key key;
  std::vector<std::string> workers;
  std::size_t nbytes = 0;
};

// ---- Scheduler inputs ------------------------------------------------------------------------

/** @brief A worker registered. `ops` lists the operation names it can run. */
struct AddWorker {
  std::string address;
  std::string name;  ///< defaults to the address when empty
  int nthreads = 1;
  std::map<std::string, double> resources;  ///< e.g. {"GPU", 1}
  std::size_t memory_limit = 0;             ///< bytes, 0 = none
  std::vector<std::string> ops;
  Time now = 0;
};

/** @brief A worker left. `safe` (a clean shutdown) does not count against its tasks. */
struct RemoveWorker {
  std::string address;
  std::string reason;
  bool safe = false;
  Time now = 0;
};

/** @brief A worker is alive; `memory` is the bytes it holds. */
/** @brief A worker process's use of its machine, measured with each heartbeat (dashboards only). */
struct ProcessUsage {
  double cpu = -1;         ///< percent of one core since the last heartbeat (400: four busy cores); -1: unknown
  std::size_t rss = 0;     ///< resident bytes of the process
  std::string gpu_name;    ///< empty: no GPU figures (no NVML, or no GPU on this worker)
  int gpu_utilization = 0;  ///< percent (NVML)
  std::size_t gpu_memory_used = 0, gpu_memory_total = 0;  ///< bytes on the whole device (NVML)
  /// Bytes per second over PCIe (sent by the GPU, received by it) and over all NVLinks (NVML);
  /// -1: not known (no NVML, a driver without the function, NOT_SUPPORTED, or no rate yet).
  double gpu_pcie_tx = -1, gpu_pcie_rx = -1, gpu_nvlink_tx = -1, gpu_nvlink_rx = -1;
};

struct Heartbeat {
  std::string address;
  Time now = 0;
  std::size_t memory = 0;
  std::size_t device_memory = 0;  ///< bytes of results in device memory (scheduler_info only)
  std::size_t device_spilled_bytes = 0;  ///< bytes moved device -> host so far (scheduler_info only)
  std::size_t spilled = 0;  ///< bytes of results spilled to disk now (scheduler_info only)
  std::size_t bytes_received = 0;  ///< fetched from peers so far (scheduler_info only)
  std::size_t bytes_sent = 0;      ///< served to peers and clients so far (scheduler_info only)
  ProcessUsage usage;              ///< CPU, memory, GPU (dashboards only)
};

/** @brief A worker paused (near its memory limit) or resumed. Workers emit it themselves. */
struct WorkerStatusChange {
  std::string address;
  bool paused = false;
};

/** @brief The clock advanced: heartbeat timeouts are checked and work is stolen. */
struct Tick {
  Time now = 0;
};

struct AddClient {
  std::string client;
};

/** @brief A client disconnected: everything it wanted is released. */
struct RemoveClient {
  std::string client;
};

/**
 * @brief A client submitted tasks and wants `keys`. Tasks already known keep their first
 * definition. `order` (tessera::order of the graph) is computed by the scheduler when empty.
 */
struct UpdateGraph {
  std::string client;
  std::vector<Task> tasks;
  std::vector<Key> keys;
  std::unordered_map<Key, std::int64_t> order;
  Time now = 0;
};

/** @brief A worker finished a task (or learned a key): it holds `nbytes` of type `type`. */
struct TaskFinished {
  std::string worker;
  Key key;
  std::size_t nbytes = 0;
  std::string type;
  Time start = 0;  ///< execution start and stop, for duration estimates (0, 0 = unknown)
  Time stop = 0;
  int thread = -1;  ///< the worker's execution thread that ran it (the task stream), -1 = unknown
};

/** @brief A task raised an exception on a worker. */
struct TaskErred {
  std::string worker;
  Key key;
  std::string exception;
  std::string traceback;
};

/** @brief A worker now holds replicas of these keys (fetched from peers). */
struct AddKeys {
  std::string worker;
  std::vector<std::pair<Key, std::size_t>> keys;  ///< key, nbytes
};

/** @brief A worker no longer holds these keys (lost, or dropped on its own). */
struct RemoveKeys {
  std::string worker;
  std::vector<Key> keys;
};

/** @brief `worker` could not get `key` from `errant_worker`, which the scheduler said held it. */
struct MissingData {
  std::string worker;
  Key key;
  std::string errant_worker;
};

/** @brief A client dropped its futures on these keys. */
struct ReleaseKeys {
  std::string client;
  std::vector<Key> keys;
};

/** @brief A client cancels keys; with `force`, every client's interest is dropped. */
struct CancelKeys {
  std::string client;
  std::vector<Key> keys;
  bool force = false;
};

/** @brief The victim's answer to a StealRequest: accepted when it gave the task up. */
struct StealResponse {
  std::string worker;
  Key key;
  bool accepted = false;
};

/** @brief A client retries erred keys (and the erred tasks they depend on). */
struct RetryKeys {
  std::string client;
  std::vector<Key> keys;
};

/**
 * @brief Retire these workers gracefully, as Dask's retire_workers: they get no new tasks, the
 * data only they hold is copied to other workers (AcquireReplicas), and each one is told to
 * close (CloseWorker) once it runs nothing and holds nothing that exists nowhere else. A worker
 * whose data no other worker can take stays (and is no longer retiring).
 */
struct RetireWorkers {
  std::vector<std::string> addresses;
  Time now = 0;
};

/**
 * @brief A worker's nanny stopped restarting it: it died again past the nanny's cap of restarts
 * a minute, so it will not come back (docs/nanny.md). `worker` is its last registration (the
 * worker is already removed). Each task waiting for a worker (no-worker) that it could have run
 * errs with `reason`: no live worker can run it, and the one that could is gone for good.
 */
struct WorkerGivenUp {
  AddWorker worker;
  std::string reason;
  Time now = 0;
};

/**
 * @brief A peer-to-peer shuffle's run placed its output partitions (docs/dataframe-shuffle.md):
 * task keys[i] should run on workers[i]. Loose, as Dask's allow_other_workers: when that worker
 * is gone the task runs elsewhere (and the run it belonged to restarts anyway). Applies to tasks
 * not yet sent to a worker; others are left as they are.
 */
struct PinTasks {
  std::vector<Key> keys;
  std::vector<std::string> workers;
};

/**
 * @brief Results to compute again (a shuffle run they took part in was lost): each held one is
 * freed on every worker holding it, and computed again when something still wants it.
 */
struct ForgetResults {
  std::vector<Key> keys;
  std::string reason;
};

using SchedulerEvent =
    std::variant<AddWorker, RemoveWorker, Heartbeat, WorkerStatusChange, Tick, AddClient,
                 RemoveClient, UpdateGraph, TaskFinished, TaskErred, AddKeys, RemoveKeys,
                 MissingData, ReleaseKeys, CancelKeys, StealResponse, RetryKeys, RetireWorkers,
                 WorkerGivenUp, PinTasks, ForgetResults>;

// ---- Scheduler outputs (ComputeTask, FreeKeys, StealRequest are also worker inputs) -----------

/** @brief Run `task` on `worker`; `who_has` locates every dependency. */
struct ComputeTask {
  std::string worker;
  Key key;
  std::shared_ptr<const Task> task;
  Priority priority;
  std::vector<WhoHas> who_has;
  std::map<std::string, double> resources;
};

/** @brief `worker` should forget these keys (cancel them if running, drop their data). */
struct FreeKeys {
  std::string worker;
  std::vector<Key> keys;
};

/** @brief Ask `worker` to give `key` up so that another worker can run it. */
struct StealRequest {
  std::string worker;
  Key key;
};

/** @brief Tell `client` that `key` is in memory on the cluster. */
struct KeyInMemory {
  std::string client;
  Key key;
  std::size_t nbytes = 0;
  std::string type;
};

/** @brief Tell `client` that `key` failed; `message` names the key, `cause` is the task that raised. */
struct KeyErred {
  std::string client;
  Key key;
  Key cause;
  std::string message;
  std::string traceback;
};

/** @brief Tell `client` its submit of `key` can never run: no worker advertises `op`. */
struct OperationUnavailable {
  std::string client;
  Key key;
  std::string op;
  std::string message;
};

/** @brief Tell `client` that `key` was cancelled. */
struct KeyCancelled {
  std::string client;
  Key key;
};

/** @brief Something worth logging or showing in a dashboard's event stream. */
struct LogEvent {
  Time now = 0;
  std::string topic;  ///< "worker", "task", "steal", "client"
  std::string message;
};

/**
 * @brief `worker` should fetch these keys from the workers listed and keep them (a retiring
 * worker's data moving elsewhere); it reports each with AddKeys. Also a worker input.
 */
struct AcquireReplicas {
  std::string worker;
  std::vector<WhoHas> who_has;
};

/** @brief A retiring `worker` holds nothing that exists nowhere else: tell it to close. */
struct CloseWorker {
  std::string worker;
  std::string reason;
};

using SchedulerAction = std::variant<ComputeTask, FreeKeys, StealRequest, KeyInMemory, KeyErred,
                                     OperationUnavailable, KeyCancelled, LogEvent, AcquireReplicas,
                                     CloseWorker>;

// ---- Worker inputs (besides ComputeTask, FreeKeys, StealRequest) -------------------------------

/** @brief A gather from `peer` returned: the keys it had (with sizes); the driver stored them. */
struct GatherDepSuccess {
  std::string peer;
  std::vector<std::pair<Key, std::size_t>> data;
};

/** @brief A gather from `peer` failed (connection refused, peer gone). */
struct GatherDepFailure {
  std::string peer;
  std::string reason;
};

/** @brief A task returned; the driver stored its value. */
struct ExecuteSuccess {
  Key key;
  std::size_t nbytes = 0;
  std::string type;
  Time start = 0;
  Time stop = 0;
  int thread = -1;  ///< index of the execution thread
};

/** @brief A task raised. */
struct ExecuteFailure {
  Key key;
  std::string exception;
  std::string traceback;
};

/** @brief The memory monitor paused (true) or resumed (false) the worker. */
struct PauseWorker {
  bool paused = true;
};

using WorkerEvent = std::variant<ComputeTask, FreeKeys, StealRequest, GatherDepSuccess,
                                 GatherDepFailure, ExecuteSuccess, ExecuteFailure, PauseWorker,
                                 AcquireReplicas>;

// ---- Worker outputs ---------------------------------------------------------------------------

/** @brief Fetch `keys` from `peer` in one message. */
struct GatherDep {
  std::string peer;
  std::vector<Key> keys;
  std::size_t total_nbytes = 0;
};

/** @brief Run `task` on a thread; its dependencies are in the local store. */
struct Execute {
  Key key;
  std::shared_ptr<const Task> task;
};

/** @brief Drop the local value of `key`. */
struct ReleaseData {
  Key key;
};

/** @brief Actions of a worker: local work plus messages for the scheduler. */
using WorkerAction =
    std::variant<GatherDep, Execute, ReleaseData, TaskFinished, TaskErred, StealResponse, AddKeys,
                 MissingData, WorkerStatusChange>;

}  // namespace tessera::distributed
