// The command lines of tessera-scheduler, tessera-worker and tessera-cuda-worker (also reached
// through tessera::init() when an application runs as its own worker). Flags follow Dask's
// `dask scheduler` / `dask worker` / `dask cuda worker` where the meaning is the same.
//
// This file holds tessera::init and what every server process does at start: its logging, the
// signal watcher, the watchdog on a LocalCluster parent, the descriptor limit, --preload and the
// CPU affinity. The flags, their checks, the mains and the nanny's children are in the other
// cli*.cpp files, over cli_internal.hpp.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "../core/logging.hpp"
#include "cli_internal.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/init.hpp"

namespace tessera {
namespace {

std::atomic<bool> g_initialized{false};

}  // namespace

bool initialized_as_app() noexcept { return g_initialized.load(); }

void init(int argc, char** argv) {
  g_initialized = true;
  if (argc >= 2 && std::string(argv[1]) == kWorkerModeFlag) {
    std::fflush(stdout);
    std::exit(distributed::worker_main(argc - 1, argv + 1));
  }
  if (argc >= 2 && std::string(argv[1]) == kCudaWorkerModeFlag) {
    std::fflush(stdout);
    std::exit(distributed::cuda_worker_main(argc - 1, argv + 1));
  }
}

namespace distributed::cli {

// A scheduler or worker process belongs to Tessera (the bundled binaries, or an application
// that tessera::init() turned into a worker), so its logging is Tessera's to set: the library's
// logger at --log-level, also made spdlog's default so that the few messages written to the
// default logger keep its format and stderr. A process that only uses the library (a client,
// LocalCluster, the executors) never gets here.
void setup_logging(const std::string& level_flag) {
  std::string level = level_flag;
  if (level.empty())
    if (const char* e = std::getenv("TESSERA_LOG_LEVEL")) level = e;
  if (level.empty()) level = "info";
  if (level == "warn") level = "warning";
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    throw CLI::ValidationError("--log-level", "unknown level '" + level + "' (trace, debug, info, warning, error)");
  set_library_log_level(lvl);
  spdlog::set_default_logger(library_logger());
}

void preload(const std::vector<std::string>& libs) {
  for (const auto& lib : libs) {
    // RTLD_GLOBAL: a plugin may register ops that other plugins use.
    void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) throw Error(std::string("--preload ") + lib + ": " + ::dlerror());
    logging::info("preloaded {}", lib);
  }
}

namespace {

// SignalWatcher: a handler writing to a pipe, not sigwait() with blocked signals: threads
// started before main (OpenBLAS's pool) would not have them blocked and would take the default
// action (die) instead.
int g_signal_pipe[2] = {-1, -1};
extern "C" void tessera_on_term_signal(int sig) {
  unsigned char c = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &c, 1);
}

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

// Servers raise their soft descriptor limit to the hard one, as nginx and Dask do: a default
// soft limit of 1024 would otherwise cap a scheduler at 768 connections (three quarters, the
// listener's default max_connections) on a machine whose administrator allows far more.
void raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const rlim_t was = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0)
    logging::debug("could not raise the descriptor limit from {}: {}", was, std::strerror(errno));
}

}  // namespace

SignalWatcher::SignalWatcher(std::function<void(int)> on_signal) {
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
      logging::info("received signal {}, closing", static_cast<int>(c));
      on_signal(c);
    }
  });
}

SignalWatcher::~SignalWatcher() {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  unsigned char stop = 0;
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &stop, 1);
  thread_.join();
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
}

// Before anything that sizes itself by the descriptor limit (the listeners' caps).
void start_server_process() {
  die_with_parent();
  raise_open_file_limit();
}

// $TESSERA_CPU_AFFINITY: pins every thread of this worker, those already started included.
// A malformed list is an error; CPUs the system refuses (outside a cgroup's set) leave the
// worker unpinned with a warning, since it can still do its work.
void apply_cpu_affinity_env() {
  const char* v = std::getenv(kCpuAffinityEnv);
  if (!v || !*v || std::string_view(v) == "none") return;
  std::vector<int> cpus;
  try {
    cpus = parse_cpu_list(v);
  } catch (const Error& e) {
    throw Error(std::string(kCpuAffinityEnv) + ": " + e.what());
  }
  if (cpus.empty()) return;
  try {
    pin_process_to_cpus(cpus);
    logging::info("tessera-worker: threads pinned to CPUs {} ({})", format_cpu_list(cpus), kCpuAffinityEnv);
  } catch (const Error& e) {
    logging::warn("tessera-worker: {} ({}); running unpinned", e.what(), kCpuAffinityEnv);
  }
}

}  // namespace distributed::cli
}  // namespace tessera
