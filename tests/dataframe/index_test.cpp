// set_index, divisions, loc and merges on the index, checked row by row against references
// computed here: for 1, 3 and 7 partitions (some of them empty), with duplicate keys, a key holding
// half the rows, missing keys and a frame whose keys are all missing.
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
#include "tessera/graph/graph.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::number;
using testing::sorted_rows;

struct IdxRow {
  std::optional<std::int64_t> k;  // nullopt: null
  std::optional<double> x;        // nullopt: null; may be NaN
  std::string s;
};

std::shared_ptr<arrow::Table> idx_table(const std::vector<IdxRow>& rows) {
  arrow::Int64Builder k, id;
  arrow::DoubleBuilder x;
  arrow::StringBuilder s;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    (rows[r].k ? k.Append(*rows[r].k) : k.AppendNull()).ok();
    (rows[r].x ? x.Append(*rows[r].x) : x.AppendNull()).ok();
    s.Append(rows[r].s).ok();
    id.Append(static_cast<std::int64_t>(r)).ok();
  }
  return arrow::Table::Make(arrow::schema({arrow::field("k", arrow::int64()), arrow::field("x", arrow::float64()),
                                           arrow::field("s", arrow::utf8()), arrow::field("id", arrow::int64())}),
                            {k.Finish().ValueOrDie(), x.Finish().ValueOrDie(), s.Finish().ValueOrDie(),
                             id.Finish().ValueOrDie()});
}

// `parts` partitions of `t` in order; with three or more, partitions 1 and the last are empty.
DataFrame idx_cut(const std::shared_ptr<arrow::Table>& t, int parts) {
  std::vector<int> holders;
  for (int p = 0; p < parts; ++p)
    if (parts < 3 || (p != 1 && p != parts - 1)) holders.push_back(p);
  std::vector<std::shared_ptr<arrow::Table>> pieces;
  std::int64_t at = 0;
  std::size_t h = 0;
  for (int p = 0; p < parts; ++p) {
    if (h < holders.size() && holders[h] == p) {
      const std::int64_t end = t->num_rows() * static_cast<std::int64_t>(h + 1) / static_cast<std::int64_t>(holders.size());
      pieces.push_back(t->Slice(at, end - at));
      at = end;
      ++h;
    } else {
      pieces.push_back(t->Slice(0, 0));
    }
  }
  return from_tables(pieces);
}

// Keys with duplicates, a key holding half the rows (skew), and missing ones.
std::vector<IdxRow> idx_rows(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<IdxRow> rows;
  for (int r = 0; r < n; ++r) {
    IdxRow row;
    const int pick = static_cast<int>(rng() % 20);
    if (pick == 0) row.k = std::nullopt;
    else if (pick < 10) row.k = 500;  // about half the rows
    else row.k = static_cast<std::int64_t>(rng() % 1000) - 200;
    const int xp = static_cast<int>(rng() % 25);
    row.x = xp == 0 ? std::nullopt : xp == 1 ? std::optional<double>(std::nan("")) : std::optional<double>((rng() % 800) / 8.0);
    row.s = "s" + std::to_string(rng() % 50);
    rows.push_back(row);
  }
  return rows;
}

double idx_num(const Literal& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nan("");
}

std::vector<std::shared_ptr<arrow::Table>> idx_partitions(const DataFrame& df) {
  std::vector<Key> keys;
  Graph g = df.to_graph(&keys);
  std::vector<std::shared_ptr<arrow::Table>> out;
  for (const auto& v : local_executor().get(g, keys))
    out.push_back(std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(v.native().object)));
  return out;
}

std::size_t idx_count_ops(const Graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const auto& [k, t] : g.tasks()) n += t.op == op;
  return n;
}

