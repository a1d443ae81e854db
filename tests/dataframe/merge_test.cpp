// Shuffles and merges of host frames on the thread pool: where rows land (partition_index.hpp's
// one definition), that none is lost or repeated, and pandas' merge semantics for every `how`
// and every strategy (one partition, broadcast either side, hash-partitioned). The same merges
// are checked against pandas itself by merge_pandas_check.py and on worker processes by
// dataframe_cluster_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "../../src/dataframe/partition_index.hpp"
#include "tessera/core/error.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

namespace pi = detail::partition_index;
using tessera_test::message_of;
using testing::sliced_frame;
using testing::sorted_rows;

// A column of optional int64 values (nullopt: null).
std::shared_ptr<arrow::Array> merge_ints(const std::vector<std::optional<std::int64_t>>& values) {
  arrow::Int64Builder b;
  for (const auto& v : values) (v ? b.Append(*v) : b.AppendNull()).ok();
  return b.Finish().ValueOrDie();
}
std::shared_ptr<arrow::Array> merge_doubles(const std::vector<double>& values) {
  arrow::DoubleBuilder b;
  for (double v : values) b.Append(v).ok();
  return b.Finish().ValueOrDie();
}
std::shared_ptr<arrow::Array> merge_strings(const std::vector<std::string>& values) {
  arrow::StringBuilder b;
  for (const auto& v : values) b.Append(v).ok();
  return b.Finish().ValueOrDie();
}

std::shared_ptr<arrow::Table> merge_table(const std::vector<std::string>& names,
                                          const std::vector<std::shared_ptr<arrow::Array>>& columns) {
  arrow::FieldVector fields;
  for (std::size_t i = 0; i < names.size(); ++i) fields.push_back(arrow::field(names[i], columns[i]->type()));
  return arrow::Table::Make(arrow::schema(fields), columns);
}

// Each partition of `df`, computed on its own.
std::vector<std::shared_ptr<arrow::Table>> merge_partitions(const DataFrame& df) {
  std::vector<Key> keys;
  Graph g = df.to_graph(&keys);
  std::vector<std::shared_ptr<arrow::Table>> out;
  for (const auto& v : local_executor().get(g, keys)) {
    EXPECT_TRUE(v.is_native());
    out.push_back(std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(v.native().object)));
  }
  return out;
}

TEST(PartitionIndex, EqualValuesOfAnyNumericTypeAndMissingValuesHashAlike) {
  EXPECT_EQ(pi::hash_int(1), pi::hash_double(1.0));
  EXPECT_EQ(pi::hash_int(-7), pi::hash_double(-7.0));
  EXPECT_EQ(pi::hash_int(0), pi::hash_double(-0.0));
  EXPECT_EQ(pi::hash_double(std::nan("")), pi::kMissing);
  EXPECT_EQ(pi::hash_double(-std::numeric_limits<double>::quiet_NaN()), pi::kMissing);
  EXPECT_NE(pi::hash_double(0.5), pi::hash_double(1.5));
  EXPECT_NE(pi::hash_double(1e300), pi::hash_double(-1e300));
  EXPECT_NE(pi::hash_int(1), pi::hash_int(2));
  EXPECT_NE(pi::hash_bytes("ab", 2), pi::hash_bytes("ba", 2));
  EXPECT_NE(pi::hash_bytes("", 0), pi::hash_bytes("\0", 1));
  // Spread: 100,000 consecutive integers over 8 partitions, each within 5% of an eighth.
  std::vector<int> counts(8, 0);
  for (std::int64_t v = 0; v < 100000; ++v) ++counts[pi::partition_of(pi::combine(pi::kSeed, pi::hash_int(v)), 8)];
  for (int c : counts) EXPECT_NEAR(c, 12500, 625);
}

