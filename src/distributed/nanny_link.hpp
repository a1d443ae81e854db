#pragma once
/**
 * @file The nanny's own connection to the scheduler (docs/nanny.md, "A worker too hung to
 * restart"): it registers as the nanny of its process (`register-nanny`: host and pid), and
 * answers `kill-worker` by SIGKILLing that child, which the nanny then starts again at once.
 * A background thread keeps the connection, dialling again every `retry_interval` while the
 * scheduler is away. Private to libtessera.
 */
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "nanny.hpp"
#include "tessera/comm/comm.hpp"

namespace tessera::distributed {

struct NannyLinkOptions {
  std::string scheduler_address;  ///< or, when empty, read from scheduler_file at each dial
  std::string scheduler_file;
  std::string token;
  comm::Security security;
  double retry_interval = 1.0;  ///< seconds between dials while not connected
};

class NannyLink {
 public:
  /** @brief kill(pid): SIGKILL that child for a restart; false when it is not ours. */
  using KillFn = std::function<bool(int pid)>;
  NannyLink(NannyLinkOptions options, KillFn kill);
  ~NannyLink();
  NannyLink(const NannyLink&) = delete;
  NannyLink& operator=(const NannyLink&) = delete;

  /**
   * @brief Tells the scheduler that the nanny gave up restarting a worker (`worker-given-up`),
   * so that the tasks only that worker could run err with the reason; waits up to 2 s for the
   * message to be written (the nanny may exit right after). Nothing is sent while not connected.
   */
  void report_given_up(const GivenUpWorker& worker);

 private:
  struct Shared;
  void run();
  NannyLinkOptions opt_;
  std::shared_ptr<Shared> shared_;  // with the comm's handlers, which may outlive this object
  std::thread thread_;
};

}  // namespace tessera::distributed
