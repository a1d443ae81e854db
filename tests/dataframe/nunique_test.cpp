// Distinct counts (GroupBy::nunique, Series::nunique) against a row-by-row reference, and
// group-bys of frames already hash-partitioned on their keys, which aggregate each partition
// alone instead of combining partial results across partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/core/error.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::sliced_frame;
using testing::sorted_rows;

struct NuniqueRows {
  std::vector<std::optional<std::int64_t>> g;  // the key; nullopt is a missing key
  std::vector<std::optional<std::int64_t>> v;  // ints with missing values
  std::vector<double> x;                       // doubles with NaN
  std::vector<std::string> s;
};

NuniqueRows nunique_rows(std::mt19937& rng, int rows, int groups) {
  NuniqueRows r;
  for (int i = 0; i < rows; ++i) {
    r.g.push_back(rng() % 17 == 0 ? std::nullopt : std::optional<std::int64_t>(rng() % groups));
    r.v.push_back(rng() % 5 == 0 ? std::nullopt : std::optional<std::int64_t>(rng() % 9));
    r.x.push_back(rng() % 6 == 0 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(rng() % 7) / 2);
    r.s.push_back(std::string(1, static_cast<char>('a' + rng() % 5)));
  }
  return r;
}

std::shared_ptr<arrow::Table> nunique_table(const NuniqueRows& r) {
  arrow::Int64Builder g, v;
  arrow::DoubleBuilder x;
  arrow::StringBuilder s;
  for (std::size_t i = 0; i < r.g.size(); ++i) {
    (r.g[i] ? g.Append(*r.g[i]) : g.AppendNull()).ok();
    (r.v[i] ? v.Append(*r.v[i]) : v.AppendNull()).ok();
    x.Append(r.x[i]).ok();
    s.Append(r.s[i]).ok();
  }
  auto schema = arrow::schema({arrow::field("g", arrow::int64()), arrow::field("v", arrow::int64()),
                               arrow::field("x", arrow::float64()), arrow::field("s", arrow::utf8())});
  return arrow::Table::Make(schema, {g.Finish().ValueOrDie(), v.Finish().ValueOrDie(), x.Finish().ValueOrDie(),
                                     s.Finish().ValueOrDie()});
}

// pandas' df.groupby("g")[["v", "x", "s"]].nunique(): missing values not counted, a group whose
// values are all missing counts 0.
std::vector<std::string> reference_nunique(const NuniqueRows& r) {
  std::map<std::optional<std::int64_t>, std::set<std::int64_t>> v;
  std::map<std::optional<std::int64_t>, std::set<double>> x;
  std::map<std::optional<std::int64_t>, std::set<std::string>> s;
  for (std::size_t i = 0; i < r.g.size(); ++i) {
    if (!r.g[i]) continue;  // rows with a missing key are dropped, as pandas' groupby does
    auto& vs = v[r.g[i]];
    auto& xs = x[r.g[i]];
    s[r.g[i]].insert(r.s[i]);
    if (r.v[i]) vs.insert(*r.v[i]);
    if (!std::isnan(r.x[i])) xs.insert(r.x[i]);
  }
  arrow::Int64Builder g, nv, nx, ns;
  for (const auto& [key, values] : v) {
    (key ? g.Append(*key) : g.AppendNull()).ok();
    nv.Append(static_cast<std::int64_t>(values.size())).ok();
    nx.Append(static_cast<std::int64_t>(x[key].size())).ok();
    ns.Append(static_cast<std::int64_t>(s[key].size())).ok();
  }
  auto schema = arrow::schema({arrow::field("g", arrow::int64()), arrow::field("v", arrow::int64()),
                               arrow::field("x", arrow::int64()), arrow::field("s", arrow::int64())});
  return sorted_rows(arrow::Table::Make(
      schema, {g.Finish().ValueOrDie(), nv.Finish().ValueOrDie(), nx.Finish().ValueOrDie(), ns.Finish().ValueOrDie()}));
}

int count_ops(const DataFrame& df, const std::string& op) {
  std::vector<Key> keys;
  Graph g = df.to_graph(&keys);
  int n = 0;
  for (const auto& [key, task] : g.tasks()) n += task.op == op;
  return n;
}

