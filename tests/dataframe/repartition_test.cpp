// repartition by a partition count, by divisions and by bytes: the rows stay the same and in
// order, partitions are as asked, and divisions stay known where they can.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::number;
using testing::sorted_rows;

// Columns k (keys with duplicates, a skewed one and nulls), v (the row number) and a string.
std::shared_ptr<arrow::Table> rp_table(int n, unsigned seed) {
  std::mt19937 rng(seed);
  arrow::Int64Builder k, v;
  arrow::StringBuilder s;
  for (int r = 0; r < n; ++r) {
    const int pick = static_cast<int>(rng() % 20);
    if (pick == 0) k.AppendNull().ok();
    else k.Append(pick < 10 ? 42 : static_cast<std::int64_t>(rng() % 300)).ok();
    v.Append(r).ok();
    s.Append("row" + std::to_string(r)).ok();
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int64()), arrow::field("v", arrow::int64()), arrow::field("s", arrow::utf8())}),
      {k.Finish().ValueOrDie(), v.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
}

// `parts` partitions; with three or more, the second is empty.
DataFrame rp_cut(const std::shared_ptr<arrow::Table>& t, int parts) {
  std::vector<std::shared_ptr<arrow::Table>> pieces;
  const int holders = parts >= 3 ? parts - 1 : parts;
  std::int64_t at = 0;
  for (int p = 0, h = 0; p < parts; ++p) {
    if (parts >= 3 && p == 1) {
      pieces.push_back(t->Slice(0, 0));
      continue;
    }
    const std::int64_t end = t->num_rows() * (h + 1) / holders;
    pieces.push_back(t->Slice(at, end - at));
    at = end;
    ++h;
  }
  return from_tables(pieces);
}

std::vector<std::int64_t> rp_rows_per_partition(const DataFrame& df) {
  std::vector<Key> keys;
  Graph g = df.to_graph(&keys);
  std::vector<std::int64_t> out;
  for (const auto& v : local_executor().get(g, keys))
    out.push_back(std::static_pointer_cast<const arrow::Table>(v.native().object)->num_rows());
  return out;
}

// The v column in order: what repartition must not change.
std::vector<double> rp_order(const std::shared_ptr<arrow::Table>& t) {
  std::vector<double> out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) out.push_back(number(t, "v", r));
  return out;
}

TEST(Repartition, ByCountConcatenatesNeighboursOrSplitsEvenlyKeepingTheRowsInOrder) {
  const auto t = rp_table(2100, 1);
  for (int parts : {1, 3, 7}) {
    const auto df = rp_cut(t, parts);
    for (std::int64_t want : {1, 2, 3, 5, 7, 16}) {
      auto r = df.repartition({.npartitions = want});
      EXPECT_EQ(r.npartitions(), want);
      EXPECT_EQ(rp_order(r.compute()), rp_order(t)) << parts << " -> " << want;
      const auto rows = rp_rows_per_partition(r);
      ASSERT_EQ(static_cast<std::int64_t>(rows.size()), want);
      if (want > parts && parts == 1) {  // one partition split: pieces differ by a row at most
        const auto [lo, hi] = std::minmax_element(rows.begin(), rows.end());
        EXPECT_LE(*hi - *lo, 1);
      }
    }
  }
}