TEST(Shuffle, EachRowLandsInThePartitionOfItsKeyNoneIsLostAndKeyTypesAgree) {
  std::mt19937 rng(3);
  std::vector<std::optional<std::int64_t>> keys;
  std::vector<double> values, float_keys;
  for (int r = 0; r < 5000; ++r) {
    const auto k = static_cast<std::int64_t>(rng() % 300);
    keys.push_back(r % 97 == 0 ? std::nullopt : std::optional<std::int64_t>(k));
    float_keys.push_back(keys.back() ? static_cast<double>(*keys.back()) : std::nan(""));
    values.push_back(r);
  }
  auto t = merge_table({"k", "v"}, {merge_ints(keys), merge_doubles(values)});
  auto shuffled = sliced_frame(t, 5).shuffle({"k"}, 7);
  EXPECT_EQ(shuffled.npartitions(), 7);
  auto parts = merge_partitions(shuffled);
  ASSERT_EQ(parts.size(), 7u);
  std::map<std::string, int> home;  // key -> the partition it is in
  std::int64_t rows = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    rows += parts[p]->num_rows();
    for (std::int64_t r = 0; r < parts[p]->num_rows(); ++r) {
      auto s = parts[p]->GetColumnByName("k")->GetScalar(r).ValueOrDie();
      const std::string key = s->is_valid ? s->ToString() : "null";
      auto [it, fresh] = home.emplace(key, static_cast<int>(p));
      EXPECT_EQ(it->second, static_cast<int>(p)) << "key " << key << " is in two partitions";
    }
  }
  EXPECT_EQ(rows, 5000);
  EXPECT_EQ(sorted_rows(shuffled.compute()), sorted_rows(t));
  // The same keys as float64 (NaN where null) land where the int64 ones did.
  auto ft = merge_table({"k", "v"}, {merge_doubles(float_keys), merge_doubles(values)});
  auto fparts = merge_partitions(sliced_frame(ft, 3).shuffle({"k"}, 7));
  for (std::size_t p = 0; p < fparts.size(); ++p) {
    auto part = fparts[p]->CombineChunks().ValueOrDie();
    if (part->num_rows() == 0) continue;
    auto k = std::static_pointer_cast<arrow::DoubleArray>(part->GetColumnByName("k")->chunk(0));
    for (std::int64_t r = 0; r < k->length(); ++r) {
      const std::string key =
          k->IsNull(r) || std::isnan(k->Value(r)) ? "null" : std::to_string(static_cast<std::int64_t>(k->Value(r)));
      ASSERT_TRUE(home.count(key)) << key;
      EXPECT_EQ(home[key], static_cast<int>(p)) << "float key " << key;
    }
  }
  // A frame already shuffled on the same keys into as many partitions is not shuffled again.
  EXPECT_EQ(shuffled.shuffle({"k"}, 7).name(), shuffled.name());
  EXPECT_NE(shuffled.shuffle({"k"}, 3).name(), shuffled.name());
}

TEST(Shuffle, BadArgumentsAreRefusedWhenBuilt) {
  auto df = sliced_frame(merge_table({"k"}, {merge_ints({1, 2})}), 1);
  EXPECT_NE(message_of([&] { df.shuffle({"nope"}); }).find("no column 'nope'"), std::string::npos);
  EXPECT_NE(message_of([&] { df.shuffle({}); }).find("no key columns"), std::string::npos);
  EXPECT_NE(message_of([&] { df.shuffle({"k", "k"}); }).find("twice"), std::string::npos);
  EXPECT_NE(message_of([&] { df.shuffle({"k"}, -1); }).find("npartitions"), std::string::npos);
}

