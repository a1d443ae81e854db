// The device frames' shuffle split, sort, concatenation and merge (device_relational.cuh) on
// Thrust's host system, against the host's Arrow implementations of the same tasks: the same
// rows in the same partitions, the same sorted order, the same merged rows. Then the DataFrame
// operations on device frames (the stand-in device runtime) against the same on host frames,
// with the task-based and the peer-to-peer shuffle.
#include <gtest/gtest.h>

#include <arrow/api.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "../support/fake_device.hpp"
#include "dataframe/arrow_util.hpp"
#include "dataframe/device_algorithms.hpp"
#include "dataframe/device_convert.hpp"
#include "dataframe/frame_node.hpp"
#include "dataframe/frame_ops.hpp"
#include "dataframe/join_host.hpp"
#include "dataframe/partition_host.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/core/native.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::ScopedFakeDevice;

// Keys with duplicates, nulls, NaN and both zeros; `skew` puts half the rows on one key.
std::shared_ptr<arrow::Table> random_table(std::uint64_t seed, int rows, bool skew = false, const std::string& tag = "") {
  std::mt19937_64 gen(seed);
  auto pick = [&](int n) { return static_cast<int>(gen() % static_cast<std::uint64_t>(n)); };
  arrow::Int64Builder i;
  arrow::Int32Builder j;
  arrow::DoubleBuilder d, v;
  arrow::StringBuilder s;
  arrow::BooleanBuilder b;
  const char* words[] = {"ant", "bee", "cat", "dog", "eel", "fox"};
  const double reals[] = {0.5, 1.0, 2.0, -1.5, 0.0, -0.0, NAN};
  for (int r = 0; r < rows; ++r) {
    const bool hot = skew && pick(2) == 0;
    (void)(pick(9) == 0 ? i.AppendNull() : i.Append(hot ? 3 : pick(8)));
    (void)j.Append(hot ? 3 : pick(5));
    (void)(pick(11) == 0 ? d.AppendNull() : d.Append(reals[pick(7)]));
    (void)(pick(10) == 0 ? s.AppendNull() : s.Append(hot ? "cat" : words[pick(6)]));
    (void)b.Append(pick(2) == 0);
    (void)v.Append(r * 0.25);
  }
  auto schema = arrow::schema({arrow::field("i", arrow::int64()), arrow::field("j", arrow::int32()),
                               arrow::field("d", arrow::float64()), arrow::field("s", arrow::utf8()),
                               arrow::field("b", arrow::boolean()), arrow::field("v" + tag, arrow::float64())});
  return arrow::Table::Make(schema, {i.Finish().ValueOrDie(), j.Finish().ValueOrDie(), d.Finish().ValueOrDie(),
                                     s.Finish().ValueOrDie(), b.Finish().ValueOrDie(), v.Finish().ValueOrDie()});
}

// Cell by cell as text (NaN as "nan", null as "null"): exact comparison, NaN included.
std::string text_of(const std::shared_ptr<arrow::Table>& t) {
  std::string out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) {
    for (int c = 0; c < t->num_columns(); ++c) {
      auto s = t->column(c)->GetScalar(r).ValueOrDie();
      out += t->field(c)->name() + "=" + (s->is_valid ? s->ToString() : "null") + " ";
    }
    out += "\n";
  }
  return out;
}

TEST(DeviceRelational, HashSplitPutsEveryRowInTheHostsPartitionInTheHostsOrder) {
  const auto table = random_table(1, 500);
  const auto frame = detail::frame_from_table(*table);
  for (const auto& on : {std::vector<std::string>{"i"}, {"d"}, {"s"}, {"b"}, {"i", "s"}, {"j", "d"}})
    for (const std::int64_t parts : {1, 3, 7}) {
      std::vector<std::int64_t> offsets, host_offsets;
      const auto split = thrust_host::hash_split(frame, on, parts, offsets);
      const auto host = detail::order_by_partition(table, detail::hash_partitions(*table, on, static_cast<std::uint32_t>(parts)),
                                                   parts, host_offsets);
      EXPECT_EQ(offsets, host_offsets) << on.front() << " x " << parts;
      EXPECT_EQ(text_of(detail::table_from_frame(split)), text_of(host)) << on.front() << " x " << parts;
    }
}