// Every row once; each partition sorted by `column`, within its divisions, missing values only at
// the end of the last partition.
void idx_check_indexed(const DataFrame& indexed, const std::shared_ptr<arrow::Table>& input, const std::string& column,
                       const std::string& label) {
  ASSERT_TRUE(indexed.known_divisions()) << label;
  EXPECT_EQ(indexed.index_column(), column) << label;
  const auto d = indexed.divisions();
  ASSERT_EQ(static_cast<std::int64_t>(d.size()), indexed.npartitions() + 1) << label;
  const auto parts = idx_partitions(indexed);
  ASSERT_EQ(static_cast<std::int64_t>(parts.size()), indexed.npartitions()) << label;
  std::vector<std::string> all;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    bool missing_seen = false;
    double previous = -INFINITY;
    for (std::int64_t r = 0; r < parts[i]->num_rows(); ++r) {
      const double v = number(parts[i], column, r);
      if (std::isnan(v)) {
        EXPECT_TRUE(last) << label << ": a missing key in partition " << i;
        missing_seen = true;
        continue;
      }
      EXPECT_FALSE(missing_seen) << label << ": a key after a missing one in partition " << i;
      EXPECT_GE(v, previous) << label << ": partition " << i << " is not sorted";
      previous = v;
      EXPECT_GE(v, idx_num(d[i])) << label << " partition " << i;
      if (last) {
        EXPECT_LE(v, idx_num(d[i + 1])) << label << " partition " << i;
      } else {
        EXPECT_LT(v, idx_num(d[i + 1])) << label << " partition " << i;
      }
    }
    auto rows = sorted_rows(parts[i]);
    all.insert(all.end(), rows.begin(), rows.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, sorted_rows(input)) << label;
}

// The rows of `t` whose k is in [lo, hi] (missing bounds open), as sorted text.
std::vector<std::string> idx_reference_range(const std::shared_ptr<arrow::Table>& t, std::optional<double> lo,
                                             std::optional<double> hi) {
  std::vector<std::int64_t> keep;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) {
    const double v = number(t, "k", r);
    if (std::isnan(v)) continue;
    if ((!lo || v >= *lo) && (!hi || v <= *hi)) keep.push_back(r);
  }
  std::vector<std::shared_ptr<arrow::Table>> rows;
  for (auto r : keep) rows.push_back(t->Slice(r, 1));
  if (rows.empty()) return {};
  return sorted_rows(arrow::ConcatenateTables(rows).ValueOrDie());
}

TEST(SetIndex, PartitionsAreSortedRangesOfTheDivisionsForEveryPartitioning) {
  const auto t = idx_table(idx_rows(4000, 7));
  for (int parts : {1, 3, 7}) {
    const auto df = idx_cut(t, parts);
    const auto indexed = df.set_index("k");
    idx_check_indexed(indexed, t, "k", "int key, " + std::to_string(parts) + " partitions");
    // The key holding half the rows is in one partition, so there are fewer bounds than asked.
    EXPECT_LE(indexed.npartitions(), parts);
    if (parts == 7) {
      EXPECT_GE(indexed.npartitions(), 3);
    }
    // A float key with NaN and nulls (both missing, last), and more partitions than the input.
    idx_check_indexed(df.set_index("x", {.npartitions = 5}), t, "x", "float key, " + std::to_string(parts));
  }
  // The concatenated partitions are the frame sorted by the key, missing keys last.
  auto whole = idx_cut(t, 7).set_index("k").compute();
  for (std::int64_t r = 1; r < whole->num_rows(); ++r) {
    const double a = number(whole, "k", r - 1), b = number(whole, "k", r);
    if (!std::isnan(b)) {
      ASSERT_LE(a, b) << r;
    }
    if (std::isnan(a)) {
      ASSERT_TRUE(std::isnan(b)) << r;
    }
  }
}

TEST(SetIndex, AllMissingKeysAndNoRowsMakeOnePartition) {
  std::vector<IdxRow> rows(300, IdxRow{std::nullopt, 1.0, "a"});
  const auto t = idx_table(rows);
  for (int parts : {1, 3, 7}) {
    auto indexed = idx_cut(t, parts).set_index("k");
    EXPECT_EQ(indexed.npartitions(), 1);
    ASSERT_EQ(indexed.divisions().size(), 2u);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(indexed.divisions()[0]));
    EXPECT_EQ(indexed.compute()->num_rows(), 300);
    EXPECT_EQ(indexed.loc(Literal{std::int64_t{3}}).compute()->num_rows(), 0);
    EXPECT_EQ(indexed.loc(Literal{}, Literal{}).compute()->num_rows(), 300);
  }
  auto empty = idx_cut(idx_table({}), 3).set_index("k");
  EXPECT_EQ(empty.npartitions(), 1);
  EXPECT_EQ(empty.compute()->num_rows(), 0);
}

