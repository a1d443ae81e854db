#include "tessera/distributed/worker.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <future>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "../core/logging.hpp"
#include "dashboard.hpp"
#include "nvml.hpp"
#include "process_cpu.hpp"
#include "nanny.hpp"
#include "data_store.hpp"
#include "options_check.hpp"
#include "rpc.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/distributed/worker_state.hpp"
#include "tessera/ops/registry.hpp"
#include "wire.hpp"
#include "core/blas_threads.hpp"
#include "core/host_buffer_cache.hpp"

namespace tessera::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// How long a worker asked to restart may take to close cleanly (its spill files removed) before
// the process ends anyway: a task cannot be interrupted, and restart() should not wait for it.
constexpr std::chrono::seconds kRestartGrace{2};

// The data stores of this process's GPU workers. The device runtime has one pressure handler
// per process (thread workers share a process), which asks each store in turn to move device
// values to host. Leaked on purpose: the runtime may call the handler during exit.
struct GpuStores {
  std::mutex mu;  // guards list only; never held while a store runs
  std::vector<std::weak_ptr<DataStore>> list;

  static GpuStores& get() {
    static auto* g = new GpuStores;
    return *g;
  }
  static std::size_t relieve(int device, std::size_t bytes) {
    std::vector<std::shared_ptr<DataStore>> stores;
    {
      auto& g = get();
      std::lock_guard lock(g.mu);
      for (auto& w : g.list)
        if (auto s = w.lock()) stores.push_back(std::move(s));
    }
    std::size_t freed = 0;
    for (auto& s : stores) {
      if (freed >= bytes) break;
      freed += s->relieve_device_pressure(device, bytes - freed);
    }
    return freed;
  }
  void add(const std::shared_ptr<DataStore>& store, DeviceRuntime* rt) {
    {
      std::lock_guard lock(mu);
      std::erase_if(list, [](const auto& w) { return w.expired(); });
      list.push_back(store);
    }
    rt->set_pressure_handler(&GpuStores::relieve);  // idempotent; outside mu
  }
  void remove(const DataStore* store) {
    std::lock_guard lock(mu);
    std::erase_if(list, [&](const auto& w) {
      auto s = w.lock();
      return !s || s.get() == store;
    });
  }
};

// A connection to a peer worker, used to fetch its data. Requests wait while it connects.
struct Peer {
  std::shared_ptr<comm::Comm> comm;
  RpcTable rpc;
  std::vector<std::pair<comm::Message, RpcTable::Callback>> waiting;
  bool failed = false;
};

}  // namespace

struct Worker::Impl : std::enable_shared_from_this<Worker::Impl> {
  WorkerOptions opt;
  Clock::time_point started = Clock::now();
  std::string address;
  int device = -1;  // CUDA ordinal of this worker's GPU (0 once pinned), -1 without one
  GpuInfo gpu;      // when device >= 0
  bool gpu_registered = false;  // its store is in GpuStores
  std::unique_ptr<comm::Listener> listener;
  std::shared_ptr<comm::Comm> scheduler;

  std::mutex mu;  // guards the state machine, the outbox and peers
  WorkerState state;
  std::vector<wire::WorkerToScheduler> outbox;
  std::vector<WorkerAction> actions;
  std::vector<GatherDep> gathers;  // issued after the lock is released
  std::unordered_map<std::string, std::shared_ptr<Peer>> peers;

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

  // CPU, memory and GPU now: the CPU since the last call. NVML answers only for a worker with
  // a GPU (by its UUID); without NVML the GPU fields stay empty.
  ProcessUsage measure_usage() {
    ProcessUsage u;
    u.cpu = cpu_meter.sample();
    u.rss = resident_bytes();
    if (device >= 0)
      if (auto g = gpu_usage(gpu.uuid, static_cast<unsigned>(std::max(0, gpu.ordinal)))) {
        u.gpu_name = g->name;
        u.gpu_utilization = g->utilization;
        u.gpu_memory_used = g->memory_used;
        u.gpu_memory_total = g->memory_total;
        u.gpu_pcie_tx = g->pcie_tx;
        u.gpu_pcie_rx = g->pcie_rx;
        u.gpu_nvlink_tx = g->nvlink_tx;
        u.gpu_nvlink_rx = g->nvlink_rx;
      }
    std::lock_guard lock(usage_mu);
    usage = u;
    return u;
  }