TEST(DeviceRelational, HashSplitOfAnIntAndAFloatKeyOfEqualValueAgree) {
  // A join's sides may hold the key as int32 on one side and float64 on the other.
  auto a = detail::frame_from_table(*arrow::Table::Make(arrow::schema({arrow::field("k", arrow::int32())}),
                                                        {[] {
                                                          arrow::Int32Builder b;
                                                          for (int x = -20; x < 20; ++x) (void)b.Append(x);
                                                          return b.Finish().ValueOrDie();
                                                        }()}));
  auto b = detail::frame_from_table(*arrow::Table::Make(arrow::schema({arrow::field("k", arrow::float64())}),
                                                        {[] {
                                                          arrow::DoubleBuilder b;
                                                          for (int x = -20; x < 20; ++x) (void)b.Append(x);
                                                          return b.Finish().ValueOrDie();
                                                        }()}));
  std::vector<std::int64_t> oa, ob;
  thrust_host::hash_split(a, {"k"}, 5, oa);
  thrust_host::hash_split(b, {"k"}, 5, ob);
  EXPECT_EQ(oa, ob);
}

TEST(DeviceRelational, RangeSplitMatchesTheHostsRanges) {
  const auto table = random_table(2, 400);
  const auto frame = detail::frame_from_table(*table);
  arrow::DoubleBuilder bb;
  for (double x : {1.0, -1.0, 0.5}) (void)bb.Append(x);
  (void)bb.AppendNull();
  auto bounds = arrow::Table::Make(arrow::schema({arrow::field("d", arrow::float64())}), {bb.Finish().ValueOrDie()});
  for (const bool ascending : {true, false})
    for (const bool nulls_first : {false, true}) {
      std::vector<std::int64_t> offsets, host_offsets;
      const auto split = thrust_host::range_split(frame, "d", detail::range_bounds(*bounds, "d", 4), 4, ascending,
                                                  nulls_first, offsets);
      const auto host = detail::order_by_partition(
          table, detail::range_partitions(*table, *bounds, "d", 4, ascending, nulls_first), 4, host_offsets);
      EXPECT_EQ(offsets, host_offsets);
      EXPECT_EQ(text_of(detail::table_from_frame(split)), text_of(host)) << ascending << nulls_first;
    }
  std::vector<std::int64_t> offsets;
  EXPECT_THROW(thrust_host::range_split(frame, "s", {}, 2, true, false, offsets), DTypeError);
  EXPECT_THROW(thrust_host::range_split(frame, "nope", {}, 2, true, false, offsets), Error);
}

// The host's sort task (Arrow's stable sort_indices), on one table.
std::shared_ptr<arrow::Table> host_sort(const std::shared_ptr<arrow::Table>& t, const std::vector<std::string>& by,
                                        const std::vector<bool>& ascending, bool nulls_first) {
  const Value params(detail::sort_params(by, ascending, nulls_first));
  return detail::table_of(run_op(detail::kOpSortValues, OpContext{}, std::vector<Value>{params, detail::table_value(t)}),
                          "sort");
}

TEST(DeviceRelational, SortEqualsTheHostsStableSortInEveryDirectionAndNullPlacement) {
  // "d" holds NaN and nulls: the host orders NaN before null among the missing values, pandas
  // does not tell them apart, so the comparison sorts by columns without both.
  const auto table = random_table(3, 300);
  const auto frame = detail::frame_from_table(*table);
  const std::vector<std::pair<std::vector<std::string>, std::vector<bool>>> cases{
      {{"i"}, {true}},          {{"i"}, {false}},         {{"s", "i"}, {true, false}},
      {{"b", "j", "s"}, {false, true, true}}, {{"j", "v"}, {false, false}}};
  for (const auto& [by, asc] : cases)
    for (const bool nulls_first : {false, true}) {
      std::vector<detail::SortKeySpec> keys;
      for (std::size_t k = 0; k < by.size(); ++k) keys.push_back({by[k], asc[k]});
      const auto sorted = thrust_host::sort(frame, keys, nulls_first);
      EXPECT_EQ(text_of(detail::table_from_frame(sorted)), text_of(host_sort(table, by, asc, nulls_first)))
          << by.front() << " nulls_first=" << nulls_first;
    }
  // NaN and null together: each missing value after (or before) every number, -0.0 beside 0.0.
  const auto by_d = detail::table_from_frame(thrust_host::sort(frame, {{"d", true}}, false));
  bool missing = false;
  double last = -INFINITY;
  for (std::int64_t r = 0; r < by_d->num_rows(); ++r) {
    const double x = testing::number(by_d, "d", r);
    if (std::isnan(x)) {
      missing = true;
      continue;
    }
    EXPECT_FALSE(missing) << "a number after a missing value at row " << r;
    EXPECT_GE(x, last);
    last = x;
  }
}

detail::JoinSpec spec_for(const arrow::Schema& l, const arrow::Schema& r, detail::JoinHow how,
                          std::vector<std::string> left_on, std::vector<std::string> right_on) {
  detail::JoinSpec spec;
  spec.how = how;
  spec.left_on = std::move(left_on);
  spec.right_on = std::move(right_on);
  detail::plan_join(l, r, spec);
  return spec;
}

