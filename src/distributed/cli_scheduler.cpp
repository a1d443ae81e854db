// tessera-scheduler's command line and main (like `dask scheduler`): its flags, --token auto,
// and the scheduler's run until it stops or a signal stops it.
#include <iostream>
#include <mutex>

#include "../core/logging.hpp"
#include "cli_internal.hpp"
#include "cli_values.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/init.hpp"
#include "token.hpp"
#include "util.hpp"

namespace tessera::distributed {

int scheduler_main(int argc, char** argv) {
  cli::start_server_process();
  CLI::App app{"tessera-scheduler: the Tessera scheduler (like `dask scheduler`)", "tessera-scheduler"};
  std::string host = "127.0.0.1", protocol = "tcp", scheduler_file, log_level, dashboard = ":8787", token;
  bool no_dashboard = false;
  int port = 8786;
  std::string idle_timeout = "0", worker_ttl = "300s", worker_silent = "5s", registration_timeout = "30s";
  std::size_t task_stream_length = 100000;
  std::vector<std::string> preloads;
  comm::Security security;
  app.add_option("--host", host, "Address to listen on (0.0.0.0 for every interface)")->capture_default_str();
  app.add_option("--port", port, "Port to listen on (0 picks a free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cli::add_protocol_flag(app, protocol);
  app.add_option("--scheduler-file", scheduler_file, "Write the scheduler's address to this JSON file");
  app.add_option("--idle-timeout", idle_timeout,
                 "Close after this long with no clients and no tasks: 60, 10s, 5 minutes (0 = never)")
      ->check(cli::duration_check());
  app.add_option("--worker-ttl", worker_ttl, "Remove a worker silent this long: 300, 30s, 5 minutes (more than 0)")
      ->check(cli::positive_duration_check())
      ->capture_default_str();
  app.add_option("--worker-silent", worker_silent,
                 "Send no new tasks to a worker without a heartbeat for this long: 5s (0 = never)")
      ->check(cli::duration_check())
      ->capture_default_str();
  app.add_option("--registration-timeout", registration_timeout,
                 "Close a connection that has not registered as a client, worker or nanny this long after it was "
                 "accepted: 30s (0 = never)")
      ->check(cli::duration_check())
      ->capture_default_str();
  app.add_option("--dashboard-address", dashboard,
                 "HTTP dashboard (/metrics, /health, /api/v1/...): host:port, or :port on --host; a port in use "
                 "gives a free one")
      ->capture_default_str();
  app.add_flag("--no-dashboard", no_dashboard, "Serve no HTTP dashboard");
  app.add_option("--task-stream-length", task_stream_length,
                 "Finished tasks kept for the task stream (/status, get_task_stream); 0 keeps none")
      ->capture_default_str();
  cli::add_shared_flags(app, preloads, token, log_level);
  cli::add_tls_flags(app, security);
  try {
    app.parse(argc, argv);
    cli::setup_logging(log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    token = token_or_env(token);
    SchedulerOptions so;
    if (token == kAutoToken) {
      // 128 bits from the OS random source. With a scheduler file, it goes there (mode 0600),
      // where workers and clients given the file find it; else it is printed once, to stderr.
      token = generate_token();
      so.token_in_scheduler_file = !scheduler_file.empty();
      if (scheduler_file.empty())
        std::cerr << "tessera-scheduler token (--token auto): " << token
                  << " (give it to workers and clients as TESSERA_TOKEN)" << std::endl;
    } else if (auto weak = weak_token_warning(token); !weak.empty()) {
      logging::warn("tessera-scheduler: {}", weak);
    }
    so.security = cli::check_tls_flags(security, protocol == "tls");
    cli::preload(preloads);
    so.address = protocol + "://" + host + ":" + std::to_string(port);
    so.token = token;
    so.scheduler_file = scheduler_file;
    so.idle_timeout = parse_duration(idle_timeout, "--idle-timeout");
    so.state.worker_ttl = parse_positive_duration(worker_ttl, "--worker-ttl");
    so.worker_silent = parse_duration(worker_silent, "--worker-silent");
    so.registration_timeout = parse_duration(registration_timeout, "--registration-timeout");
    so.task_stream_length = task_stream_length;
    if (!no_dashboard) so.dashboard_address = dashboard;
    // The watcher comes first, so that a signal during start-up is not the default action
    // (death); it stops the scheduler as soon as there is one.
    std::mutex mu;
    Scheduler* live = nullptr;
    bool stop_requested = false;
    cli::SignalWatcher signals([&](int) {
      std::lock_guard lock(mu);
      if (live) live->stop(true);
      else stop_requested = true;
    });
    Scheduler sched(so);
    {
      std::lock_guard lock(mu);
      live = &sched;
      if (stop_requested) sched.stop(true);
    }
    std::cerr << "tessera-scheduler listening at " << sched.address() << std::endl;  // stdout stays clean
    if (!sched.dashboard_url().empty()) std::cerr << "tessera-scheduler dashboard at " << sched.dashboard_url() << std::endl;
    sched.wait();
    {
      std::lock_guard lock(mu);
      live = nullptr;
    }
    return 0;
  } catch (const std::exception& e) {
    logging::error("tessera-scheduler: {}", e.what());
    return 1;
  }
}

}  // namespace tessera::distributed