  WorkerStats collect_stats() {
    WorkerStats s;
    s.executed = executed;
    s.failed = failed;
    s.fetched_keys = fetched_keys;
    s.fetched_bytes = fetched_bytes;
    s.fetches = fetches;
    s.served_keys = served_keys;
    s.served_requests = served_requests;
    s.served_bytes = served_bytes;
    s.memory_bytes = store.memory_bytes();
    s.spilled_bytes = store.spilled_bytes();
    const DataStoreStats st = store.stats();
    s.spilled = st.spilled;
    s.device = device;
    s.device_bytes = store.device_bytes();
    s.device_spilled = st.device_spilled;
    s.device_spilled_bytes = st.device_spilled_bytes;
    std::lock_guard lock(mu);
    s.paused = state.paused();
    return s;
  }

  // What the dashboard serves; it asks at most a few times a second.
  WorkerSnapshot snapshot() {
    WorkerSnapshot s;
    s.address = address;
    s.name = opt.name;
    s.nthreads = std::max(1, opt.nthreads);
    s.memory_limit = opt.memory_limit;
    s.stats = collect_stats();
    std::vector<std::size_t> counts;
    {
      std::lock_guard lock(mu);
      counts = state.status_counts();
      s.transfer_incoming_count = state.in_flight_peers();
    }
    for (std::size_t i = 0; i < counts.size(); ++i)
      s.task_states.emplace_back(worker_task_status_name(static_cast<WorkerTaskStatus>(i)), counts[i]);
    {
      std::lock_guard q(qmu);
      for (const auto& t : running_now)
        if (t) s.running.emplace_back(t->key, t->op);
    }
    {
      std::lock_guard lock(usage_mu);
      s.usage = usage;
    }
    s.scheduler = opt.scheduler_address;
    s.uptime = now();
    return s;
  }

  static WorkerConfig state_config(const WorkerOptions& o) {
    WorkerConfig c;
    c.nthreads = std::max(1, o.nthreads);
    c.resources = o.resources;
    return c;
  }
  static DataStoreOptions store_options(const WorkerOptions& o) {
    DataStoreOptions s;
    s.memory_limit = o.memory_limit;
    s.target = o.memory_target;
    s.pause = o.memory_pause;
    s.directory = o.local_directory;
    s.device_memory_limit = o.device_memory_limit;
    return s;
  }

  // With GpuPolicy::Auto and a device runtime that has a device: this worker uses device 0 (the
  // one CUDA_VISIBLE_DEVICES put first), caps its pool, and lets the pool spill this worker's
  // device values to host when an allocation runs short.
  void setup_gpu() {
    if (opt.gpu == GpuPolicy::Off) return;
    DeviceRuntime* rt = device_runtime();
    if (!rt || rt->device_count() <= 0) {
      logging::debug("worker: no GPU ({})", rt ? std::string("no CUDA device visible") : device_runtime_status());
      return;
    }
    try {
      gpu = rt->info(0);
      rt->set_memory_limit(0, opt.device_memory_limit);
    } catch (const std::exception& e) {
      logging::warn("worker: not using GPU 0: {}", e.what());
      return;
    }
    device = 0;
    // An aliasing pointer: the handler keeps this Impl alive while it runs.
    GpuStores::get().add(std::shared_ptr<DataStore>(shared_from_this(), &store), rt);
    gpu_registered = true;
  }

  explicit Impl(WorkerOptions o) : opt(std::move(o)), state(state_config(opt)), store(store_options(opt)) {
    // Freed buffers kept for reuse count in the process's memory, which the nanny and the
    // pause threshold watch: keep them to a 16th of the worker's limit.
    if (opt.memory_limit > 0) tessera::detail::HostBufferCache::instance().limit_capacity(opt.memory_limit / 16);
  }

  double now() const { return std::chrono::duration<double>(Clock::now() - started).count(); }

  // ---- the state machine ----------------------------------------------------------------------------
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
  bool more_work_queued() {
    std::lock_guard q(qmu);
    return !queue.empty();
  }
  // Queues an event for the scheduler off the state machine (no step); the flusher sends it with
  // whatever else is reported within kBatchWindow.
  void report_later(wire::WorkerToScheduler e) {
    std::lock_guard lock(mu);
    if (!scheduler) return;
    if (outbox.empty()) outbox_since = now();
    outbox.push_back(std::move(e));
    if (!flush_armed) {
      flush_armed = true;
      fcv.notify_one();
    }
  }
  void send_outbox() {  // under mu
    scheduler->send(wire::batch_message(wire::kWorkerEvents, outbox), nullptr);
    outbox.clear();
    flush_armed = false;
  }
  double outbox_since = 0;
  bool flush_armed = false;
  std::condition_variable fcv;  // with mu: wakes flush_loop
  std::thread flusher;

