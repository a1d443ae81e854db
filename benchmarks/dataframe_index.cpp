// benchmarks/dataframe_index: read a Parquet dataset and run one of set_index, loc, drop_duplicates,
// nlargest or nsmallest on it. Prints one JSON line: benchmark, op, seconds, partitions, rows in
// the input and in the result. --out DIR writes the result (one Parquet file per partition, in
// order), which tests/dataframe/index_pandas_check.py compares with pandas on the same files.
//
//   dataframe_index --input 'DIR/*.parquet' --op set_index|loc|drop_duplicates|nlargest|nsmallest
//                   [--columns a,b] [--keep first|last] [--n N] [--lo X --hi Y]
//                   [--scheduler threads|sync|distributed|ADDRESS] [--out DIR]
#include <sys/resource.h>

#include <arrow/api.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>

#include "bench_cluster.hpp"

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string input, op, columns, keep = "first", scheduler = "threads", out;
  std::int64_t n = 5;
  double lo = 0, hi = 0;
  bench::ClusterArgs cluster;
  CLI::App app{"dataframe_index benchmark"};
  app.add_option("--input", input, "Parquet files (a path or a glob)")->required();
  app.add_option("--op", op)->required()->check(
      CLI::IsMember({"set_index", "loc", "drop_duplicates", "nlargest", "nsmallest"}));
  app.add_option("--columns", columns, "the index (set_index, loc), the subset or the ordering columns, comma-separated");
  app.add_option("--keep", keep, "drop_duplicates: first or last");
  app.add_option("--n", n, "nlargest / nsmallest: rows");
  app.add_option("--lo", lo, "loc: the first key (a number)");
  app.add_option("--hi", hi, "loc: the last key (a number)");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--out", out, "write the result here, one Parquet file per partition");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  auto exec = bench::open_execution("dataframe_index", scheduler, "host", cluster);
  if (!exec.executor) return 2;
  auto df = dataframe::read_parquet(input);
  const auto cols = split_commas(columns);
  const auto t0 = std::chrono::steady_clock::now();
  dataframe::DataFrame result;
  if (op == "set_index" || op == "loc") {
    result = df.set_index(cols.at(0), {}, *exec.executor);
    if (op == "loc") result = result.loc(dataframe::Literal{lo}, dataframe::Literal{hi});
  } else if (op == "drop_duplicates") {
    result = df.drop_duplicates(cols, keep);
  } else {
    result = op == "nlargest" ? df.nlargest(n, cols) : df.nsmallest(n, cols);
  }
  auto lengths = dataframe::compute({result.length(), df.length()}, *exec.executor);
  const double seconds = bench::seconds_since(t0);
  if (!out.empty()) result.to_parquet(out, *exec.executor);
  auto count = [](const std::shared_ptr<arrow::Table>& t) {
    return static_cast<long long>(std::static_pointer_cast<arrow::Int64Scalar>(t->column(0)->GetScalar(0).ValueOrDie())->value);
  };
  const bool distributed = exec.distributed();
  exec.client.reset();
  std::printf(
      "{\"benchmark\": \"dataframe_index\", \"impl\": \"tessera\", \"scheduler\": \"%s\", \"op\": \"%s\", "
      "\"input_partitions\": %lld, \"partitions\": %lld, \"seconds\": %.6f, \"input_rows\": %lld, \"rows\": %lld}\n",
      distributed ? "distributed" : scheduler.c_str(), op.c_str(), static_cast<long long>(df.npartitions()),
      static_cast<long long>(result.npartitions()), seconds, count(lengths[1]), count(lengths[0]));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("dataframe_index", run, argc, argv); }