// The reference merge, row by row: pandas' semantics (join_host.hpp) for one key column.
struct Side {
  std::vector<std::optional<std::int64_t>> key;
  std::vector<std::string> value;
};
std::vector<std::string> reference_merge(const Side& l, const Side& r, const std::string& how) {
  auto row = [](const std::optional<std::int64_t>& k, const std::string* lv, const std::string* rv, bool semi) {
    std::string s = "k=" + (k ? std::to_string(*k) : std::string("null")) + " ";
    s += "v_x=" + (lv ? *lv : std::string("null")) + " ";
    if (!semi) s += "v_y=" + (rv ? *rv : std::string("null")) + " ";
    return s;
  };
  const bool semi = how == "leftsemi" || how == "leftanti";
  std::vector<std::string> out;
  std::vector<bool> right_matched(r.key.size(), false);
  for (std::size_t i = 0; i < l.key.size(); ++i) {
    bool matched = false;
    for (std::size_t j = 0; j < r.key.size(); ++j) {
      if (l.key[i] != r.key[j]) continue;  // nullopt == nullopt: missing keys match
      matched = right_matched[j] = true;
      if (!semi) out.push_back(row(l.key[i], &l.value[i], &r.value[j], false));
    }
    if (how == "leftsemi" && matched) out.push_back(row(l.key[i], &l.value[i], nullptr, true));
    if (how == "leftanti" && !matched) out.push_back(row(l.key[i], &l.value[i], nullptr, true));
    if ((how == "left" || how == "outer") && !matched) out.push_back(row(l.key[i], &l.value[i], nullptr, false));
  }
  if (how == "inner" || how == "left" || semi) {
    std::sort(out.begin(), out.end());
    return out;
  }
  for (std::size_t j = 0; j < r.key.size(); ++j)
    if (!right_matched[j]) out.push_back(row(r.key[j], nullptr, &r.value[j], false));
  std::sort(out.begin(), out.end());
  return out;
}

