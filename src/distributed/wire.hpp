#pragma once
/**
 * @file The distributed layer's messages: op names, cereal encodings of the state machines'
 * events, batches, and values carried as raw frames. See docs/protocol.md ("Cluster messages").
 *
 * Private to the library: the scheduler, worker and client servers are its only users.
 */
#include <string>
#include <variant>
#include <vector>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "tessera/comm/message.hpp"
#include "tessera/core/device.hpp"
#include "tessera/distributed/events.hpp"
#include "tessera/distributed/scheduler_state.hpp"
#include "tessera/distributed/task_stream.hpp"
#include "ops/task_serialize.hpp"

namespace tessera {
// GpuInfo (tessera/core/device.hpp) on the wire: workers report their GPUs when they register.
template <class A>
void serialize(A& ar, GpuInfo& g) {
  ar(g.ordinal, g.name, g.uuid, g.pci_bus_id, g.total_memory, g.cc_major, g.cc_minor);
}
}  // namespace tessera

namespace tessera::distributed {

// ---- cereal encodings of the events (ADL finds them in this namespace) -----------------------

template <class A>
void serialize(A& ar, Priority& p) {
  ar(p.user, p.generation, p.order);
}
template <class A>
void serialize(A& ar, WhoHas& w) {
  ar(w.key, w.workers, w.nbytes);
}
template <class A>
void serialize(A& ar, AddWorker& e) {
  ar(e.address, e.name, e.nthreads, e.resources, e.memory_limit, e.ops, e.now);
}
template <class A>
void serialize(A& ar, ProcessUsage& u) {
  ar(u.cpu, u.rss, u.gpu_name, u.gpu_utilization, u.gpu_memory_used, u.gpu_memory_total, u.gpu_pcie_tx, u.gpu_pcie_rx,
     u.gpu_nvlink_tx, u.gpu_nvlink_rx);
}
template <class A>
void serialize(A& ar, Heartbeat& e) {
  ar(e.address, e.now, e.memory, e.device_memory, e.device_spilled_bytes, e.spilled, e.bytes_received, e.bytes_sent,
     e.usage);
}
template <class A>
void serialize(A& ar, WorkerStatusChange& e) {
  ar(e.address, e.paused);
}
template <class A>
void serialize(A& ar, UpdateGraph& e) {
  ar(e.client, e.tasks, e.keys, e.order, e.now);
}
template <class A>
void serialize(A& ar, TaskFinished& e) {
  ar(e.worker, e.key, e.nbytes, e.type, e.start, e.stop, e.thread);
}
template <class A>
void serialize(A& ar, TaskErred& e) {
  ar(e.worker, e.key, e.exception, e.traceback);
}
template <class A>
void serialize(A& ar, AddKeys& e) {
  ar(e.worker, e.keys);
}
template <class A>
void serialize(A& ar, RemoveKeys& e) {
  ar(e.worker, e.keys);
}
template <class A>
void serialize(A& ar, MissingData& e) {
  ar(e.worker, e.key, e.errant_worker);
}
template <class A>
void serialize(A& ar, ReleaseKeys& e) {
  ar(e.client, e.keys);
}
template <class A>
void serialize(A& ar, CancelKeys& e) {
  ar(e.client, e.keys, e.force);
}
template <class A>
void serialize(A& ar, StealResponse& e) {
  ar(e.worker, e.key, e.accepted);
}
template <class A>
void serialize(A& ar, RetryKeys& e) {
  ar(e.client, e.keys);
}
template <class A>
void save(A& ar, const ComputeTask& e) {
  ar(e.worker, e.key, *e.task, e.priority, e.who_has, e.resources);
}
template <class A>
void load(A& ar, ComputeTask& e) {
  auto task = std::make_shared<Task>();
  ar(e.worker, e.key, *task, e.priority, e.who_has, e.resources);
  e.task = std::move(task);
}
template <class A>
void serialize(A& ar, FreeKeys& e) {
  ar(e.worker, e.keys);
}
template <class A>
void serialize(A& ar, AcquireReplicas& e) {
  ar(e.worker, e.who_has);
}
template <class A>
void serialize(A& ar, StealRequest& e) {
  ar(e.worker, e.key);
}
template <class A>
void serialize(A& ar, KeyErred& e) {
  ar(e.client, e.key, e.cause, e.message, e.traceback);
}
template <class A>
void serialize(A& ar, OperationUnavailable& e) {
  ar(e.client, e.key, e.op, e.message);
}
template <class A>
void serialize(A& ar, KeyCancelled& e) {
  ar(e.client, e.key);
}
template <class A>
void serialize(A& ar, WorkerSummary& w) {
  ar(w.address, w.name, w.nthreads, w.resources, w.resources_used, w.memory_limit, w.memory, w.nbytes,
     w.processing, w.has_what, w.occupancy, w.paused, w.last_seen);
}

namespace wire {

// ---- op names ---------------------------------------------------------------------------------
// First message on a connection to the scheduler says who is calling.
inline constexpr const char* kRegisterWorker = "register-worker";  // fields: worker (WorkerHello)
inline constexpr const char* kRegisterClient = "register-client";  // fields: client (string)
inline constexpr const char* kRegistered = "registered";           // reply; fields: info (ClusterInfo) or error
// Batches of state-machine events, one direction each.
inline constexpr const char* kWorkerEvents = "worker-events";        // worker -> scheduler
inline constexpr const char* kSchedulerEvents = "scheduler-events";  // scheduler -> worker
inline constexpr const char* kClientEvents = "client-events";        // client -> scheduler
inline constexpr const char* kClientUpdates = "client-updates";      // scheduler -> client
// Requests (field "id"), answered by kReply with the same "id" (and "error" on failure).
inline constexpr const char* kReply = "reply";
inline constexpr const char* kGetData = "get-data";            // -> worker: keys; reply: keys + values
inline constexpr const char* kRun = "run";                     // -> worker: op, args; reply: value
inline constexpr const char* kSchedulerInfo = "scheduler-info";  // -> scheduler; reply: info
inline constexpr const char* kWhoHas = "who-has";              // -> scheduler: keys; reply: who_has
inline constexpr const char* kTaskStream = "task-stream";  // -> scheduler: since, limit; reply: page (TaskStreamPage)
// -> scheduler: addresses (or n > 0: that many, its choice), timeout (s); replied once they
// closed or the timeout passed: retired (addresses gone), kept (still there).
inline constexpr const char* kRetireWorkers = "retire-workers";
inline constexpr const char* kAdaptiveTarget = "adaptive-target";  // -> scheduler: target_duration; reply: target
// Client::restart -> scheduler: timeout (s), wait_for_workers; replied once the old workers left
// (and as many registered again) or at the timeout: restarted, closed (addresses), workers; or error.
inline constexpr const char* kRestart = "restart";
// Notices.
inline constexpr const char* kCloseWorker = "close-worker";  // scheduler -> worker: shut down cleanly
inline constexpr const char* kPeerGone = "peer-gone";  // scheduler -> workers: `address` was removed
inline constexpr const char* kUnregister = "unregister";     // worker -> scheduler: leaving on purpose
inline constexpr const char* kRestartWorker = "restart-worker";  // scheduler -> worker with a nanny: exit 4
inline constexpr const char* kRestarted = "restarted";  // scheduler -> clients: `reason`; every key is gone
// register-worker's optional field: the pid of the worker's nanny (Client::restart restarts it).
inline constexpr const char* kNannyField = "nanny";
// The nanny's own connection (docs/nanny.md): it registers (pid, host); a worker that did not
// leave within a grace period of a restart is killed through it (pid); it says what it did.
inline constexpr const char* kRegisterNanny = "register-nanny";  // nanny -> scheduler: pid, host
inline constexpr const char* kKillWorker = "kill-worker";        // scheduler -> nanny: pid (SIGKILL, start again)
inline constexpr const char* kWorkerKilled = "worker-killed";    // nanny -> scheduler: pid, killed
// nanny -> scheduler: name, pid (its last life), reason; the nanny stopped restarting it.
inline constexpr const char* kWorkerGivenUp = "worker-given-up";

// The peer-to-peer shuffle (docs/dataframe-shuffle.md). Requests answered with a reply, or an
// error reply whose text starts with kShuffleLost when the run is no longer current.
inline constexpr const char* kShuffleJoin = "shuffle-join";  // worker -> scheduler: token, inputs, outputs, keys; reply: run
inline constexpr const char* kShuffleInputDone = "shuffle-input-done";  // worker -> scheduler: token, run, input
inline constexpr const char* kShuffleBarrier = "shuffle-barrier";       // worker -> scheduler: token, run
inline constexpr const char* kShuffleReceive = "shuffle-receive";  // worker -> worker: token, run, inputs, input, first_output, rows + at most one value
inline constexpr const char* kShuffleForget = "shuffle-forget";    // scheduler -> worker: token, run, reason (no reply)
inline constexpr const char* kShuffleLost = "shuffle run lost: ";

/** @brief The most task-stream entries one request is answered with (a client asks again for more). */
inline constexpr std::size_t kMaxTaskStreamPage = 100000;

/** @brief What a worker tells the scheduler when it registers (AddWorker plus descriptions). */
struct WorkerHello {
  AddWorker add;
  int pid = 0;
  std::string host;
  std::string local_directory;
  std::map<std::string, std::string> extra;
  std::vector<GpuInfo> gpus;            ///< the GPU it uses (empty for a host-only worker)
  std::size_t device_memory_limit = 0;  ///< bytes of results kept on the device (0: no limit)
  template <class A>
  void serialize(A& ar) {
    ar(add, pid, host, local_directory, extra, gpus, device_memory_limit);
  }
};

/** @brief One worker in scheduler_info(). */
struct WorkerInfo {
  WorkerSummary summary;
  int pid = 0;
  std::string host;
  std::string local_directory;
  std::map<std::string, std::string> extra;
  std::vector<std::string> ops;
  std::vector<GpuInfo> gpus;
  std::size_t device_memory_limit = 0;
  std::size_t device_memory = 0;  ///< last heartbeat
  std::size_t device_spilled_bytes = 0;  ///< last heartbeat
  std::size_t spilled = 0;  ///< bytes on disk, last heartbeat
  std::size_t bytes_received = 0, bytes_sent = 0;  ///< transfers so far, last heartbeat
  ProcessUsage usage;  ///< CPU, resident memory, GPU (NVML), last heartbeat
  template <class A>
  void serialize(A& ar) {
    ar(summary, pid, host, local_directory, extra, ops, gpus, device_memory_limit, device_memory, device_spilled_bytes,
       spilled, bytes_received, bytes_sent, usage);
  }
};

/** @brief The scheduler's answer to kSchedulerInfo (and to a client's registration). */
struct ClusterInfo {
  std::string address;
  std::string id;
  double uptime = 0;
  std::size_t tasks = 0;
  std::vector<std::pair<std::string, std::size_t>> task_states;  ///< name, count
  std::vector<WorkerInfo> workers;
  template <class A>
  void serialize(A& ar) {
    ar(address, id, uptime, tasks, task_states, workers);
  }
};

/** @brief Scheduler -> client: `key` is in memory on `workers`. */
struct KeyReady {
  Key key;
  std::size_t nbytes = 0;
  std::string type;
  std::vector<std::string> workers;
  template <class A>
  void serialize(A& ar) {
    ar(key, nbytes, type, workers);
  }
};

/**
 * @brief Worker -> scheduler: a fetch from a peer completed, or a get-data reply to a client was
 * sent (peer: the client's id; kGetDataClient). For the task stream only; the state machine
 * learns the keys from AddKeys. Times on the worker's clock.
 */
struct TransferDone {
  std::string worker;  ///< stamped by the scheduler
  std::string peer;
  std::size_t nkeys = 0;
  std::size_t nbytes = 0;
  double start = 0, stop = 0;
  template <class A>
  void serialize(A& ar) {
    ar(worker, peer, nkeys, nbytes, start, stop);
  }
};

using WorkerToScheduler = std::variant<TaskFinished, TaskErred, AddKeys, RemoveKeys, MissingData, StealResponse,
                                       WorkerStatusChange, Heartbeat, TransferDone>;
using SchedulerToWorker = std::variant<ComputeTask, FreeKeys, StealRequest, AcquireReplicas>;
using ClientToScheduler = std::variant<UpdateGraph, ReleaseKeys, CancelKeys, RetryKeys>;
using SchedulerToClient = std::variant<KeyReady, KeyErred, OperationUnavailable, KeyCancelled>;

/** @brief A message carrying a batch of events under "events". */
template <typename Event>
comm::Message batch_message(const char* op, const std::vector<Event>& events) {
  comm::Message m(op);
  m.set("events", events);
  return m;
}

template <typename Event>
std::vector<Event> batch_events(const comm::Message& m) {
  return m.get<std::vector<Event>>("events");
}

/** @brief What put_values does with a block in device memory. */
enum class DeviceBlocks {
  ToHost,  ///< copies it to host first (tessera::to_host): a receiver without a GPU gets host blocks
  AsIs,    ///< frames the device memory itself, for a comm that sends_device_frames()
};

/**
 * @brief Stores values under "values": Blocks as frames (never copied), Objects in the header.
 * Device blocks are copied to host unless device_blocks is AsIs.
 */
void put_values(comm::Message& m, const std::vector<Value>& values,
                DeviceBlocks device_blocks = DeviceBlocks::ToHost);

/**
 * @brief Key of a get-data request that says the requester is a GPU worker: it takes device
 * blocks, so a server whose comm sends device frames skips its own copy to host (docs/gpu.md).
 */
inline constexpr const char* kTakesDeviceBlocks = "device";
/**
 * @brief Key of a get-data request from a client: its id. The serving worker reports the reply
 * as a TransferDone with the client as the peer, a transfer bar in the task stream on its own
 * row; requests without it (a peer's, or an older client's) are reported by the fetching side.
 */
inline constexpr const char* kGetDataClient = "client";
/** @brief The values put_values stored (Blocks over the received frames, no copy). */
std::vector<Value> get_values(const comm::Message& m);

/** @brief A short type description of a value for the scheduler ("float64[2000,2000]", object type). */
std::string value_type(const Value& v);

}  // namespace wire
}  // namespace tessera::distributed
