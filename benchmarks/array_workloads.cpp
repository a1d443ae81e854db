// benchmarks/array_workloads: common dask.array workloads nobody tuned (issue 17), one per run,
// printed as one JSON line; benchmarks/dask/array_workloads.py is the Dask side with the same
// data definitions and benchmarks/compare_array_workloads.py runs both.
//
//   array_workloads --workload NAME [--n N] [--chunk C] [--scheduler threads|sync|distributed]
//                   [--repeat K] [--workers 2 --threads 1]   (distributed: its own local cluster)
//
// Workloads (x is n x n in chunk x chunk chunks; defaults of n and chunk in brackets):
//   transpose_sum    (x + x.T).sum(),                           x uniform(0, 1)   [20000, 2000]
//   trig_chain       ((sin(x)**2 + cos(x)**2) * 3 - 2).max(),   x uniform(0, 1)   [10000, 2000]
//   matmul_sum       (x @ y).sum(),                     x, y uniform(0, 1)        [4000, 1000]
//   mean_axis0       x.mean(axis=0),                            x normal(10, 1)   [20000, 2000]
//   std_all          x.std(),                                   x normal(10, 1)   [20000, 2000]
//   rechunk_sum      x.rechunk((2C, C/2)).sum(axis=1),          x uniform(0, 1)   [20000, 2000]
//   slice_sum        x[::3, 100:-100].sum(),                    x uniform(0, 1)   [20000, 2000]
//   elementwise_exp  (exp(-x*x) / (1 + abs(x))).sum(),          x uniform(-1, 1)  [20000, 2000]
// "value" is the scalar result, or the sum of the vector for mean_axis0 and rechunk_sum.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "bench_cluster.hpp"

namespace {

using tessera::Array;

struct Workload {
  std::int64_t n;      // default size
  std::int64_t chunk;  // default chunk
  // Builds the lazy expression; the random input is part of it, so generation is timed too
  // (as in the Dask script, where the graph is built inside the timed region).
  std::function<Array(std::int64_t n, std::int64_t c)> build;
};

const std::map<std::string, Workload>& workloads() {
  using namespace tessera;
  static const std::map<std::string, Workload> all = {
      {"transpose_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return (x + x.T()).sum();
        }}},
      {"trig_chain",
       {10000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return ((power(sin(x), 2) + power(cos(x), 2)) * 3 - 2).max();
        }}},
      {"matmul_sum",
       {4000, 1000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          auto x = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          auto y = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          return matmul(x, y).sum();
        }}},
      {"mean_axis0",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
          return x.mean({.axes = {0}});
        }}},
      {"std_all",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
          return x.std();
        }}},
      {"rechunk_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x.rechunk({c * 2, std::max<std::int64_t>(1, c / 2)}).sum({.axes = {1}});
        }}},
      {"slice_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x[{step(3), slice(100, -100)}].sum();
        }}},
      {"elementwise_exp",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, -1.0, 1.0, {n, n}, {c, c});
          return (exp(-x * x) / (1 + abs(x))).sum();
        }}},
  };
  return all;
}

// The checksum: the scalar itself, or the sum of a vector result.
double checksum(const tessera::Block& result) {
  if (result.ndim() == 0) return result.item();
  double total = 0;
  for (double v : result.values<double>()) total += v;
  return total;
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string workload;
  std::int64_t n = 0, chunk = 0;
  std::string scheduler = "threads";
  int repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"array_workloads benchmark"};
  std::vector<std::string> names;
  for (const auto& [name, w] : workloads()) names.push_back(name);
  app.add_option("--workload", workload, "which workload")->required()->check(CLI::IsMember(names));
  app.add_option("--n", n, "arrays are n x n (default: the workload's)");
  app.add_option("--chunk", chunk, "chunks are chunk x chunk (default: the workload's)");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--repeat", repeat, "runs; the best time is reported");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  const Workload& w = workloads().at(workload);
  if (n <= 0) n = w.n;
  if (chunk <= 0) chunk = w.chunk;
  // The cluster (if any) starts here, outside the timed region.
  auto execution = bench::open_execution("array_workloads", scheduler, "host", cluster);
  if (!execution.executor) return 2;
  // One untimed run at a tiny size first: the thread pool or the workers start up then, not
  // in the timed runs (the Dask script does the same).
  w.build(256, std::max<std::int64_t>(16, std::min<std::int64_t>(chunk, 64))).compute(*execution.executor);
  double best = 1e300, value = 0;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    value = checksum(w.build(n, chunk).compute(*execution.executor));
    best = std::min(best, bench::seconds_since(t0));
  }
  std::printf(
      "{\"benchmark\": \"array_workloads\", \"workload\": \"%s\", \"impl\": \"tessera\", \"scheduler\": \"%s\", "
      "\"n\": %lld, \"chunk\": %lld, \"seconds\": %.6f, \"value\": %.17g}\n",
      workload.c_str(), execution.distributed() ? "distributed" : scheduler.c_str(), static_cast<long long>(n),
      static_cast<long long>(chunk), best, value);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("array_workloads", run, argc, argv); }
