// The dataframe device algorithms (src/dataframe/device_algorithms.cuh) on Thrust's host system,
// against plain C++ references on random frames: filter, element-wise binary operations, and
// groupby (one-shot and as a partial -> combine -> finalize tree over several partitions, with
// nulls, NaN, empty and one-row partitions, several keys and string keys whose dictionaries
// differ between partitions). tests/cuda/frame_ops_test.cpp runs the same frames on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "array/element_semantics.hpp"
#include "dataframe/device_algorithms.hpp"
#include "dataframe/groupby_spec.hpp"
#include "test_device_frames.hpp"

namespace {

using namespace tessera;
using namespace tessera::dataframe;
using namespace tessera_frame_test;

// ---- filter ---------------------------------------------------------------------------------------

TEST(FrameAlgorithms, FilterKeepsTheRowsWhereTheMaskIsTrueAndNotNull) {
  std::mt19937_64 gen(11);
  for (int round = 0; round < 30; ++round) {
    const std::int64_t rows = round < 3 ? round : static_cast<std::int64_t>(gen() % 200);
    const Table t = random_table(rows, gen, "p" + std::to_string(round % 4));
    const LColumn mask = random_bool_column("mask", rows, gen, round % 2 == 0);
    const DeviceFrame frame = to_frame(t, gen);
    const DeviceFrame out = thrust_host::filter(frame, to_column(mask, gen));

    Table expected;
    for (const auto& c : t.columns) expected.columns.push_back(LColumn{c.name, c.dtype, c.is_string, {}, {}});
    for (std::int64_t r = 0; r < rows; ++r) {
      if (!mask.num[r] || *mask.num[r] == 0) continue;
      for (std::size_t k = 0; k < t.columns.size(); ++k) {
        if (t.columns[k].is_string)
          expected.columns[k].str.push_back(t.columns[k].str[r]);
        else
          expected.columns[k].num.push_back(t.columns[k].num[r]);
      }
    }
    expect_frame_holds(out, expected, "filter round " + std::to_string(round));
    // Dictionaries are shared with the input, not copied.
    for (std::size_t k = 0; k < frame.columns.size(); ++k)
      EXPECT_EQ(out.columns[k].dictionary, frame.columns[k].dictionary);
  }
}

TEST(FrameAlgorithms, FilterRejectsANonBoolMask) {
  std::mt19937_64 gen(1);
  const Table t = random_table(5, gen, "a");
  LColumn mask{"m", DType::Int64, false, {1.0, 0.0, 1.0, 0.0, 1.0}, {}};
  EXPECT_THROW(thrust_host::filter(to_frame(t, gen), to_column(mask, gen)), DTypeError);
}

// ---- binary ---------------------------------------------------------------------------------------

const BinaryOp kAllOps[] = {BinaryOp::Add,      BinaryOp::Sub, BinaryOp::Mul, BinaryOp::TrueDiv,
                            BinaryOp::FloorDiv, BinaryOp::Mod, BinaryOp::Eq,  BinaryOp::Ne,
                            BinaryOp::Lt,       BinaryOp::Le,  BinaryOp::Gt,  BinaryOp::Ge};

/** Python's a // b and a % b of integers, by the definition (floor of the exact quotient). */
std::int64_t py_floordiv(std::int64_t a, std::int64_t b) {
  if (b == 0) return 0;  // NumPy: 0 (with a warning)
  std::int64_t q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) --q;
  return q;
}
std::int64_t py_mod(std::int64_t a, std::int64_t b) { return b == 0 ? 0 : a - py_floordiv(a, b) * b; }

