// benchmarks/tpch: TPC-H queries written with Tessera's DataFrame API over the Parquet files
// tpchgen-cli writes (one folder per table). Prints one JSON line per query: the query, seconds
// (best of --repeat; reading the files is part of it), the result's rows (values as numbers,
// strings and dates as text), which benchmarks/tpch_compare.py checks against DuckDB's.
//
//   tpch --data DIR [--queries 1,2,...,22 (default: all 22)] [--scheduler threads|sync|distributed|ADDRESS]
//        [--repeat N] [--workers 2 --threads 1 --memory-limit 3GB (a local cluster's)]
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

using Cols = std::vector<std::string>;
using tessera::dataframe::AggregateOptions;
using tessera::dataframe::Literal;

MergeOptions semi(std::vector<std::string> left, std::vector<std::string> right) {
  MergeOptions o = on(std::move(left), std::move(right));
  o.how = "leftsemi";
  return o;
}

std::shared_ptr<arrow::Table> q4(const Tables& t, tessera::Executor& ex) {
  auto o = t("orders");
  o = o[(o["o_orderdate"] >= "1993-07-01") & (o["o_orderdate"] < "1993-10-01")];
  auto l = t("lineitem");
  l = l[l["l_commitdate"] < l["l_receiptdate"]][Cols{"l_orderkey"}];
  auto late = o.merge(l, semi({"o_orderkey"}, {"l_orderkey"}));
  return late.groupby({"o_orderpriority"}).size().rename({{"size", "order_count"}}).compute(ex);
}

std::shared_ptr<arrow::Table> q7(const Tables& t, tessera::Executor& ex) {
  auto n = t("nation");
  n = n[n["n_name"].isin({"FRANCE", "GERMANY"})][Cols{"n_nationkey", "n_name"}];
  auto s = t("supplier").merge(n.rename({{"n_name", "supp_nation"}}), on({"s_nationkey"}, {"n_nationkey"}));
  auto c = t("customer").merge(n.rename({{"n_name", "cust_nation"}}), on({"c_nationkey"}, {"n_nationkey"}));
  auto l = t("lineitem");
  l = l[(l["l_shipdate"] >= "1995-01-01") & (l["l_shipdate"] <= "1996-12-31")];
  auto j = l.merge(s[Cols{"s_suppkey", "supp_nation"}], on({"l_suppkey"}, {"s_suppkey"}))
               .merge(t("orders")[Cols{"o_orderkey", "o_custkey"}], on({"l_orderkey"}, {"o_orderkey"}))
               .merge(c[Cols{"c_custkey", "cust_nation"}], on({"o_custkey"}, {"c_custkey"}));
  j = j[((j["supp_nation"] == "FRANCE") & (j["cust_nation"] == "GERMANY")) |
        ((j["supp_nation"] == "GERMANY") & (j["cust_nation"] == "FRANCE"))];
  j = j.assign("l_year", j["l_shipdate"].dt_year());
  j = j.assign("revenue", revenue(j));
  return j.groupby({"supp_nation", "cust_nation", "l_year"}).agg(Aggs{{"revenue", {"sum"}}}).compute(ex);
}

std::shared_ptr<arrow::Table> q8(const Tables& t, tessera::Executor& ex) {
  auto r = t("region");
  r = r[r["r_name"] == "AMERICA"];
  auto n1 = t("nation").merge(r, on({"n_regionkey"}, {"r_regionkey"}))[Cols{"n_nationkey"}];
  auto c = t("customer").merge(n1, on({"c_nationkey"}, {"n_nationkey"}))[Cols{"c_custkey"}];
  auto o = t("orders");
  o = o[(o["o_orderdate"] >= "1995-01-01") & (o["o_orderdate"] <= "1996-12-31")];
  auto p = t("part");
  p = p[p["p_type"] == "ECONOMY ANODIZED STEEL"][Cols{"p_partkey"}];
  auto s = t("supplier").merge(t("nation")[Cols{"n_nationkey", "n_name"}], on({"s_nationkey"}, {"n_nationkey"}));
  auto j = t("lineitem")
               .merge(p, on({"l_partkey"}, {"p_partkey"}))
               .merge(o[Cols{"o_orderkey", "o_custkey", "o_orderdate"}], on({"l_orderkey"}, {"o_orderkey"}))
               .merge(c, on({"o_custkey"}, {"c_custkey"}))
               .merge(s[Cols{"s_suppkey", "n_name"}], on({"l_suppkey"}, {"s_suppkey"}));
  j = j.assign("o_year", j["o_orderdate"].dt_year());
  j = j.assign("volume", revenue(j));
  j = j.assign("brazil", j["volume"].where(j["n_name"] == "BRAZIL", 0.0));
  auto g = j.groupby({"o_year"}).agg(Aggs{{"brazil", {"sum"}}, {"volume", {"sum"}}});
  return g.assign("mkt_share", g["brazil"] / g["volume"])[Cols{"o_year", "mkt_share"}].compute(ex);
}