TEST(Nunique, PerGroupEqualsTheReferenceWithMissingKeysValuesAndNaN) {
  std::mt19937 rng(11);
  const auto rows = nunique_rows(rng, 3000, 40);
  const auto table = nunique_table(rows);
  const auto expected = reference_nunique(rows);
  for (int parts : {1, 4}) {
    for (int split_out : {1, 3}) {
      AggregateOptions o;
      o.split_out = split_out;
      o.split_every = 2;
      const auto got = sliced_frame(table, parts).groupby({"g"}).nunique(o);
      EXPECT_EQ(got.columns(), (std::vector<std::string>{"g", "v", "x", "s"}));
      EXPECT_EQ(sorted_rows(got.compute()), expected) << parts << " partitions, split_out " << split_out;
    }
  }
}

TEST(Nunique, ManyGroupsShuffleOnceAndEachPartitionCountsAlone) {
  std::mt19937 rng(12);
  const auto rows = nunique_rows(rng, 4000, 1500);
  const auto table = nunique_table(rows);
  AggregateOptions o;
  o.split_out = 4;
  const auto got = sliced_frame(table, 5).groupby({"g"})[std::vector<std::string>{"v", "x", "s"}].nunique(o);
  EXPECT_EQ(got.npartitions(), 4);
  // One shuffle of the five input partitions; every group-by within partitions (a combine task
  // reads one partial), and the three counts are merged partition by partition.
  EXPECT_EQ(count_ops(got, "tessera.frame.shuffle_split"), 5);
  std::vector<Key> keys;
  Graph g = got.to_graph(&keys);
  for (const auto& [key, task] : g.tasks()) {
    if (task.op == "tessera.frame.groupby_combine") {
      EXPECT_EQ(task.args.size(), 2u) << key;
    }
  }
  const auto expected = reference_nunique(rows);
  EXPECT_TRUE(std::any_of(expected.begin(), expected.end(),
                          [](const std::string& row) { return row.find("v=0 ") != std::string::npos; }))
      << "some group has only missing values of v";
  EXPECT_EQ(sorted_rows(got.compute()), expected);
}

TEST(Nunique, OfASeriesCountsDistinctValuesNotMissingOnes) {
  std::mt19937 rng(13);
  const auto rows = nunique_rows(rng, 500, 10);
  const auto df = sliced_frame(nunique_table(rows), 3);
  std::set<std::int64_t> v;
  std::set<double> x;
  for (std::size_t i = 0; i < rows.v.size(); ++i) {
    if (rows.v[i]) v.insert(*rows.v[i]);
    if (!std::isnan(rows.x[i])) x.insert(rows.x[i]);
  }
  auto first = [](const std::shared_ptr<arrow::Table>& t) {
    return std::static_pointer_cast<arrow::Int64Scalar>(t->column(0)->GetScalar(0).ValueOrDie())->value;
  };
  EXPECT_EQ(first(df["v"].nunique().compute()), static_cast<std::int64_t>(v.size()));
  EXPECT_EQ(first(df["x"].nunique().compute()), static_cast<std::int64_t>(x.size()));
  EXPECT_EQ(first((df["v"] * Literal{std::int64_t{2}}).nunique().compute()), static_cast<std::int64_t>(v.size()));
}

