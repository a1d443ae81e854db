#pragma once
#include <sys/resource.h>

// Shared by the distributed benchmarks: the cluster flags of shared/design.md and a client
// that owns its LocalCluster (a scheduler and --workers processes with --threads each, stopped
// when the client goes) unless --scheduler names a running one.
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <tessera/tessera.hpp>

namespace bench {

/** @brief Peak resident memory in MB of this process (RUSAGE_SELF) or its waited-for children. */
inline double peak_mb(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct ClusterArgs {
  std::string scheduler;  // address of a running scheduler; empty: start a LocalCluster
  int workers = 2;
  int threads = 1;
  std::string protocol = "tcp";
  bool scheduler_process = false;
  std::string device_memory_limit;  // per worker (GPU workers): bytes or a fraction; empty: default
  std::string memory_limit;         // per worker, Dask's forms (4GB, 0.5, 0); empty: LocalCluster's default
};

inline void add_cluster_options(CLI::App& app, ClusterArgs& a) {
  app.add_option("--workers", a.workers, "worker processes of the local cluster");
  app.add_option("--threads", a.threads, "threads per worker");
  app.add_option("--protocol", a.protocol,
                 "tcp, tls (files from TESSERA_TLS_CA_FILE, TESSERA_TLS_CERT, TESSERA_TLS_KEY), or ucx (UCX "
                 "between peers that have it, else TCP)")
      ->check(CLI::IsMember({"tcp", "tls", "ucx"}));
  app.add_option("--device-memory-limit", a.device_memory_limit,
                 "GPU workers: device bytes kept per worker before spilling to host (e.g. 16GB, 0.5)");
}

inline std::unique_ptr<tessera::distributed::Client> connect(const ClusterArgs& a) {
  using namespace tessera::distributed;
  if (!a.scheduler.empty()) return std::make_unique<Client>(a.scheduler);
  LocalClusterOptions o;
  o.n_workers = a.workers;
  o.threads_per_worker = a.threads;
  o.protocol = a.protocol;
  o.scheduler_process = a.scheduler_process;
  if (!a.device_memory_limit.empty()) o.worker_args = {"--device-memory-limit", a.device_memory_limit};
  if (!a.memory_limit.empty()) o.memory_limit = a.memory_limit;
  return std::make_unique<Client>(std::make_shared<LocalCluster>(o));
}

/** Where an array benchmark computes: a local executor, or a cluster through its client. */
struct Execution {
  std::unique_ptr<tessera::distributed::Client> client;  // set when it runs on a cluster
  tessera::Executor* executor = nullptr;                 // null: the arguments were refused
  bool distributed() const { return client != nullptr; }
};

/**
 * @brief --scheduler sync|threads (this process), distributed (a local cluster of its own) or a
 * scheduler address, for arrays on --device host|gpu. Prints why and returns no executor when
 * the scheduler is unknown or --device gpu would run in this process and it has no GPU (a
 * cluster routes device tasks to workers that have one: several workers may share a GPU).
 */
inline Execution open_execution(const char* benchmark, const std::string& scheduler, const std::string& device,
                                ClusterArgs cluster) {
  Execution e;
  const bool distributed = scheduler == "distributed" || scheduler.find("://") != std::string::npos;
  if (!distributed && scheduler != "sync" && scheduler != "threads") {
    std::fprintf(stderr, "%s: --scheduler must be sync, threads, distributed or an address\n", benchmark);
    return e;
  }
  if (device == "gpu" && !distributed && tessera::visible_gpu_count() == 0) {
    std::fprintf(stderr, "%s: --device gpu but this process sees no GPU (%s)\n", benchmark,
                 tessera::device_runtime_status().c_str());
    return e;
  }
  if (distributed) {
    if (scheduler != "distributed") cluster.scheduler = scheduler;
    e.client = connect(cluster);
    e.executor = e.client.get();
  } else {
    e.executor = &tessera::local_executor(scheduler);
  }
  return e;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/**
 * A benchmark's main: an exception (a failed task, no GPU where one is needed) becomes
 * "<name>: <what>" on stderr and exit status 1 instead of an abort, and unwinding stops the
 * local cluster the benchmark started, so no worker process outlives it.
 */
inline int run_main(const char* name, int (*body)(int, char**), int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace bench