TEST(DeviceRelational, JoinEqualsTheHostJoinForEveryHowAndKeyKind) {
  const auto left = random_table(4, 120, false, "_l");
  const auto right = random_table(5, 90, true, "_r");
  const auto lf = detail::frame_from_table(*left), rf = detail::frame_from_table(*right);
  using H = detail::JoinHow;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> keys{
      {{"i"}, {"i"}}, {{"s"}, {"s"}}, {{"d"}, {"d"}}, {{"i", "s"}, {"i", "s"}},
      {{"j"}, {"i"}},  // int32 with int64
      {{"i"}, {"d"}},  // int64 with float64
      {{"b"}, {"b"}}};
  for (const H how : {H::Inner, H::Left, H::Right, H::Outer, H::LeftSemi, H::LeftAnti})
    for (const auto& [lon, ron] : keys) {
      const auto spec = spec_for(*left->schema(), *right->schema(), how, lon, ron);
      const auto host = detail::join_tables(left, right, spec);
      const auto dev = detail::table_from_frame(
          thrust_host::join(lf, rf, detail::device_join_plan(*detail::schema_of(lf), *detail::schema_of(rf), spec)));
      const std::string what = std::string(detail::join_how_name(how)) + " on " + lon.front() + "/" + ron.front();
      ASSERT_EQ(dev->num_columns(), host->num_columns()) << what;
      for (int c = 0; c < host->num_columns(); ++c) EXPECT_EQ(dev->field(c)->name(), host->field(c)->name()) << what;
      EXPECT_EQ(testing::sorted_rows(dev), testing::sorted_rows(host)) << what;
    }
}

TEST(DeviceRelational, InnerAndLeftJoinsKeepTheLeftRowsOrderAsPandasDoes) {
  const auto left = random_table(6, 60, false, "_l");
  const auto right = random_table(7, 40, false, "_r");
  const auto lf = detail::frame_from_table(*left), rf = detail::frame_from_table(*right);
  for (const auto how : {detail::JoinHow::Inner, detail::JoinHow::Left}) {
    const auto spec = spec_for(*left->schema(), *right->schema(), how, {"s"}, {"s"});
    const auto dev = detail::table_from_frame(
        thrust_host::join(lf, rf, detail::device_join_plan(*detail::schema_of(lf), *detail::schema_of(rf), spec)));
    double last = -1;
    for (std::int64_t r = 0; r < dev->num_rows(); ++r) {
      const double v = testing::number(dev, "v_l", r);
      EXPECT_GE(v, last) << "row " << r;
      last = v;
    }
  }
}

TEST(DeviceRelational, JoinOfEmptySidesAndAllMissingKeys) {
  auto left = random_table(8, 30, false, "_l");
  auto empty = random_table(9, 0, false, "_r");
  const auto lf = detail::frame_from_table(*left), ef = detail::frame_from_table(*empty);
  for (const auto how : {detail::JoinHow::Inner, detail::JoinHow::Left, detail::JoinHow::Outer, detail::JoinHow::LeftAnti}) {
    const auto spec = spec_for(*left->schema(), *empty->schema(), how, {"i"}, {"i"});
    const auto host = detail::join_tables(left, empty, spec);
    const auto dev = detail::table_from_frame(
        thrust_host::join(lf, ef, detail::device_join_plan(*detail::schema_of(lf), *detail::schema_of(ef), spec)));
    EXPECT_EQ(testing::sorted_rows(dev), testing::sorted_rows(host)) << detail::join_how_name(how);
  }
  // Keys that are all null match each other (pandas' merge): every pair.
  arrow::Int64Builder nulls;
  (void)nulls.AppendNulls(3);
  auto all_null = arrow::Table::Make(arrow::schema({arrow::field("i", arrow::int64())}), {nulls.Finish().ValueOrDie()});
  const auto nf = detail::frame_from_table(*all_null);
  const auto spec = spec_for(*all_null->schema(), *all_null->schema(), detail::JoinHow::Inner, {"i"}, {"i"});
  const auto dev = thrust_host::join(nf, nf, detail::device_join_plan(*detail::schema_of(nf), *detail::schema_of(nf), spec));
  EXPECT_EQ(dev.rows, 9);
}

