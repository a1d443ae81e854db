#pragma once
// Private to the command lines of tessera-scheduler, tessera-worker and tessera-cuda-worker
// (cli*.cpp): what their mains share. cli.cpp holds tessera::init and what every server process
// does at start (logging, signals, the parent watchdog, the descriptor limit, --preload, CPU
// affinity); cli_flags.cpp the flags the binaries share, and the one builder of the worker
// mains' flags (WorkerFlags); cli_checks.cpp the checks of flag values (over cli_values.hpp and
// data_store_limits.hpp); cli_nanny.cpp the worker processes a main starts under a nanny;
// cli_scheduler.cpp, cli_worker.cpp and cli_cuda_worker.cpp the three mains.
#include <CLI/CLI.hpp>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nanny.hpp"
#include "nanny_link.hpp"
#include "tessera/comm/security.hpp"

namespace tessera::distributed::cli {

// ---- the server process (cli.cpp) ---------------------------------------------------------------

/** Before anything that sizes itself by the descriptor limit (the listeners' caps). */
void start_server_process();

/**
 * The library's logger at --log-level (else $TESSERA_LOG_LEVEL, else info), made spdlog's
 * default too. @throw CLI::ValidationError for an unknown level (exit 105, as a bad flag).
 */
void setup_logging(const std::string& level_flag);

/** --preload: dlopen each library (RTLD_GLOBAL). @throw Error naming the one that failed. */
void preload(const std::vector<std::string>& libs);

/** $TESSERA_CPU_AFFINITY: pins every thread of this worker, those already started included. */
void apply_cpu_affinity_env();

/** Calls on_signal(sig) on a watcher thread for SIGINT and SIGTERM, while it lives. */
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int)> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::thread thread_;
};

// ---- flags (cli_flags.cpp) ----------------------------------------------------------------------

/** --preload, --token and --log-level: the same on every binary. */
void add_shared_flags(CLI::App& app, std::vector<std::string>& preloads, std::string& token, std::string& log_level);
/** --protocol: tcp, tls or ucx. */
void add_protocol_flag(CLI::App& app, std::string& protocol);
/** --tls-ca-file, --tls-cert, --tls-key (docs/security.md); checked by check_tls_flags. */
void add_tls_flags(CLI::App& app, comm::Security& security);

/** Which worker main add_worker_flags builds the command line of. */
enum class WorkerProgram { worker, cuda_worker };

/**
 * The flags of tessera-worker, and of tessera-cuda-worker, which passes its command line on to
 * a tessera-worker per GPU: so every flag of tessera-cuda-worker is one of tessera-worker's.
 * The defaults are tessera-worker's; add_worker_flags sets those that differ.
 */
struct WorkerFlags {
  std::string scheduler, scheduler_file, name, resources, memory_limit = "auto", device_memory_limit;
  std::string local_directory, host, protocol = "tcp", dashboard;
  std::string death_timeout = "60s", heartbeat = "0.5s";  // tessera-cuda-worker: checked, read by each worker
  int nthreads = 0;
  bool no_dashboard = false;
  double memory_terminate_fraction = 0.95;
  std::vector<std::string> preloads;
  std::string token, log_level;
  comm::Security security;
  // tessera-worker's only.
  int nworkers = 1, worker_port = 0;
  std::string listen_address;
  bool nanny = true;
};

/** `program`'s flags into `f`, in the order its --help lists them, with its defaults. */
void add_worker_flags(CLI::App& app, WorkerFlags& f, WorkerProgram program);

/** A worker's default threads when nworkers share this machine. */
int threads_per_worker(int nworkers);

// ---- checks of flag values (cli_checks.cpp) -----------------------------------------------------
// A CLI11 check runs one of the value parsers: a bad value stops the program with the parser's
// message (CLI11 puts the flag's name before it) and exit 105, before anything starts.

CLI::Validator duration_check();
CLI::Validator positive_duration_check();
/** --nworkers: at least 1. */
CLI::Validator at_least_one();
/** --nthreads: 1 to kMaxWorkerThreads (options_check.hpp says why that bound). */
CLI::Validator thread_count_check();
/** --memory-limit's form (the cap to the machine's memory comes later). */
CLI::Validator memory_limit_check();
CLI::Validator device_memory_limit_check();
CLI::Validator resources_check();

/**
 * After parsing, when the number of workers sharing --memory-limit is known: each one's share
 * must be 0 (none) or at least kMinWorkerMemoryLimit. @throw CLI::ValidationError (exit 105).
 */
void check_memory_limit_share(const std::string& text, int nworkers);

/**
 * The TLS files with their variables' defaults; when `uses_tls`, checked now (exist, readable,
 * parse, key matches certificate), so a mistake stops the program at start with the reason.
 */
comm::Security check_tls_flags(const comm::Security& flags, bool uses_tls);

// ---- worker processes under a nanny (cli_nanny.cpp) ---------------------------------------------

/**
 * This command line for a child: this executable (in worker mode when `worker_mode_flag`), then
 * argv[1..] without the flags in `drop` (and their values, as "--flag value" and "--flag=value").
 */
std::vector<std::string> child_command(int argc, char** argv, bool worker_mode_flag,
                                       std::initializer_list<std::string_view> drop);

/**
 * Runs `children` under a nanny and waits for all of them, passing SIGINT/SIGTERM on; with
 * `link`, the nanny's own connection to the scheduler too (docs/nanny.md).
 */
int run_worker_processes(NannyOptions options, std::vector<NannyChild> children,
                         const NannyLinkOptions* link = nullptr);

NannyOptions nanny_options(const std::string& program, double memory_terminate_fraction);

/** --nworkers N > 1: N single-worker processes of this same command. */
int run_nworkers(int argc, char** argv, int nworkers, const std::string& name, int nthreads,
                 const std::string& memory_limit, bool nanny, double memory_terminate_fraction,
                 const NannyLinkOptions& link);

/** One worker under a nanny (--nanny, the default): this command with --no-nanny in a child. */
int run_under_nanny(int argc, char** argv, const std::string& name, const std::string& memory_limit,
                    double memory_terminate_fraction, const NannyLinkOptions& link);

}  // namespace tessera::distributed::cli
