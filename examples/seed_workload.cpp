// The seed workload (seed 004): (x + 1)[::2, ::2].sum() over normal(10, 1) random data in chunks.
//
//   seed_workload [--n 20000] [--chunk 2000] [--scheduler threads|sync|distributed|ADDRESS]
//
// The same expression runs on any executor: "distributed" starts a LocalCluster (2 worker
// processes), an address (tcp://host:port) uses a running scheduler.
#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <tessera/tessera.hpp>

#include "scheduler_flag.hpp"

int main(int argc, char** argv) {
  tessera::init(argc, argv);
  std::int64_t n = 20000, chunk = 2000;
  std::string scheduler = "threads";
  CLI::App app{"Tessera seed workload: (x + 1)[::2, ::2].sum() over normal(10, 1)"};
  app.add_option("--n", n, "array is n x n");
  app.add_option("--chunk", chunk, "chunks are chunk x chunk");
  app.add_option("--scheduler", scheduler, "threads, sync, distributed (a local cluster) or a scheduler address");
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  auto x = random::normal(/*seed=*/0, /*mean=*/10.0, /*stddev=*/1.0, {n, n}, {chunk, chunk});
  auto y = (x + 1)[{step(2), step(2)}].sum();

  auto run = tessera_examples::open_scheduler("seed_workload", scheduler);
  if (!run.executor) return 2;
  Executor& executor = *run.executor;

  const auto t0 = std::chrono::steady_clock::now();
  const double value = y.compute(executor).item();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double kept = static_cast<double>((n + 1) / 2) * static_cast<double>((n + 1) / 2);
  std::printf("(x + 1)[::2, ::2].sum() over a %lldx%lld normal(10, 1) array in %lldx%lld chunks (%s)\n",
              static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(chunk),
              static_cast<long long>(chunk), scheduler.c_str());
  std::printf("value    %.6f\nexpected %.6f (kept elements x 11)\nseconds  %.3f\n", value, kept * 11.0, seconds);
  return 0;
}