TEST(Repartition, KeepsKnownDivisionsWhenConcatenatingAndMovesRowsByNewDivisions) {
  const auto t = rp_table(3000, 2);
  for (int parts : {1, 3, 7}) {
    const auto indexed = rp_cut(t, parts).set_index("k", {.npartitions = 6});
    const auto d = indexed.divisions();
    ASSERT_GE(d.size(), 3u);
    // Fewer: a subset of the divisions, the same rows in the same order.
    auto fewer = indexed.repartition({.npartitions = 2});
    ASSERT_TRUE(fewer.known_divisions());
    EXPECT_EQ(fewer.divisions().size(), 3u);
    EXPECT_EQ(sorted_rows(fewer.compute()), sorted_rows(t));
    EXPECT_EQ(rp_order(fewer.compute()), rp_order(indexed.compute()));
    // More: split by rows, the divisions unknown, the index kept.
    auto more = indexed.repartition({.npartitions = indexed.npartitions() * 2});
    EXPECT_FALSE(more.known_divisions());
    EXPECT_EQ(more.index_column(), "k");
    EXPECT_EQ(rp_order(more.compute()), rp_order(indexed.compute()));
    EXPECT_NE(message_of([&] { more.loc(Literal{std::int64_t{42}}); }).find("unknown"), std::string::npos);
    // New divisions covering the old: each partition within its bounds, missing keys last.
    const std::vector<Literal> nd{std::int64_t{-10}, std::int64_t{40}, std::int64_t{42}, std::int64_t{43},
                                  std::int64_t{200}, std::int64_t{400}};
    auto moved = indexed.repartition({.divisions = nd});
    ASSERT_EQ(moved.npartitions(), 5);
    EXPECT_EQ(moved.divisions().size(), 6u);
    std::vector<Key> keys;
    Graph g = moved.to_graph(&keys);
    const auto values = local_executor().get(g, keys);
    std::vector<std::string> all;
    for (std::size_t i = 0; i < values.size(); ++i) {
      auto part = std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(values[i].native().object));
      for (std::int64_t r = 0; r < part->num_rows(); ++r) {
        const double k = number(part, "k", r);
        if (std::isnan(k)) {
          EXPECT_EQ(i, values.size() - 1);
          continue;
        }
        EXPECT_GE(k, static_cast<double>(std::get<std::int64_t>(nd[i])));
        EXPECT_LT(k, static_cast<double>(std::get<std::int64_t>(nd[i + 1])));
        if (r > 0 && !std::isnan(number(part, "k", r - 1))) {
          EXPECT_LE(number(part, "k", r - 1), k) << "partition " << i << " is not sorted";
        }
      }
      auto rows = sorted_rows(part);
      all.insert(all.end(), rows.begin(), rows.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, sorted_rows(t));
    // The skewed key 42 is alone in its partition.
    EXPECT_EQ(moved.loc(Literal{std::int64_t{42}}).npartitions(), 1);
    EXPECT_EQ(moved.loc(Literal{std::int64_t{42}}).len(), indexed.loc(Literal{std::int64_t{42}}).len());
  }
  const auto indexed = rp_cut(t, 3).set_index("k");
  EXPECT_NE(message_of([&] { indexed.repartition({.divisions = {std::int64_t{50}, std::int64_t{60}}}); }).find("cover"),
            std::string::npos);
  EXPECT_NE(message_of([&] { rp_cut(t, 3).repartition({.divisions = {std::int64_t{0}, std::int64_t{500}}}); })
                .find("known divisions"),
            std::string::npos);
  EXPECT_NE(message_of([&] { indexed.repartition({.divisions = {std::int64_t{500}, std::int64_t{0}}}); }).find("increase"),
            std::string::npos);
  EXPECT_NE(message_of([&] { indexed.repartition({.divisions = {std::string("a"), std::string("b")}}); }).find("'k'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { indexed.repartition({}); }).find("exactly one"), std::string::npos);
}

TEST(Repartition, ByBytesSplitsLargePartitionsAndJoinsSmallOnes) {
  const auto t = rp_table(4000, 3);
  for (int parts : {1, 3, 7}) {
    const auto df = rp_cut(t, parts);
    // About 100 kB in all: 20 kB partitions split the large ones.
    auto small = df.repartition({.partition_size = 20000});
    EXPECT_GT(small.npartitions(), 3);
    EXPECT_EQ(rp_order(small.compute()), rp_order(t));
    // One partition when everything fits.
    auto big = df.repartition({.partition_size = 1 << 30});
    EXPECT_EQ(big.npartitions(), 1);
    EXPECT_EQ(rp_order(big.compute()), rp_order(t));
  }
  // Concatenating neighbours of an indexed frame keeps its divisions.
  auto joined = rp_cut(t, 7).set_index("k").repartition({.partition_size = 1 << 30});
  EXPECT_TRUE(joined.known_divisions());
  EXPECT_EQ(joined.divisions().size(), 2u);
}

}  // namespace
}  // namespace tessera::dataframe