TEST(Nunique, BoolAndDateColumnsAreCountedAndCountedDistinct) {
  // Per group g: b (bool with nulls) and d (date32 with nulls).
  arrow::Int64Builder g;
  arrow::BooleanBuilder b;
  arrow::Date32Builder d;
  std::map<std::int64_t, std::set<int>> bs, ds;
  std::map<std::int64_t, std::int64_t> bn;
  for (int i = 0; i < 300; ++i) {
    const std::int64_t key = i % 7;
    g.Append(key).ok();
    if (i % 5 == 0) {
      b.AppendNull().ok();
    } else {
      b.Append(i % 3 == 0).ok();
      bs[key].insert(i % 3 == 0);
      ++bn[key];
    }
    if (i % 4 == 0) {
      d.AppendNull().ok();
    } else {
      d.Append(10950 + i % 11).ok();
      ds[key].insert(i % 11);
    }
  }
  auto schema = arrow::schema({arrow::field("g", arrow::int64()), arrow::field("b", arrow::boolean()),
                               arrow::field("d", arrow::date32())});
  const auto df = sliced_frame(
      arrow::Table::Make(schema, {g.Finish().ValueOrDie(), b.Finish().ValueOrDie(), d.Finish().ValueOrDie()}), 3);
  const auto counted = df.groupby({"g"})["b"].count().compute();
  const auto distinct = df.groupby({"g"}).nunique().compute();
  ASSERT_EQ(counted->num_rows(), 7);
  ASSERT_EQ(distinct->num_rows(), 7);
  for (std::int64_t r = 0; r < 7; ++r) {
    const auto key = static_cast<std::int64_t>(testing::number(counted, "g", r));
    EXPECT_EQ(testing::number(counted, "b", r), static_cast<double>(bn[key])) << key;
  }
  for (std::int64_t r = 0; r < 7; ++r) {
    const auto key = static_cast<std::int64_t>(testing::number(distinct, "g", r));
    EXPECT_EQ(testing::number(distinct, "b", r), static_cast<double>(bs[key].size())) << key;
    EXPECT_EQ(testing::number(distinct, "d", r), static_cast<double>(ds[key].size())) << key;
  }
}

TEST(Nunique, AKeyOrNoColumnIsRefused) {
  std::mt19937 rng(14);
  const auto df = sliced_frame(nunique_table(nunique_rows(rng, 10, 3)), 1);
  EXPECT_THROW(df.groupby({"g"})["g"].nunique(), Error);
  EXPECT_NE(message_of([&] { df[std::vector<std::string>{"g"}].groupby({"g"}).nunique(); }).find("no column"),
            std::string::npos);
}

TEST(PartitionedGroupby, AFrameShuffledOnTheKeysIsAggregatedPartitionByPartition) {
  std::mt19937 rng(15);
  const auto rows = nunique_rows(rng, 2000, 50);
  const auto df = sliced_frame(nunique_table(rows), 4);
  const auto shuffled = df.shuffle({"g"}, 3);
  // A filter and a projection that keeps the key keep the partitioning.
  const auto kept = shuffled[shuffled["v"] > Literal{std::int64_t{2}}][std::vector<std::string>{"g", "v", "x"}];
  const auto by_partition = kept.groupby({"g"}).agg({{"v", {"sum", "count"}}, {"x", {"max"}}});
  EXPECT_EQ(by_partition.npartitions(), 3);
  EXPECT_EQ(count_ops(by_partition, "tessera.frame.groupby_combine"), 3) << "one finalising combine per partition";
  const auto filtered = df[df["v"] > Literal{std::int64_t{2}}];
  const auto whole = filtered.groupby({"g"}).agg({{"v", {"sum", "count"}}, {"x", {"max"}}});
  EXPECT_EQ(sorted_rows(by_partition.compute()), sorted_rows(whole.compute()));
  // Grouping by more keys than the partitioning's is within partitions too.
  const auto two_keys = shuffled.groupby({"s", "g"}).size();
  EXPECT_EQ(two_keys.npartitions(), 3);
  EXPECT_EQ(sorted_rows(two_keys.compute()), sorted_rows(df.groupby({"s", "g"}).size().compute()));
}

TEST(PartitionedGroupby, AKeyRecomputedOrAnotherKeyCombinesAcrossPartitions) {
  std::mt19937 rng(16);
  const auto rows = nunique_rows(rng, 1000, 30);
  const auto df = sliced_frame(nunique_table(rows), 4);
  const auto shuffled = df.shuffle({"g"}, 3);
  // g replaced by another expression: its rows are no longer known to be together.
  const auto changed = shuffled.assign("g", shuffled["v"]);
  EXPECT_EQ(changed.groupby({"g"}).size().npartitions(), 1);
  EXPECT_EQ(sorted_rows(changed.groupby({"g"}).size().compute()),
            sorted_rows(df.assign("g", df["v"]).groupby({"g"}).size().compute()));
  // A group-by on a column the frame is not partitioned by.
  EXPECT_EQ(shuffled.groupby({"s"}).size().npartitions(), 1);
  EXPECT_EQ(sorted_rows(shuffled.groupby({"s"}).size().compute()), sorted_rows(df.groupby({"s"}).size().compute()));
}

}  // namespace
}  // namespace tessera::dataframe
