// benchmarks/task_throughput: N no-op tasks through the distributed scheduler, client.map then
// client.gather (Dask anchor: about 640 tasks/s on this machine). One JSON line.
//
//   task_throughput --tasks 100000 [--workers 2 --threads 1 | --scheduler ADDRESS]
#include <cstdio>

#include "bench_cluster.hpp"

int noop(int x) { return x; }
TESSERA_REGISTER_FUNCTION(noop);

static int run(int argc, char** argv) {
  tessera::init(argc, argv);
  int tasks = 100000, repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"task_throughput: map then gather of no-op tasks"};
  app.add_option("--tasks", tasks, "number of tasks");
  app.add_option("--repeat", repeat, "runs; the best is reported");
  app.add_option("--scheduler", cluster.scheduler, "running scheduler (default: start a local cluster)");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  auto client = bench::connect(cluster);
  std::vector<int> items(static_cast<std::size_t>(tasks));
  for (int i = 0; i < tasks; ++i) items[static_cast<std::size_t>(i)] = i;
  // Warm up connections and the scheduler's duration estimate.
  client->gather(client->map("noop", std::vector<int>(100, 1)));
  double best = 1e300;
  long long checksum = 0;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto futures = client->map("noop", items);
    auto values = client->gather(futures);
    best = std::min(best, bench::seconds_since(t0));
    checksum = 0;
    for (const auto& v : values) checksum += tessera::from_value<int>(v);
  }
  long long expected = static_cast<long long>(tasks) * (tasks - 1) / 2;
  std::printf("{\"benchmark\": \"task_throughput\", \"impl\": \"tessera\", \"tasks\": %d, \"workers\": %d, "
              "\"threads\": %d, \"protocol\": \"%s\", \"seconds\": %.6f, \"tasks_per_s\": %.1f, \"correct\": %s}\n",
              tasks, cluster.workers, cluster.threads, cluster.protocol.c_str(), best, tasks / best,
              checksum == expected ? "true" : "false");
  return checksum == expected ? 0 : 1;
}

int main(int argc, char** argv) { return bench::run_main("task_throughput", run, argc, argv); }