std::shared_ptr<arrow::Table> q9(const Tables& t, tessera::Executor& ex) {
  auto p = t("part");
  p = p[p["p_name"].str_contains("green")][Cols{"p_partkey"}];
  auto s = t("supplier").merge(t("nation")[Cols{"n_nationkey", "n_name"}], on({"s_nationkey"}, {"n_nationkey"}));
  auto j = t("lineitem")
               .merge(p, on({"l_partkey"}, {"p_partkey"}))
               .merge(t("partsupp"), on({"l_suppkey", "l_partkey"}, {"ps_suppkey", "ps_partkey"}))
               .merge(s[Cols{"s_suppkey", "n_name"}], on({"l_suppkey"}, {"s_suppkey"}))
               .merge(t("orders")[Cols{"o_orderkey", "o_orderdate"}], on({"l_orderkey"}, {"o_orderkey"}));
  j = j.assign("o_year", j["o_orderdate"].dt_year());
  j = j.assign("amount", revenue(j) - j["ps_supplycost"] * j["l_quantity"]);
  auto g = j.groupby({"n_name", "o_year"}).agg(Aggs{{"amount", {"sum"}}});
  return g.rename({{"n_name", "nation"}, {"amount", "sum_profit"}})
      .sort_values({"nation", "o_year"}, std::vector<bool>{true, false})
      .compute(ex);
}

std::shared_ptr<arrow::Table> q13(const Tables& t, tessera::Executor& ex) {
  auto o = t("orders");
  o = o[~o["o_comment"].str_like("%special%requests%")][Cols{"o_orderkey", "o_custkey"}];
  MergeOptions left = on({"c_custkey"}, {"o_custkey"});
  left.how = "left";
  auto j = t("customer")[Cols{"c_custkey"}].merge(o, left);
  auto per = j.groupby({"c_custkey"}).agg(Aggs{{"o_orderkey", {"count"}}}, AggregateOptions{.split_out = 4});
  auto dist = per.rename({{"o_orderkey", "c_count"}}).groupby({"c_count"}).size().rename({{"size", "custdist"}});
  return dist.sort_values({"custdist", "c_count"}, false).compute(ex);
}

std::shared_ptr<arrow::Table> q14(const Tables& t, tessera::Executor& ex) {
  auto l = t("lineitem");
  l = l[(l["l_shipdate"] >= "1995-09-01") & (l["l_shipdate"] < "1995-10-01")];
  auto j = l.merge(t("part")[Cols{"p_partkey", "p_type"}], on({"l_partkey"}, {"p_partkey"}));
  j = j.assign("revenue", revenue(j));
  j = j.assign("promo", j["revenue"].where(j["p_type"].str_startswith("PROMO"), 0.0));
  auto sums = j[Cols{"promo", "revenue"}].sum();
  return sums.assign("promo_revenue", sums["promo"] * 100.0 / sums["revenue"])[Cols{"promo_revenue"}].compute(ex);
}

std::shared_ptr<arrow::Table> q17(const Tables& t, tessera::Executor& ex) {
  auto p = t("part");
  p = p[(p["p_brand"] == "Brand#23") & (p["p_container"] == "MED BOX")][Cols{"p_partkey"}];
  auto lp = t("lineitem")[Cols{"l_partkey", "l_quantity", "l_extendedprice"}].merge(p, on({"l_partkey"}, {"p_partkey"}));
  auto avg = lp.groupby({"l_partkey"}).agg(Aggs{{"l_quantity", {"mean"}}}).rename({{"l_quantity", "avg_quantity"}});
  MergeOptions same;
  same.on = {"l_partkey"};
  auto j = lp.merge(avg, same);
  j = j[j["l_quantity"] < j["avg_quantity"] * 0.2];
  auto total = j[Cols{"l_extendedprice"}].sum();
  return total.assign("avg_yearly", total["l_extendedprice"] / 7.0)[Cols{"avg_yearly"}].compute(ex);
}

