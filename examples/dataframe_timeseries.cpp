// Seed 002's dataframe workload: 30 partitions of timeseries data (id, name, x, y), spread over
// the workers, then head(), len() and the mean of x per name.
//
//   dataframe_timeseries [--days 30] [--freq 1s] [--scheduler threads|sync|distributed|ADDRESS]
//                        [--device host|gpu]
#include <chrono>
#include <cmath>
#include <cstdio>

#include <arrow/api.h>
#include <CLI/CLI.hpp>
#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>
#include <tessera/tessera.hpp>

#include "scheduler_flag.hpp"

int main(int argc, char** argv) {
  tessera::init(argc, argv);
  int days = 30;
  std::string freq = "1s", scheduler = "threads", device = "host";
  CLI::App app{"Seed 002: groupby('name').x.mean() over 30 partitions of timeseries data"};
  app.add_option("--days", days, "days of data: one partition per day");
  app.add_option("--freq", freq, "time between rows (1s, 10s, 1min, ...)");
  app.add_option("--scheduler", scheduler, "threads, sync, distributed (a local cluster) or a scheduler address");
  app.add_option("--device", device, "host or gpu")->check(CLI::IsMember({"host", "gpu"}));
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  auto run = tessera_examples::open_scheduler("dataframe_timeseries", scheduler);
  if (!run.executor) return 2;
  Executor& executor = *run.executor;

  // Days from 2000-01-01, one partition per day.
  using namespace std::chrono;
  const year_month_day last{sys_days{2000y / January / 1} + std::chrono::days{days}};
  char end[16];
  std::snprintf(end, sizeof end, "%04d-%02u-%02u", static_cast<int>(last.year()), static_cast<unsigned>(last.month()),
                static_cast<unsigned>(last.day()));
  dataframe::TimeseriesOptions o;
  o.start = "2000-01-01";
  o.end = end;
  o.freq = freq;
  o.partition_freq = "1D";
  auto df = dataframe::timeseries(o);
  if (device == "gpu") df = df.to_device();

  const auto t0 = std::chrono::steady_clock::now();
  auto head = df.head(5, executor);
  const std::int64_t rows = df.len(executor);
  auto means = df.groupby({"name"})["x"].mean().compute(executor);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("%lld partitions (%s)\nhead():\n%s\nlen(): %lld\ngroupby('name').x.mean():\n%s\nin %.3f s\n",
              static_cast<long long>(df.npartitions()), executor.name().c_str(), head->ToString().c_str(),
              static_cast<long long>(rows), means->ToString().c_str(), seconds);

  // Checks: 26 names; x is uniform in [-1, 1), so each mean is near 0.
  bool ok = means->num_rows() == 26 && head->num_rows() == 5;
  auto x = means->GetColumnByName("x");
  for (std::int64_t r = 0; r < means->num_rows(); ++r)
    ok = ok && std::abs(std::static_pointer_cast<arrow::DoubleScalar>(x->GetScalar(r).ValueOrDie())->value) < 0.2;
  std::printf(ok ? "checked: 26 names, means near 0\n" : "WRONG\n");
  return ok ? 0 : 1;
}