// Semi and anti joins keep the left value column's own name ("v"); the reference writes "v_x".
std::vector<std::string> renamed_semi(std::vector<std::string> rows) {
  for (auto& r : rows) {
    auto at = r.find(" v=");
    if (at != std::string::npos) r.replace(at, 3, " v_x=");
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

Side random_side(std::mt19937& rng, int rows, int keys, const std::string& prefix) {
  Side s;
  for (int r = 0; r < rows; ++r) {
    s.key.push_back(rng() % 11 == 0 ? std::nullopt : std::optional<std::int64_t>(rng() % keys));
    s.value.push_back(prefix + std::to_string(r));
  }
  return s;
}

std::shared_ptr<arrow::Table> side_table(const Side& s) {
  return merge_table({"k", "v"}, {merge_ints(s.key), merge_strings(s.value)});
}

TEST(Merge, EveryHowAndEveryStrategyAgreesWithTheRowByRowReference) {
  std::mt19937 rng(11);
  const Side l = random_side(rng, 400, 60, "l"), r = random_side(rng, 300, 80, "r");
  const auto lt = side_table(l), rt = side_table(r);
  struct Layout {
    int left_parts, right_parts;
    std::optional<bool> broadcast;
  };
  // One partition each (one task); one right partition (broadcast right); one left partition
  // (broadcast left, for inner and right); several each (hash join); broadcast forced.
  const std::vector<Layout> layouts{{1, 1, {}}, {4, 1, {}}, {1, 3, {}}, {4, 3, {}}, {5, 2, true}, {1, 1, false}};
  for (const std::string how : {"inner", "left", "right", "outer", "leftsemi", "leftanti"}) {
    auto expected = reference_merge(l, r, how);
    for (const auto& layout : layouts) {
      MergeOptions o;
      o.how = how;
      o.on = {"k"};
      o.broadcast = layout.broadcast;
      if (layout.broadcast == true && how == "outer") {
        EXPECT_NE(message_of([&] { sliced_frame(lt, layout.left_parts).merge(sliced_frame(rt, layout.right_parts), o); })
                      .find("cannot broadcast"),
                  std::string::npos);
        continue;
      }
      auto merged = merge(sliced_frame(lt, layout.left_parts), sliced_frame(rt, layout.right_parts), o);
      auto got = sorted_rows(merged.compute());
      const bool semi = how == "leftsemi" || how == "leftanti";
      EXPECT_EQ(semi ? renamed_semi(got) : got, expected)
          << how << " with " << layout.left_parts << " and " << layout.right_parts << " partitions";
      EXPECT_EQ(merged.columns(), semi ? std::vector<std::string>({"k", "v"}) : std::vector<std::string>({"k", "v_x", "v_y"}));
    }
  }
}

TEST(Merge, KeysOfDifferentNumericTypesMatchAndSeveralKeysPairUp) {
  // left: a int32 key and b string key; right: x float64 and b string, named differently for a.
  arrow::Int32Builder ab;
  for (int v : {1, 2, 2, 3}) ab.Append(v).ok();
  auto left = merge_table({"a", "b", "v"}, {ab.Finish().ValueOrDie(), merge_strings({"p", "q", "p", "p"}),
                                            merge_doubles({10, 20, 30, 40})});
  auto right = merge_table({"x", "b", "w"}, {merge_doubles({2.0, 2.0, 3.5, 1.0}), merge_strings({"q", "p", "p", "q"}),
                                             merge_doubles({1, 2, 3, 4})});
  MergeOptions o;
  o.left_on = {"a", "b"};
  o.right_on = {"x", "b"};
  o.how = "inner";
  for (int parts : {1, 3}) {
    auto merged = sliced_frame(left, parts).merge(sliced_frame(right, parts), o);
    EXPECT_EQ(merged.columns(), std::vector<std::string>({"a", "b", "v", "x", "w"}));
    EXPECT_EQ(merged.dtype("a"), "double");  // compared as float64, as pandas does
    auto rows = sorted_rows(merged.compute());
    EXPECT_EQ(rows, std::vector<std::string>({"a=2 b=p v=30 x=2 w=2 ", "a=2 b=q v=20 x=2 w=1 "})) << parts;
  }
}

TEST(Merge, SignedZeroKeysAreEqualAndNaNKeysMatchEachOtherAsInPandas) {
  // pandas 3.1: merge({k: [0.0, 1.0, NaN]}, {k: [-0.0, NaN]}, on=k) gives (0.0, 1, 5) and (NaN, 3, 6).
  auto left = merge_table({"k", "x"}, {merge_doubles({0.0, 1.0, std::nan("")}), merge_doubles({1, 2, 3})});
  auto right = merge_table({"k", "y"}, {merge_doubles({-0.0, std::nan("")}), merge_doubles({5, 6})});
  MergeOptions o;
  o.on = {"k"};
  for (int parts : {1, 2}) {
    auto rows = sorted_rows(sliced_frame(left, parts).merge(sliced_frame(right, parts), o).compute());
    EXPECT_EQ(rows, std::vector<std::string>({"k=0 x=1 y=5 ", "k=null x=3 y=6 "})) << parts;
  }
}

TEST(Merge, SharedColumnsGetSuffixesAndNoKeyMeansTheSharedColumns) {
  auto left = merge_table({"k", "v", "only_left"}, {merge_ints({1, 2}), merge_doubles({1, 2}), merge_doubles({5, 6})});
  auto right = merge_table({"k", "v"}, {merge_ints({2, 2}), merge_doubles({7, 8})});
  MergeOptions o;
  o.on = {"k"};
  o.left_suffix = "_left";
  o.right_suffix = "_right";
  auto merged = sliced_frame(left, 1).merge(sliced_frame(right, 1), o);
  EXPECT_EQ(merged.columns(), std::vector<std::string>({"k", "v_left", "only_left", "v_right"}));
  EXPECT_EQ(sorted_rows(merged.compute()),
            std::vector<std::string>({"k=2 v_left=2 only_left=6 v_right=7 ", "k=2 v_left=2 only_left=6 v_right=8 "}));
  // No key given: pandas joins on every column both have (k and v here): no row matches.
  EXPECT_EQ(sliced_frame(left, 1).merge(sliced_frame(right, 1)).compute()->num_rows(), 0);
  EXPECT_EQ(sliced_frame(left, 1).merge(sliced_frame(right, 1)).columns(), std::vector<std::string>({"k", "v", "only_left"}));
}

TEST(Merge, AResultColumnUsedAloneKeepsItsSuffixAndItsValues) {
  // Consumers of some result columns make each side read only what those come from (column
  // projection); the suffixes were fixed from the whole schemas, so v_x stays v_x.
  testing::TempDir dir;
  auto left = merge_table({"k", "v", "a"}, {merge_ints({1, 2, 3}), merge_doubles({10, 20, 30}), merge_doubles({7, 8, 9})});
  auto right = merge_table({"k", "v", "b"}, {merge_ints({3, 1, 4}), merge_doubles({0.5, 1.5, 2.5}), merge_doubles({1, 2, 3})});
  sliced_frame(left, 2).to_parquet(dir.file("left"));
  sliced_frame(right, 2).to_parquet(dir.file("right"));
  auto l = read_parquet(dir.file("left") + "/*.parquet"), r = read_parquet(dir.file("right") + "/*.parquet");
  MergeOptions o;
  o.on = {"k"};
  o.broadcast = false;
  auto m = l.merge(r, o);
  EXPECT_EQ(m.columns(), std::vector<std::string>({"k", "v_x", "a", "v_y", "b"}));
  auto only_left = m[std::vector<std::string>{"v_x"}].compute();
  EXPECT_EQ(sorted_rows(only_left), std::vector<std::string>({"v_x=10 ", "v_x=30 "}));
  auto mixed = m[std::vector<std::string>{"b", "v_x"}].compute();
  EXPECT_EQ(sorted_rows(mixed), std::vector<std::string>({"b=1 v_x=30 ", "b=2 v_x=10 "}));
  auto sums = m.groupby({"k"})["v_y"].sum().compute();
  EXPECT_EQ(sorted_rows(sums), std::vector<std::string>({"k=1 v_y=1.5 ", "k=3 v_y=0.5 "}));
}

TEST(Merge, ChainedMergesOnOneKeyShuffleEachInputOnce) {
  std::mt19937 rng(5);
  const auto a = side_table(random_side(rng, 200, 30, "a")), b = side_table(random_side(rng, 200, 30, "b"));
  auto c = merge_table({"k", "z"}, {merge_ints({1, 2, 3}), merge_doubles({1, 2, 3})});
  MergeOptions o;
  o.on = {"k"};
  o.broadcast = false;
  auto ab = sliced_frame(a, 3).merge(sliced_frame(b, 3), o);
  auto abc = ab.merge(sliced_frame(c, 2), o);
  std::vector<Key> keys;
  Graph g = abc.to_graph(&keys);
  int splits = 0;
  for (const auto& [key, task] : g.tasks()) splits += task.op == "tessera.frame.shuffle_split";
  EXPECT_EQ(splits, 3 + 3 + 2) << "ab is already partitioned on k: only a, b and c are split";
  auto direct = sliced_frame(a, 1).merge(sliced_frame(b, 1), o).merge(sliced_frame(c, 1), o);
  EXPECT_EQ(sorted_rows(abc.compute()), sorted_rows(direct.compute()));
}

// Left to choose, a merge broadcasts a side of one partition or of fewer than
// broadcast_bias * log2(the other side's) partitions (Dask's rule), and hash-joins otherwise.
TEST(Merge, UnsetBroadcastFollowsDasksRuleOnPartitionCounts) {
  std::mt19937 rng(3);
  const auto lt = side_table(random_side(rng, 640, 50, "l")), rt = side_table(random_side(rng, 120, 50, "r"));
  auto strategy = [&](int left_parts, int right_parts, const std::string& how, double bias) {
    MergeOptions o;
    o.how = how;
    o.on = {"k"};
    o.broadcast_bias = bias;
    const auto plan = sliced_frame(lt, left_parts).merge(sliced_frame(rt, right_parts), o).explain();
    const auto at = plan.find("strategy=");
    EXPECT_NE(at, std::string::npos) << plan;
    return plan.substr(at + 9, plan.find_first_of(" \n", at) - at - 9);
  };
  EXPECT_EQ(strategy(64, 2, "inner", 0.5), "broadcast-right");  // 2 < log2(64) * 0.5 = 3
  EXPECT_EQ(strategy(64, 3, "inner", 0.5), "partitioned");      // 3 is not below 3
  EXPECT_EQ(strategy(64, 3, "left", 1.0), "broadcast-right");   // a larger bias
  EXPECT_EQ(strategy(2, 64, "inner", 0.5), "broadcast-left");
  EXPECT_EQ(strategy(2, 64, "left", 0.5), "partitioned");       // left keeps every left row
  EXPECT_EQ(strategy(64, 2, "outer", 0.5), "partitioned");
  EXPECT_EQ(strategy(8, 1, "left", 0.0), "broadcast-right");    // one partition, whatever the bias
  // Every strategy gives the same rows.
  MergeOptions hashed;
  hashed.on = {"k"};
  hashed.broadcast = false;
  MergeOptions chosen;
  chosen.on = {"k"};
  EXPECT_EQ(sorted_rows(sliced_frame(lt, 64).merge(sliced_frame(rt, 2), chosen).compute()),
            sorted_rows(sliced_frame(lt, 64).merge(sliced_frame(rt, 2), hashed).compute()));
  MergeOptions bad;
  bad.on = {"k"};
  bad.broadcast_bias = -1;
  EXPECT_NE(message_of([&] { sliced_frame(lt, 2).merge(sliced_frame(rt, 2), bad); }).find("broadcast_bias"),
            std::string::npos);
}

TEST(Merge, BadArgumentsAreRefusedWhenBuilt) {
  auto l = sliced_frame(merge_table({"k", "s"}, {merge_ints({1}), merge_strings({"a"})}), 1);
  auto r = sliced_frame(merge_table({"k", "t"}, {merge_ints({1}), merge_strings({"a"})}), 1);
  auto msg = [](const std::function<void()>& f) { return message_of(f); };
  MergeOptions o;
  o.on = {"k"};
  o.how = "sideways";
  EXPECT_NE(msg([&] { l.merge(r, o); }).find("unknown how 'sideways'"), std::string::npos);
  o.how = "inner";
  o.on = {"missing"};
  EXPECT_NE(msg([&] { l.merge(r, o); }).find("no column 'missing'"), std::string::npos);
  MergeOptions types;
  types.left_on = {"s"};
  types.right_on = {"k"};
  EXPECT_NE(msg([&] { l.merge(r, types); }).find("cannot compare key 's'"), std::string::npos);
  MergeOptions uneven;
  uneven.left_on = {"k", "s"};
  uneven.right_on = {"k"};
  EXPECT_NE(msg([&] { l.merge(r, uneven); }).find("pair up"), std::string::npos);
  MergeOptions both;
  both.on = {"k"};
  both.left_on = {"k"};
  EXPECT_NE(msg([&] { l.merge(r, both); }).find("not both"), std::string::npos);
  auto unrelated = sliced_frame(merge_table({"z"}, {merge_ints({1})}), 1);
  EXPECT_NE(msg([&] { l.merge(unrelated); }).find("share no column"), std::string::npos);
  MergeOptions clash;  // s_x would be made twice: a left column named so, and s with its suffix
  clash.on = {"k"};
  auto l2 = sliced_frame(merge_table({"k", "s", "s_x"}, {merge_ints({1}), merge_strings({"a"}), merge_strings({"b"})}), 1);
  auto r2 = sliced_frame(merge_table({"k", "s"}, {merge_ints({1}), merge_strings({"a"})}), 1);
  EXPECT_NE(msg([&] { l2.merge(r2, clash); }).find("two result columns would be named 's_x'"), std::string::npos);
}

}  // namespace
}  // namespace tessera::dataframe