TEST(SetIndex, GivenDivisionsPartitionAsToldAndAValueOutsideThemFails) {
  const auto t = idx_table(idx_rows(2000, 3));
  auto nonnull = idx_cut(t, 3);
  nonnull = nonnull[nonnull["k"].notnull()];
  const std::vector<Literal> d{std::int64_t{-200}, std::int64_t{0}, std::int64_t{500}, std::int64_t{800}};
  auto indexed = nonnull.set_index("k", {.divisions = d});
  EXPECT_EQ(indexed.npartitions(), 3);
  EXPECT_EQ(indexed.divisions().size(), 4u);
  idx_check_indexed(indexed, nonnull.compute(), "k", "given divisions");
  // 500 (half the rows) starts the last partition.
  auto parts = idx_partitions(indexed);
  EXPECT_GT(parts[2]->num_rows(), 900);
  auto narrow = nonnull.set_index("k", {.divisions = {std::int64_t{0}, std::int64_t{100}}});
  EXPECT_NE(message_of([&] { narrow.compute(); }).find("column 'k' holds"), std::string::npos);
  EXPECT_NE(message_of([&] { nonnull.set_index("k", {.divisions = {std::int64_t{5}, std::int64_t{1}}}); }).find("increase"),
            std::string::npos);
  EXPECT_NE(message_of([&] { nonnull.set_index("k", {.divisions = {std::string("a"), std::string("b")}}); })
                .find("index column 'k'"),
            std::string::npos);
}

TEST(SetIndex, SortedInputIsNotShuffledAndAnUnsortedOneIsRefused) {
  // Sorted across partitions, with empty ones and the missing keys in the last partition with rows.
  std::vector<IdxRow> rows;
  for (int r = 0; r < 900; ++r) rows.push_back({r, r * 0.5, "v"});
  for (int r = 0; r < 20; ++r) rows.push_back({std::nullopt, 1.0, "null"});
  const auto t = idx_table(rows);
  for (int parts : {1, 3, 7}) {
    const auto df = idx_cut(t, parts);
    auto indexed = df.set_index("k", {.sorted = true});
    idx_check_indexed(indexed, t, "k", "sorted, " + std::to_string(parts));
    std::vector<Key> keys;
    Graph g = indexed.to_graph(&keys);
    EXPECT_EQ(idx_count_ops(g, "tessera.frame.division_split"), 0u);
    EXPECT_EQ(idx_count_ops(g, "tessera.frame.quantile_partial"), 0u);
    EXPECT_EQ(std::get<std::int64_t>(indexed.divisions().front()), 0);
    EXPECT_EQ(std::get<std::int64_t>(indexed.divisions().back()), 899);
  }
  // Reversed partitions overlap: refused when set_index is called, naming the column.
  auto reversed = from_tables({t->Slice(450, 450), t->Slice(0, 450)});
  auto why = message_of([&] { reversed.set_index("k", {.sorted = true}); });
  EXPECT_NE(why.find("column 'k' is not sorted"), std::string::npos) << why;
  // Missing keys before the last partition are refused too.
  auto early_null = from_tables({t->Slice(900, 20), t->Slice(0, 900)});
  EXPECT_NE(message_of([&] { early_null.set_index("k", {.sorted = true}); }).find("missing values"), std::string::npos);
}

