#pragma once
/**
 * @file
 * Scheduler: the scheduler server. It listens for workers and clients, feeds their
 * messages to a SchedulerState and sends the resulting actions. See docs/distributed.md.
 */
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/security.hpp"
#include "tessera/distributed/scheduler_state.hpp"

namespace tessera::distributed {

struct SchedulerOptions {
  std::string address = "tcp://127.0.0.1:8786";  ///< where to listen; port 0 picks a free one
  /** @brief More addresses to listen on, e.g. "inproc://" for clients in this process. */
  std::vector<std::string> also_listen;
  std::string token;                              ///< shared secret every peer must present
  /** @brief tls:// addresses: CA file, certificate and key (Dask's Security); fields left empty
   *  come from TESSERA_TLS_CA_FILE, TESSERA_TLS_CERT, TESSERA_TLS_KEY. See docs/security.md. */
  comm::Security security;
  std::string scheduler_file;                     ///< write {"address": ...} JSON here when listening
  /** @brief Write `token` into scheduler_file too, made readable by its owner only (mode 0600):
   *  workers and clients given that file and no token of their own take it from there
   *  (tessera-scheduler --token auto; docs/security.md). */
  bool token_in_scheduler_file = false;
  double idle_timeout = 0;   ///< seconds without clients or tasks before closing; 0 = never
  double tick_interval = 0.1;  ///< seconds between Ticks (heartbeat checks, work stealing)
  SchedulerConfig state;       ///< the state machine's tunables (worker_ttl, saturation, ...)
  /** @brief state.worker_silent when that is 0: seconds without a heartbeat after which a worker
   *  gets no new tasks (10 of the default heartbeats); 0 = never. */
  double worker_silent = 5;
  /** @brief Serve the HTTP dashboard (/metrics, /health, /api/v1/...) here: ":8787" (on this
   *  scheduler's host), "0.0.0.0:8787", ":0" (a free port). Empty: none (the tessera-scheduler
   *  binary's default is ":8787", as Dask's). A port in use gives a free one, with a warning.
   *  See docs/dashboard.md. */
  std::string dashboard_address;
  /** @brief Finished tasks kept for the task stream (/status, Client::get_task_stream), as
   *  Dask's 100,000; 0 keeps none and skips the recording. */
  std::size_t task_stream_length = 100000;
  /** @brief Seconds a connection may stay without registering (register-worker, -client or
   *  -nanny) before it is closed: an authenticated peer that only asks questions, or nothing,
   *  must not hold one of the listener's connections for ever (tessera-scheduler
   *  --registration-timeout); 0 = never. Clients, workers and nannies register at once. */
  double registration_timeout = 30;
};

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
