// nlargest / nsmallest, head(n) of a sort as a top-n, sort_values' na_position and explain(),
// against references computed here, for 1, 3 and 7 partitions with empty ones, ties, a value
// holding half the rows and missing values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe/frame_index.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::number;

struct TnRow {
  std::optional<double> a;  // may be NaN
  std::int64_t b = 0;
  std::int64_t id = 0;
};

std::shared_ptr<arrow::Table> tn_table(const std::vector<TnRow>& rows) {
  arrow::DoubleBuilder a;
  arrow::Int64Builder b, id;
  arrow::StringBuilder s;
  for (const auto& r : rows) {
    (r.a ? a.Append(*r.a) : a.AppendNull()).ok();
    b.Append(r.b).ok();
    id.Append(r.id).ok();
    s.Append("t").ok();
  }
  return arrow::Table::Make(arrow::schema({arrow::field("a", arrow::float64()), arrow::field("b", arrow::int64()),
                                           arrow::field("id", arrow::int64()), arrow::field("s", arrow::utf8())}),
                            {a.Finish().ValueOrDie(), b.Finish().ValueOrDie(), id.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
}

std::vector<TnRow> tn_rows(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<TnRow> rows;
  for (int r = 0; r < n; ++r) {
    TnRow row;
    const int pick = static_cast<int>(rng() % 30);
    if (pick == 0) row.a = std::nullopt;
    else if (pick == 1) row.a = std::nan("");
    else if (pick < 16) row.a = 3.0;  // half the rows: ties
    else row.a = static_cast<double>(rng() % 100) / 2.0;
    row.b = static_cast<std::int64_t>(rng() % 5);
    row.id = r;
    rows.push_back(row);
  }
  return rows;
}

DataFrame tn_cut(const std::shared_ptr<arrow::Table>& t, int parts) {
  std::vector<std::shared_ptr<arrow::Table>> pieces;
  const int holders = parts >= 3 ? parts - 1 : parts;  // with three or more, the last is empty
  for (int p = 0; p < holders; ++p)
    pieces.push_back(t->Slice(t->num_rows() * p / holders, t->num_rows() * (p + 1) / holders - t->num_rows() * p / holders));
  if (parts >= 3) pieces.push_back(t->Slice(0, 0));
  return from_tables(pieces);
}

// pandas' nlargest / nsmallest: rows missing `a` never chosen; by a then b; ties keep the earlier row.
std::vector<std::int64_t> tn_reference(std::vector<TnRow> rows, std::int64_t n, bool largest, bool by_b) {
  std::vector<TnRow> valid;
  for (const auto& r : rows)
    if (r.a && !std::isnan(*r.a)) valid.push_back(r);
  std::stable_sort(valid.begin(), valid.end(), [&](const TnRow& x, const TnRow& y) {
    if (*x.a != *y.a) return largest ? *x.a > *y.a : *x.a < *y.a;
    if (by_b && x.b != y.b) return largest ? x.b > y.b : x.b < y.b;
    return false;
  });
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < valid.size() && static_cast<std::int64_t>(i) < n; ++i) out.push_back(valid[i].id);
  return out;
}

std::vector<std::int64_t> tn_ids(const std::shared_ptr<arrow::Table>& t) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) out.push_back(static_cast<std::int64_t>(number(t, "id", r)));
  return out;
}

std::size_t tn_count_ops(const DataFrame& df, const std::string& op) {
  std::vector<Key> keys;
  Graph g = df.to_graph(&keys);
  std::size_t n = 0;
  for (const auto& [k, t] : g.tasks()) n += t.op == op;
  return n;
}

TEST(TopN, NlargestAndNsmallestAreThePandasRowsForEveryPartitioning) {
  const auto rows = tn_rows(3000, 3);
  const auto t = tn_table(rows);
  for (int parts : {1, 3, 7}) {
    const auto df = tn_cut(t, parts);
    for (std::int64_t n : {0, 1, 5, 40, 2000, 5000}) {
      const std::string label = std::to_string(parts) + " partitions, n " + std::to_string(n);
      EXPECT_EQ(tn_ids(df.nlargest(n, {"a"}).compute()), tn_reference(rows, n, true, false)) << label;
      EXPECT_EQ(tn_ids(df.nsmallest(n, {"a"}).compute()), tn_reference(rows, n, false, false)) << label;
      EXPECT_EQ(tn_ids(df.nlargest(n, {"a", "b"}).compute()), tn_reference(rows, n, true, true)) << label;
      EXPECT_EQ(tn_ids(df.nsmallest(n, {"a", "b"}).compute()), tn_reference(rows, n, false, true)) << label;
    }
    EXPECT_EQ(df.nlargest(3, {"a"}).npartitions(), 1);
  }
  // All missing: nothing to choose.
  std::vector<TnRow> missing(50, TnRow{std::nullopt, 1, 0});
  EXPECT_EQ(tn_cut(tn_table(missing), 3).nlargest(5, {"a"}).compute()->num_rows(), 0);
  auto df = tn_cut(t, 3);
  EXPECT_NE(message_of([&] { df.nlargest(3, {"s"}); }).find("column 's' is string"), std::string::npos);
  EXPECT_NE(message_of([&] { df.nsmallest(3, {"nope"}); }).find("'nope'"), std::string::npos);
  EXPECT_NE(message_of([&] { df.nlargest(-1, {"a"}); }).find("n must be"), std::string::npos);
}

