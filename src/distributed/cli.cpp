// The command lines of tessera-scheduler and tessera-worker (also reached through
// tessera::init() when an application runs as its own worker). Flags follow Dask's
// `dask scheduler` / `dask worker` where the meaning is the same.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include "../core/logging.hpp"
#include "cli_values.hpp"
#include "options_check.hpp"
#include "scheduler_file.hpp"
#include "token.hpp"
#include "data_store_limits.hpp"
#include "nanny.hpp"
#include "nanny_link.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/device.hpp"
#include "util.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/init.hpp"

namespace tessera {
namespace {

std::atomic<bool> g_initialized{false};

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

// --preload, --token and --log-level mean the same for both binaries.
void add_shared_flags(CLI::App& app, std::vector<std::string>& preloads, std::string& token, std::string& log_level) {
  app.add_option("--preload", preloads, "Shared library to load at start, e.g. task functions (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--token", token,
                 "Shared secret peers must present (default: $TESSERA_TOKEN); tessera-scheduler: auto makes one "
                 "(written to --scheduler-file, which workers and clients without a token read)");
  app.add_option("--log-level", log_level, "trace, debug, info, warning, error (default: $TESSERA_LOG_LEVEL or info)");
}

// A worker serves /metrics only when asked: several workers share a machine, and a fixed port
// would be taken by the first (the others get free ports, with a warning).
void add_worker_dashboard_flags(CLI::App& app, std::string& dashboard, bool& no_dashboard) {
  app.add_option("--dashboard-address", dashboard,
                 "HTTP /metrics and /health of this worker: host:port, or :port (:0 = a free port) on its host "
                 "(default: none)");
  app.add_flag("--no-dashboard", no_dashboard, "Serve no HTTP endpoints (the default)");
}

void add_protocol_flag(CLI::App& app, std::string& protocol) {
  app.add_option("--protocol", protocol,
                 "Transport: tcp, tls (mutual TLS: --tls-ca-file, --tls-cert, --tls-key), or ucx (UCX where both "
                 "ends have it, else TCP)")
      ->check(CLI::IsMember({"tcp", "tls", "ucx"}))
      ->capture_default_str();
}

// Dask's TLS flags, the same on every binary (docs/security.md); each defaults to its
// TESSERA_TLS_* variable. Checked at start (check_tls_flags) when the cluster uses tls://.
void add_tls_flags(CLI::App& app, comm::Security& security) {
  app.add_option("--tls-ca-file", security.tls_ca_file,
                 "CA certificate (PEM) that signs every member's certificate, for tls:// (default: "
                 "$TESSERA_TLS_CA_FILE)");
  app.add_option("--tls-cert", security.tls_cert,
                 "This process's certificate (PEM), signed by the CA, for tls:// (default: $TESSERA_TLS_CERT)");
  app.add_option("--tls-key", security.tls_key,
                 "The certificate's private key (PEM), for tls:// (default: $TESSERA_TLS_KEY)");
}

// The TLS files with their variables' defaults; when `uses_tls`, checked now (exist, readable,
// parse, key matches certificate), so a mistake stops the program at start with the reason.
comm::Security check_tls_flags(const comm::Security& flags, bool uses_tls) {
  auto s = flags.with_env_defaults();
  if (!uses_tls) return s;  // a worker may learn tls:// later, from the scheduler file
  try {
    comm::check_security(s, /*for_listener=*/true);
  } catch (const comm::CommError& e) {
    throw Error(e.what());
  }
  return s;
}

// A CLI11 check that runs one of the value parsers: a bad value stops the program with the
// parser's message (CLI11 puts the flag's name before it) before anything starts.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, std::string description) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& value) {
        try {
          parse(value);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      std::move(description));
}
CLI::Validator duration_check() {
  return parsed_by([](const std::string& v) { distributed::parse_duration(v, ""); }, "DURATION");
}
CLI::Validator positive_duration_check() {
  return parsed_by([](const std::string& v) { distributed::parse_positive_duration(v, ""); }, "DURATION>0");
}
// Thread and process counts: CLI11 has read the integer already, so only its range is left.
long long whole_number(const std::string& v) {
  long long n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size()) throw Error("'" + v + "' is not a whole number");
  return n;
}
CLI::Validator at_least_one() {
  return parsed_by(
      [](const std::string& v) {
        if (whole_number(v) < 1) throw Error("must be at least 1, got " + v);
      },
      "INT>=1");
}
// --nthreads: 1 to kMaxWorkerThreads (options_check.hpp says why that bound).
CLI::Validator thread_count_check() {
  return parsed_by(
      [](const std::string& v) {
        const long long n = whole_number(v);
        if (n < 1) throw Error("must be at least 1, got " + v);
        if (n > distributed::kMaxWorkerThreads)
          throw Error("at most " + std::to_string(distributed::kMaxWorkerThreads) + " threads per worker, got " + v +
                      " (use --nworkers for more processes)");
      },
      "1-" + std::to_string(distributed::kMaxWorkerThreads));
}
// Total memory 0 here: only the form is checked (the cap to the machine's memory comes later).
CLI::Validator memory_limit_check() {
  return parsed_by([](const std::string& v) { distributed::parse_memory_limit(v, 0); }, "BYTES");
}
// After parsing, when the number of workers sharing --memory-limit is known: each one's share
// must be 0 (none) or at least kMinWorkerMemoryLimit. A ValidationError: exit 105, as a bad form.
void check_memory_limit_share(const std::string& text, int nworkers) {
  try {
    distributed::check_worker_memory_limit(distributed::parse_memory_limit(text, distributed::system_memory(), nworkers),
                                           text, nworkers);
  } catch (const Error& e) {
    throw CLI::ValidationError("--memory-limit", e.what());
  }
}
CLI::Validator device_memory_limit_check() {
  return parsed_by([](const std::string& v) { distributed::parse_device_memory_limit(v, 0); }, "BYTES");
}
CLI::Validator resources_check() {
  return parsed_by([](const std::string& v) { distributed::parse_resources(v); }, "\"NAME=NUMBER ...\"");
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
    logging::info("preloaded {}", lib);
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
        logging::info("received signal {}, closing", static_cast<int>(c));
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
  if (argc >= 2 && std::string(argv[1]) == kCudaWorkerModeFlag) {
    std::fflush(stdout);
    std::exit(distributed::cuda_worker_main(argc - 1, argv + 1));
  }
}

