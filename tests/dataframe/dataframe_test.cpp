// DataFrame: read_csv, the operations, groupby-aggregate against values computed here by hand,
// and the errors raised when an expression is built or a partition is read.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <algorithm>
#include <random>
#include <sstream>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/core/error.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

using testing::as_map;
using testing::number;
using testing::TempDir;

// Trips: k (int, sometimes empty), v (float), s (string).
struct Trips {
  TempDir dir;
  std::map<double, std::pair<double, std::int64_t>> sums;  // k -> (sum v, count)
  std::int64_t rows = 0;
  explicit Trips(int files = 3, int rows_per_file = 2000) {
    std::mt19937 rng(7);
    for (int f = 0; f < files; ++f) {
      std::ostringstream os;
      os << "k,v,s\n";
      for (int r = 0; r < rows_per_file; ++r) {
        const int k = static_cast<int>(rng() % 6);
        const double v = static_cast<double>(rng() % 10000) / 100.0;
        if (r % 50 == 7) {
          os << "," << v << ",x\n";  // missing key: dropped by groupby
        } else {
          os << k << "," << v << ",s" << (r % 3) << "\n";
          sums[k].first += v;
          sums[k].second += 1;
        }
        ++rows;
      }
      dir.write("trips-" + std::to_string(f) + ".csv", os.str());
    }
  }
  std::string glob() const { return dir.file("trips-*.csv"); }
};

TEST(DataFrame, ReadCsvInfersTypesAndAssumeMissingMakesIntegersFloat) {
  Trips trips(1, 100);
  auto df = read_csv(trips.glob());
  EXPECT_EQ(df.columns(), (std::vector<std::string>{"k", "v", "s"}));
  EXPECT_EQ(df.dtype("k"), "int64");
  EXPECT_EQ(df.dtype("s"), "string");
  EXPECT_EQ(read_csv(trips.glob(), {.assume_missing = true}).dtype("k"), "double");
  EXPECT_EQ(df.len(), 100);
}

TEST(DataFrame, GroupbyMeanMatchesTheRowsAcrossFilesAndBlocks) {
  Trips trips;
  ThreadPoolExecutor pool(2);
  for (std::int64_t blocksize : {std::int64_t{0}, std::int64_t{4096}}) {
    ReadCsvOptions o;
    o.assume_missing = true;
    o.blocksize = blocksize;
    auto df = read_csv(trips.glob(), o);
    if (blocksize) {
      EXPECT_GT(df.npartitions(), 3);
    }
    auto mean = as_map(df.groupby({"k"})["v"].mean().compute(pool), "k", "v");
    ASSERT_EQ(mean.size(), trips.sums.size());
    for (const auto& [k, sc] : trips.sums) {
      std::ostringstream key;
      key << k;
      double got = mean.count(key.str()) ? mean[key.str()] : mean.begin()->second;
      for (const auto& [text, value] : mean)
        if (std::stod(text) == k) got = value;
      EXPECT_NEAR(got, sc.first / static_cast<double>(sc.second), 1e-9) << "key " << k;
    }
    EXPECT_EQ(df.len(pool), trips.rows);
  }
}

TEST(DataFrame, SeveralAggregationsTreeReductionAndSplitOutAgree) {
  Trips trips;
  ReadCsvOptions o;
  o.blocksize = 3000;
  auto df = read_csv(trips.glob(), o);
  const std::map<std::string, std::vector<std::string>> how{{"v", {"sum", "mean", "count", "min", "max", "std", "var"}}};
  auto one = df.groupby({"k"}).agg(how, {.split_every = 64}).compute();
  auto tree = df.groupby({"k"}).agg(how, {.split_every = 2}).compute();
  auto split = df.groupby({"k"}).agg(how, {.split_every = 3, .split_out = 3}).compute();
  ASSERT_EQ(one->num_rows(), static_cast<std::int64_t>(trips.sums.size()));
  ASSERT_EQ(tree->num_rows(), one->num_rows());
  ASSERT_EQ(split->num_rows(), one->num_rows());
  for (const char* c : {"v_sum", "v_mean", "v_count", "v_min", "v_max", "v_std", "v_var"}) {
    auto a = as_map(one, "k", c), b = as_map(tree, "k", c), s = as_map(split, "k", c);
    for (const auto& [k, v] : a) {
      EXPECT_NEAR(b[k], v, 1e-9 * std::max(1.0, std::abs(v))) << c << " " << k;
      EXPECT_NEAR(s[k], v, 1e-9 * std::max(1.0, std::abs(v))) << c << " " << k;
    }
  }
  // std^2 == var and sum == mean * count.
  for (std::int64_t r = 0; r < one->num_rows(); ++r) {
    EXPECT_NEAR(std::pow(number(one, "v_std", r), 2), number(one, "v_var", r), 1e-9 * number(one, "v_var", r));
    EXPECT_NEAR(number(one, "v_mean", r) * number(one, "v_count", r), number(one, "v_sum", r), 1e-6);
  }
  // Keys come out sorted.
  for (std::int64_t r = 1; r < one->num_rows(); ++r) EXPECT_LT(number(one, "k", r - 1), number(one, "k", r));
}

