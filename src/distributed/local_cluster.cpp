#include "tessera/distributed/local_cluster.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <spdlog/spdlog.h>

#include "tessera/core/error.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/init.hpp"
#include "../core/logging.hpp"
#include "data_store_limits.hpp"
#include "nanny.hpp"
#include "rpc.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"

namespace tessera::distributed {
namespace {

using Clock = std::chrono::steady_clock;


// Where libtessera.so lives, to find tessera-worker next to it (build tree: build/src and
// build/bin; install tree: lib/ and bin/).
std::filesystem::path library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_worker_command), &info) && info.dli_fname)
    return std::filesystem::path(info.dli_fname).parent_path();
  return {};
}

struct Child {
  pid_t pid = -1;
  bool reaped = false;
  int status = 0;
  bool registered = false;  // seen registered once: a death after that is a crash to restart
  std::deque<std::chrono::steady_clock::time_point> restarts;  // crash restarts in the last minute
  // How it was started: a worker that exits kExitRestartRequested is started again the same way.
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};


/** A program installed beside the library (build tree: bin/; installed: the same folder), else its name for PATH. */
std::string bundled_program(const std::string& name) {
  const auto dir = library_dir();
  if (!dir.empty())
    for (auto candidate : {dir / ".." / "bin" / name, dir / name}) {
      std::error_code ec;
      if (std::filesystem::exists(candidate, ec)) return std::filesystem::weakly_canonical(candidate).string();
    }
  return name;
}

}  // namespace

std::vector<std::string> default_worker_command() {
  if (const char* p = std::getenv("TESSERA_WORKER_PROGRAM"); p && *p) return {p};
  if (initialized_as_app()) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) return {self.string(), kWorkerModeFlag};
  }
  return {bundled_program("tessera-worker")};
}

struct LocalCluster::Impl {
  LocalClusterOptions opt;
  std::unique_ptr<Scheduler> scheduler;
  Child scheduler_child;  // when the scheduler runs as a process
  std::string scheduler_file;
  // Asks a scheduler process how many workers it has. It never registers (it is no client), so the
  // scheduler closes it after --registration-timeout: it is dialled again when next needed.
  std::shared_ptr<comm::Comm> info_comm;
  std::mutex info_mu;  // guards the replacement of info_comm and info_rpc
  // Shared with info_comm's handlers (one per connection): close() closes the comm, whose close
  // handler then runs on the I/O thread, possibly after this Impl is gone (ThreadSanitizer saw
  // fail_all write the table while ~Impl destroyed it).
  std::shared_ptr<RpcTable> info_rpc;
  std::string address;
  std::string client_address;  // inproc:// for clients in this process, when the scheduler is here
  // Worker processes. This cluster is their nanny for Client::restart (docs/nanny.md): the
  // watcher thread reaps them and starts again at once one that exited kExitRestartRequested.
  // children_mu guards `children` and `closing` (the watcher and the caller's thread).
  std::mutex children_mu;
  std::condition_variable watcher_cv;
  std::vector<Child> children;
  bool closing = false;
  std::thread watcher;
  std::vector<std::unique_ptr<Worker>> threads;
  std::vector<std::string> worker_cmd;
  std::size_t memory_limit = 0;  // per worker, resolved once (auto: memory / n_workers)
  bool closed = false;

  std::string worker_name(std::size_t i) const {
    const auto& names = opt.worker_names;
    if (names.empty()) return "worker-" + std::to_string(i);
    if (i < names.size()) return names[i];
    return names[i % names.size()] + "-" + std::to_string(i / names.size());
  }

  /** The processes' --log-level: the option, else $TESSERA_LOG_LEVEL, else warning. */
  std::string child_log_level() const {
    if (!opt.log_level.empty()) return opt.log_level;
    const char* e = std::getenv("TESSERA_LOG_LEVEL");
    return e && *e ? e : "warning";
  }

