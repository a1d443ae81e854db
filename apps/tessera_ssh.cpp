// tessera-ssh: a whole cluster over SSH from one command, as `dask ssh`:
//
//   tessera-ssh HOST1 HOST2 [HOST3 ...] [--ssh-username U] [--ssh-port P] [--ssh-private-key F]
//               [--remote-prefix DIR] [--nthreads N] [--nworkers N] [--memory-limit M]
//               [--scheduler-port P] ...
//
// HOST1 runs tessera-scheduler, the others tessera-worker (tessera-cuda-worker where
// `nvidia-smi -L` lists a GPU). Prints the scheduler's address on stdout (and the token's
// variable on stderr), then waits; Ctrl-C or SIGTERM stops every remote process and exits 0. A
// scheduler that ends on its own ends this command with status 1. docs/deployment.md "SSH".
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tessera/core/error.hpp"
#include "tessera/distributed/ssh_cluster.hpp"

namespace {

int g_signal_pipe[2] = {-1, -1};
extern "C" void on_signal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &c, 1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::distributed;
  SSHClusterOptions o;
  o.worker.worker_kind = "auto";
  CLI::App app{"Start a Tessera cluster over SSH: the first host runs the scheduler, the others workers"};
  app.add_option("hosts", o.hosts, "Hosts (host or user@host; names from ~/.ssh/config work)")->required()->expected(2, -1);
  app.add_option("--ssh-username", o.connect.user, "User name on the remote hosts (default: ssh's)");
  app.add_option("--ssh-port", o.connect.port, "SSH port (default: ssh's)")->check(CLI::Range(0, 65535));
  app.add_option("--ssh-private-key", o.connect.identity_file, "Private key file (ssh -i)");
  std::vector<std::string> ssh_options;
  app.add_option("--ssh-option", ssh_options, "Extra ssh option, e.g. ProxyJump=gateway (repeatable: -o VALUE)");
  app.add_option("--remote-prefix,--remote-python-like", o.remote_prefix,
                 "Folder of the tessera binaries on the remote hosts (default: this machine's)");
  std::vector<std::string> env;
  app.add_option("--remote-env", env, "KEY=VALUE for every remote process (repeatable)");
  app.add_option("--scheduler-port", o.scheduler.port, "Scheduler port (0: any free)")->check(CLI::Range(0, 65535))->capture_default_str();
  app.add_option("--scheduler-host", o.scheduler.host, "Address the scheduler listens on (default: the first host)");
  app.add_option("--dashboard-address", o.scheduler.dashboard_address, "Scheduler dashboard address; empty: none")->capture_default_str();
  app.add_option("--protocol", o.scheduler.protocol, "tcp or ucx (scheduler and workers)")->capture_default_str();
  app.add_option("--nworkers", o.worker.n_workers, "Worker processes per worker host")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  app.add_option("--nthreads", o.worker.nthreads, "Threads per worker (default: the host's cores)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--memory-limit", o.worker.memory_limit, "Per worker: auto, 4GB, 0.5, 0 (none)")->capture_default_str();
  bool no_nanny = false;
  app.add_flag("--no-nanny", no_nanny, "Run workers without a nanny");
  app.add_option("--worker-kind", o.worker.worker_kind, "cpu, cuda or auto (cuda where nvidia-smi -L lists a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  app.add_option("--preload", o.worker.preload, "Library (path on the hosts) every worker loads (repeatable)");
  app.add_option("--local-directory", o.worker.local_directory, "Spill directory on the worker hosts");
  app.add_option("--log-level", o.log_level, "Log level of the remote processes")->capture_default_str();
  app.add_option("--timeout", o.timeout, "Seconds to wait for the scheduler and the workers")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.worker.nanny = !no_nanny;
  o.worker.protocol = o.scheduler.protocol;
  for (const auto& s : ssh_options) o.connect.ssh_options.insert(o.connect.ssh_options.end(), {"-o", s});
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "tessera-ssh: --remote-env wants KEY=VALUE, got \"" << kv << "\"\n";
      return 105;
    }
    o.remote_env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (const char* t = std::getenv("TESSERA_TOKEN"); t && *t) o.token = t;

  // Signals become a byte on a pipe that main waits on (installed before anything starts, so a
  // Ctrl-C during start-up still closes what was started).
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) return 1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  try {
    SSHCluster cluster(o);
    std::cout << cluster.scheduler_address() << std::endl;
    std::cerr << "tessera-ssh: scheduler at " << cluster.scheduler_address() << " with " << cluster.workers().size()
              << " worker processes; connect with TESSERA_TOKEN=" << cluster.token()
              << " (export it before starting tessera-ssh to choose it). Ctrl-C stops the cluster." << std::endl;
    while (true) {
      pollfd p{g_signal_pipe[0], POLLIN, 0};
      int r = ::poll(&p, 1, 1000);
      if (r > 0) {
        char c = 0;
        [[maybe_unused]] auto n = ::read(g_signal_pipe[0], &c, 1);
        std::cerr << "tessera-ssh: signal " << static_cast<int>(c) << ", stopping the cluster" << std::endl;
        cluster.close();
        return 0;
      }
      bool scheduler_up = false;
      for (const auto& p2 : cluster.processes())
        if (p2.role == "scheduler") scheduler_up = p2.running;
      if (!scheduler_up) {
        std::cerr << "tessera-ssh: the scheduler ended; its last lines:\n";
        for (const auto& l : cluster.logs(0)) std::cerr << "  " << l << "\n";
        cluster.close();
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "tessera-ssh: " << e.what() << std::endl;
    return 1;
  }
}