namespace distributed {

int scheduler_main(int argc, char** argv) {
  start_server_process();
  CLI::App app{"tessera-scheduler: the Tessera scheduler (like `dask scheduler`)", "tessera-scheduler"};
  std::string host = "127.0.0.1", protocol = "tcp", scheduler_file, log_level, dashboard = ":8787", token;
  bool no_dashboard = false;
  int port = 8786;
  std::string idle_timeout = "0", worker_ttl = "300s", worker_silent = "5s", registration_timeout = "30s";
  std::size_t task_stream_length = 100000;
  std::vector<std::string> preloads;
  comm::Security security;
  app.add_option("--host", host, "Address to listen on (0.0.0.0 for every interface)")->capture_default_str();
  app.add_option("--port", port, "Port to listen on (0 picks a free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  add_protocol_flag(app, protocol);
  app.add_option("--scheduler-file", scheduler_file, "Write the scheduler's address to this JSON file");
  app.add_option("--idle-timeout", idle_timeout,
                 "Close after this long with no clients and no tasks: 60, 10s, 5 minutes (0 = never)")
      ->check(duration_check());
  app.add_option("--worker-ttl", worker_ttl, "Remove a worker silent this long: 300, 30s, 5 minutes (more than 0)")
      ->check(positive_duration_check())
      ->capture_default_str();
  app.add_option("--worker-silent", worker_silent,
                 "Send no new tasks to a worker without a heartbeat for this long: 5s (0 = never)")
      ->check(duration_check())
      ->capture_default_str();
  app.add_option("--registration-timeout", registration_timeout,
                 "Close a connection that has not registered as a client, worker or nanny this long after it was "
                 "accepted: 30s (0 = never)")
      ->check(duration_check())
      ->capture_default_str();
  app.add_option("--dashboard-address", dashboard,
                 "HTTP dashboard (/metrics, /health, /api/v1/...): host:port, or :port on --host; a port in use "
                 "gives a free one")
      ->capture_default_str();
  app.add_flag("--no-dashboard", no_dashboard, "Serve no HTTP dashboard");
  app.add_option("--task-stream-length", task_stream_length,
                 "Finished tasks kept for the task stream (/status, get_task_stream); 0 keeps none")
      ->capture_default_str();
  add_shared_flags(app, preloads, token, log_level);
  add_tls_flags(app, security);
  try {
    app.parse(argc, argv);
    setup_logging(log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    token = token_or_env(token);
    SchedulerOptions so;
    if (token == kAutoToken) {
      // 128 bits from the OS random source. With a scheduler file, it goes there (mode 0600),
      // where workers and clients given the file find it; else it is printed once, to stderr.
      token = generate_token();
      so.token_in_scheduler_file = !scheduler_file.empty();
      if (scheduler_file.empty())
        std::cerr << "tessera-scheduler token (--token auto): " << token
                  << " (give it to workers and clients as TESSERA_TOKEN)" << std::endl;
    } else if (auto weak = weak_token_warning(token); !weak.empty()) {
      logging::warn("tessera-scheduler: {}", weak);
    }
    so.security = check_tls_flags(security, protocol == "tls");
    preload(preloads);
    so.address = protocol + "://" + host + ":" + std::to_string(port);
    so.token = token;
    so.scheduler_file = scheduler_file;
    so.idle_timeout = parse_duration(idle_timeout, "--idle-timeout");
    so.state.worker_ttl = parse_positive_duration(worker_ttl, "--worker-ttl");
    so.worker_silent = parse_duration(worker_silent, "--worker-silent");
    so.registration_timeout = parse_duration(registration_timeout, "--registration-timeout");
    so.task_stream_length = task_stream_length;
    if (!no_dashboard) so.dashboard_address = dashboard;
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
    if (!sched.dashboard_url().empty()) std::cerr << "tessera-scheduler dashboard at " << sched.dashboard_url() << std::endl;
    sched.wait();
    {
      std::lock_guard lock(mu);
      live = nullptr;
    }
    return 0;
  } catch (const std::exception& e) {
    logging::error("tessera-scheduler: {}", e.what());
    return 1;
  }
}

namespace {

// This command line for a child: this executable (in worker mode when this process runs as an
// application's worker, or as tessera-cuda-worker), then argv[1..] without the flags in `drop`
// (and their values, in both the "--flag value" and "--flag=value" forms).
std::vector<std::string> child_command(int argc, char** argv, bool worker_mode_flag,
                                       std::initializer_list<std::string_view> drop) {
  std::vector<std::string> args{std::filesystem::read_symlink("/proc/self/exe").string()};
  if (worker_mode_flag) args.push_back(kWorkerModeFlag);
  for (int a = 1; a < argc; ++a) {
    std::string_view s = argv[a];
    bool skip = false;
    for (std::string_view d : drop) {
      if (s == d) {
        ++a;  // and its value
        skip = true;
      } else if (s.size() > d.size() && s.substr(0, d.size()) == d && s[d.size()] == '=') {
        skip = true;
      }
      if (skip) break;
    }
    if (!skip) args.emplace_back(s);
  }
  return args;
}

// The worker processes under a nanny (nanny.hpp): SIGINT/SIGTERM are passed on to them, and
// the nanny waits for all of them. The watcher comes first, so that a signal while the children
// start stops those already started.
// With `link`, the nanny also keeps a connection of its own to the scheduler, through which a
// worker too hung to restart when asked is killed and started again (docs/nanny.md).
// The link also tells the scheduler of a worker the nanny gave up, so that the tasks that needed
// it err instead of waiting for ever.
int run_worker_processes(NannyOptions options, std::vector<NannyChild> children,
                         const NannyLinkOptions* link = nullptr) {
  std::unique_ptr<NannyLink> to_scheduler;  // set before run(), reset before the nanny ends
  options.on_given_up = [&to_scheduler](const GivenUpWorker& w) {
    if (to_scheduler) to_scheduler->report_given_up(w);
  };
  Nanny nanny(options, std::move(children));
  SignalWatcher signals([&](int sig) { nanny.stop(sig); });
  if (link && options.restart)
    to_scheduler = std::make_unique<NannyLink>(*link, [&nanny](int pid) { return nanny.kill_for_restart(pid); });
  const int code = nanny.run();
  to_scheduler.reset();  // its kill callback uses the nanny
  return code;
}

NannyOptions nanny_options(const std::string& program, double memory_terminate_fraction) {
  NannyOptions o;
  o.program = program;
  o.memory_terminate_fraction = memory_terminate_fraction;
  return o;
}

// --nworkers N > 1: run N single-worker processes of this same command and wait for them.
int run_nworkers(int argc, char** argv, int nworkers, const std::string& name, int nthreads,
                 const std::string& memory_limit, bool nanny, double memory_terminate_fraction,
                 const NannyLinkOptions& link) {
  // Each child gets its share of the machine, as with dask worker --nworkers.
  const int threads = nthreads > 0 ? nthreads : threads_per_worker(nworkers);
  const std::size_t limit = parse_memory_limit(memory_limit, system_memory(), nworkers);
  std::vector<NannyChild> children;
  for (int i = 0; i < nworkers; ++i) {
    NannyChild c;
    c.name = (name.empty() ? "worker" : name) + "-" + std::to_string(i);
    c.argv = child_command(argc, argv, std::string(argv[0]) == kWorkerModeFlag,
                           {"--nworkers", "--name", "--nthreads", "--memory-limit"});
    c.argv.insert(c.argv.end(), {"--nworkers", "1", "--name", c.name, "--nthreads", std::to_string(threads),
                                 "--memory-limit", std::to_string(limit), "--no-nanny"});
    c.memory_limit = limit;
    children.push_back(std::move(c));
  }
  // --no-nanny: only start them, pass signals on and wait, as before there was a nanny.
  NannyOptions options = nanny_options("tessera-worker", memory_terminate_fraction);
  options.restart = nanny;
  if (!nanny) options.memory_terminate_fraction = 0;
  return run_worker_processes(options, std::move(children), &link);
}

// The default for one worker (--nanny): the same command, with --no-nanny, in a child process.
int run_under_nanny(int argc, char** argv, const std::string& name, const std::string& memory_limit,
                    double memory_terminate_fraction, const NannyLinkOptions& link) {
  NannyChild c;
  c.name = name.empty() ? "worker" : name;
  c.argv = child_command(argc, argv, std::string(argv[0]) == kWorkerModeFlag, {});
  c.argv.push_back("--no-nanny");
  c.memory_limit = parse_memory_limit(memory_limit, system_memory(), 1);
  std::vector<NannyChild> children;
  children.push_back(std::move(c));
  return run_worker_processes(nanny_options("tessera-worker", memory_terminate_fraction), std::move(children),
                              &link);
}

// Whether the scheduler at `address` answers a handshake now (a connection opened and closed).
bool scheduler_answers(const std::string& address, const std::string& token, const comm::Security& security) {
  comm::CommOptions co;
  co.token = token;
  co.security = security;
  co.name = "tessera-worker reconnecting";
  co.connect_timeout = std::chrono::milliseconds(1000);
  co.handshake_timeout = std::chrono::milliseconds(1000);
  try {
    comm::connect(address, co)->close();
    return true;
  } catch (const comm::CommError&) {
    return false;
  }
}

}  // namespace

int worker_main(int argc, char** argv) {
  start_server_process();
  CLI::App app{"tessera-worker: a Tessera worker (like `dask worker`)", "tessera-worker"};
  std::string scheduler, scheduler_file, name, resources, memory_limit = "auto", local_directory, log_level, token;
  std::string host, listen_address, protocol = "tcp", device_memory_limit, dashboard;
  bool no_dashboard = false;
  int nthreads = 0, nworkers = 1, worker_port = 0;
  std::string death_timeout = "60s", heartbeat = "0.5s";
  std::vector<std::string> preloads;
  comm::Security security;
  app.add_option("scheduler", scheduler, "Scheduler address, e.g. tcp://127.0.0.1:8786");
  app.add_option("--scheduler-file", scheduler_file, "Read the scheduler's address from this file");
  app.add_option("--nthreads", nthreads, "Threads running tasks, 1 to 4096 (default: cores / nworkers)")
      ->check(thread_count_check());
  app.add_option("--nworkers", nworkers, "Worker processes to start, at least 1")
      ->check(at_least_one())
      ->capture_default_str();
  app.add_option("--resources", resources, "Abstract resources, e.g. \"GPU=2 MEM=10e9\"")->check(resources_check());
  app.add_option("--memory-limit", memory_limit,
                 "Bytes of results held in memory before spilling: auto, 0 (none), 4GB, 0.5 (of RAM)")
      ->check(memory_limit_check())
      ->capture_default_str();
  app.add_option("--name", name, "Worker name (default: its address)");
  app.add_option("--local-directory", local_directory, "Directory for spilled data (default: system temp)");
  app.add_option("--death-timeout", death_timeout, "How long to wait for the scheduler before giving up: 60, 30s, 2 minutes")
      ->check(duration_check())
      ->capture_default_str();
  app.add_option("--host", host, "Interface to listen on for peers (default: as the scheduler's)");
  app.add_option("--worker-port", worker_port, "Port to listen on for peers (0 = any free)")->check(CLI::Range(0, 65535));
  app.add_option("--listen-address", listen_address, "Full listen address, e.g. tcp://0.0.0.0:9000");
  add_protocol_flag(app, protocol);
  app.add_option("--heartbeat-interval", heartbeat, "Time between heartbeats: 0.5, 500ms, 1s (more than 0)")
      ->check(positive_duration_check())
      ->capture_default_str();
  app.add_option("--device-memory-limit", device_memory_limit,
                 "Bytes of results kept on the GPU before moving to host memory: auto (0.8 of the device), "
                 "0 (none), 10GB, 0.5 (of the device)")
      ->check(device_memory_limit_check());
  add_worker_dashboard_flags(app, dashboard, no_dashboard);
  add_shared_flags(app, preloads, token, log_level);
  add_tls_flags(app, security);
  // The nanny (docs/nanny.md).
  bool nanny = true;
  double memory_terminate_fraction = 0.95;
  app.add_flag("--nanny,!--no-nanny", nanny,
               "Run the worker under a nanny process that restarts it when it dies (default: --nanny)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--memory-terminate-fraction", memory_terminate_fraction,
                 "The nanny restarts a worker whose resident memory passes this fraction of its memory limit "
                 "(0: never)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
    setup_logging(log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    check_memory_limit_share(memory_limit, nworkers);
    apply_cpu_affinity_env();
    // Before waiting for a scheduler file or starting children: a bad directory is known now.
    if (!local_directory.empty()) check_spill_directory(local_directory);
    const double death_timeout_s = parse_duration(death_timeout, "--death-timeout");
    auto is_tls = [](const std::string& a) { return a.rfind("tls://", 0) == 0; };
    // A tls:// scheduler: this worker listens on tls:// too (its peers fetch from it over TLS).
    if (is_tls(scheduler) && listen_address.empty()) protocol = "tls";
    security = check_tls_flags(security, protocol == "tls" || is_tls(scheduler) || is_tls(listen_address));
    token = given_token(token);
    NannyLinkOptions link{scheduler, scheduler_file, token, security};
    // Once, by the process started from the command line (a nanny's children have a parent pid).
    if (!std::getenv("TESSERA_PARENT_PID"))
      if (auto weak = weak_token_warning(token); !weak.empty()) logging::warn("tessera-worker: {}", weak);
    if (nworkers > 1)
      return run_nworkers(argc, argv, nworkers, name, nthreads, memory_limit, nanny, memory_terminate_fraction, link);
    if (nworkers < 1) throw Error("--nworkers must be at least 1");
    if (scheduler.empty() && scheduler_file.empty())
      throw Error("give the scheduler address (tcp://host:port) or --scheduler-file");
    if (nanny) return run_under_nanny(argc, argv, name, memory_limit, memory_terminate_fraction, link);
    if (scheduler.empty()) scheduler = read_scheduler_file(scheduler_file, death_timeout_s);
    // No token of its own: the one a scheduler started with --token auto wrote into its file,
    // read again whenever the file is (a scheduler started again makes a new one).
    const bool token_from_file = token.empty() && !scheduler_file.empty();
    if (token_from_file) token = scheduler_file_token(scheduler_file);
    if (is_tls(scheduler) && listen_address.empty() && protocol != "tls") {
      protocol = "tls";  // learnt from the scheduler file
      security = check_tls_flags(security, true);
    }
    preload(preloads);
    WorkerOptions wo;
    wo.scheduler_address = scheduler;
    wo.security = security;
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
    wo.heartbeat_interval = parse_positive_duration(heartbeat, "--heartbeat-interval");
    wo.death_timeout = death_timeout_s;
    if (!no_dashboard) wo.dashboard_address = dashboard;
    wo.nanny_pid = nanny_pid();  // under a nanny that restarts it: Client::restart may ask it to
    // With a GPU (this process sees one; CUDA_VISIBLE_DEVICES was set by whoever started it),
    // keep at most this much on it: dask-cuda's default, 0.8 of the device. Asking the runtime
    // for the device's size creates no CUDA context.
    if (DeviceRuntime* rt = device_runtime(); rt && rt->device_count() > 0)
      wo.device_memory_limit =
          parse_device_memory_limit(device_memory_limit.empty() ? "auto" : device_memory_limit, rt->info(0).total_memory);
    // Libraries loaded and the GPU probed: what this process holds now it holds at rest.
    check_memory_at_rest(wo.memory_limit);
    // As for the scheduler: a signal while connecting closes the worker once it exists.
    std::mutex mu;
    std::shared_ptr<Worker> worker;
    bool stop_requested = false;
    std::string reason;
    auto stopping = [&] {
      std::lock_guard lock(mu);
      return stop_requested;
    };
    int code = 0;
    {
      SignalWatcher signals([&](int) {
        std::shared_ptr<Worker> w;
        {
          std::lock_guard lock(mu);
          w = worker;
          stop_requested = true;
        }
        if (w) w->close();
      });
      while (true) {
        auto w = std::make_shared<Worker>(wo);  // tells a nanny once it registered
        bool stop_now;
        {
          std::lock_guard lock(mu);
          worker = w;
          stop_now = stop_requested;
        }
        if (stop_now) w->close();
        reason = w->wait();
        // Registering again at the same address (a fixed --worker-port) before the scheduler
        // saw the old connection close: this proves it is the same worker (docs/security.md).
        wo.registration_secret = w->registration_secret();
        {
          std::lock_guard lock(mu);
          worker.reset();
        }
        w.reset();
        if (reason == kRestartRequestedReason) {
          code = kExitRestartRequested;  // its nanny starts it again at once
          break;
        }
        // A scheduler lost (not one that asked this worker to close) may come back: wait for it
        // --death-timeout, then fail, so that a supervisor (the nanny, systemd) sees it.
        if (reason.rfind("lost the scheduler", 0) != 0 || stopping()) break;
        logging::warn("tessera-worker: {}; waiting up to {} s (--death-timeout) for it to come back", reason,
                      death_timeout_s);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(death_timeout_s);
        bool back = false;
        while (!stopping() && std::chrono::steady_clock::now() < deadline) {
          if (!scheduler_file.empty()) {
            // A scheduler started again writes its (perhaps new) address there.
            try {
              wo.scheduler_address = read_scheduler_file(scheduler_file, 0);
              if (token_from_file) wo.token = token = scheduler_file_token(scheduler_file);
            } catch (const std::exception&) {
            }
          }
          if ((back = scheduler_answers(wo.scheduler_address, token, wo.security))) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        if (stopping()) break;
        if (!back) {
          logging::error("tessera-worker: the scheduler at {} did not come back within {} s (--death-timeout)",
                         wo.scheduler_address, death_timeout_s);
          code = kExitSchedulerGone;
          break;
        }
        logging::info("tessera-worker: the scheduler at {} is back; registering again", wo.scheduler_address);
      }
    }
    logging::info("tessera-worker: closed ({})", reason);
    return code;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // a flag value found bad after parsing: 105, as one found while parsing
  } catch (const std::exception& e) {
    logging::error("tessera-worker: {}", e.what());
    return 1;
  }
}

int cuda_worker_main(int argc, char** argv) {
  start_server_process();
  CLI::App app{"tessera-cuda-worker: one Tessera worker per GPU (like `dask cuda worker`)", "tessera-cuda-worker"};
  std::string scheduler, scheduler_file, name, resources, memory_limit = "auto", device_memory_limit = "0.8";
  std::string local_directory, log_level, token, host, protocol = "tcp";
  int nthreads = 1;
  std::string death_timeout = "60s", heartbeat = "0.5s";  // checked here, read by each worker
  std::vector<std::string> preloads;
  comm::Security security;
  app.add_option("scheduler", scheduler, "Scheduler address, e.g. tcp://127.0.0.1:8786");
  app.add_option("--scheduler-file", scheduler_file, "Read the scheduler's address from this file");
  app.add_option("--nthreads", nthreads, "Threads running tasks in each worker, 1 to 4096")
      ->check(thread_count_check())
      ->capture_default_str();
  app.add_option("--resources", resources, "Resources of each worker besides GPU=1, e.g. \"MEM=10e9\" (GPU=2 replaces GPU=1)")
      ->check(resources_check());
  app.add_option("--memory-limit", memory_limit,
                 "Host bytes of results per worker before spilling to disk: auto (memory / GPUs), 0 (none), 4GB, "
                 "0.5 (of RAM)")
      ->check(memory_limit_check())
      ->capture_default_str();
  app.add_option("--device-memory-limit", device_memory_limit,
                 "Bytes of results kept on each GPU before moving to host memory: 0.8 (of the device), auto, 0 "
                 "(none), 10GB")
      ->check(device_memory_limit_check())
      ->capture_default_str();
  app.add_option("--name", name, "Prefix of the worker names, <name>-gpu<device> (default: the host name)");
  app.add_option("--local-directory", local_directory, "Directory for spilled data (default: system temp)");
  app.add_option("--death-timeout", death_timeout, "How long to wait for the scheduler before giving up: 60, 30s, 2 minutes")
      ->check(duration_check())
      ->capture_default_str();
  app.add_option("--host", host, "Interface the workers listen on for peers (default: as the scheduler's)");
  add_protocol_flag(app, protocol);
  app.add_option("--heartbeat-interval", heartbeat, "Time between heartbeats: 0.5, 500ms, 1s (more than 0)")
      ->check(positive_duration_check())
      ->capture_default_str();
  std::string dashboard;  // passed on to each worker with the rest of the command line
  bool no_dashboard = false;
  add_worker_dashboard_flags(app, dashboard, no_dashboard);
  add_shared_flags(app, preloads, token, log_level);
  add_tls_flags(app, security);
  // This process is the workers' nanny (docs/nanny.md); the flag is passed on to them too.
  double memory_terminate_fraction = 0.95;
  app.add_option("--memory-terminate-fraction", memory_terminate_fraction,
                 "Restart a worker whose resident memory passes this fraction of its memory limit (0: never)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
    setup_logging(log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (scheduler.empty() && scheduler_file.empty())
      throw Error("give the scheduler address (tcp://host:port) or --scheduler-file");
    // Each worker checks them again; a mistake is told here once, before any GPU is looked at.
    const comm::Security checked = check_tls_flags(security, protocol == "tls" || scheduler.rfind("tls://", 0) == 0);
    check_memory_limit_share(memory_limit, 1);  // bytes and fractions are each worker's; "auto" is below
    if (!local_directory.empty()) check_spill_directory(local_directory);
    // Discovery goes through NVML, never the CUDA runtime: this process must not hold a CUDA
    // context (the workers are exec'd with their own CUDA_VISIBLE_DEVICES).
    const GpuDiscovery found = discover_gpus();
    std::optional<std::string> visible;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) visible = v;
    const std::vector<std::string> devices = gpu_worker_devices(visible, found);
    const int n = static_cast<int>(devices.size());
    const std::string res_text = gpu_worker_resources(resources);  // GPU=1 unless --resources names GPU
    check_memory_limit_share(memory_limit, n);
    const std::size_t limit = parse_memory_limit(memory_limit, system_memory(), n);
    if (name.empty()) {
      name = host_name();
      if (name.empty()) name = "worker";
    }
    std::vector<NannyChild> children;
    for (int i = 0; i < n; ++i) {
      NannyChild c;
      const std::string& dev = devices[static_cast<std::size_t>(i)];
      c.name = gpu_worker_name(name, dev);
      // This program in worker mode (tessera-cuda-worker and applications calling tessera::init
      // both run worker_main for --tessera-worker), with every flag of this command (the worker
      // takes them all) except those set per worker here.
      c.argv = child_command(argc, argv, true,
                             {"--name", "--nthreads", "--memory-limit", "--resources", "--device-memory-limit"});
      c.argv.insert(c.argv.end(), {"--name", c.name, "--nthreads", std::to_string(nthreads), "--memory-limit",
                                   std::to_string(limit), "--resources", res_text, "--device-memory-limit",
                                   device_memory_limit, "--no-nanny"});
      c.memory_limit = limit;
      c.env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices_for(static_cast<std::size_t>(i), devices);
      // The CPUs near the GPU, unless the user chose for every worker (the variable is inherited).
      if (!std::getenv(kCpuAffinityEnv))
        if (std::string cpus = gpu_worker_cpus(found, dev); !cpus.empty()) c.env[kCpuAffinityEnv] = cpus;
      const int gpu = find_gpu(found, dev);
      logging::info("tessera-cuda-worker: worker {} with CUDA_VISIBLE_DEVICES={}{}{}", c.name,
                   c.env["CUDA_VISIBLE_DEVICES"],
                   gpu >= 0 ? " (" + describe_gpu(found.gpus[static_cast<std::size_t>(gpu)]) + ")" : std::string(),
                   c.env.count(kCpuAffinityEnv) ? ", CPUs " + c.env[kCpuAffinityEnv] : std::string());
      children.push_back(std::move(c));
    }
    // Its link to the scheduler: a GPU worker too hung to restart is killed (docs/nanny.md).
    const NannyLinkOptions link{scheduler, scheduler_file, given_token(token), checked};
    if (auto weak = weak_token_warning(given_token(token)); !weak.empty()) logging::warn("tessera-cuda-worker: {}", weak);
    return run_worker_processes(nanny_options("tessera-cuda-worker", memory_terminate_fraction), std::move(children),
                                &link);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    logging::error("tessera-cuda-worker: {}", e.what());
    return 1;
  }
}

}  // namespace distributed
}  // namespace tessera
