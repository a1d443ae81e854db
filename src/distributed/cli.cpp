// The command lines of tessera-scheduler and tessera-worker (also reached through
// tessera::init() when an application runs as its own worker). Flags follow Dask's
// `dask scheduler` / `dask worker` where the meaning is the same.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "data_store.hpp"
#include "util.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/init.hpp"

namespace tessera {
namespace {

std::atomic<bool> g_initialized{false};

// The library already logs to stderr (src/core/logging.cpp); this sets the level.
void setup_logging(const std::string& level_flag) {
  std::string level = level_flag;
  if (level.empty())
    if (const char* e = std::getenv("TESSERA_LOG_LEVEL")) level = e;
  if (level.empty()) level = "info";
  if (level == "warn") level = "warning";
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    throw CLI::ValidationError("--log-level", "unknown level '" + level + "' (trace, debug, info, warning, error)");
  spdlog::set_level(lvl);
}

// --preload, --token and --log-level mean the same for both binaries.
void add_shared_flags(CLI::App& app, std::vector<std::string>& preloads, std::string& token, std::string& log_level) {
  app.add_option("--preload", preloads, "Shared library to load at start, e.g. task functions (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--token", token, "Shared secret peers must present (default: $TESSERA_TOKEN)");
  app.add_option("--log-level", log_level, "trace, debug, info, warning, error (default: $TESSERA_LOG_LEVEL or info)");
}

// A worker's default threads when nworkers share this machine.
int threads_per_worker(int nworkers) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max(1u, cores / static_cast<unsigned>(std::max(1, nworkers))));
}

void preload(const std::vector<std::string>& libs) {
  for (const auto& lib : libs) {
    // RTLD_GLOBAL: a plugin may register ops that other plugins use.
    void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) throw Error(std::string("--preload ") + lib + ": " + ::dlerror());
    spdlog::info("preloaded {}", lib);
  }
}

// Calls on_signal(sig) on a watcher thread for SIGINT and SIGTERM. A handler writing to a
// pipe, not sigwait() with blocked signals: threads started before main (OpenBLAS's pool)
// would not have them blocked and would take the default action (die) instead.
int g_signal_pipe[2] = {-1, -1};
extern "C" void tessera_on_term_signal(int sig) {
  unsigned char c = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &c, 1);
}

class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int)> on_signal) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw Error("cannot create the signal pipe");
    struct sigaction sa {};
    sa.sa_handler = tessera_on_term_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    thread_ = std::thread([on_signal = std::move(on_signal)] {
      unsigned char c = 0;
      while (::read(g_signal_pipe[0], &c, 1) == 1 && c != 0) {
        spdlog::info("received signal {}, closing", static_cast<int>(c));
        on_signal(c);
      }
    });
  }
  ~SignalWatcher() {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    unsigned char stop = 0;
    [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &stop, 1);
    thread_.join();
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::thread thread_;
};

