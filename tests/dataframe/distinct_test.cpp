// drop_duplicates and Series::unique against a row-by-row reference (pandas' semantics: the first
// or last row of each key, missing values equal to each other, the kept rows in their order), for
// 1, 3 and 7 partitions with empty ones, duplicate, skewed and missing keys.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <set>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::sorted_rows;

struct DdRow {
  std::optional<std::int64_t> a;
  std::optional<double> x;  // may be NaN
  std::string s;
  std::int64_t id = 0;
};

std::shared_ptr<arrow::Table> dd_table(const std::vector<DdRow>& rows) {
  arrow::Int64Builder a, id;
  arrow::DoubleBuilder x;
  arrow::StringBuilder s;
  for (const auto& r : rows) {
    (r.a ? a.Append(*r.a) : a.AppendNull()).ok();
    (r.x ? x.Append(*r.x) : x.AppendNull()).ok();
    s.Append(r.s).ok();
    id.Append(r.id).ok();
  }
  return arrow::Table::Make(arrow::schema({arrow::field("a", arrow::int64()), arrow::field("x", arrow::float64()),
                                           arrow::field("s", arrow::utf8()), arrow::field("id", arrow::int64())}),
                            {a.Finish().ValueOrDie(), x.Finish().ValueOrDie(), s.Finish().ValueOrDie(), id.Finish().ValueOrDie()});
}

std::vector<DdRow> dd_rows(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<DdRow> rows;
  for (int r = 0; r < n; ++r) {
    DdRow row;
    const int pick = static_cast<int>(rng() % 10);
    row.a = pick == 0 ? std::nullopt : pick < 5 ? std::optional<std::int64_t>(7) : std::optional<std::int64_t>(rng() % 40);
    const int xp = static_cast<int>(rng() % 8);
    // NaN and null are both missing: pandas makes them one key.
    row.x = xp == 0 ? std::nullopt : xp == 1 ? std::optional<double>(std::nan("")) : std::optional<double>((rng() % 6) * 0.5);
    row.s = "s" + std::to_string(rng() % 3);
    row.id = r;
    rows.push_back(row);
  }
  return rows;
}

// `parts` partitions in order; with three or more, the first and the fourth (if any) are empty.
DataFrame dd_cut(const std::shared_ptr<arrow::Table>& t, int parts) {
  std::vector<int> holders;
  for (int p = 0; p < parts; ++p)
    if (parts < 3 || (p != 0 && p != 3)) holders.push_back(p);
  std::vector<std::shared_ptr<arrow::Table>> pieces;
  std::int64_t at = 0;
  std::size_t h = 0;
  for (int p = 0; p < parts; ++p) {
    if (h < holders.size() && holders[h] == p) {
      const auto end = t->num_rows() * static_cast<std::int64_t>(h + 1) / static_cast<std::int64_t>(holders.size());
      pieces.push_back(t->Slice(at, end - at));
      at = end;
      ++h;
    } else {
      pieces.push_back(t->Slice(0, 0));
    }
  }
  return from_tables(pieces);
}

// The reference: the ids of the kept rows, in order.
std::vector<std::int64_t> dd_reference(const std::vector<DdRow>& rows, const std::vector<std::string>& on, bool last) {
  auto key = [&](const DdRow& r) {
    std::string k;
    for (const auto& c : on) {
      if (c == "a") k += r.a ? std::to_string(*r.a) : "NA";
      if (c == "x") k += !r.x || std::isnan(*r.x) ? "NA" : std::to_string(*r.x);
      if (c == "s") k += r.s;
      if (c == "id") k += std::to_string(r.id);
      k += "|";
    }
    return k;
  };
  std::set<std::string> seen;
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[last ? rows.size() - 1 - i : i];
    if (seen.insert(key(r)).second) out.push_back(r.id);
  }
  if (last) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::int64_t> dd_ids(const std::shared_ptr<arrow::Table>& t) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r)
    out.push_back(static_cast<std::int64_t>(testing::number(t, "id", r)));
  return out;
}

