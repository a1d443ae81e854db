#pragma once
/**
 * @file
 * SSHCluster: a scheduler and workers on other machines, started over SSH, like Dask's
 * SSHCluster and `dask ssh`.
 *
 * The first host runs tessera-scheduler, every other host runs workers (tessera-worker, or
 * tessera-cuda-worker where the host has GPUs); a host may appear twice to run both. Each
 * remote process is one session of the system `ssh` client, a child of this process, whose
 * remote command runs the program in the foreground of a small shell wrapper: when the
 * session's standard input closes (close(), this process dying, the connection dropping) the
 * wrapper sends the program SIGTERM, so nothing outlives its cluster. The session's output is
 * kept (the last lines of each process) and quoted in the errors. docs/deployment.md "SSH".
 */
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/distributed/cluster_manager.hpp"

namespace tessera::distributed {

/** @brief How `ssh` reaches the hosts (everything else comes from the user's ssh config). */
struct SSHConnectOptions {
  std::string user;                          ///< ssh -l; empty: ssh's default (or `user@host` in the host)
  int port = 0;                              ///< ssh -p; 0: ssh's default
  std::string identity_file;                 ///< ssh -i
  std::vector<std::string> ssh_options;      ///< extra ssh arguments, e.g. {"-o", "ProxyJump=gw"}
  std::string ssh_program = "ssh";           ///< the client (searched in PATH)
  double connect_timeout = 15;               ///< seconds (ssh -o ConnectTimeout)
};

/** @brief What runs on each worker host. */
struct SSHWorkerOptions {
  int n_workers = 1;                         ///< worker processes per worker host (scale() may change it)
  int nthreads = 0;                          ///< --nthreads; 0: the worker's default (cores)
  std::string memory_limit = "auto";         ///< --memory-limit, Dask forms
  bool nanny = true;                         ///< --nanny / --no-nanny
  std::string resources;                     ///< --resources
  std::string protocol = "tcp";              ///< --protocol (tcp or ucx)
  std::vector<std::string> preload;          ///< --preload, paths on the remote hosts
  std::string local_directory;               ///< --local-directory on the remote hosts
  double death_timeout = 60;                 ///< --death-timeout, seconds
  double heartbeat_interval = 0.5;           ///< --heartbeat-interval, seconds
  std::vector<std::string> extra_args;       ///< more worker flags
  /**
   * @brief "cpu" (tessera-worker), "cuda" (tessera-cuda-worker: one worker per GPU) or "auto":
   * cuda where `nvidia-smi -L` on the host lists a GPU. Per host in `worker_kind_per_host`.
   */
  std::string worker_kind = "auto";
  std::map<std::string, std::string> worker_kind_per_host;
};

/** @brief What runs on the scheduler host. */
struct SSHSchedulerOptions {
  std::string host;                          ///< --host; default: the first host (without user@)
  int port = 8786;                           ///< --port; 0: any free port
  std::string dashboard_address = ":8787";   ///< --dashboard-address; empty: --no-dashboard
  std::string protocol = "tcp";              ///< --protocol
  double worker_ttl = 300;                   ///< --worker-ttl, seconds
  std::vector<std::string> extra_args;       ///< more scheduler flags
};

struct SSHClusterOptions {
  /** @brief hosts[0] runs the scheduler, the others workers ("host", "user@host"; ssh config names work). */
  std::vector<std::string> hosts;
  SSHConnectOptions connect;
  SSHWorkerOptions worker;
  SSHSchedulerOptions scheduler;
  /** @brief Folder of the tessera binaries on the remote hosts; empty: the folder of this
   * machine's tessera-worker (the same path everywhere, as with a shared install), else PATH. */
  std::string remote_prefix;
  /** @brief Environment of every remote process (LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES, ...). */
  std::map<std::string, std::string> remote_env;
  std::string token;                         ///< default: a random one; sent over ssh's stdin, never on a command line
  std::string log_level = "info";            ///< --log-level of the remote processes
  double timeout = 60;                       ///< seconds for the scheduler to listen and the workers to register
  std::size_t log_lines = 40;                ///< last output lines kept per remote process
};

/** @brief One remote process of the cluster, for inspection. */
struct SSHProcessInfo {
  std::string host;
  std::string role;                          ///< "scheduler" or "worker"
  std::string name;                          ///< the worker name given (`HOST-i`), or "scheduler"
  int ssh_pid = 0;                           ///< the local ssh client's pid (0 once it ended)
  bool running = false;
};

class SSHCluster final : public ClusterManager {
 public:
  /**
   * @brief Starts the scheduler, then the workers, and waits until every worker registered.
   * Throws tessera::Error (after stopping whatever started) when a process ends before it is up,
   * quoting its last output lines, or when `timeout` passes.
   */
  explicit SSHCluster(SSHClusterOptions options);
  ~SSHCluster() override;

  std::string scheduler_address() const override;
  std::string token() const override;
  /** @brief n workers in all, spread over the worker hosts round-robin; stops the newest extras. */
  void scale(std::size_t n) override;
  std::vector<std::string> workers() const override;
  void close() override;

  /** @brief Workers the scheduler has registered now (a cuda host's worker counts once per GPU). */
  std::size_t registered_workers() const;
  /** @brief Every remote process started, in order. */
  std::vector<SSHProcessInfo> processes() const;
  /** @brief The last output lines of remote process i (as processes()). */
  std::vector<std::string> logs(std::size_t i) const;
  /** @brief The worker kind chosen for each worker host ("cpu" or "cuda"). */
  std::map<std::string, std::string> worker_kinds() const;
  const SSHClusterOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/**
 * @brief The remote command that runs `argv` under the stdin wrapper (exported for tests): the
 * first line read from stdin is exported as TESSERA_TOKEN, `env` is exported, then argv runs
 * in the background while the wrapper waits for stdin to close (then SIGTERM, SIGKILL 10 s
 * later) or for the program to end (its exit status is the session's).
 */
std::string ssh_remote_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

/** @brief Quotes a word for a POSIX shell ('...', with ' as '\''). */
std::string shell_quote(const std::string& word);

}  // namespace tessera::distributed
