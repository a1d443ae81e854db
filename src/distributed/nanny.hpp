#pragma once
/**
 * @file The nanny (Dask's): a parent process that runs worker processes, restarts one that dies
 * (a signal, or a non-zero exit after it registered) with a back-off and a cap on restarts per
 * minute, restarts one whose resident memory passes a fraction of its memory limit, and stops
 * them all on request (the signal passed on, then SIGKILL after a grace period). Private to the
 * library; docs/nanny.md has the design.
 */
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::distributed {

/** @brief A worker's exit status when the scheduler is gone for --death-timeout: not restarted. */
inline constexpr int kExitSchedulerGone = 3;

/**
 * @brief A worker's exit status when the scheduler asked it to restart (Client::restart): its
 * nanny starts it again at once, with no back-off, not counted against the restart cap.
 */
inline constexpr int kExitRestartRequested = 4;

/** @brief The close reason (Worker::wait()) of a worker asked to restart; worker_main exits 4. */
inline constexpr const char* kRestartRequestedReason = "the scheduler asked it to restart (Client::restart)";

/**
 * @brief The variable a nanny that restarts its children sets to its pid: a worker whose parent
 * has that pid tells the scheduler it has a nanny, so Client::restart asks it to restart (exit 4)
 * instead of closing it. `--nworkers N --no-nanny` does not set it (nothing restarts those).
 */
inline constexpr const char* kNannyPidEnv = "TESSERA_NANNY_PID";

/** @brief The pid of this process's nanny: kNannyPidEnv when it names the parent, else 0. */
int nanny_pid();

/**
 * @brief The variable naming the descriptor a worker started by a nanny writes one byte to once
 * it registered: a child that dies before that failed to start, and is not restarted.
 */
inline constexpr const char* kNannyReadyFdEnv = "TESSERA_NANNY_READY_FD";

/** @brief Tells the nanny (if this process has one) that the worker registered; once. */
void tell_nanny_ready();

/**
 * @brief The variable a nanny with a memory terminate threshold sets for each child: the
 * resident bytes past which it kills that child (--memory-terminate-fraction of its limit).
 */
inline constexpr const char* kNannyKillBytesEnv = "TESSERA_NANNY_KILL_BYTES";

/**
 * @brief Called by a worker process (its --memory-limit in bytes) before it registers: throws
 * tessera::Error when this
 * process's resident memory at rest (libraries loaded, no task run) already passes its nanny's
 * kill threshold (kNannyKillBytesEnv), which would kill it as soon as it registered, over and
 * over. Failing before registering is a failure to start, which the nanny does not restart.
 */
void check_memory_at_rest(std::size_t memory_limit);

/** @brief A child the nanny stopped restarting: it died past the cap of restarts a minute. */
struct GivenUpWorker {
  std::string name;
  pid_t pid = 0;       ///< of its last life
  std::string reason;  ///< "it was restarted 10 times in the last minute; it last died of SIGKILL (...)"
};

/** @brief One supervised process. */
struct NannyChild {
  std::string name;  ///< for the log ("worker-0")
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::size_t memory_limit = 0;  ///< bytes; 0: no memory terminate threshold
};

struct NannyOptions {
  std::string program = "tessera-worker";  ///< names the log lines
  bool restart = true;                     ///< false: only run, pass signals on and wait
  int max_restarts_per_minute = 10;        ///< more within 60 s: give that child up
  double first_backoff = 0.1;              ///< seconds before the first restart; doubled per recent restart
  double max_backoff = 5;                  ///< seconds
  double memory_terminate_fraction = 0.95; ///< of a child's memory_limit; 0: never
  double memory_poll_interval = 0.2;       ///< seconds between /proc reads
  double stop_grace = 5;                   ///< seconds from the passed-on signal to SIGKILL
  /// Called on run()'s thread when a child is given up (the nanny's link tells the scheduler,
  /// whose tasks that needed it then err with the reason instead of waiting for ever).
  std::function<void(const GivenUpWorker&)> on_given_up;
};

/** @brief The resident set size of a process from /proc/PID/statm; 0 when it cannot be read. */
std::size_t process_rss(pid_t pid);

/** @brief "SIGSEGV (Segmentation fault)". */
std::string signal_description(int sig);

/**
 * @brief Runs the children until each ended for good. run() returns 0 when every child exited 0
 * (or died of a signal stop() passed on), kExitSchedulerGone when one gave up on the scheduler,
 * else 1. stop() may be called from any thread (a signal watcher), before or during run().
 */
class Nanny {
 public:
  Nanny(NannyOptions options, std::vector<NannyChild> children);
  int run();
  /** @brief Passes `sig` (SIGTERM, SIGINT) on to the children; SIGKILL after stop_grace. */
  void stop(int sig);
  /**
   * @brief SIGKILLs the running child `pid` for a restart (the scheduler asked through the
   * nanny's link: it did not leave within the grace period of Client::restart); it is started
   * again at once, as one that exited kExitRestartRequested. False when no child has that pid.
   */
  bool kill_for_restart(pid_t pid);
  /** @brief The pids of the children now running (tests; 0 for a child between lives). */
  std::vector<pid_t> pids() const;
  /** @brief Restarts so far, over all children (deaths; restarts on request not counted). */
  int restarts() const { return restarts_.load(); }
  /** @brief Children started again because they exited kExitRestartRequested. */
  int requested_restarts() const { return requested_restarts_.load(); }

 private:
  struct Slot;
  void start(Slot& s);
  NannyOptions opt_;
  std::vector<NannyChild> children_;
  mutable std::mutex mu_;  // guards stop_signal_ and the slots' pids (stop() reads them)
  int stop_signal_ = 0;
  std::vector<pid_t> pids_;
  std::vector<char> kill_requested_;  // per child: kill_for_restart() killed this life
  std::atomic<int> restarts_{0};
  std::atomic<int> requested_restarts_{0};
};

}  // namespace tessera::distributed
