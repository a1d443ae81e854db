// The flags of the three binaries: those they share (--preload, --token, --log-level,
// --protocol, the TLS files) and the one builder of tessera-worker's and tessera-cuda-worker's
// command lines (add_worker_flags). tessera-cuda-worker passes its command line on to a worker
// per GPU, so its flags are tessera-worker's, some with its own defaults and help; the
// scheduler's own flags are in cli_scheduler.cpp. The values' checks are cli_checks.cpp's.
#include <algorithm>
#include <thread>

#include "cli_internal.hpp"

namespace tessera::distributed::cli {

namespace {

// A worker serves /metrics only when asked: several workers share a machine, and a fixed port
// would be taken by the first (the others get free ports, with a warning).
void add_worker_dashboard_flags(CLI::App& app, std::string& dashboard, bool& no_dashboard) {
  app.add_option("--dashboard-address", dashboard,
                 "HTTP /metrics and /health of this worker: host:port, or :port (:0 = a free port) on its host "
                 "(default: none)");
  app.add_flag("--no-dashboard", no_dashboard, "Serve no HTTP endpoints (the default)");
}

}  // namespace

// --preload, --token and --log-level mean the same for every binary.
void add_shared_flags(CLI::App& app, std::vector<std::string>& preloads, std::string& token, std::string& log_level) {
  app.add_option("--preload", preloads, "Shared library to load at start, e.g. task functions (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--token", token,
                 "Shared secret peers must present (default: $TESSERA_TOKEN); tessera-scheduler: auto makes one "
                 "(written to --scheduler-file, which workers and clients without a token read)");
  app.add_option("--log-level", log_level, "trace, debug, info, warning, error (default: $TESSERA_LOG_LEVEL or info)");
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

// One list for both programs, in the order of their --help; where tessera-cuda-worker's flag
// means "each worker's", its text says so (and its default may differ).
void add_worker_flags(CLI::App& app, WorkerFlags& f, WorkerProgram program) {
  const bool cuda = program == WorkerProgram::cuda_worker;
  auto text = [cuda](const char* worker, const char* cuda_worker) { return cuda ? cuda_worker : worker; };
  if (cuda) {
    f.nthreads = 1;                 // a worker per GPU: one thread each unless told
    f.device_memory_limit = "0.8";  // dask-cuda's default
  }
  app.add_option("scheduler", f.scheduler, "Scheduler address, e.g. tcp://127.0.0.1:8786");
  app.add_option("--scheduler-file", f.scheduler_file, "Read the scheduler's address from this file");
  auto* nthreads = app.add_option("--nthreads", f.nthreads,
                                  text("Threads running tasks, 1 to 4096 (default: cores / nworkers)",
                                       "Threads running tasks in each worker, 1 to 4096"))
                       ->check(thread_count_check());
  if (cuda) nthreads->capture_default_str();  // tessera-worker's 0 means cores / nworkers
  if (!cuda)
    app.add_option("--nworkers", f.nworkers, "Worker processes to start, at least 1")
        ->check(at_least_one())
        ->capture_default_str();
  app.add_option("--resources", f.resources,
                 text("Abstract resources, e.g. \"GPU=2 MEM=10e9\"",
                      "Resources of each worker besides GPU=1, e.g. \"MEM=10e9\" (GPU=2 replaces GPU=1)"))
      ->check(resources_check());
  app.add_option("--memory-limit", f.memory_limit,
                 text("Bytes of results held in memory before spilling: auto, 0 (none), 4GB, 0.5 (of RAM)",
                      "Host bytes of results per worker before spilling to disk: auto (memory / GPUs), 0 (none), "
                      "4GB, 0.5 (of RAM)"))
      ->check(memory_limit_check())
      ->capture_default_str();
  auto device_memory_limit = [&] {
    auto* o = app.add_option("--device-memory-limit", f.device_memory_limit,
                             text("Bytes of results kept on the GPU before moving to host memory: auto (0.8 of the "
                                  "device), 0 (none), 10GB, 0.5 (of the device)",
                                  "Bytes of results kept on each GPU before moving to host memory: 0.8 (of the "
                                  "device), auto, 0 (none), 10GB"))
                  ->check(device_memory_limit_check());
    if (cuda) o->capture_default_str();  // tessera-worker's default is auto where it sees a GPU
  };
  if (cuda) device_memory_limit();
  app.add_option("--name", f.name,
                 text("Worker name (default: its address)",
                      "Prefix of the worker names, <name>-gpu<device> (default: the host name)"));
  app.add_option("--local-directory", f.local_directory, "Directory for spilled data (default: system temp)");
  app.add_option("--death-timeout", f.death_timeout,
                 "How long to wait for the scheduler before giving up: 60, 30s, 2 minutes")
      ->check(duration_check())
      ->capture_default_str();
  app.add_option("--host", f.host,
                 text("Interface to listen on for peers (default: as the scheduler's)",
                      "Interface the workers listen on for peers (default: as the scheduler's)"));
  if (!cuda) {
    app.add_option("--worker-port", f.worker_port, "Port to listen on for peers (0 = any free)")
        ->check(CLI::Range(0, 65535));
    app.add_option("--listen-address", f.listen_address, "Full listen address, e.g. tcp://0.0.0.0:9000");
  }
  add_protocol_flag(app, f.protocol);
  app.add_option("--heartbeat-interval", f.heartbeat, "Time between heartbeats: 0.5, 500ms, 1s (more than 0)")
      ->check(positive_duration_check())
      ->capture_default_str();
  if (!cuda) device_memory_limit();
  // tessera-cuda-worker passes them on to each worker with the rest of the command line.
  add_worker_dashboard_flags(app, f.dashboard, f.no_dashboard);
  add_shared_flags(app, f.preloads, f.token, f.log_level);
  add_tls_flags(app, f.security);
  // The nanny (docs/nanny.md): tessera-cuda-worker is its workers' nanny, and passes the flag on
  // to them too.
  if (!cuda)
    app.add_flag("--nanny,!--no-nanny", f.nanny,
                 "Run the worker under a nanny process that restarts it when it dies (default: --nanny)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--memory-terminate-fraction", f.memory_terminate_fraction,
                 text("The nanny restarts a worker whose resident memory passes this fraction of its memory limit "
                      "(0: never)",
                      "Restart a worker whose resident memory passes this fraction of its memory limit (0: never)"))
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
}

// A worker's default threads when nworkers share this machine.
int threads_per_worker(int nworkers) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max(1u, cores / static_cast<unsigned>(std::max(1, nworkers))));
}

}  // namespace tessera::distributed::cli
