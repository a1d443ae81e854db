// benchmarks/seed_array: the seed workload (x + 1)[::2, ::2].sum(), x = normal(10, 1), n x n in
// chunk x chunk chunks. Prints one JSON line (contract in shared/design.md).
//
//   seed_array --n 20000 --chunk 2000 --scheduler threads|sync|distributed|ADDRESS --device host|gpu
//              [--workers 2 --threads 1 --protocol tcp]   (distributed: its own local cluster)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "bench_cluster.hpp"

static int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::int64_t n = 20000, chunk = 2000;
  std::string scheduler = "threads", device = "host";
  int repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"seed_array benchmark"};
  app.add_option("--n", n, "array is n x n");
  app.add_option("--chunk", chunk, "chunks are chunk x chunk");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--device", device)->check(CLI::IsMember({"host", "gpu"}));
  app.add_option("--repeat", repeat, "runs; the best time is reported");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  // --device gpu: the random input is generated on the GPU, so every task of the expression is
  // a device task (local executors use this process's GPU 0).
  auto run = bench::open_execution("seed_array", scheduler, device, cluster);
  if (!run.executor) return 2;
  Executor& executor = *run.executor;
  const bool distributed = run.distributed();
  double best = 1e300, value = 0;
  for (int r = 0; r < repeat; ++r) {
    auto x = random::normal(0, 10.0, 1.0, {n, n}, {chunk, chunk});
    if (device == "gpu") x = x.to_device();
    const auto t0 = std::chrono::steady_clock::now();
    value = (x + 1)[{step(2), step(2)}].sum().compute(executor).item();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double kept = static_cast<double>((n + 1) / 2) * static_cast<double>((n + 1) / 2);
  const double expected = kept * 11.0;
  std::printf(
      "{\"benchmark\": \"seed_array\", \"impl\": \"tessera\", \"n\": %lld, \"chunk\": %lld, \"scheduler\": \"%s\", "
      "\"device\": \"%s\", \"workers\": %d, \"threads\": %u, \"seconds\": %.6f, \"value\": %.6f, "
      "\"expected\": %.6f, \"relative_error\": %.3e, \"elements_per_s\": %.4e}\n",
      static_cast<long long>(n), static_cast<long long>(chunk), distributed ? "distributed" : scheduler.c_str(),
      device.c_str(), distributed ? cluster.workers : 1,
      distributed ? static_cast<unsigned>(cluster.threads)
                  : (scheduler == "sync" ? 1u : std::thread::hardware_concurrency()),
      best, value, expected,
      std::fabs(value - expected) / expected, kept / best);
  return 0;
}

int main(int argc, char** argv) { return bench::run_main("seed_array", run, argc, argv); }