TEST(DeviceRelational, ConcatMergesStringDictionariesAndMasks) {
  const auto a = random_table(10, 50), b = random_table(11, 70);
  auto fa = detail::frame_from_table(*a);
  auto fb = detail::frame_from_table(*b->Slice(10, 30));  // other dictionaries
  const auto joined = thrust_host::concat({fa, fb});
  auto host = arrow::ConcatenateTables({a, b->Slice(10, 30)}).ValueOrDie();
  EXPECT_EQ(text_of(detail::table_from_frame(joined)), text_of(host));
  // The codec's cut and join (a shuffle's receiving worker): views cut, joined compact again.
  const Value v = detail::frame_value(joined);
  const auto& codec = native_codec(kDeviceFrameType);
  ASSERT_TRUE(codec.rows && codec.concat && codec.split);
  EXPECT_EQ(codec.rows(v.native()), 80);
  const auto pieces = codec.split(v.native(), {20, 0, 60});
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(codec.rows(pieces[2]), 60);
  EXPECT_LT(pieces[2].nbytes, v.native().nbytes);
  const Native again = codec.concat({pieces[0], pieces[1], pieces[2]});
  EXPECT_EQ(text_of(detail::table_from_frame(*static_cast<const DeviceFrame*>(again.object.get()))), text_of(host));
  EXPECT_THROW(codec.split(v.native(), {20, 70}), Error);
}

// ---- the DataFrame operations on device frames ----

DataFrame frame_of(std::uint64_t seed, int rows, int parts, bool skew, const std::string& tag) {
  return testing::sliced_frame(random_table(seed, rows, skew, tag), parts);
}

// Sets TESSERA_SHUFFLE_METHOD for one scope.
class ScopedShuffleMethod {
 public:
  explicit ScopedShuffleMethod(const char* m) { setenv("TESSERA_SHUFFLE_METHOD", m, 1); }
  ~ScopedShuffleMethod() { unsetenv("TESSERA_SHUFFLE_METHOD"); }
};

TEST(DeviceRelational, MergeShuffleAndSortOfDeviceFramesEqualTheHostsOnBothShuffles) {
  ScopedFakeDevice gpu;
  for (const char* method : {"tasks", "p2p"}) {
    ScopedShuffleMethod scoped(method);
    for (const int parts : {1, 3, 7}) {
      const auto left = frame_of(12, 240, parts, false, "_l"), right = frame_of(13, 150, 3, true, "_r");
      const std::string what = std::string(method) + ", " + std::to_string(parts) + " partitions";
      for (const char* how : {"inner", "left", "right", "outer", "leftsemi", "leftanti"}) {
        MergeOptions o;
        o.on = {"i", "s"};
        o.how = how;
        o.broadcast = false;  // through the shuffle
        const auto host = left.merge(right, o).compute();
        const auto dev = left.to_device().merge(right.to_device(), o);
        EXPECT_TRUE(dev.on_device());
        EXPECT_EQ(testing::sorted_rows(dev.compute()), testing::sorted_rows(host)) << how << ", " << what;
      }
      MergeOptions broadcast;
      broadcast.on = {"j"};
      broadcast.broadcast = true;
      EXPECT_EQ(testing::sorted_rows(left.to_device().merge(right.to_device(), broadcast).compute()),
                testing::sorted_rows(left.merge(right, broadcast).compute()))
          << what;

      const auto shuffled = left.to_device().shuffle({"s"}, 4);
      EXPECT_EQ(shuffled.npartitions(), 4);
      EXPECT_EQ(testing::sorted_rows(shuffled.compute()), testing::sorted_rows(left.shuffle({"s"}, 4).compute())) << what;

      for (const char* na : {"last", "first"}) {
        const auto host_sorted = left.sort_values({"i", "v_l"}, {false, true}, na).compute();
        const auto dev_sorted = left.to_device().sort_values({"i", "v_l"}, {false, true}, na).compute();
        EXPECT_EQ(text_of(dev_sorted), text_of(host_sorted)) << what << ", na_position=" << na;
      }
      // A string sort column: one task over every partition.
      EXPECT_EQ(text_of(left.to_device().sort_values({"s", "v_l"}).compute()),
                text_of(left.sort_values({"s", "v_l"}).compute()))
          << what;
    }
  }
}

TEST(DeviceRelational, DeviceAndHostFramesDoNotMergeAndBadKeysAreNamed) {
  ScopedFakeDevice gpu;
  const auto left = frame_of(14, 30, 2, false, "_l"), right = frame_of(15, 30, 2, false, "_r");
  MergeOptions o;
  o.on = {"i"};
  EXPECT_THROW(left.to_device().merge(right, o), Error);
  MergeOptions bad;
  bad.on = {"nope"};
  EXPECT_THROW(left.to_device().merge(right.to_device(), bad), Error);
  MergeOptions mixed;
  mixed.left_on = {"s"};
  mixed.right_on = {"i"};
  EXPECT_THROW(left.to_device().merge(right.to_device(), mixed), Error);
  EXPECT_THROW(left.to_device().shuffle({"nope"}), Error);
  EXPECT_THROW(left.to_device().sort_values({"nope"}), Error);
}

}  // namespace
}  // namespace tessera::dataframe
