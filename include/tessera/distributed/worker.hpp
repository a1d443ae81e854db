#pragma once
/**
 * @file
 * Worker: the worker server. It registers with the scheduler, runs tasks on its threads,
 * fetches inputs straight from peer workers, serves its data to peers and clients, and
 * spills to disk near its memory limit. See docs/distributed.md.
 */
#include <memory>
#include <string>

#include "tessera/distributed/worker_options.hpp"
#include "tessera/distributed/worker_stats.hpp"

namespace tessera::distributed {

/**
 * @brief The worker server. The constructor connects and registers (throws CommError when the
 * scheduler cannot be reached within death_timeout); the worker then runs until the scheduler
 * tells it to close, the scheduler connection is lost, or close() is called.
 */
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /** @brief The address peers and clients reach it at. */
  const std::string& address() const;
  /** @brief "http://127.0.0.1:40123", where its dashboard serves; empty without one. */
  std::string dashboard_url() const;
  /** @brief Blocks until the worker has closed; returns why. */
  std::string wait();
  /** @brief Leaves the cluster cleanly (the scheduler does not count it as a failure). */
  void close();
  bool closed() const;
  WorkerStats stats() const;
  /** @brief The secret the scheduler gave this registration (docs/security.md): a worker
   *  started again at the same address passes it in WorkerOptions::registration_secret. */
  std::string registration_secret() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tessera::distributed
