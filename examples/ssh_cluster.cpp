// A cluster over SSH (SSHCluster), then the seed workload on it:
//
//   ssh_cluster HOST1 HOST2 [HOST3 ...] [--user U] [--identity FILE] [--ssh-option ProxyJump=gw]
//               [--remote-prefix DIR] [--nthreads N] [--n 4000] [--chunk 1000]
//
// HOST1 runs the scheduler, the others one worker each (tessera-worker, or tessera-cuda-worker
// where the host has a GPU). The tessera binaries must be at the same path on every host (a
// shared or copied build, docs/deployment-local.md) or under --remote-prefix. Everything
// started is stopped when the program ends, also after an error.
#include <cmath>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <tessera/tessera.hpp>

int main(int argc, char** argv) {
  tessera::init(argc, argv);
  using namespace tessera::distributed;
  SSHClusterOptions o;
  std::int64_t n = 4000, chunk = 1000;
  CLI::App app{"Start a Tessera cluster over SSH and run the seed workload on it"};
  app.add_option("hosts", o.hosts, "The hosts: the first runs the scheduler")->required()->expected(2, -1);
  app.add_option("--user", o.connect.user, "ssh user");
  app.add_option("--port", o.connect.port, "ssh port");
  app.add_option("--identity", o.connect.identity_file, "ssh private key");
  std::vector<std::string> ssh_options;
  app.add_option("--ssh-option", ssh_options, "extra ssh option, passed as -o VALUE (repeatable)");
  app.add_option("--remote-prefix", o.remote_prefix, "folder of the tessera binaries on the hosts");
  app.add_option("--scheduler-port", o.scheduler.port, "scheduler port (0: any)");
  app.add_option("--nthreads", o.worker.nthreads, "threads per worker");
  app.add_option("--n", n, "array is n x n");
  app.add_option("--chunk", chunk, "chunks are chunk x chunk");
  CLI11_PARSE(app, argc, argv);
  o.worker.memory_limit = "auto";
  for (const auto& s : ssh_options) o.connect.ssh_options.insert(o.connect.ssh_options.end(), {"-o", s});

  try {
    SSHCluster cluster(o);  // closed (every remote process stopped) when it goes out of scope
    std::printf("scheduler %s, workers:", cluster.scheduler_address().c_str());
    for (const auto& w : cluster.workers()) std::printf(" %s", w.c_str());
    std::printf("\n");
    Client client(cluster.scheduler_address(), ClientOptions{.token = cluster.token()});
    auto x = tessera::random::normal(0, 10.0, 1.0, {n, n}, {chunk, chunk});
    const double value = (x + 1)[{tessera::step(2), tessera::step(2)}].sum().compute(client).item();
    const double kept = static_cast<double>((n + 1) / 2) * static_cast<double>((n + 1) / 2);
    std::printf("(x + 1)[::2, ::2].sum() = %.3f (expected about %.3f)\n", value, kept * 11.0);
    return std::abs(value - kept * 11.0) < kept * 0.01 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ssh_cluster: %s\n", e.what());
    return 1;
  }
}
