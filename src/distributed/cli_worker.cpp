// tessera-worker's main (like `dask worker`; also an application's worker, through
// tessera::init): its flags (add_worker_flags), one worker under a nanny or --nworkers of them
// (cli_nanny.cpp), or the worker itself, which waits --death-timeout for a scheduler it lost.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "../core/logging.hpp"
#include "cli_internal.hpp"
#include "cli_values.hpp"
#include "data_store_limits.hpp"
#include "options_check.hpp"
#include "scheduler_file.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/device.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/init.hpp"
#include "token.hpp"

namespace tessera::distributed {

namespace {

std::string host_of(const std::string& address) {
  auto s = address.find("://");
  std::string rest = s == std::string::npos ? address : address.substr(s + 3);
  auto colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

// Whether the scheduler at `address` answers a handshake now (a connection opened and closed).
bool scheduler_answers(const std::string& address, const std::string& token, const comm::Security& security) {
  comm::CommOptions co;
  co.token = token;
  co.security = security;
  co.name = "tessera-worker reconnecting";
  co.connect_timeout = std::chrono::milliseconds(1000);
  co.handshake_timeout = std::chrono::milliseconds(1000);
  try {
    comm::connect(address, co)->close();
    return true;
  } catch (const comm::CommError&) {
    return false;
  }
}

}  // namespace

int worker_main(int argc, char** argv) {
  cli::start_server_process();
  CLI::App app{"tessera-worker: a Tessera worker (like `dask worker`)", "tessera-worker"};
  cli::WorkerFlags f;
  cli::add_worker_flags(app, f, cli::WorkerProgram::worker);
  try {
    app.parse(argc, argv);
    cli::setup_logging(f.log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    cli::check_memory_limit_share(f.memory_limit, f.nworkers);
    cli::apply_cpu_affinity_env();
    // Before waiting for a scheduler file or starting children: a bad directory is known now.
    if (!f.local_directory.empty()) check_spill_directory(f.local_directory);
    const double death_timeout_s = parse_duration(f.death_timeout, "--death-timeout");
    auto is_tls = [](const std::string& a) { return a.rfind("tls://", 0) == 0; };
    // A tls:// scheduler: this worker listens on tls:// too (its peers fetch from it over TLS).
    if (is_tls(f.scheduler) && f.listen_address.empty()) f.protocol = "tls";
    f.security =
        cli::check_tls_flags(f.security, f.protocol == "tls" || is_tls(f.scheduler) || is_tls(f.listen_address));
    f.token = given_token(f.token);
    NannyLinkOptions link{f.scheduler, f.scheduler_file, f.token, f.security};
    // Once, by the process started from the command line (a nanny's children have a parent pid).
    if (!std::getenv("TESSERA_PARENT_PID"))
      if (auto weak = weak_token_warning(f.token); !weak.empty()) logging::warn("tessera-worker: {}", weak);
    if (f.nworkers > 1)
      return cli::run_nworkers(argc, argv, f.nworkers, f.name, f.nthreads, f.memory_limit, f.nanny,
                               f.memory_terminate_fraction, link);
    if (f.nworkers < 1) throw Error("--nworkers must be at least 1");
    if (f.scheduler.empty() && f.scheduler_file.empty())
      throw Error("give the scheduler address (tcp://host:port) or --scheduler-file");
    if (f.nanny) return cli::run_under_nanny(argc, argv, f.name, f.memory_limit, f.memory_terminate_fraction, link);
    if (f.scheduler.empty()) f.scheduler = read_scheduler_file(f.scheduler_file, death_timeout_s);
    // No token of its own: the one a scheduler started with --token auto wrote into its file,
    // read again whenever the file is (a scheduler started again makes a new one).
    const bool token_from_file = f.token.empty() && !f.scheduler_file.empty();
    if (token_from_file) f.token = scheduler_file_token(f.scheduler_file);
    if (is_tls(f.scheduler) && f.listen_address.empty() && f.protocol != "tls") {
      f.protocol = "tls";  // learnt from the scheduler file
      f.security = cli::check_tls_flags(f.security, true);
    }
    cli::preload(f.preloads);
    WorkerOptions wo;
    wo.scheduler_address = f.scheduler;
    wo.security = f.security;
    if (f.listen_address.empty()) {
      if (f.host.empty()) {
        std::string sh = host_of(f.scheduler);
        f.host = (sh == "127.0.0.1" || sh == "localhost") ? "127.0.0.1" : "0.0.0.0";
      }
      f.listen_address = f.protocol + "://" + f.host + ":" + std::to_string(f.worker_port);
    }
    wo.listen_address = f.listen_address;
    wo.name = f.name;
    wo.nthreads = f.nthreads > 0 ? f.nthreads : cli::threads_per_worker(f.nworkers);
    if (!f.resources.empty()) wo.resources = parse_resources(f.resources);
    wo.memory_limit = parse_memory_limit(f.memory_limit, system_memory(), f.nworkers);
    wo.local_directory = f.local_directory;
    wo.token = f.token;
    wo.heartbeat_interval = parse_positive_duration(f.heartbeat, "--heartbeat-interval");
    wo.death_timeout = death_timeout_s;
    if (!f.no_dashboard) wo.dashboard_address = f.dashboard;
    wo.nanny_pid = nanny_pid();  // under a nanny that restarts it: Client::restart may ask it to
    // With a GPU (this process sees one; CUDA_VISIBLE_DEVICES was set by whoever started it),
    // keep at most this much on it: dask-cuda's default, 0.8 of the device. Asking the runtime
    // for the device's size creates no CUDA context.
    if (DeviceRuntime* rt = device_runtime(); rt && rt->device_count() > 0)
      wo.device_memory_limit =
          parse_device_memory_limit(f.device_memory_limit.empty() ? "auto" : f.device_memory_limit,
                                    rt->info(0).total_memory);
    // Libraries loaded and the GPU probed: what this process holds now it holds at rest.
    check_memory_at_rest(wo.memory_limit);
    // As for the scheduler: a signal while connecting closes the worker once it exists.
    std::mutex mu;
    std::shared_ptr<Worker> worker;
    bool stop_requested = false;
    std::string reason;
    auto stopping = [&] {
      std::lock_guard lock(mu);
      return stop_requested;
    };
    int code = 0;
    {
      cli::SignalWatcher signals([&](int) {
        std::shared_ptr<Worker> w;
        {
          std::lock_guard lock(mu);
          w = worker;
          stop_requested = true;
        }
        if (w) w->close();
      });
      while (true) {
        auto w = std::make_shared<Worker>(wo);  // tells a nanny once it registered
        bool stop_now;
        {
          std::lock_guard lock(mu);
          worker = w;
          stop_now = stop_requested;
        }
        if (stop_now) w->close();
        reason = w->wait();
        // Registering again at the same address (a fixed --worker-port) before the scheduler
        // saw the old connection close: this proves it is the same worker (docs/security.md).
        wo.registration_secret = w->registration_secret();
        {
          std::lock_guard lock(mu);
          worker.reset();
        }
        w.reset();
        if (reason == kRestartRequestedReason) {
          code = kExitRestartRequested;  // its nanny starts it again at once
          break;
        }
        // A scheduler lost (not one that asked this worker to close) may come back: wait for it
        // --death-timeout, then fail, so that a supervisor (the nanny, systemd) sees it.
        if (reason.rfind("lost the scheduler", 0) != 0 || stopping()) break;
        logging::warn("tessera-worker: {}; waiting up to {} s (--death-timeout) for it to come back", reason,
                      death_timeout_s);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(death_timeout_s);
        bool back = false;
        while (!stopping() && std::chrono::steady_clock::now() < deadline) {
          if (!f.scheduler_file.empty()) {
            // A scheduler started again writes its (perhaps new) address there.
            try {
              wo.scheduler_address = read_scheduler_file(f.scheduler_file, 0);
              if (token_from_file) wo.token = f.token = scheduler_file_token(f.scheduler_file);
            } catch (const std::exception&) {
            }
          }
          if ((back = scheduler_answers(wo.scheduler_address, f.token, wo.security))) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        if (stopping()) break;
        if (!back) {
          logging::error("tessera-worker: the scheduler at {} did not come back within {} s (--death-timeout)",
                         wo.scheduler_address, death_timeout_s);
          code = kExitSchedulerGone;
          break;
        }
        logging::info("tessera-worker: the scheduler at {} is back; registering again", wo.scheduler_address);
      }
    }
    logging::info("tessera-worker: closed ({})", reason);
    return code;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // a flag value found bad after parsing: 105, as one found while parsing
  } catch (const std::exception& e) {
    logging::error("tessera-worker: {}", e.what());
    return 1;
  }
}

}  // namespace tessera::distributed
