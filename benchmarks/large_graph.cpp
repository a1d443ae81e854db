// benchmarks/large_graph: an array graph of about N tasks, (ones + 1).sum() over N one-element
// chunks, computed on a local cluster whose scheduler runs as its own process, so that its
// peak memory (VmHWM) can be reported per task. One JSON line.
//
//   large_graph --tasks 1000000 [--workers 2 --threads 1]
#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench_cluster.hpp"

namespace {
/** A memory figure of process pid from /proc/PID/status ("VmHWM:" peak, "VmRSS:" now), in bytes. */
std::size_t status_bytes(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) {
      std::istringstream is(line.substr(field.size()));
      std::size_t kb = 0;
      is >> kb;
      return kb * 1024;
    }
  return 0;
}
std::size_t peak_rss_bytes(int pid) { return status_bytes(pid, "VmHWM:"); }
std::size_t rss_bytes(int pid) { return status_bytes(pid, "VmRSS:"); }
}  // namespace

static int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::int64_t tasks = 1000000;
  bench::ClusterArgs cluster;
  CLI::App app{"large_graph: a million-task array graph on a local cluster"};
  app.add_option("--tasks", tasks, "about this many tasks");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  using namespace tessera::distributed;
  LocalClusterOptions o;
  o.n_workers = cluster.workers;
  o.threads_per_worker = cluster.threads;
  o.scheduler_process = true;
  o.timeout = 120;
  auto lc = std::make_shared<LocalCluster>(o);
  const int scheduler_pid = lc->scheduler_pid();
  Client client(lc);
  const std::size_t idle_rss = rss_bytes(scheduler_pid);

  // About 8/7 of the chunks are tasks: one fused (ones + 1) + partial sum per chunk, then the
  // combine tree with split_every 8.
  const std::int64_t chunks = std::max<std::int64_t>(1, tasks * 7 / 8);
  auto y = (ones({chunks}, {1}) + 1).sum();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Key> keys;
  Graph g = y.to_graph(&keys);
  const double build_s = bench::seconds_since(t0);
  const std::size_t graph_tasks = g.size();
  auto t1 = std::chrono::steady_clock::now();
  double value = client.get(g, keys)[0].block().item();
  const double run_s = bench::seconds_since(t1);
  const std::size_t peak = peak_rss_bytes(scheduler_pid);
  const bool correct = value == 2.0 * static_cast<double>(chunks);
  std::printf("{\"benchmark\": \"large_graph\", \"impl\": \"tessera\", \"tasks\": %zu, \"workers\": %d, "
              "\"threads\": %d, \"seconds\": %.3f, \"graph_build_seconds\": %.3f, \"tasks_per_s\": %.1f, "
              "\"scheduler_peak_rss_bytes\": %zu, \"scheduler_idle_rss_bytes\": %zu, "
              "\"scheduler_bytes_per_task\": %.1f, \"value\": %.1f, \"correct\": %s}\n",
              graph_tasks, cluster.workers, cluster.threads, run_s, build_s, graph_tasks / run_s, peak, idle_rss,
              static_cast<double>(peak - std::min(peak, idle_rss)) / static_cast<double>(graph_tasks), value,
              correct ? "true" : "false");
  return correct ? 0 : 1;
}

int main(int argc, char** argv) { return bench::run_main("large_graph", run, argc, argv); }
