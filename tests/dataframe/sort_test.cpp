// sort_values over several partitions: the partitions in order are the whole frame sorted (ties
// by the next column, missing values last in either direction: NaN, then null), no row lost or repeated, and a
// first column without numeric ranges (a string) sorts in one task.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::sliced_frame;
using testing::sorted_rows;

struct SortRow {
  std::optional<double> a;  // nullopt: null; may hold NaN
  std::int64_t b = 0;
  std::string s;
};

std::shared_ptr<arrow::Table> sort_table(const std::vector<SortRow>& rows) {
  arrow::DoubleBuilder a;
  arrow::Int64Builder b;
  arrow::StringBuilder s;
  for (const auto& r : rows) {
    (r.a ? a.Append(*r.a) : a.AppendNull()).ok();
    b.Append(r.b).ok();
    s.Append(r.s).ok();
  }
  return arrow::Table::Make(arrow::schema({arrow::field("a", arrow::float64()), arrow::field("b", arrow::int64()),
                                           arrow::field("s", arrow::utf8())}),
                            {a.Finish().ValueOrDie(), b.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
}

// "a|b" of each row in order: what the sort decides (s breaks no ties).
std::vector<std::string> sort_keys_of(const std::shared_ptr<arrow::Table>& t) {
  std::vector<std::string> out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) {
    auto a = t->GetColumnByName("a")->GetScalar(r).ValueOrDie();
    auto b = t->GetColumnByName("b")->GetScalar(r).ValueOrDie();
    out.push_back((a->is_valid ? a->ToString() : "null") + "|" + b->ToString());
  }
  return out;
}

// The reference: std::stable_sort with pandas' order (missing a last whichever the direction).
// Arrow keeps NaN and null apart, where pandas has only NaN: NaN comes before null.
std::vector<std::string> reference_keys(std::vector<SortRow> rows, bool ascending) {
  auto rank = [](const SortRow& r) { return !r.a ? 2 : std::isnan(*r.a) ? 1 : 0; };
  std::stable_sort(rows.begin(), rows.end(), [&](const SortRow& x, const SortRow& y) {
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    if (rank(x) == 0 && *x.a != *y.a) return ascending ? *x.a < *y.a : *x.a > *y.a;
    return ascending ? x.b < y.b : x.b > y.b;
  });
  auto t = sort_table(rows);
  return sort_keys_of(t);
}

TEST(SortValues, PartitionsInOrderAreTheSortedFrameWithMissingValuesLast) {
  std::mt19937 rng(17);
  std::vector<SortRow> rows;
  for (int r = 0; r < 3000; ++r) {
    SortRow row;
    const int pick = static_cast<int>(rng() % 50);
    if (pick == 0) row.a = std::nullopt;
    else if (pick == 1) row.a = std::nan("");
    else row.a = static_cast<double>(rng() % 400) / 4.0 - 20.0;  // many ties in a
    row.b = static_cast<std::int64_t>(rng() % 1000);
    row.s = "r" + std::to_string(r);
    rows.push_back(row);
  }
  const auto t = sort_table(rows);
  for (bool ascending : {true, false}) {
    auto sorted = sliced_frame(t, 6).sort_values({"a", "b"}, ascending);
    EXPECT_EQ(sorted.npartitions(), 6);
    auto got = sorted.compute();
    EXPECT_EQ(sort_keys_of(got), reference_keys(rows, ascending)) << (ascending ? "ascending" : "descending");
    EXPECT_EQ(sorted_rows(got), sorted_rows(t));  // every row once
    // The ranges ran in parallel: more than one partition holds rows.
    std::vector<Key> keys;
    Graph g = sorted.to_graph(&keys);
    int non_empty = 0;
    for (const auto& v : local_executor().get(g, keys))
      non_empty += std::static_pointer_cast<const arrow::Table>(v.native().object)->num_rows() > 0;
    EXPECT_GE(non_empty, 4);
  }
  // One partition, and a string first column (sorted in one task), give the same order.
  EXPECT_EQ(sort_keys_of(sliced_frame(t, 1).sort_values({"a", "b"}).compute()), reference_keys(rows, true));
  auto by_string = sliced_frame(t, 4).sort_values({"s"});
  EXPECT_EQ(by_string.npartitions(), 1);
  auto s = by_string.compute();
  for (std::int64_t r = 1; r < s->num_rows(); ++r)
    EXPECT_LE(s->GetColumnByName("s")->GetScalar(r - 1).ValueOrDie()->ToString(),
              s->GetColumnByName("s")->GetScalar(r).ValueOrDie()->ToString());
}

TEST(SortValues, AFrameOfOneValueOrNoRowsSortsAndBadColumnsAreRefused) {
  std::vector<SortRow> same(100, SortRow{2.5, 1, "x"});
  auto got = sliced_frame(sort_table(same), 3).sort_values({"a"}).compute();
  EXPECT_EQ(got->num_rows(), 100);
  auto empty = sliced_frame(sort_table({}), 2).sort_values({"b"}).compute();
  EXPECT_EQ(empty->num_rows(), 0);
  auto df = sliced_frame(sort_table(same), 2);
  EXPECT_NE(message_of([&] { df.sort_values({"nope"}); }).find("no column 'nope'"), std::string::npos);
  EXPECT_NE(message_of([&] { df.sort_values({}); }).find("no columns"), std::string::npos);
  EXPECT_NE(message_of([&] { df.sort_values({"a", "a"}); }).find("twice"), std::string::npos);
}

}  // namespace
}  // namespace tessera::dataframe
