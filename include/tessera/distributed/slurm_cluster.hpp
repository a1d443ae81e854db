#pragma once
/**
 * @file
 * SLURMCluster: workers as SLURM batch jobs, like dask-jobqueue's SLURMCluster.
 *
 *     SLURMClusterOptions o;
 *     o.cores = 8;  o.memory = "16GB";  o.walltime = "01:00:00";  o.partition = "cpu";
 *     SLURMCluster cluster(o);                 // starts a scheduler in this process
 *     cluster.scale(4);                        // sbatch: four worker jobs
 *     Client client(cluster.scheduler_address(), {.token = cluster.token()});
 *     cluster.adapt(1, 20);                    // or follow the scheduler's adaptive target
 *
 * Each job runs one tessera-worker with `cores` threads, or with `gpus` > 0 one
 * tessera-cuda-worker, which starts a worker per GPU of the job (`--gres=gpu:N`), each pinned
 * with CUDA_VISIBLE_DEVICES. Workers are named `<job_name>-<job id>` (GPU workers
 * `<job_name>-<job id>-gpu<device>`), so a worker is traced to its job. scale() submits with
 * sbatch and removes with scancel (pending jobs first; running ones after retiring their workers
 * through the scheduler, so their data moves first); squeue tells which jobs still exist. The
 * log directory must be on a filesystem the compute nodes share: the job scripts write their
 * logs there and read the token from a file there (mode 600), so it never appears in a script or
 * on a command line. See docs/deployment.md, "SLURM".
 */
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/distributed/cluster_manager.hpp"

namespace tessera::distributed {

struct SLURMClusterOptions {
  // ---- the scheduler -----------------------------------------------------------------------------
  /** @brief A running scheduler's address to use; empty: start one in this process. */
  std::string scheduler_address;
  /** @brief Interface the started scheduler listens on, one the compute nodes reach. Empty: this
   *  host's first non-loopback IPv4 address (127.0.0.1 when it has none). */
  std::string host;
  int scheduler_port = 0;               ///< 0: a free port
  std::string dashboard_address;        ///< the started scheduler's dashboard (":8787"); empty: none
  std::string token;                    ///< default: a random one (started scheduler) or $TESSERA_TOKEN
  double worker_ttl = 300;              ///< seconds, for the started scheduler
  // ---- each job --------------------------------------------------------------------------------
  int cores = 1;                        ///< --cpus-per-task; the worker's threads (split between GPU workers)
  std::string memory;                   ///< --mem ("16GB" -> 16G); empty: the partition's default
  int gpus = 0;                         ///< --gres=gpu:N and one tessera-cuda-worker (a worker per GPU)
  std::string walltime = "01:00:00";    ///< --time
  std::string partition;                ///< --partition
  std::string account;                  ///< --account
  std::string job_name = "tessera-worker";  ///< --job-name; also the workers' name prefix
  std::string log_directory;            ///< job logs, scripts and the token file; default: ./tessera-slurm-logs
  std::vector<std::string> job_extra_directives;  ///< more `#SBATCH` lines, e.g. "--qos=high"
  std::vector<std::string> job_script_prologue;   ///< shell lines before the worker starts (module load ...)
  std::string worker_command;           ///< default: tessera-worker (or tessera-cuda-worker) beside this program, else on PATH
  std::vector<std::string> worker_extra_args;     ///< more flags for each worker, e.g. {"--preload", "/shared/libtasks.so"}
  std::string worker_memory_limit;      ///< the worker's --memory-limit; default: `memory` (or auto)
  std::string local_directory;          ///< the workers' spill folder (node-local); default: $TMPDIR
  double death_timeout = 60;            ///< seconds a worker waits for an unreachable scheduler
  // ---- SLURM's commands (SLURM_CONF and the rest of the environment pass on) ------------------------
  std::string sbatch = "sbatch";
  std::string squeue = "squeue";
  std::string scancel = "scancel";
  // ---- scaling ---------------------------------------------------------------------------------
  double retire_timeout = 30;           ///< seconds retiring a running job's workers may take before scancel
};

/** @brief One worker job as squeue last saw it. */
struct SLURMJob {
  std::string id;
  std::string state;  ///< PENDING, RUNNING, ... ("SUBMITTED" until squeue lists it)
};

class SLURMCluster : public ClusterManager {
 public:
  /** @brief Starts the scheduler (unless options name one); submits nothing yet. */
  explicit SLURMCluster(SLURMClusterOptions options = {});
  /** @brief close(): cancels every job and stops the scheduler it started. */
  ~SLURMCluster() override;

  std::string scheduler_address() const override;
  std::string token() const override;
  /**
   * @brief n workers: submits jobs (n / workers per job, rounded up) or cancels the extra ones,
   * pending first, then running ones whose workers it retires first. Stops adapt().
   * @throw tessera::Error with sbatch's or scancel's output when they fail.
   */
  void scale(std::size_t n) override;
  /** @brief One name per live job, `<job_name>-<job id>`: its worker's name (a GPU job's workers
   *  add "-gpu<device>" to it). */
  std::vector<std::string> workers() const override;
  /** @brief Cancels every job, waits until squeue no longer lists them, stops the scheduler. Idempotent. */
  void close() override;

  /** @brief The batch script a job runs (what scale() submits). */
  std::string job_script() const;
  /** @brief The live jobs, as squeue shows them now (finished ones are dropped). */
  std::vector<SLURMJob> jobs();
  /** @brief Workers per job: the GPUs with gpus > 0, else 1. */
  std::size_t workers_per_job() const;
  /**
   * @brief Follows the scheduler's adaptive target (Client::adaptive_target) within [minimum,
   * maximum] workers, checked every `interval`: up at once, down after three checks in a row
   * asked for fewer (as Dask's Adaptive), retiring the workers before cancelling their jobs.
   * Runs until scale(), adapt() again or close().
   */
  void adapt(std::size_t minimum, std::size_t maximum,
             std::chrono::duration<double> interval = std::chrono::seconds(1));
  /** @brief Stops adapt(); the jobs stay. */
  void stop_adapt();

  const SLURMClusterOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** @brief A size as sbatch's --mem takes it: "16GB" -> "16G", "512MiB" -> "512M", "2e9" -> "1908M". */
std::string slurm_memory(const std::string& size);

}  // namespace tessera::distributed