TEST(TopN, HeadOfASortIsATopNThatSortsNoWholeFrame) {
  const auto rows = tn_rows(2000, 4);
  const auto t = tn_table(rows);
  for (int parts : {1, 3, 7}) {
    const auto df = tn_cut(t, parts);
    for (bool ascending : {true, false})
      for (const std::string na : {"last", "first"}) {
        const auto sorted = df.sort_values({"a", "b"}, ascending, na);
        const auto full = sorted.compute();
        for (std::int64_t n : {1, 10, 1500, 3000}) {
          const std::string label = std::to_string(parts) + " partitions, n " + std::to_string(n) + ", " + na;
          auto top = sorted.head(n);
          ASSERT_EQ(top->num_rows(), std::min<std::int64_t>(n, full->num_rows())) << label;
          // The same sort keys as the full sort's first n rows (ties may differ between partitions).
          for (std::int64_t r = 0; r < top->num_rows(); ++r) {
            const double x = number(top, "a", r), y = number(full, "a", r);
            ASSERT_TRUE((std::isnan(x) && std::isnan(y)) || x == y) << label << " row " << r;
            ASSERT_EQ(number(top, "b", r), number(full, "b", r)) << label << " row " << r;
          }
        }
        // The plan: a top-n per partition and one over them; no range split, no sort task.
        auto plan = detail::head_as_top_n(sorted, 10);
        ASSERT_TRUE(plan.has_value());
        EXPECT_EQ(tn_count_ops(*plan, "tessera.frame.range_split"), 0u);
        EXPECT_EQ(tn_count_ops(*plan, "tessera.frame.sort_values"), 0u);
        EXPECT_EQ(tn_count_ops(*plan, "tessera.frame.top_n"), parts == 1 ? 1u : static_cast<std::size_t>(parts) + 1);
      }
  }
}

TEST(SortValues, NaPositionFirstPutsMissingValuesFirstInEitherDirection) {
  const auto rows = tn_rows(2500, 6);
  const auto t = tn_table(rows);
  for (int parts : {1, 3, 7}) {
    for (bool ascending : {true, false}) {
      auto sorted = tn_cut(t, parts).sort_values({"a"}, ascending, "first");
      if (parts > 1) {
        EXPECT_EQ(sorted.npartitions(), parts);
      }
      auto got = sorted.compute();
      ASSERT_EQ(got->num_rows(), 2500);
      bool values_seen = false;
      for (std::int64_t r = 0; r < got->num_rows(); ++r) {
        const double v = number(got, "a", r);
        if (std::isnan(v)) {
          ASSERT_FALSE(values_seen) << "a missing value after a value at row " << r;
          continue;
        }
        if (values_seen) {
          const double p = number(got, "a", r - 1);
          ASSERT_TRUE(ascending ? p <= v : p >= v) << r;
        }
        values_seen = true;
      }
    }
  }
  EXPECT_NE(message_of([&] { tn_cut(t, 3).sort_values({"a"}, true, "middle"); }).find("na_position"), std::string::npos);
}

TEST(Explain, ListsTheLoweredNodesTheirPartitionsAndTheColumnsRead) {
  const auto t = tn_table(tn_rows(100, 1));
  auto df = tn_cut(t, 3);
  auto q = df[df["a"] > 1.0][std::vector<std::string>{"a", "b"}].nlargest(3, {"a"});
  const std::string plan = q.explain();
  EXPECT_NE(plan.find("TopN"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Map"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Tables"), std::string::npos) << plan;
  EXPECT_NE(plan.find("3 partitions"), std::string::npos) << plan;
  EXPECT_NE(plan.find("reads [a, b]"), std::string::npos) << plan;  // the source: only what is used
  auto indexed = df.set_index("b");
  EXPECT_NE(indexed.explain().find("RangePartition"), std::string::npos) << indexed.explain();
  EXPECT_NE(indexed.explain().find("divisions=["), std::string::npos) << indexed.explain();
}

}  // namespace
}  // namespace tessera::dataframe