std::shared_ptr<arrow::Table> q18(const Tables& t, tessera::Executor& ex) {
  auto li = t("lineitem")[Cols{"l_orderkey", "l_quantity"}];
  auto per = li.groupby({"l_orderkey"}).agg(Aggs{{"l_quantity", {"sum"}}}, AggregateOptions{.split_out = 4});
  auto big = per[per["l_quantity"] > 300.0][Cols{"l_orderkey"}];
  auto o = t("orders").merge(big, semi({"o_orderkey"}, {"l_orderkey"}));
  auto j = t("customer").merge(o, on({"c_custkey"}, {"o_custkey"})).merge(li, on({"o_orderkey"}, {"l_orderkey"}));
  auto g = j.groupby({"c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice"})
               .agg(Aggs{{"l_quantity", {"sum"}}})
               .rename({{"l_quantity", "sum_qty"}});
  return g.sort_values({"o_totalprice", "o_orderdate"}, std::vector<bool>{false, true}).head(100, ex);
}

std::shared_ptr<arrow::Table> q19(const Tables& t, tessera::Executor& ex) {
  auto l = t("lineitem");
  l = l[l["l_shipmode"].isin({"AIR", "AIR REG"}) & (l["l_shipinstruct"] == "DELIVER IN PERSON")];
  auto j = l.merge(t("part"), on({"l_partkey"}, {"p_partkey"}));
  auto kind = [&](const char* brand, std::vector<Literal> containers, double lo, std::int64_t size) {
    return (j["p_brand"] == brand) & j["p_container"].isin(containers) & (j["l_quantity"] >= lo) &
           (j["l_quantity"] <= lo + 10) & (j["p_size"] >= std::int64_t{1}) & (j["p_size"] <= size);
  };
  j = j[kind("Brand#12", {"SM CASE", "SM BOX", "SM PACK", "SM PKG"}, 1, 5) |
        kind("Brand#23", {"MED BAG", "MED BOX", "MED PKG", "MED PACK"}, 10, 10) |
        kind("Brand#34", {"LG CASE", "LG BOX", "LG PACK", "LG PKG"}, 20, 15)];
  return revenue(j).rename("revenue").sum().compute(ex);
}

// The one value of a one-row result (a threshold the query filters by, computed first).
double scalar_of(const std::shared_ptr<arrow::Table>& t, const std::string& column) {
  auto v = t->GetColumnByName(column)->GetScalar(0).ValueOrDie()->CastTo(arrow::float64()).ValueOrDie();
  return std::static_pointer_cast<arrow::DoubleScalar>(v)->value;
}

std::shared_ptr<arrow::Table> q2(const Tables& t, tessera::Executor& ex) {
  auto r = t("region");
  r = r[r["r_name"] == "EUROPE"];
  auto n = t("nation").merge(r, on({"n_regionkey"}, {"r_regionkey"}))[Cols{"n_nationkey", "n_name"}];
  auto s = t("supplier").merge(n, on({"s_nationkey"}, {"n_nationkey"}));
  auto ps = t("partsupp").merge(
      s[Cols{"s_suppkey", "s_name", "s_address", "s_phone", "s_acctbal", "s_comment", "n_name"}],
      on({"ps_suppkey"}, {"s_suppkey"}));
  auto p = t("part");
  p = p[(p["p_size"] == std::int64_t{15}) & p["p_type"].str_endswith("BRASS")][Cols{"p_partkey", "p_mfgr"}];
  auto j = p.merge(ps, on({"p_partkey"}, {"ps_partkey"}));
  auto cheapest = j.groupby({"p_partkey"}).agg(Aggs{{"ps_supplycost", {"min"}}}).rename({{"ps_supplycost", "min_cost"}});
  auto best = j.merge(cheapest, on({"p_partkey", "ps_supplycost"}, {"p_partkey", "min_cost"}));
  return best[Cols{"s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment"}]
      .sort_values({"s_acctbal", "n_name", "s_name", "p_partkey"}, std::vector<bool>{false, true, true, true})
      .head(100, ex);
}

