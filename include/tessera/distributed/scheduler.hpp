#pragma once
/**
 * @file
 * Scheduler: the scheduler server. It listens for workers and clients, feeds their
 * messages to a SchedulerState and sends the resulting actions. See docs/distributed.md.
 */
#include <memory>
#include <string>
#include <vector>

#include "tessera/distributed/scheduler_options.hpp"
#include "tessera/distributed/scheduler_state.hpp"

namespace tessera::distributed {

/**
 * @brief The scheduler server. Starts listening in the constructor; runs on the comm layer's
 * I/O thread plus one ticker thread; stops (closing every connection) in stop() or the
 * destructor.
 */
class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /** @brief The address it listens on ("tcp://127.0.0.1:8786"). */
  const std::string& address() const;
  /** @brief "http://127.0.0.1:8787", where the dashboard serves; empty without one. */
  std::string dashboard_url() const;
  /** @brief The bound addresses of also_listen, in order. */
  std::vector<std::string> other_addresses() const;
  /** @brief Blocks until stop() or the idle timeout closed the scheduler. */
  void wait();
  /** @brief Tells workers to close, closes every connection, stops listening. Idempotent. */
  void stop(bool close_workers = true);
  bool stopped() const;
  /** @brief Snapshot of the workers as the state machine sees them. */
  std::vector<WorkerSummary> workers() const;
  /** @brief Tasks known to the scheduler (not forgotten). */
  std::size_t task_count() const;
  /** @brief Client records the state machine holds (connected clients; departed ones are freed). */
  std::size_t client_count() const;
  /** @brief Worker records held (the state machine's, live or free for reuse): at most the most
   *  workers connected at once; a departed worker's record is reused, not kept. */
  std::size_t worker_record_count() const;
  /** @brief Workers whose clock offset the task stream keeps: those with a bar still in it. */
  std::size_t task_stream_offset_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/** @brief Reads the address from a scheduler file, waiting up to timeout_s for it to appear. */
std::string read_scheduler_file(const std::string& path, double timeout_s = 0);

}  // namespace tessera::distributed