TEST(SetIndex, StringIndexNeedsDivisionsOrSortedAndBadInputIsRefusedAtOnce) {
  std::vector<IdxRow> rows;
  for (int r = 0; r < 300; ++r) rows.push_back({r, 1.0, std::string(1, static_cast<char>('a' + r / 12))});
  const auto t = idx_table(rows);
  const auto df = idx_cut(t, 3);
  auto by_s = df.set_index("s", {.sorted = true});
  EXPECT_EQ(std::get<std::string>(by_s.divisions().front()), "a");
  EXPECT_EQ(std::get<std::string>(by_s.divisions().back()), "y");
  EXPECT_EQ(sorted_rows(by_s.loc(Literal{std::string("c")}).compute()),
            sorted_rows(df[df["s"] == Literal{std::string("c")}].compute()));
  auto given = df.set_index("s", {.divisions = {std::string("a"), std::string("h"), std::string("z")}});
  EXPECT_EQ(given.npartitions(), 2);
  EXPECT_EQ(sorted_rows(given.compute()), sorted_rows(t));
  EXPECT_EQ(given.loc(Literal{std::string("b")}, Literal{std::string("d")}).compute()->num_rows(), 36);
  EXPECT_NE(message_of([&] { df.set_index("s"); }).find("give divisions"), std::string::npos);
  auto missing = message_of([&] { df.set_index("nope"); });
  EXPECT_NE(missing.find("'nope'"), std::string::npos);
  EXPECT_NE(missing.find("k, x, s, id"), std::string::npos);
  // loc without an index, or with a key of another type, names what is wrong.
  EXPECT_NE(message_of([&] { df.loc(Literal{std::int64_t{1}}); }).find("no index"), std::string::npos);
  auto by_k = df.set_index("k");
  auto why = message_of([&] { by_k.loc(Literal{std::string("a")}); });
  EXPECT_NE(why.find("index 'k'"), std::string::npos) << why;
  EXPECT_NE(message_of([&] { by_k.loc(Literal{}); }).find("null key"), std::string::npos);
}

TEST(Loc, KeysAndInclusiveRangesEqualAFilterForEveryPartitioning) {
  const auto t = idx_table(idx_rows(3000, 11));
  for (int parts : {1, 3, 7}) {
    const auto indexed = idx_cut(t, parts).set_index("k");
    const std::string label = std::to_string(parts) + " partitions";
    for (std::int64_t key : {-200, 0, 500, 799, 5000}) {
      EXPECT_EQ(sorted_rows(indexed.loc(Literal{key}).compute()), idx_reference_range(t, key, key))
          << label << " key " << key;
    }
    const std::vector<std::pair<std::optional<double>, std::optional<double>>> ranges{
        {-50, 120}, {500, 500}, {100, 700}, {std::nullopt, 0}, {600, std::nullopt}, {900, 100}, {-1000, 5000}};
    for (const auto& [lo, hi] : ranges) {
      const Literal a = lo ? Literal{static_cast<std::int64_t>(*lo)} : Literal{};
      const Literal b = hi ? Literal{static_cast<std::int64_t>(*hi)} : Literal{};
      auto got = indexed.loc(a, b);
      EXPECT_EQ(sorted_rows(got.compute()), idx_reference_range(t, lo, hi)) << label;
      EXPECT_TRUE(got.known_divisions());
      EXPECT_EQ(got.index_column(), "k");
    }
    // A float bound on an integer index compares as a number.
    EXPECT_EQ(sorted_rows(indexed.loc(Literal{10.5}, Literal{99.5}).compute()), idx_reference_range(t, 10.5, 99.5));
  }
}