std::shared_ptr<arrow::Table> q11(const Tables& t, tessera::Executor& ex) {
  auto n = t("nation");
  n = n[n["n_name"] == "GERMANY"];
  auto s = t("supplier").merge(n, on({"s_nationkey"}, {"n_nationkey"}))[Cols{"s_suppkey"}];
  auto ps = t("partsupp").merge(s, on({"ps_suppkey"}, {"s_suppkey"}));
  ps = ps.assign("value", ps["ps_supplycost"] * ps["ps_availqty"]).persist(ex);  // read once, used twice
  const double threshold = scalar_of(ps[Cols{"value"}].sum().compute(ex), "value") * 0.0001;
  auto g = ps.groupby({"ps_partkey"}).agg(Aggs{{"value", {"sum"}}});
  return g[g["value"] > threshold].sort_values({"value"}, false).compute(ex);
}

std::shared_ptr<arrow::Table> q15(const Tables& t, tessera::Executor& ex) {
  auto l = t("lineitem");
  l = l[(l["l_shipdate"] >= "1996-01-01") & (l["l_shipdate"] < "1996-04-01")];
  l = l.assign("total_revenue", revenue(l));
  auto per = l.groupby({"l_suppkey"}).agg(Aggs{{"total_revenue", {"sum"}}}).persist(ex);  // read once, used twice
  const double top = scalar_of(per[Cols{"total_revenue"}].max().compute(ex), "total_revenue");
  auto best = t("supplier").merge(per[per["total_revenue"] == top], on({"s_suppkey"}, {"l_suppkey"}));
  return best[Cols{"s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"}].sort_values({"s_suppkey"}).compute(ex);
}

std::shared_ptr<arrow::Table> q16(const Tables& t, tessera::Executor& ex) {
  auto p = t("part");
  p = p[(p["p_brand"] != "Brand#45") & ~p["p_type"].str_startswith("MEDIUM POLISHED") &
        p["p_size"].isin({std::int64_t{49}, std::int64_t{14}, std::int64_t{23}, std::int64_t{45}, std::int64_t{19},
                          std::int64_t{3}, std::int64_t{36}, std::int64_t{9}})];
  auto complaints = t("supplier");
  complaints = complaints[complaints["s_comment"].str_like("%Customer%Complaints%")][Cols{"s_suppkey"}];
  MergeOptions anti = on({"ps_suppkey"}, {"s_suppkey"});
  anti.how = "leftanti";
  auto j = t("partsupp").merge(complaints, anti).merge(p, on({"ps_partkey"}, {"p_partkey"}));
  // count(distinct ps_suppkey): the distinct (group, supplier) pairs, then the pairs per group.
  auto pairs = j.groupby({"p_brand", "p_type", "p_size", "ps_suppkey"}).size();
  auto g = pairs.groupby({"p_brand", "p_type", "p_size"}).size().rename({{"size", "supplier_cnt"}});
  return g.sort_values({"supplier_cnt", "p_brand", "p_type", "p_size"}, std::vector<bool>{false, true, true, true})
      .compute(ex);
}

std::shared_ptr<arrow::Table> q20(const Tables& t, tessera::Executor& ex) {
  auto p = t("part");
  p = p[p["p_name"].str_startswith("forest")][Cols{"p_partkey"}];
  auto l = t("lineitem");
  l = l[(l["l_shipdate"] >= "1994-01-01") & (l["l_shipdate"] < "1995-01-01")];
  auto shipped = l.groupby({"l_partkey", "l_suppkey"}).agg(Aggs{{"l_quantity", {"sum"}}}, AggregateOptions{.split_out = 4});
  auto ps = t("partsupp").merge(p, semi({"ps_partkey"}, {"p_partkey"}));
  auto j = ps.merge(shipped, on({"ps_partkey", "ps_suppkey"}, {"l_partkey", "l_suppkey"}));
  j = j[j["ps_availqty"] > j["l_quantity"] * 0.5];
  auto n = t("nation");
  n = n[n["n_name"] == "CANADA"];
  auto s = t("supplier").merge(n, on({"s_nationkey"}, {"n_nationkey"}));
  return s.merge(j[Cols{"ps_suppkey"}], semi({"s_suppkey"}, {"ps_suppkey"}))[Cols{"s_name", "s_address"}]
      .sort_values({"s_name"})
      .compute(ex);
}