  // The TLS files for child processes, through their TESSERA_TLS_* variables (tls:// only).
  void add_tls_env(std::map<std::string, std::string>& env) const {
    if (opt.protocol != "tls") return;
    env["TESSERA_TLS_CA_FILE"] = opt.security.tls_ca_file;
    env["TESSERA_TLS_CERT"] = opt.security.tls_cert;
    env["TESSERA_TLS_KEY"] = opt.security.tls_key;
  }

  void start_process_worker(std::size_t i) {
    std::vector<std::string> argv = worker_cmd;
    argv.push_back(address);
    argv.insert(argv.end(), {"--nthreads", std::to_string(opt.threads_per_worker), "--name", worker_name(i),
                             "--memory-limit", std::to_string(memory_limit), "--death-timeout",
                             std::to_string(static_cast<int>(std::max(10.0, opt.timeout))), "--heartbeat-interval",
                             std::to_string(opt.heartbeat_interval), "--host", opt.host});
    if (!opt.resources.empty()) argv.insert(argv.end(), {"--resources", opt.resources});
    argv.insert(argv.end(), {"--protocol", opt.protocol});  // listens on ucx:// too (docs/ucx.md)
    if (!opt.local_directory.empty()) argv.insert(argv.end(), {"--local-directory", opt.local_directory});
    for (const auto& p : opt.preload) argv.insert(argv.end(), {"--preload", p});
    argv.insert(argv.end(), {"--log-level", child_log_level()});
    // This cluster watches its worker processes itself (worker_pids() are the workers), and is
    // the nanny that starts again one that Client::restart asked to restart (TESSERA_NANNY_PID).
    argv.push_back("--no-nanny");
    argv.insert(argv.end(), opt.worker_args.begin(), opt.worker_args.end());
    std::map<std::string, std::string> env;
    env["TESSERA_TOKEN"] = opt.token;
    add_tls_env(env);
    env["TESSERA_PARENT_PID"] = std::to_string(::getpid());  // the worker dies with us
    env[kNannyPidEnv] = std::to_string(::getpid());         // restart() restarts it, through us
    if (!opt.worker_env.empty())
      for (const auto& [k, v] : opt.worker_env[i % opt.worker_env.size()]) env[k] = v;
    Child c;
    c.pid = spawn_process(argv, env);
    c.argv = std::move(argv);
    c.env = std::move(env);
    {
      std::lock_guard lock(children_mu);
      children.push_back(std::move(c));
    }
    if (!watcher.joinable()) watcher = std::thread([this] { watch_children(); });
  }