TEST(DataFrame, FilterAssignArithmeticAndReductions) {
  Trips trips(2, 500);
  auto df = read_csv(trips.glob());
  auto big = df[df["v"] > 50.0];
  auto with = big.assign("w", big["v"] * 2 + 1.0);
  with = with.assign("r", with["v"] / with["k"]);
  auto t = with.compute();
  ASSERT_GT(t->num_rows(), 0);
  for (std::int64_t r = 0; r < t->num_rows(); ++r) {
    EXPECT_GT(number(t, "v", r), 50.0);
    EXPECT_DOUBLE_EQ(number(t, "w", r), number(t, "v", r) * 2 + 1);
  }
  EXPECT_EQ(with.dtype("r"), "double");
  // Reductions: one row.
  auto sums = df[std::vector<std::string>{"v"}].sum().compute();
  double expect = 0;
  for (const auto& [k, sc] : trips.sums) expect += sc.first;
  auto all = df.compute();
  double total = 0;
  for (std::int64_t r = 0; r < all->num_rows(); ++r) total += number(all, "v", r);
  EXPECT_NEAR(number(sums, "v", 0), total, 1e-6);
  EXPECT_NEAR(number(df["v"].mean().compute(), "v", 0), total / static_cast<double>(all->num_rows()), 1e-9);
  EXPECT_EQ(number(df["k"].count().compute(), "k", 0), static_cast<double>(trips.rows - trips.rows / 50));
  EXPECT_EQ(df.astype({{"k", "float64"}}).dtype("k"), "double");
  EXPECT_EQ(df.head(7)->num_rows(), 7);
  auto described = df.describe();
  EXPECT_EQ(described->num_rows(), 8);  // count mean std min 25% 50% 75% max
  EXPECT_NEAR(number(described, "v", 1), total / static_cast<double>(all->num_rows()), 1e-9);
}

TEST(DataFrame, OneNumericKeyGroupsLikePandas) {
  // The single numeric key path: -0.0 and 0.0 are one group, NaN and missing keys are dropped,
  // thousands of groups (the table grows), int32 and timestamp keys.
  TempDir dir;
  std::ostringstream os;
  os << "f,i,v\n";
  std::map<double, double> expect;
  for (int r = 0; r < 20000; ++r) {
    const int k = r % 5000;
    std::string f = std::to_string(k) + ".5";
    if (r % 1000 == 1) f = "-0.0";
    if (r % 1000 == 2) f = "0.0";
    if (r % 1000 == 3) f = "nan";
    if (r % 1000 == 4) f = "";
    os << f << "," << k << "," << r << "\n";
    if (r % 1000 != 3 && r % 1000 != 4) expect[f == "-0.0" || f == "0.0" ? 0.0 : k + 0.5] += r;
  }
  dir.write("keys.csv", os.str());
  auto df = read_csv(dir.file("keys.csv"), {.blocksize = 50000, .dtypes = {{"i", "int32"}}});
  auto sums = df.groupby({"f"})["v"].sum().compute();
  ASSERT_EQ(sums->num_rows(), static_cast<std::int64_t>(expect.size()));
  std::int64_t r = 0;
  for (const auto& [k, v] : expect) {  // sorted by key, as the result is
    EXPECT_EQ(number(sums, "f", r), k);
    EXPECT_EQ(number(sums, "v", r), v) << "key " << k;
    ++r;
  }
  auto by_int = df.groupby({"i"}).size().compute();
  EXPECT_EQ(by_int->num_rows(), 5000);
  EXPECT_EQ(by_int->schema()->field(0)->type()->ToString(), "int32");
  for (std::int64_t g = 0; g < by_int->num_rows(); ++g) EXPECT_EQ(number(by_int, "size", g), 4);
  TimeseriesOptions t;
  t.end = "2000-01-02";
  t.freq = "1h";
  auto by_time = timeseries(t).groupby({"timestamp"}).size().compute();
  EXPECT_EQ(by_time->num_rows(), 24);
  EXPECT_EQ(by_time->schema()->field(0)->type()->ToString(), "timestamp[ns]");
}

