// benchmarks/dataframe_merge: read two Parquet datasets and merge them (pandas' merge). Prints one
// JSON line: benchmark, how, strategy options, seconds, rows in each input and in the result,
// peak memory. --out DIR also writes the result (one Parquet file per partition), which
// tests/dataframe/merge_pandas_check.py compares with pandas' merge of the same files.
//
//   dataframe_merge --left 'DIR/*.parquet' --right 'DIR/*.parquet' --on k [--how inner]
//                   [--left-on a,b --right-on x,y] [--broadcast auto|true|false] [--npartitions N]
//                   [--scheduler threads|sync|distributed|ADDRESS] [--out DIR] [--repeat N]
#include <sys/resource.h>

#include <arrow/api.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>

#include "bench_cluster.hpp"

namespace {

std::vector<std::string> comma_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string left, right, on, left_on, right_on, how = "inner", broadcast = "auto", scheduler = "threads", out;
  std::int64_t npartitions = 0;
  int repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"dataframe_merge benchmark"};
  app.add_option("--left", left, "left side: Parquet files (a path or a glob)")->required();
  app.add_option("--right", right, "right side: Parquet files (a path or a glob)")->required();
  app.add_option("--on", on, "key columns both sides have, comma-separated");
  app.add_option("--left-on", left_on, "left key columns, comma-separated");
  app.add_option("--right-on", right_on, "right key columns, comma-separated");
  app.add_option("--how", how, "inner, left, right, outer, leftsemi or leftanti");
  app.add_option("--broadcast", broadcast)->check(CLI::IsMember({"auto", "true", "false"}));
  app.add_option("--npartitions", npartitions, "output partitions of a hash join (0: the larger side's)");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--out", out, "write the result here, one Parquet file per partition");
  app.add_option("--repeat", repeat, "runs; the best time is reported");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  auto exec = bench::open_execution("dataframe_merge", scheduler, "host", cluster);
  if (!exec.executor) return 2;
  dataframe::MergeOptions o;
  o.how = how;
  o.on = comma_list(on);
  o.left_on = comma_list(left_on);
  o.right_on = comma_list(right_on);
  o.npartitions = npartitions;
  if (broadcast != "auto") o.broadcast = broadcast == "true";
  auto l = dataframe::read_parquet(left), r = dataframe::read_parquet(right);
  auto merged = l.merge(r, o);
  double best = 1e300;
  std::vector<std::shared_ptr<arrow::Table>> lengths;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    lengths = dataframe::compute({merged.length(), l.length(), r.length()}, *exec.executor);
    best = std::min(best, bench::seconds_since(t0));
  }
  if (!out.empty()) merged.to_parquet(out, *exec.executor);
  auto count = [](const std::shared_ptr<arrow::Table>& t) {
    return static_cast<long long>(std::static_pointer_cast<arrow::Int64Scalar>(t->column(0)->GetScalar(0).ValueOrDie())->value);
  };
  const bool distributed = exec.distributed();
  exec.client.reset();  // stops the local cluster, so its workers' peak memory is known
  std::printf(
      "{\"benchmark\": \"dataframe_merge\", \"impl\": \"tessera\", \"scheduler\": \"%s\", \"workers\": %d, "
      "\"how\": \"%s\", \"broadcast\": \"%s\", \"left_partitions\": %lld, \"right_partitions\": %lld, "
      "\"partitions\": %lld, \"seconds\": %.6f, \"left_rows\": %lld, \"right_rows\": %lld, \"rows\": %lld, "
      "\"peak_rss_mb\": %.1f, \"peak_rss_workers_mb\": %.1f}\n",
      distributed ? "distributed" : scheduler.c_str(), distributed ? cluster.workers : 0, how.c_str(), broadcast.c_str(),
      static_cast<long long>(l.npartitions()), static_cast<long long>(r.npartitions()),
      static_cast<long long>(merged.npartitions()), best, count(lengths[1]), count(lengths[2]), count(lengths[0]),
      bench::peak_mb(RUSAGE_SELF), distributed ? bench::peak_mb(RUSAGE_CHILDREN) : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("dataframe_merge", run, argc, argv); }
