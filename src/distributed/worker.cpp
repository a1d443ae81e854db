// A worker: its lifecycle (start, shutdown), what it reports about itself, and the public
// Worker class. The rest of Worker::Impl is in the files worker_impl.hpp lists.
#include "worker_impl.hpp"

#include <unistd.h>

#include <system_error>

#include "../core/logging.hpp"
#include "core/blas_threads.hpp"
#include "core/host_buffer_cache.hpp"
#include "nanny.hpp"
#include "nvml.hpp"
#include "options_check.hpp"
#include "tessera/ops/registry.hpp"
#include "util.hpp"
#include "worker_shuffle.hpp"

namespace tessera::distributed {
namespace {

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

}  // namespace

// CPU, memory and GPU now: the CPU since the last call. NVML answers only for a worker with
// a GPU (by its UUID); without NVML the GPU fields stay empty.
ProcessUsage Worker::Impl::measure_usage() {
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

WorkerStats Worker::Impl::collect_stats() {
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
WorkerSnapshot Worker::Impl::snapshot() {
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

WorkerConfig Worker::Impl::state_config(const WorkerOptions& o) {
  WorkerConfig c;
  c.nthreads = std::max(1, o.nthreads);
  c.resources = o.resources;
  return c;
}

DataStoreOptions Worker::Impl::store_options(const WorkerOptions& o) {
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
void Worker::Impl::setup_gpu() {
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

Worker::Impl::Impl(WorkerOptions o) : opt(std::move(o)), state(state_config(opt)), store(store_options(opt)) {
  // Freed buffers kept for reuse count in the process's memory, which the nanny and the
  // pause threshold watch: keep them to a 16th of the worker's limit.
  if (opt.memory_limit > 0) tessera::detail::HostBufferCache::instance().limit_capacity(opt.memory_limit / 16);
  // The handlers run only while tasks do, which the Impl outlives.
  shuffle = std::make_unique<WorkerShuffle>(WorkerShuffle::Host{
      address, store,
      [this](comm::Message m) {
        std::shared_ptr<comm::Comm> s = scheduler;
        if (!s) throw Error("worker " + address + " has no scheduler to run a shuffle with");
        // The scheduler answers at once unless overloaded; one that is gone fails the request
        // when its connection closes.
        return scheduler_rpc.call(s, std::move(m), std::chrono::seconds(120));
      },
      [this](const std::string& peer, comm::Message m, RpcTable::Callback cb) {
        request_peer(peer, std::move(m), std::move(cb));
      },
      [this] { step([&] { check_memory(); }); }});
}

Worker::Impl::~Impl() = default;

void Worker::Impl::close_async(std::string reason, bool tell_scheduler) {
  std::thread([self = shared_from_this(), reason, tell_scheduler] { self->shutdown(reason, tell_scheduler); })
      .detach();
}

void Worker::Impl::shutdown(const std::string& reason, bool tell_scheduler) {
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

void Worker::Impl::start() {
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
          self->scheduler_rpc.fail_all(reason ? reason : std::make_exception_ptr(comm::CommClosedError("scheduler closed")));
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
