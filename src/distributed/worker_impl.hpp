// The worker's insides, shared by the files that implement it (private to src/distributed/):
//   worker.cpp                 lifecycle: start (listen, register), shutdown, stats and snapshot,
//                              the GPU set-up, and the public Worker methods;
//   worker_execute.cpp         the state machine's events and actions, and running tasks;
//   worker_fetch.cpp           fetching dependencies from peer workers;
//   worker_serve.cpp           serving peers' and clients' requests (get-data, run);
//   worker_scheduler_link.cpp  the scheduler connection: its messages, batched reports,
//                              heartbeats and the liveness probe;
//   worker_shuffle.cpp         the peer-to-peer shuffle service its tasks use (WorkerShuffle).
// docs/distributed.md describes the worker; docs/state-machines.md its state machine.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dashboard.hpp"
#include "data_store.hpp"
#include "process_cpu.hpp"
#include "rpc.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/distributed/worker_state.hpp"
#include "wire.hpp"

namespace tessera::distributed {

/** A connection to a peer worker, used to fetch its data. Requests wait while it connects. */
struct WorkerPeer {
  std::shared_ptr<comm::Comm> comm;
  RpcTable rpc;
  std::vector<std::pair<comm::Message, RpcTable::Callback>> waiting;
  bool failed = false;  // the connection failed, closed, or the scheduler said the peer is gone
};

class WorkerShuffle;

struct Worker::Impl : std::enable_shared_from_this<Worker::Impl> {
  using Clock = std::chrono::steady_clock;

  WorkerOptions opt;
  Clock::time_point started = Clock::now();
  std::string address;
  int device = -1;  // CUDA ordinal of this worker's GPU (0 once pinned), -1 without one
  GpuInfo gpu;      // when device >= 0
  bool gpu_registered = false;  // its store is in GpuStores
  std::unique_ptr<comm::Listener> listener;
  std::shared_ptr<comm::Comm> scheduler;
  RpcTable scheduler_rpc;  // this worker's own requests to the scheduler (the shuffle's)
  std::unique_ptr<WorkerShuffle> shuffle;  // made in start(), before any task runs

  std::mutex mu;  // guards the state machine, the outbox and peers
  WorkerState state;
  std::vector<wire::WorkerToScheduler> outbox;
  std::vector<WorkerAction> actions;
  std::vector<GatherDep> gathers;  // issued after the lock is released
  std::unordered_map<std::string, std::shared_ptr<WorkerPeer>> peers;

  DataStore store;

  std::mutex qmu;  // the execution queue
  std::condition_variable qcv;
  std::deque<Execute> queue;
  // What each execution thread runs now (its own dashboard's page): set when it takes a task
  // and cleared when it comes back for the next, both under qmu, which it takes then anyway.
  std::vector<std::shared_ptr<const Task>> running_now;
  std::vector<std::thread> threads;

  std::thread heartbeat;
  mutable std::mutex cmu;  // closing state
  std::condition_variable ccv;
  bool closing = false, closed = false;
  std::string close_reason;

  // When the scheduler last said anything (now()): heartbeats are one-way, so each carries a
  // who-has probe the scheduler answers; a scheduler that answers nothing for death_timeout
  // (stopped, or cut off without a FIN) counts as lost.
  std::atomic<double> last_heard_from_scheduler{0};
  std::atomic<std::int64_t> next_probe_id{1};
  std::atomic<bool> scheduler_said_close{false};  // close-worker came

  std::atomic<std::size_t> executed{0}, failed{0}, fetched_keys{0}, fetched_bytes{0}, fetches{0}, served_keys{0},
      served_requests{0}, served_bytes{0};
  std::unique_ptr<WorkerDashboard> dashboard;
  ProcessCpu cpu_meter;  // sampled by the heartbeat thread only
  mutable std::mutex usage_mu;
  ProcessUsage usage;  // the last heartbeat's, for this worker's own dashboard
  std::vector<std::shared_ptr<comm::Comm>> served_conns;  // held so that shutdown() can close them

  std::promise<void> registered;
  std::string registration_secret;  // the scheduler's, from the reply; guarded by cmu
  std::atomic<bool> registration_answered{false};

  // Reports step() held back (batch), and the thread that sends them once their window passed.
  double outbox_since = 0;
  bool flush_armed = false;
  std::condition_variable fcv;  // with mu: wakes flush_loop
  std::thread flusher;

  explicit Impl(WorkerOptions o);
  ~Impl();
  static WorkerConfig state_config(const WorkerOptions& o);
  static DataStoreOptions store_options(const WorkerOptions& o);

  double now() const { return std::chrono::duration<double>(Clock::now() - started).count(); }
  bool closing_now() const {
    std::lock_guard l(cmu);
    return closing;
  }

  // ---- lifecycle (worker.cpp) ----
  void start();
  void setup_gpu();
  void shutdown(const std::string& reason, bool tell_scheduler);
  void close_async(std::string reason, bool tell_scheduler);
  ProcessUsage measure_usage();
  WorkerStats collect_stats();
  WorkerSnapshot snapshot();

  // ---- the state machine and running tasks (worker_execute.cpp) ----
  // Runs f under the lock, then sends the batched messages and starts the gathers it produced.
  // With `batch`, a finished task's report may wait (at most kBatchWindow seconds, flushed by
  // flush_loop) while this worker has more tasks queued, so that a stream of short tasks costs
  // one message per batch instead of one per task.
  static constexpr double kBatchWindow = 0.0005;
  static constexpr std::size_t kBatchMax = 512;
  template <typename F>
  void step(F&& f, bool batch = false) {
    std::vector<GatherDep> todo;
    {
      std::lock_guard lock(mu);
      bool was_empty = outbox.empty();
      f();
      if (!outbox.empty() && scheduler) {
        if (was_empty) outbox_since = now();
        if (batch && outbox.size() < kBatchMax && now() - outbox_since < kBatchWindow && more_work_queued()) {
          if (!flush_armed) {
            flush_armed = true;
            fcv.notify_one();
          }
        } else {
          send_outbox();
        }
      }
      todo.swap(gathers);
    }
    for (auto& g : todo) start_gather(std::move(g));
  }
  void handle(WorkerEvent e);
  void route(WorkerAction a);
  void check_memory();
  // Spills results while the process's resident memory is above WorkerOptions::memory_spill of
  // its limit (at most every 50 ms: it reads /proc); thread-safe, called by check_memory().
  void spill_for_resident_memory();
  std::atomic<std::int64_t> last_resident_check_ns{0};
  void exec_loop(int thread);
  void run_task(const Execute& ex, int thread);

  // ---- fetching from peers (worker_fetch.cpp) ----
  void start_gather(GatherDep g);
  void request_peer(const std::string& peer, comm::Message req, RpcTable::Callback cb);
  void peer_gone(const std::string& peer);

  // ---- serving peers and clients (worker_serve.cpp) ----
  void on_accept(std::shared_ptr<comm::Comm> c);
  void serve(const std::shared_ptr<comm::Comm>& c, const comm::Message& m);

  // ---- the scheduler connection (worker_scheduler_link.cpp) ----
  void on_scheduler_message(const comm::Message& m);
  bool more_work_queued();
  void report_later(wire::WorkerToScheduler e);
  void send_outbox();  // under mu
  void flush_loop();
  void heartbeat_loop();
  void probe_scheduler();
};

}  // namespace tessera::distributed