TEST(Loc, ReadsOnlyThePartitionsWhoseDivisionsHoldTheKeys) {
  std::vector<IdxRow> rows;
  for (int r = 0; r < 7000; ++r) rows.push_back({r % 700, 1.0, "v"});
  const auto t = idx_table(rows);
  // Persisted: each partition is one task of its own, so the graph of a loc shows what is read.
  auto indexed = idx_cut(t, 7).set_index("k").persist();
  ASSERT_EQ(indexed.npartitions(), 7);
  ASSERT_TRUE(indexed.known_divisions());
  auto tasks_of = [](const DataFrame& df) {
    std::vector<Key> keys;
    Graph g = df.to_graph(&keys);
    return cull(g, keys);
  };
  auto one = indexed.loc(Literal{std::int64_t{350}});
  EXPECT_EQ(one.npartitions(), 1);
  const Graph g1 = tasks_of(one);
  EXPECT_EQ(idx_count_ops(g1, "tessera.identity"), 1u);  // one partition of seven read
  EXPECT_EQ(one.len(), 10);
  auto some = indexed.loc(Literal{std::int64_t{100}}, Literal{std::int64_t{250}});
  const Graph g2 = tasks_of(some);
  EXPECT_GE(idx_count_ops(g2, "tessera.identity"), 2u);
  EXPECT_LE(idx_count_ops(g2, "tessera.identity"), 3u);
  EXPECT_EQ(some.len(), 151 * 10);
  EXPECT_EQ(idx_count_ops(tasks_of(indexed), "tessera.identity"), 7u);
  // The index and its divisions survive a filter and a projection that keeps the column, follow a
  // rename, and are dropped by a projection without it.
  auto filtered = indexed[indexed["x"] > 0.0][std::vector<std::string>{"k", "s"}];
  EXPECT_EQ(filtered.index_column(), "k");
  EXPECT_TRUE(filtered.known_divisions());
  EXPECT_EQ(filtered.loc(Literal{std::int64_t{3}}).len(), 10);
  EXPECT_EQ(indexed.rename({{"k", "key"}}).index_column(), "key");
  EXPECT_EQ(indexed[std::vector<std::string>{"x"}].index_column(), "");
  EXPECT_FALSE(indexed[std::vector<std::string>{"x"}].known_divisions());
}

TEST(MergeOnIndex, EqualDivisionsJoinPartitionWiseAndOtherDivisionsAreAligned) {
  const auto lt = idx_table(idx_rows(2500, 21));
  auto rrows = idx_rows(1500, 22);
  for (auto& r : rrows)
    if (r.k) r.k = (*r.k % 400 + 400) % 400;
  const auto rt = idx_table(rrows);
  for (int parts : {1, 3, 7}) {
    const auto left = idx_cut(lt, parts), right = idx_cut(rt, parts)[std::vector<std::string>{"k", "x"}];
    const auto li = left.set_index("k");
    // The same divisions on both sides: the right side partitioned as the left.
    const auto same = right.set_index("k", {.divisions = li.divisions()});
    const auto own = right.set_index("k");
    for (const std::string how : {"inner", "left", "right", "outer"}) {
      const std::string label = how + ", " + std::to_string(parts) + " partitions";
      auto want = sorted_rows(left.merge(right, {.how = how, .on = {"k"}, .broadcast = false}).compute());
      auto wise = li.merge(same, {.how = how, .left_index = true, .right_index = true});
      std::vector<Key> keys;
      Graph g = wise.to_graph(&keys);
      EXPECT_EQ(idx_count_ops(g, "tessera.frame.shuffle_split"), 0u) << label;
      EXPECT_EQ(sorted_rows(wise.compute()), want) << label;
      EXPECT_EQ(wise.index_column(), "k") << label;
      EXPECT_TRUE(wise.known_divisions()) << label;
      // Different divisions: both sides repartitioned to their union, still no hash shuffle.
      auto aligned = li.merge(own, {.how = how, .left_index = true, .right_index = true});
      Graph ga = aligned.to_graph(&keys);
      EXPECT_EQ(idx_count_ops(ga, "tessera.frame.shuffle_split"), 0u) << label;
      EXPECT_EQ(sorted_rows(aligned.compute()), want) << label;
      // The index on one side only, a column on the other: a hash join, the same rows.
      auto mixed = li.merge(right, {.how = how, .right_on = {"k"}, .left_index = true});
      EXPECT_EQ(sorted_rows(mixed.compute()), want) << label;
    }
  }
  auto plain = idx_cut(lt, 3);
  auto why = message_of([&] { plain.merge(plain, {.left_index = true, .right_index = true}); });
  EXPECT_NE(why.find("no index"), std::string::npos) << why;
}

}  // namespace
}  // namespace tessera::dataframe
