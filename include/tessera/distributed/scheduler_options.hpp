#pragma once
/**
 * @file
 * SchedulerOptions: what a scheduler server is started with (tessera-scheduler's flags fill it;
 * docs/deployment.md). Apart from the server so that the code that checks or prints options
 * need not include it.
 */
#include <cstddef>
#include <string>
#include <vector>

#include "tessera/comm/security.hpp"
#include "tessera/distributed/scheduler_state.hpp"  // SchedulerConfig

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

}  // namespace tessera::distributed
