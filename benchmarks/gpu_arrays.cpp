// benchmarks/gpu_arrays: the dask-cuda local_cupy workloads on Tessera arrays, on the GPU or the
// host. One JSON line per run (contract in shared/design.md).
//
//   gpu_arrays --op transpose_sum|matmul|sum --n 40000 --chunk 10000 --device gpu|host
//              [--scheduler threads|distributed|ADDRESS --workers 2 --threads 1] [--repeat 3] [--persist]
//
// transpose_sum is (x + x.T).sum() with x = uniform(0, 1) n x n (dask-cuda's "transpose_sum");
// matmul is (x @ y).sum() with x, y uniform n x n; sum is x.sum(). Each checks its value with an
// identity computed separately: transpose_sum = 2 * x.sum(); matmul = colsum(x) . rowsum(y).
// benchmarks/gpu/cupy_local.py times the same with CuPy alone on one GPU (the limit). With
// --persist the inputs are generated and persisted first, untimed (on a cluster they stay on the
// workers' GPUs), and only the operation is timed: what dask-cuda's local_cupy and the CuPy
// script time. Without it the generation is part of the timed graph (fused into its tasks).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "bench_cluster.hpp"

static int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::int64_t n = 40000, chunk = 10000;
  std::string op = "transpose_sum", scheduler = "threads", device = "gpu";
  int repeat = 1;
  bool persist = false;
  bench::ClusterArgs cluster;
  CLI::App app{"gpu_arrays benchmark (dask-cuda local_cupy workloads)"};
  app.add_option("--op", op)->check(CLI::IsMember({"transpose_sum", "matmul", "sum"}));
  app.add_option("--n", n, "arrays are n x n");
  app.add_option("--chunk", chunk, "chunks are chunk x chunk");
  app.add_option("--device", device)->check(CLI::IsMember({"host", "gpu"}));
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--repeat", repeat, "runs; the best time is reported");
  app.add_flag("--persist", persist, "persist the inputs first (untimed) and time only the operation");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  auto run = bench::open_execution("gpu_arrays", scheduler, device, cluster);
  if (!run.executor) return 2;
  Executor& executor = *run.executor;
  const bool distributed = run.distributed();
  auto place = [&](Array a) { return device == "gpu" ? a.to_device() : a; };
  Array x = place(random::uniform(1, 0.0, 1.0, {n, n}, {chunk, chunk}));
  Array y = place(random::uniform(2, 0.0, 1.0, {n, n}, {chunk, chunk}));
  if (persist) {
    x = x.persist(executor);
    if (op == "matmul") y = y.persist(executor);
  }

  Array result;
  if (op == "transpose_sum") result = (x + x.T()).sum();
  else if (op == "matmul") result = matmul(x, y).sum();
  else result = x.sum();

  double best = 1e300, value = 0;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    value = result.compute(executor).item();
    best = std::min(best, bench::seconds_since(t0));
  }
  // The check, computed separately (not timed).
  double expected = 0;
  if (op == "transpose_sum") {
    expected = 2 * x.sum().compute(executor).item();
  } else if (op == "matmul") {
    const auto cx = x.sum({.axes = {0}}).compute(executor).to_doubles();
    const auto ry = y.sum({.axes = {1}}).compute(executor).to_doubles();
    for (std::size_t k = 0; k < cx.size(); ++k) expected += cx[k] * ry[k];
  } else {
    expected = static_cast<double>(n) * static_cast<double>(n) * 0.5;  // statistical: ~1e-5 relative
  }
  const double flops = op == "matmul" ? 2.0 * n * n * n : 2.0 * n * n;
  // Bytes the workers moved from GPU to host memory to stay under --device-memory-limit.
  std::size_t spilled = 0;
  if (run.client) {
    std::this_thread::sleep_for(std::chrono::seconds(1));  // counters arrive with heartbeats
    for (const auto& w : run.client->scheduler_info().workers) spilled += w.device_spilled_bytes;
  }
  std::printf(
      "{\"benchmark\": \"gpu_arrays\", \"impl\": \"tessera\", \"op\": \"%s\", \"n\": %lld, \"chunk\": %lld, "
      "\"device\": \"%s\", \"scheduler\": \"%s\", \"workers\": %d, \"persisted\": %s, \"seconds\": %.6f, \"value\": %.9e, "
      "\"expected\": %.9e, \"relative_error\": %.3e, \"gflop_per_s\": %.2f, \"device_spilled_bytes\": %zu}\n",
      op.c_str(), static_cast<long long>(n), static_cast<long long>(chunk), device.c_str(),
      distributed ? "distributed" : scheduler.c_str(), distributed ? cluster.workers : 1, persist ? "true" : "false", best, value, expected,
      std::fabs(value - expected) / std::fabs(expected), flops / best / 1e9, spilled);
  return 0;
}

int main(int argc, char** argv) { return bench::run_main("gpu_arrays", run, argc, argv); }