TEST(DataFrame, ApproximateQuantilesMergeThePartitions) {
  TempDir dir;
  for (int f = 0; f < 4; ++f) {
    std::ostringstream os;
    os << "v\n";
    // Partitions of different sizes and ranges: 0..9999 spread unevenly, plus missing values.
    for (int r = f * 1000; r < (f + 1) * 1000 + f * 1500 && r < 10000; ++r) os << r << "\n";
    os << "\n";
    dir.write("q" + std::to_string(f) + ".csv", os.str());
  }
  auto df = read_csv(dir.file("q*.csv"));
  auto all = df.compute();
  std::vector<double> v;
  for (std::int64_t r = 0; r < all->num_rows(); ++r)
    if (!std::isnan(number(all, "v", r))) v.push_back(number(all, "v", r));
  std::sort(v.begin(), v.end());
  auto q = df["v"].quantile({0.1, 0.5, 0.9}).compute();
  ASSERT_EQ(q->num_rows(), 3);
  for (std::int64_t i = 0; i < 3; ++i) {
    const double exact = v[static_cast<std::size_t>(number(q, "quantile", i) * static_cast<double>(v.size() - 1))];
    EXPECT_NEAR(number(q, "v", i), exact, 0.01 * static_cast<double>(v.size())) << "q " << number(q, "quantile", i);
  }
  EXPECT_THROW(df["v"].quantile({1.5}), Error);
}

TEST(DataFrame, ValueCountsIsMostFrequentFirst) {
  Trips trips(1, 900);
  auto vc = read_csv(trips.glob())["s"].value_counts().compute();
  ASSERT_EQ(vc->num_rows(), 4);  // s0, s1, s2, x
  for (std::int64_t r = 1; r < vc->num_rows(); ++r) EXPECT_GE(number(vc, "count", r - 1), number(vc, "count", r));
  double total = 0;
  for (std::int64_t r = 0; r < vc->num_rows(); ++r) total += number(vc, "count", r);
  EXPECT_EQ(total, 900);
}

TEST(DataFrame, TimeseriesIsDeterministicAndPartitionsAreIndependent) {
  TimeseriesOptions o;
  o.start = "2000-01-01";
  o.end = "2000-01-03";
  o.freq = "1min";
  o.partition_freq = "6h";
  o.seed = 42;
  auto a = timeseries(o);
  EXPECT_EQ(a.npartitions(), 8);
  EXPECT_EQ(a.len(), 2 * 24 * 60);
  auto m1 = as_map(a.groupby({"name"})["x"].mean().compute(), "name", "x");
  ThreadPoolExecutor pool(2);
  auto m2 = as_map(timeseries(o).groupby({"name"})["x"].mean().compute(pool), "name", "x");
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(m1.size(), 26u);
  for (const auto& [name, x] : m1) EXPECT_LT(std::abs(x), 0.2) << name;
  o.partition_freq = "1D";  // other partitions, same rows
  auto m3 = as_map(timeseries(o).groupby({"name"})["x"].mean().compute(), "name", "x");
  for (const auto& [name, x] : m1) EXPECT_NEAR(m3[name], x, 1e-12);
}

TEST(DataFrame, PersistAndFromTablesAndParquetRoundTrip) {
  Trips trips(2, 300);
  TempDir out;
  auto df = read_csv(trips.glob()).persist();
  EXPECT_EQ(df.len(), 600);
  df.to_parquet(out.file("pq"));
  auto back = read_parquet(out.file("pq"));
  EXPECT_EQ(back.npartitions(), 2);
  EXPECT_EQ(back.columns(), df.columns());
  EXPECT_EQ(as_map(back.groupby({"k"})["v"].sum().compute(), "k", "v"),
            as_map(df.groupby({"k"})["v"].sum().compute(), "k", "v"));
  auto cols = read_parquet(out.file("pq"), {.columns = {"v"}});
  EXPECT_EQ(cols.columns(), std::vector<std::string>{"v"});
}

