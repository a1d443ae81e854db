// benchmarks/latency: submit then result() of a trivial task, one at a time (Dask anchor:
// about 10.7 ms median on this machine). One JSON line with the median, p90 and min.
//
//   latency --round-trips 1000 [--workers 2 --threads 1 | --scheduler ADDRESS]
#include <algorithm>
#include <cstdio>

#include "bench_cluster.hpp"

int inc(int x) { return x + 1; }
TESSERA_REGISTER_FUNCTION(inc);

static int run(int argc, char** argv) {
  tessera::init(argc, argv);
  int round_trips = 1000;
  bench::ClusterArgs cluster;
  CLI::App app{"latency: submit then result of a trivial task"};
  app.add_option("--round-trips", round_trips, "number of round trips");
  app.add_option("--scheduler", cluster.scheduler, "running scheduler (default: start a local cluster)");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  auto client = bench::connect(cluster);
  for (int i = 0; i < 50; ++i) client->submit("inc", i).result();  // warm up connections
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(round_trips));
  bool correct = true;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < round_trips; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    int v = client->submit("inc", i).result_as<int>();
    us.push_back(bench::seconds_since(t0) * 1e6);
    correct = correct && v == i + 1;
  }
  double total = bench::seconds_since(start);
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us[std::min(us.size() - 1, static_cast<std::size_t>(p * us.size()))]; };
  std::printf("{\"benchmark\": \"latency\", \"impl\": \"tessera\", \"round_trips\": %d, \"workers\": %d, "
              "\"threads\": %d, \"protocol\": \"%s\", \"seconds\": %.6f, \"median_us\": %.1f, \"p90_us\": %.1f, "
              "\"min_us\": %.1f, \"correct\": %s}\n",
              round_trips, cluster.workers, cluster.threads, cluster.protocol.c_str(), total, pct(0.5), pct(0.9),
              us.front(), correct ? "true" : "false");
  return correct ? 0 : 1;
}

int main(int argc, char** argv) { return bench::run_main("latency", run, argc, argv); }