  // Sends reports that step() held back once their batch window has passed.
  void flush_loop() {
    std::unique_lock lock(mu);
    while (!closing_now()) {
      fcv.wait_for(lock, std::chrono::milliseconds(100), [&] { return flush_armed || closing_now(); });
      if (closing_now()) break;
      if (!flush_armed) continue;
      double due = outbox_since + kBatchWindow;
      while (flush_armed && now() < due && !closing_now())
        fcv.wait_for(lock, std::chrono::duration<double>(due - now()));
      if (flush_armed && !outbox.empty() && scheduler) send_outbox();
      flush_armed = false;
    }
  }

  void handle(WorkerEvent e) {
    actions.clear();
    state.handle(std::move(e), actions);
    std::vector<WorkerAction> acts = std::move(actions);
    for (auto& a : acts) route(std::move(a));
  }

  void route(WorkerAction a) {
    std::visit(
        [&](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, GatherDep>) {
            gathers.push_back(std::move(x));
          } else if constexpr (std::is_same_v<T, Execute>) {
            {
              std::lock_guard q(qmu);
              queue.push_back(std::move(x));
            }
            qcv.notify_one();
          } else if constexpr (std::is_same_v<T, ReleaseData>) {
            store.erase(x.key);
          } else {
            outbox.push_back(std::move(x));
          }
        },
        a);
  }

  // Pauses or resumes the state machine when the store crossed its pause threshold.
  void check_memory() {
    // Pausing waits for spilling to make room; when spilling fails (disk full, directory gone)
    // no room comes, and a paused worker would hold its clients forever. It runs on instead,
    // and each result it cannot hold fails its task with the reason (execute()).
    bool p = store.paused() && store.spill_error().empty();
    if (p != state.paused()) {
      logging::info("worker {}: {} ({} bytes in memory, {} spilled)", address, p ? "paused" : "resumed",
                   store.memory_bytes(), store.spilled_bytes());
      handle(PauseWorker{p});
    }
  }

  // ---- running tasks ------------------------------------------------------------------------------------
  void exec_loop(int thread) {
    while (true) {
      Execute ex;
      {
        std::unique_lock q(qmu);
        running_now[static_cast<std::size_t>(thread)].reset();
        qcv.wait(q, [&] { return !queue.empty() || closing_now(); });
        if (closing_now()) return;
        ex = std::move(queue.front());
        queue.pop_front();
        running_now[static_cast<std::size_t>(thread)] = ex.task;
      }
      run_task(ex, thread);
    }
  }
  bool closing_now() const {
    std::lock_guard l(cmu);
    return closing;
  }

  void run_task(const Execute& ex, int thread) {
    const Task& task = *ex.task;
    std::vector<Value> args;
    args.reserve(task.args.size());
    std::string missing;
    for (const Arg& a : task.args) {
      if (auto* r = std::get_if<KeyRef>(&a)) {
        auto v = store.get(r->key);
        if (!v) {
          missing = r->key;
          break;
        }
        args.push_back(std::move(*v));
      } else {
        args.push_back(std::get<Value>(a));
      }
    }
    double t0 = now();
    Value result;
    std::string error;
    if (!missing.empty()) {
      error = "input " + missing + " of task " + task.key + " is not on worker " + address;
    } else {
      try {
        OpContext ctx;
        ctx.key = &task.key;
        ctx.target = task.annotations.target;
        ctx.device = device;  // this worker's GPU (-1 without one); run_op picks the stream
        result = run_op(task.op, ctx, args);
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
    }
    double t1 = now();
    args.clear();
    std::size_t nbytes = 0;
    std::string type;
    if (error.empty()) {
      nbytes = result.nbytes();
      type = wire::value_type(result);
      store.put(task.key, std::move(result));
      std::string why = store.paused() ? store.spill_error() : std::string();
      if (!why.empty()) {
        store.erase(task.key);
        error = "worker " + address + " cannot hold the result of " + task.key +
                ": its memory is above the pause threshold and spilling to disk failed: " + why;
        // The store warned once already; one line per task would flood the log.
        logging::debug("{}", error);
      }
    }
    if (error.empty()) {
      executed++;
      step(
          [&] {
            handle(ExecuteSuccess{task.key, nbytes, std::move(type), t0, t1, thread});
            check_memory();
          },
          /*batch=*/true);
    } else {
      failed++;
      logging::debug("worker {}: task {} raised: {}", address, task.key, error);
      step([&] { handle(ExecuteFailure{task.key, error, "in operation '" + task.op + "' on worker " + address}); });
    }
  }

  // ---- fetching from peers -------------------------------------------------------------------------------
  void start_gather(GatherDep g) {
    comm::Message req(wire::kGetData);
    req.set("keys", g.keys);
    if (device >= 0) req.set(wire::kTakesDeviceBlocks, true);
    std::weak_ptr<Impl> weak = shared_from_this();
    std::string peer_addr = g.peer;
    const double asked = now();  // the transfer's bar starts here (connecting included)
    RpcTable::Callback cb = [weak, peer_addr, asked](const comm::Message* reply, std::exception_ptr err) {
      auto self = weak.lock();
      if (!self) return;
      if (err) {
        std::string why = describe_exception(err);
        logging::warn("worker {}: fetching from {} failed: {}", self->address, peer_addr, why);
        self->step([&] { self->handle(GatherDepFailure{peer_addr, why}); });
        return;
      }
      std::vector<std::pair<Key, std::size_t>> got;
      std::size_t got_bytes = 0;
      try {
        auto keys = reply->get<std::vector<Key>>("keys");
        auto values = wire::get_values(*reply);
        if (values.size() != keys.size()) throw Error("get-data reply has " + std::to_string(keys.size()) +
                                                      " keys but " + std::to_string(values.size()) + " values");
        for (std::size_t i = 0; i < keys.size(); ++i) {
          std::size_t nb = values[i].nbytes();
          self->fetched_bytes += nb;
          got_bytes += nb;
          self->store.put(keys[i], std::move(values[i]));
          got.push_back({keys[i], nb});
        }
        self->fetched_keys += keys.size();
        self->fetches++;
      } catch (const std::exception& e) {
        std::string why = e.what();
        self->step([&] { self->handle(GatherDepFailure{peer_addr, why}); });
        return;
      }
      const double arrived = self->now();
      const std::size_t nkeys = got.size();
      self->step([&] {
        self->outbox.push_back(wire::TransferDone{{}, peer_addr, nkeys, got_bytes, asked, arrived});
        self->handle(GatherDepSuccess{peer_addr, std::move(got)});
        self->check_memory();
      });
    };

    std::shared_ptr<Peer> p;
    bool connect = false;
    {
      std::lock_guard lock(mu);
      auto& slot = peers[g.peer];
      if (!slot || slot->failed) {
        slot = std::make_shared<Peer>();
        connect = true;
      }
      p = slot;
      if (!p->comm) {
        p->waiting.push_back({std::move(req), std::move(cb)});
      }
    }
    if (p->comm) {
      p->rpc.request(p->comm, std::move(req), std::move(cb));
      return;
    }
    if (!connect) return;
    comm::CommOptions co;
    co.token = opt.token;
    co.security = opt.security;
    co.name = address;
    co.max_header_bytes = kClusterMaxHeaderBytes;
    comm::connect_async(g.peer, co, [weak, p](std::shared_ptr<comm::Comm> c, std::exception_ptr err) {
      auto self = weak.lock();
      if (!err && !self) err = std::make_exception_ptr(comm::CommClosedError("worker closed"));
      std::vector<std::pair<comm::Message, RpcTable::Callback>> waiting;
      {
        std::unique_lock<std::mutex> lock;
        if (self) lock = std::unique_lock(self->mu);
        if (!err && p->failed)  // peer_gone came while it connected
          err = std::make_exception_ptr(comm::CommClosedError("the scheduler reported the peer gone"));
        if (err) {
          p->failed = true;
        } else {
          p->comm = c;
        }
        waiting.swap(p->waiting);
      }
      if (err && c) c->close();
      if (err) {
        for (auto& [m, cb] : waiting) cb(nullptr, err);
        return;
      }
      // The handlers hold the peer weakly: `peers` owns it and it owns the comm that owns
      // them, so a strong capture is a cycle that outlives a worker stopped before the comm
      // reports its close (LeakSanitizer saw it, now and then, with in-process workers).
      std::weak_ptr<Peer> weak_peer = p;
      c->set_handlers(
          [weak_peer](comm::Message m) {
            if (auto peer = weak_peer.lock()) peer->rpc.complete(m);
          },
          [weak, weak_peer](std::exception_ptr reason) {
            auto peer = weak_peer.lock();
            if (!peer) return;
            if (auto s = weak.lock()) {
              std::lock_guard lock(s->mu);
              peer->failed = true;
            }
            peer->rpc.fail_all(reason ? reason : std::make_exception_ptr(comm::CommClosedError("peer closed")));
          });
      for (auto& [m, cb] : waiting) p->rpc.request(c, std::move(m), std::move(cb));
    });
  }

  // The scheduler removed `peer` (or counts it silent): transfers from it fail now instead of
  // waiting for a stopped process. Three places may hold such a transfer: a connection open to
  // it (closed: its requests fail), a connection still being made (a stopped process's kernel
  // completes the TCP handshake, so only the hello timeout would end it: its waiting requests
  // fail now and the connection is dropped when it arrives), and fetches queued in the state
  // machine that name it as a holder (a GatherDepFailure forgets it for all of them).
  void peer_gone(const std::string& peer) {
    std::shared_ptr<comm::Comm> c;
    std::vector<std::pair<comm::Message, RpcTable::Callback>> waiting;
    {
      std::lock_guard lock(mu);
      if (auto it = peers.find(peer); it != peers.end() && it->second) {
        c = it->second->comm;
        it->second->failed = true;
        waiting.swap(it->second->waiting);
      }
    }
    if (c) c->close();
    auto why = std::make_exception_ptr(comm::CommClosedError("the scheduler reported " + peer + " gone"));
    for (auto& [req, cb] : waiting) cb(nullptr, why);
    step([&] { handle(GatherDepFailure{peer, "the scheduler reported it gone"}); });
  }

  // ---- serving peers and clients ---------------------------------------------------------------------------
  void on_accept(std::shared_ptr<comm::Comm> c) {
    std::weak_ptr<Impl> weak = shared_from_this();
    std::weak_ptr<comm::Comm> wc = c;
    c->set_handlers(
        [weak, wc](comm::Message m) {
          auto self = weak.lock();
          auto conn = wc.lock();
          if (self && conn) self->serve(conn, m);
        },
        [weak, wc](std::exception_ptr) {
          auto self = weak.lock();
          if (!self) return;
          std::lock_guard lock(self->mu);
          std::erase_if(self->served_conns, [&](const auto& x) { return x == wc.lock() || x->is_closed(); });
        });
    // Held here so that shutdown() can close it; dropped when it closes.
    std::lock_guard lock(mu);
    served_conns.push_back(c);
  }
  std::vector<std::shared_ptr<comm::Comm>> served_conns;

  void serve(const std::shared_ptr<comm::Comm>& c, const comm::Message& m) {
    try {
      if (m.op == wire::kGetData) {
        const double asked = now();  // a client's transfer bar starts here
        auto keys = m.get<std::vector<Key>>("keys");
        std::vector<Key> found;
        std::vector<Value> values;
        for (auto& k : keys)
          if (auto v = store.get(k)) {
            found.push_back(k);
            values.push_back(std::move(*v));
          }
        served_keys += found.size();
        served_requests++;
        std::size_t nbytes = 0;
        for (const auto& v : values) nbytes += v.nbytes();
        served_bytes += nbytes;
        comm::Message reply = make_reply(m);
        reply.set("keys", found);
        const bool device_frames = m.has(wire::kTakesDeviceBlocks) && m.get<bool>(wire::kTakesDeviceBlocks) &&
                                   c->sends_device_frames();
        wire::put_values(reply, values, device_frames ? wire::DeviceBlocks::AsIs : wire::DeviceBlocks::ToHost);
        if (!m.has(wire::kGetDataClient)) {
          c->send(std::move(reply), nullptr);  // a peer's fetch: the peer reports it (TransferDone)
          return;
        }
        // A client's fetch: a transfer bar on this worker's row, from the request to the reply
        // written; it goes with whatever else this worker reports within the batch window.
        std::weak_ptr<Impl> weak = shared_from_this();
        c->send(std::move(reply), [weak, client = m.get<std::string>(wire::kGetDataClient), nkeys = found.size(),
                                   nbytes, asked](std::exception_ptr err) {
          auto self = weak.lock();
          if (err || !self) return;
          self->report_later(wire::TransferDone{{}, client, nkeys, nbytes, asked, self->now()});
        });
      } else if (m.op == wire::kRun) {
        auto op = m.get<std::string>("op");
        auto args = wire::get_values(m);
        comm::Message reply = make_reply(m);
        try {
          OpContext ctx;
          Value v = run_op(op, ctx, args);
          wire::put_values(reply, {v});
        } catch (const std::exception& e) {
          reply = make_error_reply(m, e.what());
        }
        c->send(std::move(reply), nullptr);
      } else {
        throw Error("unknown message '" + m.op + "'");
      }
    } catch (const std::exception& e) {
      logging::warn("worker {}: closing connection from {}: {}", address, c->peer_address(), e.what());
      if (m.has("id")) c->send(make_error_reply(m, e.what()), nullptr);
      c->close();
    }
  }

  // ---- the scheduler connection -------------------------------------------------------------------------------
  void on_scheduler_message(const comm::Message& m) {
    last_heard_from_scheduler = now();
    if (m.op == wire::kReply) {
      // the answer to a liveness probe (heartbeat_loop): hearing it was the point
    } else if (m.op == wire::kSchedulerEvents) {
      auto events = wire::batch_events<wire::SchedulerToWorker>(m);
      step([&] {
        for (auto& e : events) std::visit([&](auto& x) { handle(WorkerEvent(std::move(x))); }, e);
      });
    } else if (m.op == wire::kPeerGone) {
      peer_gone(m.get<std::string>("address"));
    } else if (m.op == wire::kCloseWorker) {
      // Before the connection's close, which follows at once: that one must not read as a
      // scheduler lost (worker_main would wait for it to come back).
      scheduler_said_close = true;
      close_async("the scheduler asked it to close", false);
    } else if (m.op == wire::kRestartWorker) {
      // Client::restart: this process exits kExitRestartRequested and its nanny starts it
      // again at once. A task still running cannot be stopped, and its result is forgotten
      // anyway: past a short grace the process ends without waiting for it.
      scheduler_said_close = true;
      if (opt.nanny_pid > 0)
        std::thread([] {
          std::this_thread::sleep_for(kRestartGrace);
          std::_Exit(kExitRestartRequested);
        }).detach();
      close_async(opt.nanny_pid > 0 ? kRestartRequestedReason : "the scheduler asked it to close", false);
    } else if (m.op == wire::kRegistered) {
      if (registration_answered.exchange(true)) return;  // answered once; a second is ignored
      if (m.has("error")) {
        // Refused (docs/security.md: a live worker has this address): start() fails with why.
        registered.set_exception(std::make_exception_ptr(
            Error("the scheduler at " + opt.scheduler_address + " refused this worker: " + m.get<std::string>("error"))));
        return;
      }
      {
        std::lock_guard l(cmu);
        if (m.has("secret")) registration_secret = m.get<std::string>("secret");
      }
      registered.set_value();
    } else {
      logging::warn("worker {}: unexpected message '{}' from the scheduler", address, m.op);
    }
  }
  std::promise<void> registered;
  std::string registration_secret;  // the scheduler's, from the reply; guarded by cmu
  std::atomic<bool> registration_answered{false};

  void close_async(std::string reason, bool tell_scheduler) {
    std::thread([self = shared_from_this(), reason, tell_scheduler] { self->shutdown(reason, tell_scheduler); })
        .detach();
  }

  void heartbeat_loop() {
    std::unique_lock l(cmu);
    while (!closing) {
      ccv.wait_for(l, std::chrono::duration<double>(opt.heartbeat_interval));
      if (closing) break;
      l.unlock();
      ProcessUsage u = measure_usage();  // outside the lock: NVML may take a moment
      step([&] {
        outbox.push_back(Heartbeat{address, now(), store.memory_bytes(), store.device_bytes(),
                                   store.stats().device_spilled_bytes, store.spilled_bytes(), fetched_bytes.load(),
                                   served_bytes.load(), u});
        check_memory();
      });
      probe_scheduler();
      l.lock();
    }
  }

  // Asks the scheduler something it always answers (who has nothing), or gives it up when it
  // answered nothing for death_timeout.
  void probe_scheduler() {
    // Never less than a few heartbeats: the last probe's answer may be one interval old.
    const double limit = std::max(opt.death_timeout, 3 * opt.heartbeat_interval);
    const double silent = now() - last_heard_from_scheduler.load();
    if (silent > limit) {
      std::ostringstream os;
      os << "lost the scheduler: it answered nothing for " << std::fixed << std::setprecision(1) << silent
         << " s (--death-timeout " << opt.death_timeout << " s)";
      close_async(os.str(), false);
      return;
    }
    comm::Message probe(wire::kWhoHas);
    probe.set("id", next_probe_id++);
    probe.set("keys", std::vector<Key>{});
    scheduler->send(std::move(probe), nullptr);
  }

  void shutdown(const std::string& reason, bool tell_scheduler) {
    {
      std::lock_guard l(cmu);
      if (closing) return;
      closing = true;
      close_reason = reason;
    }
    logging::info("worker {}: closing: {}", address, reason);
    if (dashboard) dashboard->stop();
    {
      // Under qmu: exec_loop reads `closing` (under cmu) while it holds qmu, before it blocks. A
      // notify between the two is lost, and that thread waited for ever (a SIGTERM right after
      // registering, as the task threads started, left the worker hanging until its nanny
      // killed it). Taking qmu here orders the notify after any such check.
      std::lock_guard q(qmu);
    }
    qcv.notify_all();
    ccv.notify_all();
    {
      std::lock_guard lock(mu);
      fcv.notify_all();
    }
    if (tell_scheduler && scheduler && !scheduler->is_closed())
      scheduler->send(comm::Message(wire::kUnregister)).wait_for(std::chrono::seconds(2));
    if (listener) listener->stop();
    for (auto& t : threads)
      if (t.joinable()) t.join();
    if (gpu_registered) GpuStores::get().remove(&store);
    if (heartbeat.joinable()) heartbeat.join();
    if (flusher.joinable()) flusher.join();
    std::vector<std::shared_ptr<comm::Comm>> to_close;
    {
      std::lock_guard lock(mu);
      for (auto& [a, p] : peers)
        if (p->comm) to_close.push_back(p->comm);
      peers.clear();
      to_close.insert(to_close.end(), served_conns.begin(), served_conns.end());
      served_conns.clear();
      if (scheduler) to_close.push_back(scheduler);
    }
    for (auto& c : to_close) c->close();
    {
      std::lock_guard l(cmu);
      closed = true;
    }
    ccv.notify_all();
  }

  void start() {
    setup_gpu();
    comm::CommOptions co;
    co.token = opt.token;
    co.security = opt.security;
    co.max_header_bytes = kClusterMaxHeaderBytes;
    std::weak_ptr<Impl> weak = shared_from_this();
    listener = comm::listen(
        opt.listen_address,
        [weak](std::shared_ptr<comm::Comm> c) {
          if (auto self = weak.lock()) self->on_accept(std::move(c));
        },
        co,
        [](const std::string& peer, std::exception_ptr reason) {
          // comm already logs refusals, at a bounded rate (a peer may cause them at will).
          logging::debug("worker: refused connection from {}: {}", peer, describe_exception(reason));
        });
    address = listener->address();
    co.name = opt.name.empty() ? address : opt.name;
    scheduler = connect_to_scheduler(opt.scheduler_address, co, std::chrono::duration<double>(opt.death_timeout), "worker");
    // Listening on every interface: tell peers the address this host reaches the scheduler from.
    if (auto pos = address.find("0.0.0.0"); pos != std::string::npos) {
      std::string local = scheduler->local_address();  // "tcp://10.0.0.5:41234"
      auto s = local.find("://");
      auto colon = local.rfind(':');
      if (s != std::string::npos && colon != std::string::npos && colon > s + 3)
        address.replace(pos, 7, local.substr(s + 3, colon - s - 3));
    }
    if (opt.name.empty()) opt.name = address;
    if (!opt.dashboard_address.empty()) {
      DashboardOptions d;
      d.http.address = opt.dashboard_address;
      d.http.default_host = dashboard_host_of(address);
      d.http.name = "worker " + opt.name + " dashboard";
      // shutdown() stops it before this Impl can go (the destructor runs shutdown()).
      dashboard = std::make_unique<WorkerDashboard>(d, [this] { return snapshot(); });
      opt.extra["dashboard"] = dashboard->url();
    }
    {
      // The state machine needs the address it is known by.
      std::lock_guard lock(mu);
      WorkerConfig wc = state_config(opt);
      wc.address = address;
      state = WorkerState(wc);
    }
    auto reg = registered.get_future();
    scheduler->set_handlers(
        [weak](comm::Message m) {
          if (auto self = weak.lock()) self->on_scheduler_message(m);
        },
        [weak](std::exception_ptr reason) {
          if (auto self = weak.lock()) {
            if (self->scheduler_said_close) return;  // closing already, as asked
            self->close_async("lost the scheduler: " + describe_exception(reason), false);
          }
        });
    last_heard_from_scheduler = now();
    wire::WorkerHello hello;
    hello.add.address = address;
    hello.add.name = opt.name;
    hello.add.nthreads = std::max(1, opt.nthreads);
    hello.add.resources = opt.resources;
    hello.add.memory_limit = opt.memory_limit;
    hello.add.ops = OpRegistry::global().names();
    if (device >= 0) {
      // With a GPU this worker also runs device tasks (of any op: one with no device variant
      // runs its host variant on copies of the inputs).
      const std::size_t n = hello.add.ops.size();
      for (std::size_t i = 0; i < n; ++i) hello.add.ops.push_back(hello.add.ops[i] + kDeviceOpSuffix);
    }
    hello.pid = static_cast<int>(::getpid());
    hello.host = host_name();
    hello.local_directory = opt.local_directory;
    hello.extra = opt.extra;
    // What carries its scheduler link ("ucx (sysv/memory, cma/memory)" or "tcp") and what its
    // listener offers peers (docs/ucx.md).
    hello.extra["comm"] = scheduler->transport();
    hello.extra["transports"] = address.rfind("tls://", 0) == 0 ? "tls"
                                : address.rfind("ucx://", 0) == 0 && comm::ucx_status().available ? "ucx,tcp"
                                                                                                   : "tcp";
    if (device >= 0) {
      hello.gpus.push_back(gpu);
      hello.device_memory_limit = opt.device_memory_limit;
    }
    comm::Message m(wire::kRegisterWorker);
    m.set("worker", hello);
    if (!opt.registration_secret.empty()) m.set("secret", opt.registration_secret);
    if (opt.nanny_pid > 0) m.set(wire::kNannyField, opt.nanny_pid);
    scheduler->send(std::move(m));
    if (reg.wait_for(std::chrono::duration<double>(std::max(5.0, opt.death_timeout))) != std::future_status::ready)
      throw comm::CommError("worker: the scheduler at " + opt.scheduler_address + " did not answer registration");
    reg.get();  // throws the scheduler's refusal
    // Registered: a nanny restarts this process from now on if it dies. Before any task runs,
    // so that a poison task sent at once still counts as a death after registering.
    tell_nanny_ready();
    // Several workers share a host (and a worker may run several tasks): BLAS on one thread each.
    tessera::detail::single_thread_blas();
    {
      // Under cmu and only while not closing: a close-worker arriving right after the
      // registration runs shutdown() on another thread, which joins these threads
      // (ThreadSanitizer saw it read `heartbeat` while this assigned it).
      std::lock_guard l(cmu);
      if (!closing) {
        running_now.resize(static_cast<std::size_t>(std::max(1, opt.nthreads)));
        try {
          for (int i = 0; i < std::max(1, opt.nthreads); ++i) threads.emplace_back([this, i] { exec_loop(i); });
          heartbeat = std::thread([this] { heartbeat_loop(); });
          flusher = std::thread([this] { flush_loop(); });
        } catch (const std::system_error& e) {
          // EAGAIN alone ("Resource temporarily unavailable") does not say what ran out.
          throw Error("worker: cannot start thread " + std::to_string(threads.size() + 1) + " of " +
                      std::to_string(opt.nthreads) + " (--nthreads): " + e.what() +
                      " (the system's limit on threads, ulimit -u or kernel.threads-max, or memory for their "
                      "stacks)");
        }
      }
    }
    std::string gpu_text = "no GPU";
    if (device >= 0)
      gpu_text = "GPU " + std::to_string(device) + ": " + describe_gpu(gpu) + ", device memory limit " +
                 (opt.device_memory_limit ? std::to_string(opt.device_memory_limit) + " bytes" : std::string("none"));
    logging::info("worker {} ({}): registered with {}, {} threads, {}", address, opt.name, opt.scheduler_address,
                 opt.nthreads, gpu_text);
    if (dashboard) logging::info("worker {}: dashboard at {}", opt.name, dashboard->url());
  }
};

Worker::Worker(WorkerOptions options) : impl_(std::make_shared<Impl>(checked_options(std::move(options)))) {
  try {
    impl_->start();
  } catch (...) {
    impl_->shutdown("failed to start", false);
    throw;
  }
}

Worker::~Worker() {
  impl_->shutdown("closed by its owner", true);
  wait();
}

const std::string& Worker::address() const { return impl_->address; }

std::string Worker::wait() {
  std::unique_lock l(impl_->cmu);
  impl_->ccv.wait(l, [&] { return impl_->closed; });
  return impl_->close_reason;
}

void Worker::close() {
  impl_->shutdown("closed by its owner", true);
  wait();
}

bool Worker::closed() const {
  std::lock_guard l(impl_->cmu);
  return impl_->closed;
}

WorkerStats Worker::stats() const { return impl_->collect_stats(); }

std::string Worker::registration_secret() const {
  std::lock_guard l(impl_->cmu);
  return impl_->registration_secret;
}

std::string Worker::dashboard_url() const { return impl_->dashboard ? impl_->dashboard->url() : std::string(); }

}  // namespace tessera::distributed