/** The expected element of a op b, both already in the computation type `c`. */
double expected_element(BinaryOp op, DType c, double x, double y) {
  if (is_comparison(op)) {
    switch (op) {
      case BinaryOp::Eq: return x == y;
      case BinaryOp::Ne: return x != y;
      case BinaryOp::Lt: return x < y;
      case BinaryOp::Le: return x <= y;
      case BinaryOp::Gt: return x > y;
      default: return x >= y;
    }
  }
  if (op == BinaryOp::TrueDiv) return c == DType::Float32 ? static_cast<float>(x) / static_cast<float>(y) : x / y;
  if (is_integer(c)) {
    const auto a = static_cast<std::int64_t>(x), b = static_cast<std::int64_t>(y);
    switch (op) {
      case BinaryOp::Add: return static_cast<double>(a + b);
      case BinaryOp::Sub: return static_cast<double>(a - b);
      case BinaryOp::Mul: return static_cast<double>(a * b);
      case BinaryOp::FloorDiv: return static_cast<double>(py_floordiv(a, b));
      default: return static_cast<double>(py_mod(a, b));
    }
  }
  // Floats: + - * in the type; // and % are NumPy's npy_divmod (element_semantics.hpp, which the
  // array tests check against NumPy).
  if (c == DType::Float32) {
    const float a = static_cast<float>(x), b = static_cast<float>(y);
    switch (op) {
      case BinaryOp::Add: return a + b;
      case BinaryOp::Sub: return a - b;
      case BinaryOp::Mul: return a * b;
      case BinaryOp::FloorDiv: return tessera::detail::elem::floor_divide_f<float>(a, b);
      default: return tessera::detail::elem::mod_f<float>(a, b);
    }
  }
  switch (op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::FloorDiv: return tessera::detail::elem::floor_divide_f<double>(x, y);
    default: return tessera::detail::elem::mod_f<double>(x, y);
  }
}

DType expected_binary_type(BinaryOp op, DType compute) {
  if (is_comparison(op)) return DType::Bool;
  if (op == BinaryOp::TrueDiv) return is_floating(compute) ? compute : DType::Float64;
  return compute;
}

/** Checks `out` against the element-wise reference of a op b (a scalar side given by its value). */
void expect_binary(const DeviceColumn& out, BinaryOp op, DType compute, const LColumn* a, std::optional<double> sa,
                   const LColumn* b, std::optional<double> sb, std::int64_t rows, const std::string& what) {
  ASSERT_EQ(out.values.dtype(), expected_binary_type(op, compute)) << what;
  ASSERT_EQ(out.values.size(), rows) << what;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::optional<double> x = a ? a->num[r] : sa;
    const std::optional<double> y = b ? b->num[r] : sb;
    const std::string at = what + " row " + std::to_string(r);
    if (!x || !y) {
      EXPECT_TRUE(cell_is_null(out, r)) << at;
      continue;
    }
    ASSERT_FALSE(cell_is_null(out, r)) << at;
    const double e = expected_element(op, compute, cast_to(compute, *x), cast_to(compute, *y));
    const double g = cell(out, r);
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(g)) << at << ": got " << g;
    } else {
      EXPECT_EQ(g, e) << at << " (" << *x << ", " << *y << ")";
    }
  }
}

