// benchmarks/tpch: TPC-H queries written with Tessera's DataFrame API over the Parquet files
// tpchgen-cli writes (one folder per table). Prints one JSON line per query: the query, seconds
// (best of --repeat; reading the files is part of it), the result's rows (values as numbers,
// strings and dates as text), which benchmarks/tpch_compare.py checks against DuckDB's.
//
//   tpch --data DIR [--queries 1,3,5,6,10,12] [--scheduler threads|sync|distributed|ADDRESS]
//        [--repeat N]
//
// Money columns are decimal(15,2) in the files; they are read as float64 (as Dask and pandas
// users do), so sums differ from DuckDB's exact decimals in the last digits.
#include <arrow/api.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>

#include "bench_cluster.hpp"

namespace {

using tessera::dataframe::DataFrame;
using tessera::dataframe::MergeOptions;
using tessera::dataframe::Series;
using Aggs = std::map<std::string, std::vector<std::string>>;

struct Tables {
  std::string dir;
  // A table with its decimal columns as float64.
  DataFrame operator()(const std::string& name) const {
    auto df = tessera::dataframe::read_parquet(dir + "/" + name + "/*.parquet");
    std::map<std::string, std::string> casts;
    for (const auto& c : df.columns())
      if (df.dtype(c).rfind("decimal", 0) == 0) casts[c] = "float64";
    return casts.empty() ? df : df.astype(casts);
  }
};

MergeOptions on(std::vector<std::string> left, std::vector<std::string> right) {
  MergeOptions o;
  o.left_on = std::move(left);
  o.right_on = std::move(right);
  return o;
}

// price * (1 - discount)
Series revenue(const DataFrame& df) {
  return df["l_extendedprice"] - df["l_extendedprice"] * df["l_discount"];
}

using Query = std::function<std::shared_ptr<arrow::Table>(const Tables&, tessera::Executor&)>;

std::shared_ptr<arrow::Table> q1(const Tables& t, tessera::Executor& ex) {
  auto li = t("lineitem");
  auto f = li[li["l_shipdate"] <= "1998-09-02"];
  f = f.assign("disc_price", revenue(f));
  f = f.assign("charge", f["disc_price"] + f["disc_price"] * f["l_tax"]);
  return f.groupby({"l_returnflag", "l_linestatus"})
      .agg(Aggs{{"l_quantity", {"sum", "mean"}},
                {"l_extendedprice", {"sum", "mean"}},
                {"disc_price", {"sum"}},
                {"charge", {"sum"}},
                {"l_discount", {"mean"}},
                {"l_orderkey", {"count"}}})[std::vector<std::string>{
          "l_returnflag", "l_linestatus", "l_quantity_sum", "l_extendedprice_sum", "disc_price", "charge",
          "l_quantity_mean", "l_extendedprice_mean", "l_discount", "l_orderkey"}]
      .compute(ex);
}

std::shared_ptr<arrow::Table> q3(const Tables& t, tessera::Executor& ex) {
  auto c = t("customer");
  c = c[c["c_mktsegment"] == "BUILDING"][std::vector<std::string>{"c_custkey"}];
  auto o = t("orders");
  o = o[o["o_orderdate"] < "1995-03-15"][std::vector<std::string>{"o_orderkey", "o_custkey", "o_orderdate", "o_shippriority"}];
  auto l = t("lineitem");
  l = l[l["l_shipdate"] > "1995-03-15"];
  l = l.assign("revenue", revenue(l))[std::vector<std::string>{"l_orderkey", "revenue"}];
  auto j = c.merge(o, on({"c_custkey"}, {"o_custkey"})).merge(l, on({"o_orderkey"}, {"l_orderkey"}));
  auto g = j.groupby({"l_orderkey", "o_orderdate", "o_shippriority"}).agg(Aggs{{"revenue", {"sum"}}});
  return g[std::vector<std::string>{"l_orderkey", "revenue", "o_orderdate", "o_shippriority"}]
      .sort_values({"revenue", "o_orderdate"}, std::vector<bool>{false, true})
      .head(10, ex);
}

std::shared_ptr<arrow::Table> q5(const Tables& t, tessera::Executor& ex) {
  auto r = t("region");
  r = r[r["r_name"] == "ASIA"];
  auto n = t("nation").merge(r, on({"n_regionkey"}, {"r_regionkey"}));
  auto s = t("supplier").merge(n, on({"s_nationkey"}, {"n_nationkey"}));
  auto o = t("orders");
  o = o[(o["o_orderdate"] >= "1994-01-01") & (o["o_orderdate"] < "1995-01-01")];
  auto j = t("customer")
               .merge(o, on({"c_custkey"}, {"o_custkey"}))
               .merge(t("lineitem"), on({"o_orderkey"}, {"l_orderkey"}))
               .merge(s, on({"l_suppkey", "c_nationkey"}, {"s_suppkey", "s_nationkey"}));
  j = j.assign("revenue", revenue(j));
  return j.groupby({"n_name"}).agg(Aggs{{"revenue", {"sum"}}}).sort_values({"revenue"}, false).compute(ex);
}

std::shared_ptr<arrow::Table> q6(const Tables& t, tessera::Executor& ex) {
  auto li = t("lineitem");
  auto f = li[(li["l_shipdate"] >= "1994-01-01") & (li["l_shipdate"] < "1995-01-01") & (li["l_discount"] >= 0.05) &
              (li["l_discount"] <= 0.07) & (li["l_quantity"] < 24.0)];
  return (f["l_extendedprice"] * f["l_discount"]).rename("revenue").sum().compute(ex);
}

std::shared_ptr<arrow::Table> q10(const Tables& t, tessera::Executor& ex) {
  auto o = t("orders");
  o = o[(o["o_orderdate"] >= "1993-10-01") & (o["o_orderdate"] < "1994-01-01")];
  auto l = t("lineitem");
  l = l[l["l_returnflag"] == "R"];
  auto j = t("customer")
               .merge(o, on({"c_custkey"}, {"o_custkey"}))
               .merge(l, on({"o_orderkey"}, {"l_orderkey"}))
               .merge(t("nation"), on({"c_nationkey"}, {"n_nationkey"}));
  j = j.assign("revenue", revenue(j));
  auto g = j.groupby({"c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment"})
               .agg(Aggs{{"revenue", {"sum"}}});
  return g[std::vector<std::string>{"c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone",
                                    "c_comment"}]
      .sort_values({"revenue", "c_custkey"}, std::vector<bool>{false, true})
      .head(20, ex);
}

std::shared_ptr<arrow::Table> q12(const Tables& t, tessera::Executor& ex) {
  auto l = t("lineitem");
  l = l[((l["l_shipmode"] == "MAIL") | (l["l_shipmode"] == "SHIP")) & (l["l_commitdate"] < l["l_receiptdate"]) &
        (l["l_shipdate"] < l["l_commitdate"]) & (l["l_receiptdate"] >= "1994-01-01") &
        (l["l_receiptdate"] < "1995-01-01")];
  auto j = t("orders").merge(l, on({"o_orderkey"}, {"l_orderkey"}));
  auto urgent = (j["o_orderpriority"] == "1-URGENT") | (j["o_orderpriority"] == "2-HIGH");
  j = j.assign("high_line_count", urgent);
  j = j.assign("low_line_count", ~j["high_line_count"]);
  return j.groupby({"l_shipmode"}).agg(Aggs{{"high_line_count", {"sum"}}, {"low_line_count", {"sum"}}}).compute(ex);
}

const std::map<int, Query>& queries() {
  static const std::map<int, Query> q{{1, q1}, {3, q3}, {5, q5}, {6, q6}, {10, q10}, {12, q12}};
  return q;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

std::string json_value(const arrow::Scalar& s) {
  if (!s.is_valid) return "null";
  if (arrow::is_integer(s.type->id()) || arrow::is_floating(s.type->id()) || s.type->id() == arrow::Type::BOOL) {
    auto d = s.CastTo(arrow::float64());
    if (d.ok()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", std::static_pointer_cast<arrow::DoubleScalar>(*d)->value);
      return buf;
    }
  }
  return json_string(s.ToString());
}

std::string json_rows(const arrow::Table& t) {
  std::string out = "[";
  for (std::int64_t r = 0; r < t.num_rows(); ++r) {
    out += r ? ", [" : "[";
    for (int c = 0; c < t.num_columns(); ++c)
      out += (c ? ", " : "") + json_value(*t.column(c)->GetScalar(r).ValueOrDie());
    out += "]";
  }
  return out + "]";
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string data, list = "1,3,5,6,10,12", scheduler = "threads";
  int repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"TPC-H queries on Tessera DataFrames"};
  app.add_option("--data", data, "folder of tpchgen-cli's Parquet output (one folder per table)")->required();
  app.add_option("--queries", list, "query numbers, comma-separated");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--repeat", repeat, "runs of each query; the best time is reported");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);
  auto exec = bench::open_execution("tpch", scheduler, "host", cluster);
  if (!exec.executor) return 2;
  const Tables tables{data};
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    const int number = std::stoi(item);
    auto it = queries().find(number);
    if (it == queries().end()) {
      std::fprintf(stderr, "tpch: query %d is not written yet (written: 1, 3, 5, 6, 10, 12)\n", number);
      return 2;
    }
    double best = 1e300;
    std::shared_ptr<arrow::Table> result;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      result = it->second(tables, *exec.executor);
      best = std::min(best, bench::seconds_since(t0));
    }
    std::string columns = "[";
    for (int c = 0; c < result->num_columns(); ++c) columns += (c ? ", " : "") + json_string(result->field(c)->name());
    std::printf("{\"benchmark\": \"tpch\", \"impl\": \"tessera\", \"scheduler\": \"%s\", \"query\": %d, "
                "\"seconds\": %.6f, \"rows\": %lld, \"columns\": %s], \"result\": %s}\n",
                exec.distributed() ? "distributed" : scheduler.c_str(), number, best,
                static_cast<long long>(result->num_rows()), columns.c_str(), json_rows(*result).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("tpch", run, argc, argv); }