// A process started by a LocalCluster dies with it, even when the parent is SIGKILLed. Not
// PR_SET_PDEATHSIG: that fires when the *thread* that spawned us exits, and a cluster may be
// created on a thread that ends long before the program does. A watchdog polls the parent.
void die_with_parent() {
  const char* p = std::getenv("TESSERA_PARENT_PID");
  if (!p) return;
  const pid_t parent = static_cast<pid_t>(std::atol(p));
  if (::getppid() != parent) std::_Exit(1);  // the parent is already gone
  std::thread([parent] {
    while (::getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::_Exit(1);
  }).detach();
}

std::string host_of(const std::string& address) {
  auto s = address.find("://");
  std::string rest = s == std::string::npos ? address : address.substr(s + 3);
  auto colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

}  // namespace

bool initialized_as_app() noexcept { return g_initialized.load(); }

void init(int argc, char** argv) {
  g_initialized = true;
  if (argc >= 2 && std::string(argv[1]) == kWorkerModeFlag) {
    std::fflush(stdout);
    std::exit(distributed::worker_main(argc - 1, argv + 1));
  }
}

namespace distributed {

int scheduler_main(int argc, char** argv) {
  die_with_parent();
  CLI::App app{"tessera-scheduler: the Tessera scheduler (like `dask scheduler`)", "tessera-scheduler"};
  std::string host = "127.0.0.1", protocol = "tcp", scheduler_file, log_level, dashboard, token;
  int port = 8786;
  double idle_timeout = 0, worker_ttl = 300;
  std::vector<std::string> preloads;
  app.add_option("--host", host, "Address to listen on (0.0.0.0 for every interface)")->capture_default_str();
  app.add_option("--port", port, "Port to listen on (0 picks a free one)")->capture_default_str();
  app.add_option("--protocol", protocol, "Transport: tcp")->capture_default_str();
  app.add_option("--scheduler-file", scheduler_file, "Write the scheduler's address to this JSON file");
  app.add_option("--idle-timeout", idle_timeout, "Close after this many seconds with no clients and no tasks");
  app.add_option("--worker-ttl", worker_ttl, "Remove a worker silent for this many seconds")->capture_default_str();
  app.add_option("--dashboard-address", dashboard, "Accepted for compatibility; there is no dashboard yet");
  add_shared_flags(app, preloads, token, log_level);
  try {
    app.parse(argc, argv);
    setup_logging(log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    token = token_or_env(token);
    if (!dashboard.empty()) spdlog::warn("--dashboard-address: Tessera has no dashboard yet; ignored");
    preload(preloads);
    SchedulerOptions so;
    so.address = protocol + "://" + host + ":" + std::to_string(port);
    so.token = token;
    so.scheduler_file = scheduler_file;
    so.idle_timeout = idle_timeout;
    so.state.worker_ttl = worker_ttl;
    // The watcher comes first, so that a signal during start-up is not the default action
    // (death); it stops the scheduler as soon as there is one.
    std::mutex mu;
    Scheduler* live = nullptr;
    bool stop_requested = false;
    SignalWatcher signals([&](int) {
      std::lock_guard lock(mu);
      if (live) live->stop(true);
      else stop_requested = true;
    });
    Scheduler sched(so);
    {
      std::lock_guard lock(mu);
      live = &sched;
      if (stop_requested) sched.stop(true);
    }
    std::cerr << "tessera-scheduler listening at " << sched.address() << std::endl;  // stdout stays clean
    sched.wait();
    {
      std::lock_guard lock(mu);
      live = nullptr;
    }
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("tessera-scheduler: {}", e.what());
    return 1;
  }
}

namespace {

// --nworkers N > 1: run N single-worker processes of this same command and wait for them.
int run_nworkers(int argc, char** argv, int nworkers, const std::string& name, int nthreads,
                 const std::string& memory_limit) {
  std::vector<pid_t> pids;
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (int i = 0; i < nworkers; ++i) {
    std::vector<std::string> args{self};
    if (std::string(argv[0]) == kWorkerModeFlag) args.push_back(kWorkerModeFlag);
    for (int a = 1; a < argc; ++a) {
      std::string s = argv[a];
      if (s == "--nworkers" || s == "--name" || s == "--nthreads" || s == "--memory-limit") {
        ++a;
        continue;
      }
      if (s.rfind("--nworkers=", 0) == 0 || s.rfind("--name=", 0) == 0 || s.rfind("--nthreads=", 0) == 0 ||
          s.rfind("--memory-limit=", 0) == 0)
        continue;
      args.push_back(s);
    }
    // Each child gets its share of the machine, as with dask worker --nworkers.
    int threads = nthreads > 0 ? nthreads : threads_per_worker(nworkers);
    std::size_t limit = parse_memory_limit(memory_limit, system_memory(), nworkers);
    args.insert(args.end(), {"--nworkers", "1", "--name", (name.empty() ? "worker" : name) + "-" + std::to_string(i),
                             "--nthreads", std::to_string(threads), "--memory-limit", std::to_string(limit)});
    try {
      pids.push_back(spawn_process(args, {{"TESSERA_PARENT_PID", std::to_string(::getpid())}}));  // die with us
    } catch (const std::exception& e) {
      spdlog::error("tessera-worker: cannot start worker {}: {}", i, e.what());
      for (pid_t p : pids) ::kill(p, SIGTERM);
      return 1;
    }
  }
  SignalWatcher signals([pids](int sig) {
    for (pid_t p : pids) ::kill(p, sig);
  });
  int worst = 0;
  for (pid_t p : pids) {
    int status = 0;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) worst = 1;
  }
  return worst;
}

}  // namespace

int worker_main(int argc, char** argv) {
  die_with_parent();
  CLI::App app{"tessera-worker: a Tessera worker (like `dask worker`)", "tessera-worker"};
  std::string scheduler, scheduler_file, name, resources, memory_limit = "auto", local_directory, log_level, token;
  std::string host, listen_address, protocol = "tcp";
  int nthreads = 0, nworkers = 1, worker_port = 0;
  double death_timeout = 60, heartbeat = 0.5;
  std::vector<std::string> preloads;
  app.add_option("scheduler", scheduler, "Scheduler address, e.g. tcp://127.0.0.1:8786");
  app.add_option("--scheduler-file", scheduler_file, "Read the scheduler's address from this file");
  app.add_option("--nthreads", nthreads, "Threads running tasks (default: cores / nworkers)");
  app.add_option("--nworkers", nworkers, "Worker processes to start")->capture_default_str();
  app.add_option("--resources", resources, "Abstract resources, e.g. \"GPU=2 MEM=10e9\"");
  app.add_option("--memory-limit", memory_limit,
                 "Bytes of results held in memory before spilling: auto, 0 (none), 4GB, 0.5 (of RAM)")
      ->capture_default_str();
  app.add_option("--name", name, "Worker name (default: its address)");
  app.add_option("--local-directory", local_directory, "Directory for spilled data (default: system temp)");
  app.add_option("--death-timeout", death_timeout, "Seconds to wait for the scheduler before giving up")
      ->capture_default_str();
  app.add_option("--host", host, "Interface to listen on for peers (default: as the scheduler's)");
  app.add_option("--worker-port", worker_port, "Port to listen on for peers (0 = any free)");
  app.add_option("--listen-address", listen_address, "Full listen address, e.g. tcp://0.0.0.0:9000");
  app.add_option("--protocol", protocol, "Transport: tcp")->capture_default_str();
  app.add_option("--heartbeat-interval", heartbeat, "Seconds between heartbeats")->capture_default_str();
  add_shared_flags(app, preloads, token, log_level);
  try {
    app.parse(argc, argv);
    setup_logging(log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (nworkers > 1) return run_nworkers(argc, argv, nworkers, name, nthreads, memory_limit);
    if (nworkers < 1) throw Error("--nworkers must be at least 1");
    if (scheduler.empty() && scheduler_file.empty())
      throw Error("give the scheduler address (tcp://host:port) or --scheduler-file");
    if (scheduler.empty()) scheduler = read_scheduler_file(scheduler_file, death_timeout);
    token = token_or_env(token);
    preload(preloads);
    WorkerOptions wo;
    wo.scheduler_address = scheduler;
    if (listen_address.empty()) {
      if (host.empty()) {
        std::string sh = host_of(scheduler);
        host = (sh == "127.0.0.1" || sh == "localhost") ? "127.0.0.1" : "0.0.0.0";
      }
      listen_address = protocol + "://" + host + ":" + std::to_string(worker_port);
    }
    wo.listen_address = listen_address;
    wo.name = name;
    wo.nthreads = nthreads > 0 ? nthreads : threads_per_worker(nworkers);
    if (!resources.empty()) wo.resources = parse_resources(resources);
    wo.memory_limit = parse_memory_limit(memory_limit, system_memory(), nworkers);
    wo.local_directory = local_directory;
    wo.token = token;
    wo.heartbeat_interval = heartbeat;
    wo.death_timeout = death_timeout;
    // As for the scheduler: a signal while connecting closes the worker once it exists.
    std::mutex mu;
    std::shared_ptr<Worker> worker;
    bool stop_requested = false;
    std::string reason;
    {
      SignalWatcher signals([&](int) {
        std::shared_ptr<Worker> w;
        {
          std::lock_guard lock(mu);
          w = worker;
          if (!w) stop_requested = true;
        }
        if (w) w->close();
      });
      auto w = std::make_shared<Worker>(wo);
      bool stop_now;
      {
        std::lock_guard lock(mu);
        worker = w;
        stop_now = stop_requested;
      }
      if (stop_now) w->close();
      reason = w->wait();
    }
    worker.reset();
    spdlog::info("tessera-worker: closed ({})", reason);
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("tessera-worker: {}", e.what());
    return 1;
  }
}

}  // namespace distributed
}  // namespace tessera