  // The watcher: every 20 ms, reaps what exited and restarts what asked to be restarted.
  void watch_children() {
    std::unique_lock lock(children_mu);
    while (!closing) {
      reap_locked(0);
      watcher_cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return closing; });
    }
  }

  void start_thread_worker(std::size_t i) {
    WorkerOptions w;
    w.scheduler_address = address;
    w.listen_address = opt.protocol == "inproc" ? "inproc://" : opt.protocol + "://" + opt.host + ":0";
    w.name = worker_name(i);
    w.nthreads = opt.threads_per_worker;
    if (!opt.resources.empty()) w.resources = parse_resources(opt.resources);
    w.memory_limit = memory_limit;
    w.local_directory = opt.local_directory;
    w.token = opt.token;
    w.security = opt.security;
    w.heartbeat_interval = opt.heartbeat_interval;
    w.death_timeout = opt.timeout;
    threads.push_back(std::make_unique<Worker>(w));
  }

  // Reaps children that exited; returns a description of the first one (from index `from` on)
  // that exited, now or before (the watcher may have reaped it).
  std::string reap_exited(std::size_t from = 0) {
    std::lock_guard lock(children_mu);
    return reap_locked(from);
  }
  std::string reap_locked(std::size_t from) {
    std::string first;
    for (std::size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      if (!c.reaped) {
        int status = 0;
        if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
        if (!closing && WIFEXITED(status) && WEXITSTATUS(status) == kExitRestartRequested) {
          // Client::restart asked it to restart: the same worker (name, options) again, at once.
          try {
            const pid_t old = c.pid;
            c.pid = spawn_process(c.argv, c.env);
            logging::info("LocalCluster: worker process {} (pid {}) restarted on request (Client::restart); now pid {}",
                         i, old, c.pid);
            continue;
          } catch (const std::exception& e) {
            logging::error("LocalCluster: cannot start worker process {} again: {}", i, e.what());
          }
        }
        // As a nanny (nanny.cpp): exit 0 is a worker closed on purpose and kExitSchedulerGone one
        // that gave up on the scheduler, neither started again; any other death of a worker that
        // had registered is a crash, started again at once within the cap. One that dies before
        // registering is reported by wait_for_workers instead.
        const bool crashed = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                                                     WEXITSTATUS(status) != kExitSchedulerGone);
        if (!closing && crashed && c.registered && opt.restart_dead_workers) {
          const auto now = Clock::now();
          while (!c.restarts.empty() && now - c.restarts.front() > std::chrono::minutes(1)) c.restarts.pop_front();
          if (static_cast<int>(c.restarts.size()) < opt.max_restarts_per_minute) {
            try {
              const pid_t old = c.pid;
              c.pid = spawn_process(c.argv, c.env);
              c.restarts.push_back(now);
              logging::warn("LocalCluster: worker process {} (pid {}) {}; started again as pid {} ({} of at most {} a minute)",
                            i, old, describe_status(status), c.pid, c.restarts.size(), opt.max_restarts_per_minute);
              continue;
            } catch (const std::exception& e) {
              logging::error("LocalCluster: cannot start worker process {} again: {}", i, e.what());
            }
          } else {
            logging::error("LocalCluster: worker process {} (pid {}) {}; started again {} times in the last minute "
                           "already: not again",
                           i, c.pid, describe_status(status), c.restarts.size());
          }
        }
        c.reaped = true;
        c.status = status;
      }
      if (first.empty() && i >= from)
        first = "worker process " + std::to_string(i) + " (pid " + std::to_string(c.pid) + ") " +
                describe_status(c.status);
    }
    return first;
  }

  void start_scheduler_process() {
    const std::string program = bundled_program("tessera-scheduler");
    scheduler_file = (std::filesystem::temp_directory_path() /
                      ("tessera-scheduler-" + std::to_string(::getpid()) + "-" + random_hex(8) + ".json"))
                         .string();
    std::vector<std::string> argv{program, "--host", opt.host, "--port", std::to_string(opt.scheduler_port),
                                  "--protocol", opt.protocol, "--scheduler-file", scheduler_file, "--worker-ttl",
                                  std::to_string(opt.worker_ttl), "--log-level", child_log_level(),
                                  // as the in-process scheduler: LocalCluster has no dashboard option yet
                                  "--no-dashboard"};
    std::map<std::string, std::string> env{{"TESSERA_TOKEN", opt.token},
                                           {"TESSERA_PARENT_PID", std::to_string(::getpid())}};
    add_tls_env(env);
    scheduler_child.pid = spawn_process(argv, env);
    auto deadline = Clock::now() + std::chrono::duration<double>(opt.timeout);
    while (true) {
      std::error_code ec;
      if (std::filesystem::exists(scheduler_file, ec)) {
        address = read_scheduler_file(scheduler_file);
        break;
      }
      int status = 0;
      if (::waitpid(scheduler_child.pid, &status, WNOHANG) == scheduler_child.pid) {
        scheduler_child.reaped = true;
        throw Error("LocalCluster: the scheduler process " + describe_status(status) + " (see its messages on stderr)");
      }
      if (Clock::now() > deadline) throw Error("LocalCluster: the scheduler process did not start in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    connect_info();
  }

  void connect_info() {
    comm::CommOptions co;
    co.token = opt.token;
    co.security = opt.security;
    co.max_header_bytes = kClusterMaxHeaderBytes;
    auto c = comm::connect(address, co);
    // A table per connection: the close of an old one fails only its own requests.
    auto rpc = std::make_shared<RpcTable>();
    c->set_handlers([rpc](comm::Message m) { rpc->complete(m); }, [rpc](std::exception_ptr e) { rpc->fail_all(e); });
    info_comm = std::move(c);
    info_rpc = std::move(rpc);
  }

  // info_comm and its table, dialled again if the scheduler closed it.
  std::pair<std::shared_ptr<comm::Comm>, std::shared_ptr<RpcTable>> live_info_comm() {
    std::lock_guard lock(info_mu);
    if (info_comm->is_closed()) connect_info();
    return {info_comm, info_rpc};
  }

  std::vector<std::string> worker_names() {
    std::vector<std::string> out;
    if (scheduler) {
      for (auto& w : scheduler->workers()) out.push_back(w.name);
    } else if (info_comm) {
      auto [c, rpc] = live_info_comm();
      auto reply = rpc->call(c, comm::Message(wire::kSchedulerInfo), std::chrono::milliseconds(10000));
      for (auto& w : reply.get<wire::ClusterInfo>("info").workers) out.push_back(w.summary.name);
    }
    return out;
  }
  std::size_t worker_count() { return worker_names().size(); }

  // Waits until the workers from .. to - 1 (by name) are registered; fails when
  // one of those children exits first (older children may have died on purpose).
  void wait_for_workers(std::size_t from, std::size_t to) {
    auto deadline = Clock::now() + std::chrono::duration<double>(opt.timeout);
    while (true) {
      auto names = worker_names();
      std::size_t have = 0;
      for (std::size_t i = from; i < to; ++i)
        if (std::find(names.begin(), names.end(), worker_name(i)) != names.end()) have++;
      if (have == to - from) {
        std::lock_guard lock(children_mu);
        for (std::size_t i = from; i < to && i < children.size(); ++i) children[i].registered = true;
        return;
      }
      if (std::string dead = reap_exited(from); !dead.empty())
        throw Error("LocalCluster: " + dead + " before registering (see its messages on stderr)");
      if (Clock::now() > deadline)
        throw Error("LocalCluster: only " + std::to_string(have) + " of " + std::to_string(to - from) +
                    " workers registered within " + std::to_string(opt.timeout) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void close() {
    if (closed) return;
    closed = true;
    {
      std::lock_guard lock(children_mu);
      closing = true;  // no worker is started again from now on
    }
    watcher_cv.notify_all();
    if (watcher.joinable()) watcher.join();
    if (scheduler) scheduler->stop(true);  // asks every worker to close
    {
      std::lock_guard lock(info_mu);
      if (info_comm) info_comm->close();
    }
    if (scheduler_child.pid > 0 && !scheduler_child.reaped) {
      ::kill(scheduler_child.pid, SIGTERM);  // it asks every worker to close, then exits
      auto deadline = Clock::now() + std::chrono::seconds(3);
      while (Clock::now() < deadline &&
             ::waitpid(scheduler_child.pid, &scheduler_child.status, WNOHANG) != scheduler_child.pid)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (Clock::now() >= deadline) {
        ::kill(scheduler_child.pid, SIGKILL);
        ::waitpid(scheduler_child.pid, &scheduler_child.status, 0);
      }
      scheduler_child.reaped = true;
    }
    if (!scheduler_file.empty()) {
      std::error_code ec;
      std::filesystem::remove(scheduler_file, ec);
    }
    threads.clear();
    // Give worker processes a moment to exit on their own, then kill what is left.
    auto deadline = Clock::now() + std::chrono::seconds(3);
    while (Clock::now() < deadline) {
      reap_exited();
      bool all = true;
      for (auto& c : children) all = all && c.reaped;  // the watcher is gone: no lock needed
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (auto& c : children) {
      if (c.reaped) continue;
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.status, 0);
      c.reaped = true;
    }
    scheduler.reset();
  }
};

LocalCluster::LocalCluster(LocalClusterOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opt = std::move(options);
  if (m.opt.n_workers < 0) throw Error("LocalCluster: n_workers must be >= 0");
  if (m.opt.threads_per_worker < 1) throw Error("LocalCluster: threads_per_worker must be >= 1");
  if (m.opt.protocol == "inproc" && m.opt.processes)
    throw Error("LocalCluster: the inproc protocol needs processes = false");
  if (m.opt.token.empty()) m.opt.token = random_hex(32);
  if (m.opt.protocol == "tls") {
    m.opt.security = m.opt.security.with_env_defaults();
    try {
      comm::check_security(m.opt.security, /*for_listener=*/true);
    } catch (const comm::CommError& e) {
      throw Error(std::string("LocalCluster (protocol tls): ") + e.what());
    }
  }
  // Checked before anything starts; "auto" is this machine's share per worker, as in Dask.
  m.memory_limit = parse_memory_limit(m.opt.memory_limit, system_memory(), std::max(1, m.opt.n_workers));
  // Worker processes refuse a limit they cannot live under (tessera-worker exits 105): said here
  // first. Workers in this process share its memory; their limit bounds only their results.
  if (m.opt.processes) {
    try {
      check_worker_memory_limit(m.memory_limit, m.opt.memory_limit, std::max(1, m.opt.n_workers));
    } catch (const Error& e) {
      throw Error(std::string("LocalCluster: ") + e.what());
    }
  }
  try {
    if (m.opt.scheduler_process) {
      if (!m.opt.processes) throw Error("LocalCluster: scheduler_process needs processes = true");
      m.start_scheduler_process();
    } else {
      SchedulerOptions so;
      so.address = m.opt.protocol == "inproc"
                       ? "inproc://"
                       : m.opt.protocol + "://" + m.opt.host + ":" + std::to_string(m.opt.scheduler_port);
      so.token = m.opt.token;
      so.security = m.opt.security;
      so.state.worker_ttl = m.opt.worker_ttl;
      if (m.opt.protocol != "inproc") so.also_listen = {"inproc://"};
      m.scheduler = std::make_unique<Scheduler>(so);
      m.address = m.scheduler->address();
      auto others = m.scheduler->other_addresses();
      m.client_address = others.empty() ? m.address : others.front();
    }
  } catch (...) {
    m.close();
    throw;
  }
  try {
    if (m.opt.processes) {
      m.worker_cmd = m.opt.worker_program.empty() ? default_worker_command()
                                                  : std::vector<std::string>{m.opt.worker_program};
      for (int i = 0; i < m.opt.n_workers; ++i) m.start_process_worker(static_cast<std::size_t>(i));
    } else {
      for (int i = 0; i < m.opt.n_workers; ++i) m.start_thread_worker(static_cast<std::size_t>(i));
    }
    m.wait_for_workers(0, static_cast<std::size_t>(m.opt.n_workers));
  } catch (...) {
    m.close();
    throw;
  }
}

LocalCluster::~LocalCluster() { impl_->close(); }

const std::string& LocalCluster::scheduler_address() const { return impl_->address; }
const std::string& LocalCluster::token() const { return impl_->opt.token; }
const comm::Security& LocalCluster::security() const { return impl_->opt.security; }
const std::string& LocalCluster::client_address() const {
  return impl_->client_address.empty() ? impl_->address : impl_->client_address;
}
Scheduler& LocalCluster::scheduler() {
  if (!impl_->scheduler)
    throw Error(impl_->opt.scheduler_process ? "LocalCluster: the scheduler runs as its own process"
                                             : "LocalCluster is closed");
  return *impl_->scheduler;
}
int LocalCluster::scheduler_pid() const { return impl_->scheduler_child.reaped ? 0 : impl_->scheduler_child.pid; }
std::size_t LocalCluster::worker_count() const { return impl_->worker_count(); }
const LocalClusterOptions& LocalCluster::options() const { return impl_->opt; }

std::vector<int> LocalCluster::worker_pids() const {
  std::lock_guard lock(impl_->children_mu);
  std::vector<int> out;
  for (const auto& c : impl_->children) out.push_back(c.pid);
  return out;
}

void LocalCluster::signal_worker(std::size_t i, int signal) {
  std::lock_guard lock(impl_->children_mu);
  if (i >= impl_->children.size()) throw Error("LocalCluster: no worker process " + std::to_string(i));
  if (!impl_->children[i].reaped) ::kill(impl_->children[i].pid, signal);
}

std::size_t LocalCluster::add_worker() {
  Impl& m = *impl_;
  std::size_t i;
  {
    std::lock_guard lock(m.children_mu);
    i = m.opt.processes ? m.children.size() : m.threads.size();
  }
  if (m.opt.processes) m.start_process_worker(i);
  else m.start_thread_worker(i);
  m.wait_for_workers(i, i + 1);
  return i;
}

void LocalCluster::close() { impl_->close(); }

// ---- LocalCUDACluster ---------------------------------------------------------------------------

LocalCUDACluster::Plan LocalCUDACluster::plan(const LocalCUDAClusterOptions& o) {
  if (o.n_workers < 0) throw Error("LocalCUDACluster: n_workers must be >= 0");
  if (o.threads_per_worker < 1) throw Error("LocalCUDACluster: threads_per_worker must be >= 1");
  if (o.protocol == "inproc") throw Error("LocalCUDACluster: its workers are processes; use tcp, not inproc");
  check_device_memory_limit(o.device_memory_limit);
  std::optional<std::string> visible = o.cuda_visible_devices;
  if (!visible)
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) visible = v;
  Plan p;
  std::vector<std::string> all;
  const GpuDiscovery found = discover_gpus();  // NVML, no CUDA context here; also for CPU affinity
  try {
    all = gpu_worker_devices(visible, found);
  } catch (const Error& e) {
    throw Error(std::string("LocalCUDACluster: ") + e.what());
  }
  const std::size_t n = o.n_workers > 0 ? static_cast<std::size_t>(o.n_workers) : all.size();
  if (n > all.size())
    throw Error("LocalCUDACluster: n_workers = " + std::to_string(n) + " but only " + std::to_string(all.size()) +
                " devices (" + cuda_visible_devices_for(0, all) + ")");
  LocalClusterOptions& c = p.cluster;
  c.n_workers = static_cast<int>(n);
  c.threads_per_worker = o.threads_per_worker;
  c.processes = true;  // CUDA_VISIBLE_DEVICES is per process
  c.scheduler_process = o.scheduler_process;
  c.protocol = o.protocol;
  c.host = o.host;
  c.scheduler_port = o.scheduler_port;
  c.resources = gpu_worker_resources(o.resources);
  c.memory_limit = o.memory_limit;
  c.local_directory = o.local_directory;
  c.preload = o.preload;
  c.worker_program = o.worker_program;
  c.worker_args = o.worker_args;
  c.worker_args.insert(c.worker_args.end(), {"--device-memory-limit", o.device_memory_limit});
  c.token = o.token;
  c.security = o.security;
  c.worker_ttl = o.worker_ttl;
  c.heartbeat_interval = o.heartbeat_interval;
  c.timeout = o.timeout;
  c.log_level = o.log_level;
  c.restart_dead_workers = o.restart_dead_workers;
  c.max_restarts_per_minute = o.max_restarts_per_minute;
  // As dask-cuda: worker i sees every device, its own first; with n_workers < devices, the
  // first n devices get a worker.
  for (std::size_t i = 0; i < n; ++i) {
    c.worker_env.push_back({{"CUDA_VISIBLE_DEVICES", cuda_visible_devices_for(i, all)}});
    // Pinned to the CPUs near its GPU (dask-cuda's CPUAffinity), unless the user set the
    // variable for every worker.
    if (!std::getenv(kCpuAffinityEnv))
      if (std::string cpus = gpu_worker_cpus(found, all[i]); !cpus.empty()) c.worker_env.back()[kCpuAffinityEnv] = cpus;
    c.worker_names.push_back(gpu_worker_name(o.name_prefix, all[i]));
    p.devices.push_back(all[i]);
  }
  return p;
}

LocalCUDACluster::LocalCUDACluster(LocalCUDAClusterOptions options) : LocalCUDACluster(plan(options)) {}

LocalCUDACluster::LocalCUDACluster(Plan p) : LocalCluster(std::move(p.cluster)), devices_(std::move(p.devices)) {}

}  // namespace tessera::distributed