std::shared_ptr<arrow::Table> q21(const Tables& t, tessera::Executor& ex) {
  auto l = t("lineitem")[Cols{"l_orderkey", "l_suppkey", "l_receiptdate", "l_commitdate"}];
  auto late = l[l["l_receiptdate"] > l["l_commitdate"]];
  // EXISTS another supplier in the order: its lines' smallest and largest supplier differ. NOT
  // EXISTS another late one: its late lines' smallest and largest supplier are this line's.
  const AggregateOptions wide{.split_out = 4};
  auto suppliers = l.groupby({"l_orderkey"}).agg(Aggs{{"l_suppkey", {"min", "max"}}}, wide);
  auto late_suppliers = late.groupby({"l_orderkey"})
                            .agg(Aggs{{"l_suppkey", {"min", "max"}}}, wide)
                            .rename({{"l_suppkey_min", "late_min"}, {"l_suppkey_max", "late_max"}});
  auto o = t("orders");
  o = o[o["o_orderstatus"] == "F"][Cols{"o_orderkey"}];
  auto n = t("nation");
  n = n[n["n_name"] == "SAUDI ARABIA"];
  auto s = t("supplier").merge(n, on({"s_nationkey"}, {"n_nationkey"}))[Cols{"s_suppkey", "s_name"}];
  MergeOptions by_order;
  by_order.on = {"l_orderkey"};
  auto j = late.merge(s, on({"l_suppkey"}, {"s_suppkey"}))
               .merge(o, on({"l_orderkey"}, {"o_orderkey"}))
               .merge(suppliers, by_order)
               .merge(late_suppliers, by_order);
  j = j[(j["l_suppkey_min"] != j["l_suppkey_max"]) & (j["late_min"] == j["late_max"])];
  auto g = j.groupby({"s_name"}).size().rename({{"size", "numwait"}});
  return g.sort_values({"numwait", "s_name"}, std::vector<bool>{false, true}).head(100, ex);
}

std::shared_ptr<arrow::Table> q22(const Tables& t, tessera::Executor& ex) {
  auto c = t("customer");
  c = c.assign("cntrycode", c["c_phone"].str_slice(0, 2));
  c = c[c["cntrycode"].isin({"13", "31", "23", "29", "30", "18", "17"})].persist(ex);  // read once, used twice
  const double average = scalar_of(c[c["c_acctbal"] > 0.0][Cols{"c_acctbal"}].mean().compute(ex), "c_acctbal");
  auto rich = c[c["c_acctbal"] > average];
  MergeOptions anti = on({"c_custkey"}, {"o_custkey"});
  anti.how = "leftanti";
  auto idle = rich.merge(t("orders")[Cols{"o_custkey"}], anti);
  return idle.groupby({"cntrycode"})
      .agg(Aggs{{"c_acctbal", {"count", "sum"}}})
      .rename({{"c_acctbal_count", "numcust"}, {"c_acctbal_sum", "totacctbal"}})
      .compute(ex);
}

const std::map<int, Query>& queries() {
  static const std::map<int, Query> q{{1, q1},   {2, q2},   {3, q3},   {4, q4},   {5, q5},   {6, q6},
                                      {7, q7},   {8, q8},   {9, q9},   {10, q10}, {11, q11}, {12, q12},
                                      {13, q13}, {14, q14}, {15, q15}, {16, q16}, {17, q17}, {18, q18},
                                      {19, q19}, {20, q20}, {21, q21}, {22, q22}};
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
  std::string data, list = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22", scheduler = "threads";
  int repeat = 1;
  bench::ClusterArgs cluster;
  CLI::App app{"TPC-H queries on Tessera DataFrames"};
  app.add_option("--data", data, "folder of tpchgen-cli's Parquet output (one folder per table)")->required();
  app.add_option("--queries", list, "query numbers, comma-separated");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--repeat", repeat, "runs of each query; the best time is reported");
  bench::add_cluster_options(app, cluster);
  app.add_option("--memory-limit", cluster.memory_limit,
                 "--scheduler distributed: each worker's memory limit (Dask's forms: 3GB, 0.5, 0 for none)");
  CLI11_PARSE(app, argc, argv);
  auto exec = bench::open_execution("tpch", scheduler, "host", cluster);
  if (!exec.executor) return 2;
  const Tables tables{data};
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    const int number = std::stoi(item);
    auto it = queries().find(number);
    if (it == queries().end()) {
      std::fprintf(stderr, "tpch: no query %d (TPC-H has queries 1 to 22)\n", number);
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
