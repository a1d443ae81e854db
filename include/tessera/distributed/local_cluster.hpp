#pragma once
/**
 * @file
 * LocalCluster: a scheduler plus N workers on this machine, like dask's LocalCluster, and
 * LocalCUDACluster: one worker per GPU, like dask-cuda's.
 *
 * With processes (the default) each worker is its own process: this program itself when it
 * called tessera::init() (so its registered functions are there), else the tessera-worker
 * binary. Without processes the workers are threads of this process (tests, debugging). The
 * destructor closes everything and reaps every process it started, even after an error.
 */
#include <csignal>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/comm/security.hpp"

namespace tessera::distributed {

class Scheduler;

struct LocalClusterOptions {
  int n_workers = 2;
  int threads_per_worker = 1;
  bool processes = true;
  bool scheduler_process = false;    ///< run tessera-scheduler as a process (default: in this one)
  std::string protocol = "tcp";      ///< "tcp", "tls", "ucx" (UCX where both ends have it), or "inproc" (threads only)
  /// protocol "tls": the files every member uses (one certificate for all, signed by the CA);
  /// clients need their own (ClientOptions::security), possibly the same.
  comm::Security security;
  std::string host = "127.0.0.1";
  int scheduler_port = 0;            ///< 0: any free port
  std::string resources;             ///< per worker, e.g. "GPU=1 MEM=10e9"
  std::string memory_limit = "0";    ///< per worker, Dask forms: "0" (none), "auto", "4GB", "0.5"
  std::string local_directory;       ///< spill directory root (default: system temp)
  std::vector<std::string> preload;  ///< shared libraries every worker process loads
  std::string worker_program;        ///< default: see above; TESSERA_WORKER_PROGRAM overrides
  std::vector<std::string> worker_args;  ///< extra flags for each worker process
  /**
   * @brief Extra environment per worker index (e.g. CUDA_VISIBLE_DEVICES), processes only. A
   * worker past the end (add_worker) gets entry i mod size: a replacement worker of a
   * LocalCUDACluster gets the devices of worker i mod n.
   */
  std::vector<std::map<std::string, std::string>> worker_env;
  /**
   * @brief Name per worker index (default "worker-<i>"). A worker past the end gets entry
   * i mod size followed by "-<i / size>" ("worker-gpu0-1").
   */
  std::vector<std::string> worker_names;
  std::string token;                 ///< default: a random one
  double worker_ttl = 300;           ///< seconds of silence before the scheduler drops a worker
  double heartbeat_interval = 0.5;   ///< seconds
  double timeout = 60;               ///< seconds to wait for the workers to register
  /**
   * @brief processes: the cluster is its workers' nanny (Dask's LocalCluster runs its workers
   * under nannies): a worker process that dies after it registered (a signal, a crash, an exit
   * status other than 0 and "scheduler gone") is started again at once, same name and options,
   * at most max_restarts_per_minute times a minute each, and the death is logged with its cause.
   * False: a dead worker stays dead (tests that kill workers on purpose and count them).
   */
  bool restart_dead_workers = true;
  int max_restarts_per_minute = 3;
  std::string log_level;             ///< for worker processes (default: TESSERA_LOG_LEVEL or warning)
};

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options = {});
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  const std::string& scheduler_address() const;
  /**
   * @brief Where a client in this process should connect: an inproc:// address of the
   * in-process scheduler (no sockets between them), else scheduler_address().
   */
  const std::string& client_address() const;
  const std::string& token() const;
  /** @brief The TLS files of its members (protocol "tls"); a Client of this cluster uses them too. */
  const comm::Security& security() const;
  /** @brief The in-process scheduler; throws when it runs as its own process. */
  Scheduler& scheduler();
  /** @brief Process id of the scheduler process (scheduler_process), else 0. */
  int scheduler_pid() const;
  /** @brief Workers registered with the scheduler now. */
  std::size_t worker_count() const;
  const LocalClusterOptions& options() const;
  /** @brief Process ids of the worker processes (empty for thread workers). */
  std::vector<int> worker_pids() const;
  /** @brief Sends a signal to worker process i (tests: SIGKILL one mid-run). */
  void signal_worker(std::size_t i, int signal = SIGKILL);
  /** @brief Starts one more worker (same options); returns its index. */
  std::size_t add_worker();
  /** @brief Closes workers and scheduler and reaps every process. Idempotent. */
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/**
 * @brief Options of a LocalCUDACluster, as dask-cuda's LocalCUDACluster: one worker process per
 * GPU, each pinned with CUDA_VISIBLE_DEVICES.
 */
struct LocalCUDAClusterOptions {
  /**
   * @brief The devices, "0,1" or GPU UUIDs; one worker each. Default: $CUDA_VISIBLE_DEVICES, or
   * every GPU NVML finds when it is unset. An explicit list starts its workers even on a machine
   * without GPUs (they then have no device).
   */
  std::optional<std::string> cuda_visible_devices;
  int n_workers = 0;                 ///< 0: one per device; n: the first n devices
  int threads_per_worker = 1;
  std::string memory_limit = "auto";  ///< host bytes per worker, Dask forms; auto: memory / n_workers
  std::string device_memory_limit = "0.8";  ///< per worker: fraction of its device, bytes, or 0 (none)
  std::string resources;             ///< added to GPU=1 ("GPU=2" replaces the 1), e.g. "MEM=10e9"
  std::string protocol = "tcp";
  comm::Security security;           ///< protocol "tls": as LocalClusterOptions::security
  std::string host = "127.0.0.1";
  int scheduler_port = 0;
  bool scheduler_process = false;    ///< run tessera-scheduler as a process (default: in this one)
  std::string name_prefix = "worker";  ///< worker names are `<prefix>-gpu<device>`
  std::string local_directory;
  std::vector<std::string> preload;
  std::string worker_program;        ///< as LocalClusterOptions::worker_program
  std::vector<std::string> worker_args;
  std::string token;
  double worker_ttl = 300;
  double heartbeat_interval = 0.5;
  double timeout = 60;
  std::string log_level;
  bool restart_dead_workers = true;  ///< as LocalClusterOptions::restart_dead_workers
  int max_restarts_per_minute = 3;
};

/**
 * @brief A LocalCluster with one worker process per GPU (dask-cuda's LocalCUDACluster). Worker i
 * runs with CUDA_VISIBLE_DEVICES rotated to start at device i ("0,1" -> "0,1" and "1,0"), the
 * resource GPU=1 and the name `<prefix>-gpu<device>`. This process never touches CUDA: devices are
 * found with NVML. Throws tessera::Error when there is no device ("no GPUs found: ...") or an
 * option is invalid, before starting anything.
 */
class LocalCUDACluster : public LocalCluster {
 public:
  explicit LocalCUDACluster(LocalCUDAClusterOptions options = {});
  /** @brief The device of each worker, by worker index ("0", "1", or a UUID). */
  const std::vector<std::string>& devices() const { return devices_; }

 private:
  struct Plan {
    LocalClusterOptions cluster;
    std::vector<std::string> devices;
  };
  static Plan plan(const LocalCUDAClusterOptions& options);
  explicit LocalCUDACluster(Plan plan);
  std::vector<std::string> devices_;
};

/** @brief The worker program a LocalCluster starts, as an argv prefix (program [+ mode flag]). */
std::vector<std::string> default_worker_command();

}  // namespace tessera::distributed
