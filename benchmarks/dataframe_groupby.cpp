// benchmarks/dataframe_groupby: read CSV files and aggregate one column by a key (seed 000's
// workload). Prints one JSON line: benchmark, seconds, rows, groups, result (each group key as
// pandas prints it, e.g. "1.0" for a float key; null keys dropped as pandas' groupby does).
//
//   dataframe_groupby --csv 'GLOB' --by passenger_count --column tip_amount --agg mean
//                     [--scheduler threads|sync|distributed|ADDRESS] [--device host|gpu]
//                     [--blocksize BYTES] [--repeat N] [--workers 2 --threads 1]
#include <sys/resource.h>

#include <arrow/api.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>

#include "bench_cluster.hpp"

namespace {

// A key as Python's str() prints it: floats always with a '.' or exponent ("1.0", "1e+20").
std::string key_text(const arrow::Scalar& s) {
  if (s.type->id() == arrow::Type::DOUBLE || s.type->id() == arrow::Type::FLOAT) {
    const double v = s.type->id() == arrow::Type::DOUBLE ? static_cast<const arrow::DoubleScalar&>(s).value
                                                         : static_cast<const arrow::FloatScalar&>(s).value;
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string t(buf, r.ptr);
    if (t.find_first_of(".en") == std::string::npos) t += ".0";
    return t;
  }
  return s.ToString();
}

std::string json_number(const arrow::Scalar& s) {
  if (!s.is_valid) return "null";
  auto d = s.CastTo(arrow::float64());
  if (!d.ok()) return "\"" + s.ToString() + "\"";
  const double v = std::static_pointer_cast<arrow::DoubleScalar>(*d)->value;
  if (!std::isfinite(v)) return "null";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string csv, by = "passenger_count", column = "tip_amount", agg = "mean";
  std::string scheduler = "threads", device = "host";
  std::int64_t blocksize = 64 << 20;
  int repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"dataframe_groupby benchmark"};
  app.add_option("--csv", csv, "CSV files: a path, a glob or s3://bucket/glob")->required();
  app.add_option("--by", by, "key column");
  app.add_option("--column", column, "aggregated column");
  app.add_option("--agg", agg, "sum, mean, count, min, max, std, var or size");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--device", device)->check(CLI::IsMember({"host", "gpu"}));
  app.add_option("--blocksize", blocksize, "bytes per partition (0: one per file)");
  app.add_option("--repeat", repeat, "runs; the best time is reported");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  // The cluster this program starts has no GPU workers where this machine has no GPU: device
  // tasks would wait for one forever.
  if (device == "gpu" && scheduler == "distributed" && visible_gpu_count() == 0) {
    std::fprintf(stderr, "dataframe_groupby: --device gpu but this machine has no GPU (%s)\n",
                 device_runtime_status().c_str());
    return 2;
  }
  auto exec = bench::open_execution("dataframe_groupby", scheduler, device, cluster);
  if (!exec.executor) return 2;
  double best = 1e300;
  std::shared_ptr<arrow::Table> result, rows;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    dataframe::ReadCsvOptions o;
    o.assume_missing = true;
    o.blocksize = blocksize;
    auto df = dataframe::read_csv(csv, o);
    if (device == "gpu") df = df.to_device();
    auto grouped = agg == "size" ? df.groupby({by}).size() : df.groupby({by})[column].agg(agg);
    // One graph: the files are read once for both the groups and the row count.
    auto out = dataframe::compute({grouped, df.length()}, *exec.executor);
    best = std::min(best, bench::seconds_since(t0));
    result = out[0];
    rows = out[1];
  }
  const std::string value_column = agg == "size" ? "size" : column;
  std::string json = "{";
  for (std::int64_t i = 0; i < result->num_rows(); ++i) {
    auto k = result->GetColumnByName(by)->GetScalar(i).ValueOrDie();
    auto v = result->GetColumnByName(value_column)->GetScalar(i).ValueOrDie();
    json += (i ? ", \"" : "\"") + escape(key_text(*k)) + "\": " + json_number(*v);
  }
  json += "}";
  const auto n_rows = std::static_pointer_cast<arrow::Int64Scalar>(rows->column(0)->GetScalar(0).ValueOrDie())->value;
  const bool distributed = exec.distributed();
  exec.client.reset();  // stops the local cluster, so its workers' peak memory is known
  std::printf(
      "{\"benchmark\": \"dataframe_groupby\", \"impl\": \"tessera\", \"scheduler\": \"%s\", \"device\": \"%s\", "
      "\"workers\": %d, \"by\": \"%s\", \"column\": \"%s\", \"agg\": \"%s\", \"seconds\": %.6f, \"rows\": %lld, "
      "\"groups\": %lld, \"peak_rss_mb\": %.1f, \"peak_rss_workers_mb\": %.1f, \"result\": %s}\n",
      distributed ? "distributed" : scheduler.c_str(), device.c_str(), distributed ? cluster.workers : 0, by.c_str(),
      column.c_str(), agg.c_str(), best, static_cast<long long>(n_rows), static_cast<long long>(result->num_rows()),
      bench::peak_mb(RUSAGE_SELF), distributed ? bench::peak_mb(RUSAGE_CHILDREN) : 0.0, json.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("dataframe_groupby", run, argc, argv); }