std::shared_ptr<arrow::Table> add_one(const std::shared_ptr<arrow::Table>& t) {
  auto v = t->GetColumnByName("v");
  arrow::DoubleBuilder b;
  for (const auto& chunk : v->chunks()) {
    const auto& d = static_cast<const arrow::DoubleArray&>(*chunk);
    for (std::int64_t i = 0; i < d.length(); ++i) (void)b.Append(d.Value(i) + 1);
  }
  auto arr = b.Finish().ValueOrDie();
  return arrow::Table::Make(arrow::schema({arrow::field("v1", arrow::float64())}), {arr}, t->num_rows());
}

TEST(DataFrame, MapPartitionsWithARegisteredFunction) {
  register_partition_function("test.add_one", add_one);
  Trips trips(1, 50);
  auto df = read_csv(trips.glob());
  auto m = df.map_partitions("test.add_one");
  EXPECT_EQ(m.columns(), std::vector<std::string>{"v1"});
  auto a = df.compute(), b = m.compute();
  ASSERT_EQ(b->num_rows(), 50);
  for (std::int64_t r = 0; r < 50; ++r) EXPECT_DOUBLE_EQ(number(b, "v1", r), number(a, "v", r) + 1);
  EXPECT_THROW(df.map_partitions("test.not_registered"), Error);
}

// ---- errors --------------------------------------------------------------------------------

using tessera_test::message_of;

TEST(DataFrameErrors, BuildTimeErrorsNameWhatIsWrong) {
  Trips trips(1, 20);
  auto df = read_csv(trips.glob());
  EXPECT_NE(message_of([&] { read_csv(trips.dir.file("nope-*.csv")); }).find("no files match"), std::string::npos);
  EXPECT_NE(message_of([&] { read_csv(trips.dir.file("missing.csv")); }).find("missing.csv"), std::string::npos);
  EXPECT_NE(message_of([&] { df["nope"]; }).find("column 'nope' does not exist (columns: k, v, s)"), std::string::npos);
  EXPECT_NE(message_of([&] { df.groupby({"k"})["v"].agg("median"); }).find("unknown aggregation 'median'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { df.groupby({"k"})["s"].mean(); }).find("mean of column 's'"), std::string::npos);
  EXPECT_NE(message_of([&] { df.astype({{"k", "decimal"}}); }).find("unknown dtype 'decimal'"), std::string::npos);
  EXPECT_NE(message_of([&] { df[df["s"] + 1]; }).find("cannot compute"), std::string::npos);
  EXPECT_NE(message_of([&] { read_csv(trips.glob(), {.usecols = {"zz"}}); }).find("'zz'"), std::string::npos);
  EXPECT_NE(message_of([&] { df.groupby({"k"}).agg("sum", {.split_every = 1}); }).find("split_every"), std::string::npos);
  auto other = read_csv(trips.glob());
  EXPECT_NE(message_of([&] { (void)(df["v"] + other["v"]); }).find("two different frames"), std::string::npos);
}

TEST(DataFrameErrors, AMalformedRowNamesTheFileAndLine) {
  TempDir dir;
  dir.write("a-good.csv", "a,b\n1,2\n3,4\n");
  dir.write("b-bad.csv", "a,b\n1,2\n3,4\n5\n7,8\n");
  auto df = read_csv(dir.file("*.csv"));
  const std::string m = message_of([&] { df.compute(); });
  EXPECT_NE(m.find("b-bad.csv"), std::string::npos) << m;
  EXPECT_NE(m.find("line 4"), std::string::npos) << m;
  // The same row met while inferring the types (the bad file is the first one).
  const std::string s = message_of([&] { read_csv(dir.file("b-bad.csv")); });
  EXPECT_NE(s.find("b-bad.csv, line 4"), std::string::npos) << s;
  // A value that does not parse as the column's type.
  dir.write("types.csv", "a,b\n1,2\n3,x4\n");
  const std::string t = message_of([&] { read_csv(dir.file("types.csv"), {.sample = 6}).compute(); });
  EXPECT_NE(t.find("types.csv"), std::string::npos) << t;
  EXPECT_NE(t.find("x4"), std::string::npos) << t;
}

}  // namespace
}  // namespace tessera::dataframe