TEST(DropDuplicates, KeepsTheFirstOrLastRowOfEachKeyInOrderForEveryPartitioning) {
  const auto rows = dd_rows(3000, 5);
  const auto t = dd_table(rows);
  const std::vector<std::vector<std::string>> subsets{{"a"}, {"x"}, {"a", "x"}, {"s", "a"}};
  for (int parts : {1, 3, 7}) {
    const auto df = dd_cut(t, parts);
    for (const auto& on : subsets)
      for (const std::string keep : {"first", "last"}) {
        const std::string label = std::to_string(parts) + " partitions, keep " + keep + ", " + on.front();
        // A tree of two partitions per task, as pandas orders the rows.
        auto got = df.drop_duplicates(on, keep, {.split_every = 2});
        EXPECT_EQ(got.npartitions(), 1);
        EXPECT_EQ(dd_ids(got.compute()), dd_reference(rows, on, keep == "last")) << label;
        // Shuffled on the key into 3 partitions: the same rows, in no particular order.
        auto spread = df.drop_duplicates(on, keep, {.split_out = 3});
        EXPECT_EQ(spread.npartitions(), 3);
        auto ids = dd_ids(spread.compute());
        std::sort(ids.begin(), ids.end());
        EXPECT_EQ(ids, dd_reference(rows, on, keep == "last")) << label << ", split_out 3";
      }
    // Every column: no row is a duplicate (id differs), then without id some are.
    EXPECT_EQ(df.drop_duplicates().compute()->num_rows(), 3000);
    auto no_id = df[std::vector<std::string>{"a", "x", "s"}];
    EXPECT_EQ(no_id.drop_duplicates().compute()->num_rows(),
              static_cast<std::int64_t>(dd_reference(rows, {"a", "x", "s"}, false).size()));
  }
}

TEST(DropDuplicates, AllMissingKeysAreOneAndBadArgumentsAreRefused) {
  std::vector<DdRow> rows;
  for (int r = 0; r < 100; ++r) rows.push_back({std::nullopt, r % 2 ? std::optional<double>() : std::nan(""), "z", r});
  const auto t = dd_table(rows);
  for (int parts : {1, 3, 7}) {
    auto df = dd_cut(t, parts);
    EXPECT_EQ(dd_ids(df.drop_duplicates({"a"}).compute()), std::vector<std::int64_t>{0});
    EXPECT_EQ(dd_ids(df.drop_duplicates({"a", "x"}, "last").compute()), std::vector<std::int64_t>{99});
    EXPECT_EQ(df["x"].unique().compute()->num_rows(), 1);
  }
  auto df = dd_cut(t, 3);
  auto why = message_of([&] { df.drop_duplicates({"nope"}); });
  EXPECT_NE(why.find("'nope'"), std::string::npos) << why;
  EXPECT_NE(why.find("a, x, s, id"), std::string::npos) << why;
  EXPECT_NE(message_of([&] { df.drop_duplicates({"a"}, "both"); }).find("keep"), std::string::npos);
  EXPECT_NE(message_of([&] { df.drop_duplicates({"a", "a"}); }).find("twice"), std::string::npos);
}

TEST(Unique, TheDistinctValuesInOrderOfAppearanceMissingOnce) {
  const auto rows = dd_rows(2000, 9);
  const auto t = dd_table(rows);
  std::vector<std::string> want;
  std::set<std::string> seen;
  for (const auto& r : rows) {
    const std::string v = r.a ? std::to_string(*r.a) : "null";
    if (seen.insert(v).second) want.push_back(v);
  }
  for (int parts : {1, 3, 7}) {
    auto got = dd_cut(t, parts)["a"].unique().compute();
    ASSERT_EQ(got->num_columns(), 1);
    std::vector<std::string> values;
    for (std::int64_t r = 0; r < got->num_rows(); ++r) {
      auto s = got->column(0)->GetScalar(r).ValueOrDie();
      values.push_back(s->is_valid ? s->ToString() : "null");
    }
    EXPECT_EQ(values, want) << parts << " partitions";
  }
}

}  // namespace
}  // namespace tessera::dataframe