TEST(FrameAlgorithms, BinaryBetweenColumnsOfEveryTypePairMatchesTheReference) {
  std::mt19937_64 gen(21);
  const DType types[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};
  for (DType ta : types)
    for (DType tb : types)
      for (BinaryOp op : kAllOps) {
        const std::string what = std::string(dtype_name(ta)) + " " + std::to_string(static_cast<int>(op)) + " " +
                                 std::string(dtype_name(tb));
        const std::int64_t rows = 1 + static_cast<std::int64_t>(gen() % 60);
        const LColumn a = random_value_column("a", ta, rows, gen, true);
        const LColumn b = random_value_column("b", tb, rows, gen, gen() % 2 == 0);
        const DType compute = promote_types(ta, tb);
        if (!is_comparison(op) && op != BinaryOp::TrueDiv && compute == DType::Bool) {
          EXPECT_THROW(thrust_host::binary(to_column(a, gen), op, to_column(b, gen)), DTypeError) << what;
          continue;
        }
        const DeviceColumn out = thrust_host::binary(to_column(a, gen), op, to_column(b, gen));
        EXPECT_EQ(out.name, "a");
        expect_binary(out, op, compute, &a, std::nullopt, &b, std::nullopt, rows, what);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(FrameAlgorithms, BinaryWithAScalarTakesTheColumnsKindAsNumPy2Does) {
  std::mt19937_64 gen(22);
  const DType types[] = {DType::Int32, DType::Int64, DType::Float32, DType::Float64};
  for (DType t : types)
    for (BinaryOp op : kAllOps)
      for (int kind = 0; kind < 2; ++kind) {
        const std::int64_t rows = 40;
        const LColumn a = random_value_column("a", t, rows, gen, true);
        // An int scalar keeps an int32 column int32; a float scalar keeps float32 float32.
        const ScalarOperand s = kind == 0 ? ScalarOperand::of_int(-3) : ScalarOperand::of_float(2.5);
        const double sv = kind == 0 ? -3.0 : 2.5;
        const DType scalar_type = kind == 0 ? t : (t == DType::Float32 ? DType::Float32 : DType::Float64);
        const DType compute = promote_types(t, scalar_type);
        const std::string what = std::string(dtype_name(t)) + " op " + std::to_string(static_cast<int>(op)) +
                                 (kind == 0 ? " int scalar" : " float scalar");
        expect_binary(thrust_host::binary(to_column(a, gen), op, s), op, compute, &a, std::nullopt, nullptr, sv, rows,
                      what + " (right)");
        expect_binary(thrust_host::binary(s, op, to_column(a, gen)), op, compute, nullptr, sv, &a, std::nullopt, rows,
                      what + " (left)");
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(FrameAlgorithms, BinaryIntegerEdgeCasesFollowNumPy) {
  const std::int64_t mn = std::numeric_limits<std::int64_t>::min();
  // Values double cannot hold exactly are checked through the int64 block directly.
  auto int64_at = [](const DeviceColumn& c, std::int64_t r) { return c.values.data<std::int64_t>()[r]; };
  Block av = Block::from_values<std::int64_t>({mn, 7, -7, 7, 5}, {5});
  Block bv = Block::from_values<std::int64_t>({-1, -2, 2, 0, 0}, {5});
  DeviceColumn ca{"a", av, {}, nullptr, "int64"}, cb{"b", bv, {}, nullptr, "int64"};
  const DeviceColumn q = thrust_host::binary(ca, BinaryOp::FloorDiv, cb);
  const DeviceColumn m = thrust_host::binary(ca, BinaryOp::Mod, cb);
  EXPECT_EQ(int64_at(q, 0), mn);  // INT64_MIN // -1 wraps, no SIGFPE
  EXPECT_EQ(int64_at(q, 1), -4);
  EXPECT_EQ(int64_at(q, 2), -4);
  EXPECT_EQ(int64_at(q, 3), 0);  // division by zero gives 0
  EXPECT_EQ(int64_at(m, 0), 0);
  EXPECT_EQ(int64_at(m, 1), -1);
  EXPECT_EQ(int64_at(m, 2), 1);
  EXPECT_EQ(int64_at(m, 4), 0);
  const DeviceColumn sum = thrust_host::binary(ca, BinaryOp::Sub, ScalarOperand::of_int(1));
  EXPECT_EQ(int64_at(sum, 0), std::numeric_limits<std::int64_t>::max());  // wraps
  const DeviceColumn div = thrust_host::binary(ca, BinaryOp::TrueDiv, cb);
  EXPECT_EQ(div.values.dtype(), DType::Float64);
  EXPECT_TRUE(std::isinf(div.values.data<double>()[3]));
}

TEST(FrameAlgorithms, BinaryRejectsStringColumnsAndMismatchedLengths) {
  std::mt19937_64 gen(4);
  const Table t = random_table(10, gen, "x");
  const DeviceFrame f = to_frame(t, gen);
  const DeviceColumn* s = f.find("k_str");
  const DeviceColumn* v = f.find("v_f64");
  ASSERT_TRUE(s && v);
  EXPECT_THROW(thrust_host::binary(*s, BinaryOp::Eq, *v), DTypeError);
  const LColumn shorter = random_value_column("w", DType::Float64, 3, gen, false);
  EXPECT_THROW(thrust_host::binary(*v, BinaryOp::Add, to_column(shorter, gen)), ShapeError);
}

// ---- groupby ---------------------------------------------------------------------------------------

TEST(FrameAlgorithms, AggNamesRoundTripAndAnUnknownNameListsTheValidOnes) {
  for (Agg a : {Agg::Sum, Agg::Mean, Agg::Count, Agg::Min, Agg::Max, Agg::Std, Agg::Var, Agg::Size})
    EXPECT_EQ(agg_from_name(agg_name(a)), a);
  try {
    agg_from_name("median");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("median"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("sum, mean, count, min, max, std, var, size"), std::string::npos);
  }
}

/** Runs the tree: a partial per partition, non-final combines of pairs, then the final combine. */
DeviceFrame groupby_tree(const std::vector<DeviceFrame>& parts, GroupbySpec spec) {
  std::vector<DeviceFrame> level;
  spec.finalize = false;
  for (const auto& p : parts) level.push_back(thrust_host::groupby_partial(p, spec));
  while (level.size() > 2) {
    std::vector<DeviceFrame> next;
    for (std::size_t i = 0; i < level.size(); i += 2) {
      std::vector<DeviceFrame> pair(level.begin() + static_cast<std::ptrdiff_t>(i),
                                    level.begin() + static_cast<std::ptrdiff_t>(std::min(i + 2, level.size())));
      next.push_back(thrust_host::groupby_combine(pair, spec));
    }
    level = std::move(next);
  }
  spec.finalize = true;
  return thrust_host::groupby_combine(level, spec);
}

DeviceFrame groupby_one_shot(const DeviceFrame& frame, GroupbySpec spec) {
  spec.finalize = false;
  const DeviceFrame partial = thrust_host::groupby_partial(frame, spec);
  spec.finalize = true;
  return thrust_host::groupby_combine({partial}, spec);
}

TEST(FrameAlgorithms, GroupbyMatchesTheReferenceOneShotAndAsATreeOverPartitions) {
  std::mt19937_64 gen(31);
  const std::vector<std::vector<std::string>> key_sets = {
      {"k_str"}, {"k_int"}, {"k_f"}, {"k_b"}, {"k_str", "k_int"}, {"k_b", "k_f", "k_str"}, {"k_int", "k_b"}};
  for (int round = 0; round < 21; ++round) {
    const auto& by = key_sets[static_cast<std::size_t>(round) % key_sets.size()];
    const GroupbySpec spec = every_agg_spec(by);
    // Partitions of varied sizes: empty ones, one-row ones, and larger ones; many groups when
    // the int key's range is wide.
    const int nparts = 1 + static_cast<int>(gen() % 6);
    std::vector<Table> parts;
    for (int p = 0; p < nparts; ++p) {
      const std::int64_t choice = static_cast<std::int64_t>(gen() % 5);
      const std::int64_t rows = choice == 0 ? 0 : choice == 1 ? 1 : static_cast<std::int64_t>(gen() % 400);
      parts.push_back(random_table(rows, gen, "part" + std::to_string(p), round % 3 == 0 ? 1000 : 6));
    }
    const Table all = concatenate_tables(parts);
    const Table expected = reference_groupby(all, spec);
    const std::string what = "round " + std::to_string(round);

    std::vector<DeviceFrame> frames;
    for (const auto& t : parts) frames.push_back(to_frame(t, gen));
    const DeviceFrame tree = groupby_tree(frames, spec);
    expect_frame_holds(tree, expected, what + " (tree)", 1e-9);
    const DeviceFrame once = groupby_one_shot(to_frame(all, gen), spec);
    expect_frame_holds(once, expected, what + " (one shot)", 1e-9);
    expect_same_frame(tree, once, what + " (tree against one shot)", 1e-11);
    expect_result_types(once, all, spec, what);
    expect_result_types(tree, all, spec, what);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(FrameAlgorithms, GroupbyDropsNullAndNaNKeysAndGroupsSignedZerosTogether) {
  std::mt19937_64 gen(5);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Table t;
  t.columns.push_back(LColumn{"k", DType::Float64, false, {1.0, nan, -0.0, 0.0, std::nullopt, 1.0, nan}, {}});
  t.columns.push_back(LColumn{"v", DType::Int64, false, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0}, {}});
  GroupbySpec spec;
  spec.by = {"k"};
  spec.aggs = {{"v", Agg::Sum, "s"}, {"v", Agg::Size, "n"}};
  const DeviceFrame out = groupby_one_shot(to_frame(t, gen), spec);
  ASSERT_EQ(out.rows, 2);
  EXPECT_EQ(cell(out.columns[0], 0), 0.0);
  EXPECT_EQ(cell(out.columns[0], 1), 1.0);
  EXPECT_EQ(cell(out.columns[1], 0), 7.0);
  EXPECT_EQ(cell(out.columns[1], 1), 7.0);
  EXPECT_EQ(cell(out.columns[2], 0), 2.0);
  EXPECT_EQ(cell(out.columns[2], 1), 2.0);
}

TEST(FrameAlgorithms, GroupbyKeepsSignedZerosInOneGroupUnderASecondKey) {
  // The zeros sort as one key: ordered apart (-0.0 first, as radix sorts do), the rows of group
  // (0, 1) would sit on both sides of the rows of (0, 2) and the group would be split in two.
  std::mt19937_64 gen(10);
  Table t;
  t.columns.push_back(LColumn{"z", DType::Float64, false, {-0.0, 0.0, -0.0, 0.0}, {}});
  t.columns.push_back(LColumn{"s", DType::Int64, false, {1.0, 2.0, 2.0, 1.0}, {}});
  t.columns.push_back(LColumn{"v", DType::Int64, false, {1.0, 2.0, 4.0, 8.0}, {}});
  GroupbySpec spec;
  spec.by = {"z", "s"};
  spec.aggs = {{"v", Agg::Sum, "total"}};
  const DeviceFrame out = groupby_one_shot(to_frame(t, gen), spec);
  ASSERT_EQ(out.rows, 2);
  EXPECT_EQ(cell(out.columns[1], 0), 1.0);
  EXPECT_EQ(cell(out.columns[2], 0), 9.0);
  EXPECT_EQ(cell(out.columns[1], 1), 2.0);
  EXPECT_EQ(cell(out.columns[2], 1), 6.0);
}

TEST(FrameAlgorithms, GroupbySumsWithInfinitiesAreInfiniteNotNaN) {
  // The compensated sum's error term turns NaN once the sum is infinite; the sum must win.
  std::mt19937_64 gen(12);
  const double inf = std::numeric_limits<double>::infinity();
  Table t;
  t.columns.push_back(LColumn{"k", DType::Int64, false, {1.0, 1.0, 2.0, 2.0, 3.0, 3.0}, {}});
  t.columns.push_back(LColumn{"v", DType::Float64, false, {inf, 1.0, -inf, 2.0, inf, -inf}, {}});
  GroupbySpec spec;
  spec.by = {"k"};
  spec.aggs = {{"v", Agg::Sum, "s"}, {"v", Agg::Mean, "m"}};
  const DeviceFrame out = groupby_tree({to_frame(t, gen), to_frame(t, gen)}, spec);
  ASSERT_EQ(out.rows, 3);
  EXPECT_EQ(cell(out.columns[1], 0), inf);
  EXPECT_EQ(cell(out.columns[1], 1), -inf);
  EXPECT_TRUE(std::isnan(cell(out.columns[1], 2)));
  EXPECT_EQ(cell(out.columns[2], 0), inf);
  EXPECT_EQ(cell(out.columns[2], 1), -inf);
}

TEST(FrameAlgorithms, GroupbyOfOnlyNullKeysOrNoRowsGivesAnEmptyResultOfTheRightTypes) {
  std::mt19937_64 gen(6);
  for (int rows : {0, 4}) {
    Table t = random_table(rows, gen, "e");
    for (auto& c : t.columns)
      if (c.name == "k_int")
        for (auto& v : c.num) v = std::nullopt;
    const GroupbySpec spec = every_agg_spec({"k_int"});
    const DeviceFrame out = groupby_one_shot(to_frame(t, gen), spec);
    EXPECT_EQ(out.rows, 0);
    expect_result_types(out, t, spec, "rows " + std::to_string(rows));
    const DeviceFrame tree = groupby_tree({to_frame(t, gen), to_frame(t, gen), to_frame(t, gen)}, spec);
    EXPECT_EQ(tree.rows, 0);
    expect_result_types(tree, t, spec, "tree, rows " + std::to_string(rows));
  }
}

TEST(FrameAlgorithms, GroupbyStringKeysAreMergedAcrossDifferentDictionaries) {
  std::mt19937_64 gen(7);
  // Two partitions whose dictionaries list the same strings in different orders, plus strings
  // only one of them has: the result must be sorted by string, one row per string.
  Table a, b;
  a.columns.push_back(LColumn{"k", DType::Int32, true, {}, {"pear", "apple", "fig", "apple"}});
  a.columns.push_back(LColumn{"v", DType::Float64, false, {1.0, 2.0, 3.0, 4.0}, {}});
  b.columns.push_back(LColumn{"k", DType::Int32, true, {}, {"fig", std::nullopt, "kiwi", "pear"}});
  b.columns.push_back(LColumn{"v", DType::Float64, false, {10.0, 20.0, 30.0, 40.0}, {}});
  GroupbySpec spec;
  spec.by = {"k"};
  spec.aggs = {{"v", Agg::Sum, "total"}};
  const DeviceFrame out = groupby_tree({to_frame(a, gen), to_frame(b, gen)}, spec);
  ASSERT_EQ(out.rows, 4);
  const std::vector<std::string> keys = {"apple", "fig", "kiwi", "pear"};
  const std::vector<double> totals = {6.0, 13.0, 30.0, 41.0};
  ASSERT_TRUE(out.columns[0].dictionary);
  for (std::int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(cell_string(out.columns[0], r), keys[static_cast<std::size_t>(r)]);
    EXPECT_EQ(cell(out.columns[1], r), totals[static_cast<std::size_t>(r)]);
  }
  EXPECT_EQ(out.columns[0].name, "k");
  EXPECT_EQ(out.columns[1].name, "total");
}

TEST(FrameAlgorithms, GroupbyVarianceStaysAccurateForLargeOffsets) {
  // sum(x^2) - n mean^2 keeps about 5 digits here (x^2 ~ 1e12); two passes per partition plus
  // Chan's merge keep the 1e-9 the comparisons with pandas need.
  std::mt19937_64 gen(8);
  std::vector<Table> parts(3);
  std::vector<double> all;
  for (int p = 0; p < 3; ++p) {
    parts[p].columns.push_back(LColumn{"k", DType::Int64, false, {}, {}});
    parts[p].columns.push_back(LColumn{"v", DType::Float64, false, {}, {}});
    for (int i = 0; i < 50; ++i) {
      const double v = 1e6 + static_cast<double>(gen() % 1000) / 100.0;
      parts[p].columns[0].num.push_back(1.0);
      parts[p].columns[1].num.push_back(v);
      all.push_back(v);
    }
  }
  long double mean = 0;
  for (double v : all) mean += v;
  mean /= all.size();
  long double m2 = 0;
  for (double v : all) m2 += (v - mean) * (v - mean);
  const double var = static_cast<double>(m2 / (all.size() - 1));
  GroupbySpec spec;
  spec.by = {"k"};
  spec.aggs = {{"v", Agg::Var, "var"}, {"v", Agg::Std, "std"}};
  std::vector<DeviceFrame> frames;
  for (const auto& t : parts) frames.push_back(to_frame(t, gen));
  const DeviceFrame out = groupby_tree(frames, spec);
  ASSERT_EQ(out.rows, 1);
  EXPECT_NEAR(cell(out.columns[1], 0), var, 1e-9 * var);
  EXPECT_NEAR(cell(out.columns[2], 0), std::sqrt(var), 1e-9 * std::sqrt(var));
}

TEST(FrameAlgorithms, GroupbyNamesWhatIsWrongWithTheSpec) {
  std::mt19937_64 gen(9);
  const DeviceFrame f = to_frame(random_table(8, gen, "s"), gen);
  GroupbySpec spec;
  spec.aggs = {{"v_f64", Agg::Sum, "s"}};
  EXPECT_THROW(thrust_host::groupby_partial(f, spec), Error);  // no keys
  spec.by = {"nope"};
  try {
    thrust_host::groupby_partial(f, spec);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no column 'nope'"), std::string::npos) << e.what();
  }
  spec.by = {"k_int"};
  spec.aggs = {{"k_str", Agg::Sum, "s"}};
  EXPECT_THROW(thrust_host::groupby_partial(f, spec), DTypeError);
  spec.aggs = {{"k_str", Agg::Count, "c"}};
  EXPECT_NO_THROW(thrust_host::groupby_partial(f, spec));
  EXPECT_THROW(thrust_host::groupby_combine({}, spec), Error);
}

}  // namespace
