// benchmarks/dataframe_shuffle: shuffles timeseries() rows (timestamp, id, name, x, y; one
// partition a day at one row a second, made on the workers) on `id` and counts every column of
// the result, so that every column crosses the shuffle. Prints one JSON line: method, scheduler,
// workers, memory limit, partitions, rows, seconds, the peak RSS of this process and of its
// largest worker process, and the most one worker's store held in memory and on disk (sampled). docs/dataframe-shuffle.md, "Measured".
//
//   dataframe_shuffle --gigabytes 5 [--method p2p|tasks] [--scheduler threads|distributed]
//                     [--workers 2] [--threads 1] [--memory-limit 1GB] [--npartitions N]
#include <sys/resource.h>

#include <arrow/api.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>

#include "bench_cluster.hpp"

namespace {

// Bytes a timeseries row takes in memory: four 8-byte columns and a short string (about five
// characters and its 4-byte offset). Measured on one partition: 40.6 bytes a row.
constexpr double kRowBytes = 41;

std::string day_after(int days) {
  using namespace std::chrono;
  const year_month_day d{sys_days{year{2000} / January / 1} + std::chrono::days{days}};
  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(d.year()), static_cast<unsigned>(d.month()),
                static_cast<unsigned>(d.day()));
  return text;
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  double gigabytes = 1;
  std::string method = "p2p", scheduler = "distributed", memory_limit = "0";
  std::int64_t npartitions = 0;
  bench::ClusterArgs cluster;
  CLI::App app{"dataframe_shuffle benchmark"};
  app.add_option("--gigabytes", gigabytes, "rows to shuffle, in GB held in memory (41 bytes a row)");
  app.add_option("--method", method, "p2p or tasks")->check(CLI::IsMember({"p2p", "tasks"}));
  app.add_option("--scheduler", scheduler, "threads or distributed (a local cluster of its own)")
      ->check(CLI::IsMember({"threads", "distributed"}));
  app.add_option("--memory-limit", memory_limit, "per worker (Dask's forms: 1GB, 0.5, 0 for none)");
  app.add_option("--npartitions", npartitions, "output partitions (0: as many as the input)");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);
  ::setenv("TESSERA_SHUFFLE_METHOD", method.c_str(), 1);

  using namespace tessera;
  const auto days = std::max(1, static_cast<int>(std::ceil(gigabytes * 1e9 / (kRowBytes * 86400))));
  dataframe::TimeseriesOptions ts;
  ts.start = day_after(0);
  ts.end = day_after(days);
  ts.freq = "1s";
  ts.partition_freq = "1D";
  auto df = dataframe::timeseries(ts);
  auto counts = df.shuffle({"id"}, npartitions).count();

  std::unique_ptr<distributed::Client> client;
  std::shared_ptr<distributed::LocalCluster> local;
  Executor* executor = &local_executor("threads");
  if (scheduler == "distributed") {
    distributed::LocalClusterOptions o;
    o.n_workers = cluster.workers;
    o.threads_per_worker = cluster.threads;
    o.protocol = cluster.protocol;
    o.memory_limit = memory_limit;
    o.restart_dead_workers = false;  // a worker killed for its memory is a failed run, not a slow one
    local = std::make_shared<distributed::LocalCluster>(o);
    client = std::make_unique<distributed::Client>(local);
    executor = client.get();
  }
  // The most any worker held in its store and on disk, sampled from its heartbeats while the
  // shuffle runs: where the peak resident memory goes beside what the store accounts for.
  std::atomic<bool> done{false};
  std::size_t most_held = 0, most_spilled = 0;
  std::thread sampler;
  const auto t0 = std::chrono::steady_clock::now();
  if (client)
    sampler = std::thread([&] {
      while (!done) {
        const auto info = client->scheduler_info();
        for (const auto& w : info.workers) {
          most_held = std::max(most_held, w.memory);
          most_spilled = std::max(most_spilled, w.spilled);
          if (std::getenv("TESSERA_BENCH_TRACE"))
            std::fprintf(stderr, "trace %.2f %s held %.0f MB spilled %.0f MB keys %zu processing %zu\n",
                         bench::seconds_since(t0), w.address.c_str(), w.memory / 1e6, w.spilled / 1e6, w.keys, w.processing);
        }
        if (std::getenv("TESSERA_BENCH_TRACE"))
          for (const auto& [state, n] : info.task_states) std::fprintf(stderr, "  %s=%zu", state.c_str(), n);
        if (std::getenv("TESSERA_BENCH_TRACE")) std::fprintf(stderr, "\n");
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  auto result = counts.compute(*executor);
  const double seconds = bench::seconds_since(t0);
  done = true;
  if (sampler.joinable()) sampler.join();
  const auto rows = std::static_pointer_cast<arrow::Int64Scalar>(result->GetColumnByName("id")->GetScalar(0).ValueOrDie())->value;
  if (rows != static_cast<std::int64_t>(days) * 86400)
    throw tessera::Error("the shuffle kept " + std::to_string(rows) + " of " + std::to_string(days * 86400LL) + " rows");
  client.reset();
  local.reset();  // stops the workers, so that their peak memory is known
  std::printf(
      "{\"benchmark\": \"dataframe_shuffle\", \"impl\": \"tessera\", \"method\": \"%s\", \"scheduler\": \"%s\", "
      "\"workers\": %d, \"threads\": %d, \"memory_limit\": \"%s\", \"partitions\": %d, \"rows\": %lld, "
      "\"gigabytes\": %.3f, \"seconds\": %.3f, \"peak_rss_mb\": %.1f, \"peak_rss_workers_mb\": %.1f, "
      "\"most_held_worker_mb\": %.1f, \"most_spilled_worker_mb\": %.1f}\n",
      method.c_str(), scheduler.c_str(), scheduler == "distributed" ? cluster.workers : 0, cluster.threads,
      memory_limit.c_str(), days, static_cast<long long>(rows), static_cast<double>(rows) * kRowBytes / 1e9, seconds,
      bench::peak_mb(RUSAGE_SELF), scheduler == "distributed" ? bench::peak_mb(RUSAGE_CHILDREN) : 0.0,
      static_cast<double>(most_held) / 1e6, static_cast<double>(most_spilled) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("dataframe_shuffle", run, argc, argv); }
