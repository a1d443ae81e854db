// NumPy-exact element semantics (src/array/element_semantics.hpp): every binary operation on
// edge values of every dtype pair against numpy 2.4.6's results (element_semantics_tables.inc),
// through the host evaluator on both local executors; where numpy raises, Tessera raises too.
// Then NumPy 2's promotion of C++ numbers (NEP 50's weak Python scalars), arange's dtype and
// the building-time errors. tests/cuda/blockwise_test.cpp runs the same tables through the
// device kernels and their host emulation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "array/element_semantics.hpp"
#include "array_test_util.hpp"
#include "element_semantics_cases.hpp"

namespace {

using namespace tessera;
using namespace tessera_test;
namespace ec = tessera_test::elem_cases;
namespace elem = tessera::detail::elem;

constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(ElementSemantics, TablesCoverEveryOpAndDtypePair) {
  const auto& t = ec::tables();
  EXPECT_EQ(t.values.size(), 5u);
  EXPECT_EQ(t.cases.size(), 17u * 25u);
}

TEST(ElementSemantics, EveryBinaryOpOnEdgeValuesMatchesNumpy) {
  for (const auto& c : ec::tables().cases) {
    if (c.numpy_dtype == "none") continue;  // numpy raises for the pair (checked below)
    const auto o = ec::operands(c, false);
    for (const std::int64_t chunk : {std::int64_t{-1}, std::int64_t{5}}) {
      const Array x = from_block(o.a, {chunk}), y = from_block(o.b, {chunk});
      const Array r = ec::apply(c.op, x, y);
      for (const auto& e : executors()) {
        SCOPED_TRACE(std::string(e.name) + ", chunks of " + std::to_string(chunk));
        EXPECT_TRUE(ec::matches_numpy(c, o, r.compute(*e.ex), ec::kNumpyPowUlps));
      }
    }
  }
}

TEST(ElementSemantics, WhereNumpyRaisesSoDoesTessera) {
  int pairs = 0, elements = 0;
  for (const auto& c : ec::tables().cases) {
    const Array x1 = from_block(ec::block_of(c.a, {"1"}), {-1});
    if (c.numpy_dtype == "none") {  // a TypeError for the dtypes: bool - bool
      ++pairs;
      EXPECT_THROW(ec::apply(c.op, x1, from_block(ec::block_of(c.b, {"1"}), {-1})), DTypeError) << c.op;
      continue;
    }
    const auto o = ec::operands(c, true);  // the elements numpy raises for: negative integer powers
    for (std::int64_t i = 0; i < o.a.size(); ++i) {
      ++elements;
      const Array x = from_block(o.a, {1})[{slice(i, i + 1)}], y = from_block(o.b, {1})[{slice(i, i + 1)}];
      const Array r = ec::apply(c.op, x, y);  // an exponent in an array is only known when it runs
      for (const auto& e : executors()) {
        try {
          r.compute(*e.ex);
          ADD_FAILURE() << c.op << " of element " << i << " of " << dtype_name(c.a) << ", " << dtype_name(c.b)
                        << " did not raise";
        } catch (const Error& err) {
          EXPECT_NE(std::string(err.what()).find("Integers to negative integer powers are not allowed"),
                    std::string::npos)
              << err.what();
        }
      }
    }
  }
  EXPECT_EQ(pairs, 1);
  EXPECT_GT(elements, 0);
}

// The shared helpers themselves, at the values that used to trap or disagree.
TEST(ElementSemantics, IntegerDivisionOfInt64MinByMinusOneWraps) {
  EXPECT_EQ(elem::floor_divide(kI64Min, -1), kI64Min);  // numpy: INT64_MIN (and a warning)
  EXPECT_EQ(elem::mod(kI64Min, -1), 0);
  EXPECT_EQ(elem::floor_divide(-7, 2), -4);
  EXPECT_EQ(elem::mod(-7, 2), 1);
  EXPECT_EQ(elem::mod(7, -2), -1);
  EXPECT_EQ(elem::floor_divide(5, 0), 0);
  EXPECT_EQ(elem::mod(5, 0), 0);
  EXPECT_EQ(elem::power(3, 40), static_cast<std::int64_t>(12157665459056928801ULL));  // wraps
  EXPECT_EQ(elem::power(kI64Max, 0), 1);
}

TEST(ElementSemantics, FloatFloorDivisionIsNumpysDivmod) {
  // numpy 2.4.6: 1.0 // 0.1 = 9.0, 1.0 % 0.1 = 0.09999999999999995, -5.0 // inf = -1.0,
  // -5.0 % inf = inf, inf // 2 = nan, 5 // -0.0 = -inf, -0.0 // 3 = -0.0, 0.0 % -3 = -0.0.
  EXPECT_EQ(elem::floor_divide_f(1.0, 0.1), 9.0);
  EXPECT_EQ(elem::mod_f(1.0, 0.1), 0.09999999999999995);
  EXPECT_EQ(elem::floor_divide_f(-5.0, kInf), -1.0);
  EXPECT_EQ(elem::mod_f(-5.0, kInf), kInf);
  EXPECT_TRUE(std::isnan(elem::floor_divide_f(kInf, 2.0)));
  EXPECT_EQ(elem::floor_divide_f(5.0, -0.0), -kInf);
  EXPECT_TRUE(std::signbit(elem::floor_divide_f(-0.0, 3.0)));
  EXPECT_TRUE(std::signbit(elem::mod_f(0.0, -3.0)));
  EXPECT_EQ(elem::floor_divide_f(1.0f, 0.1f), 9.0f);  // numpy float32: 9.0
}

TEST(ElementSemantics, FloatToIntegerConversionIsNumpysOnX86) {
  // numpy 2.4.6 astype on x86-64: NaN and out-of-range values give INT64_MIN / INT32_MIN.
  EXPECT_EQ(elem::to_int64(kNaN), kI64Min);
  EXPECT_EQ(elem::to_int64(1e20), kI64Min);
  EXPECT_EQ(elem::to_int32(3e9), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(elem::to_int32(-2.9), -2);
  const Block b = from_vector<double>({3e9, kNaN, -7.9, 1e20}, {4}, {2}).astype(DType::Int32).compute();
  ASSERT_EQ(b.dtype(), DType::Int32);
  EXPECT_EQ(b.data<std::int32_t>()[0], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(b.data<std::int32_t>()[1], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(b.data<std::int32_t>()[2], -7);
  EXPECT_EQ(b.data<std::int32_t>()[3], std::numeric_limits<std::int32_t>::min());
  EXPECT_TRUE(from_vector<double>({kNaN, 0.0}, {2}, {1}).astype(DType::Bool).compute().data<bool>()[0]);  // NaN is true
}

// ---- C++ numbers as NumPy 2's weak Python scalars ----------------------------------------------

Array i32(std::vector<std::int32_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return from_vector(v, {n}, {2});
}
Array f32(std::vector<float> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return from_vector(v, {n}, {2});
}
Array bools(std::vector<bool> v) {
  Block b(DType::Bool, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) b.data<bool>()[i] = v[i];
  return from_block(b, {2});
}

TEST(ScalarPromotion, AFloatWithAnIntegerArrayGivesFloat64) {
  // numpy 2.4.6: np.array([1, -2, 3], np.int32) + 1e10 -> float64 [1e10+1, 1e10-2, 1e10+3];
  // + 3e9 -> float64 [3000000001, 2999999998, 3000000003]; + nan -> float64 nan.
  const Array x = i32({1, -2, 3});
  EXPECT_TRUE(block_matches((x + 1e10).compute(), ref_of(DType::Float64, {3}, {1e10 + 1, 1e10 - 2, 1e10 + 3})));
  EXPECT_TRUE(block_matches((x + 3e9).compute(), ref_of(DType::Float64, {3}, {3000000001.0, 2999999998.0, 3000000003.0})));
  EXPECT_TRUE(block_matches((x + kNaN).compute(), ref_of(DType::Float64, {3}, {kNaN, kNaN, kNaN})));
  EXPECT_EQ((x + 2.0).dtype(), DType::Float64);
  EXPECT_EQ((x * 0.5).dtype(), DType::Float64);
  EXPECT_EQ((2.0 - x).dtype(), DType::Float64);
  EXPECT_EQ(power(x, 2.0).dtype(), DType::Float64);
  EXPECT_EQ((bools({true}) + 1.5).dtype(), DType::Float64);
  EXPECT_EQ((f32({1.0f}) + 2.5).dtype(), DType::Float32);  // a float32 array stays float32
  EXPECT_EQ((f32({1.0f}) * 3).dtype(), DType::Float32);
}

TEST(ScalarPromotion, AnIntegerKeepsTheIntegerArraysDtypeOrThrows) {
  const Array x = i32({1, -2, 3});
  EXPECT_EQ((x + 1).dtype(), DType::Int32);
  EXPECT_EQ((1 - x).dtype(), DType::Int32);
  EXPECT_EQ(power(x, 2).dtype(), DType::Int32);
  EXPECT_TRUE(block_matches((x * 2147483647).compute(), ref_of(DType::Int32, {3}, {2147483647, 2, 2147483645})));
  // numpy 2.4.6: OverflowError "Python integer 1099511627776 out of bounds for int32".
  EXPECT_THROW(x + (std::int64_t{1} << 40), DTypeError);
  EXPECT_THROW(x - 3000000000LL, DTypeError);
  EXPECT_THROW(from_vector<std::int64_t>({1}, {1}, {1}) + std::numeric_limits<std::uint64_t>::max(), DTypeError);
  // With a bool array an integer gives int64, a bool keeps bool.
  EXPECT_EQ((bools({true, false}) + 1).dtype(), DType::Int64);
  EXPECT_EQ((bools({true, false}) + true).dtype(), DType::Bool);
  EXPECT_EQ((x + true).dtype(), DType::Int32);
  EXPECT_TRUE(block_matches((bools({true, false}) - 1).compute(), ref_of(DType::Int64, {2}, {0, -1})));
}

TEST(ScalarPromotion, ComparisonsWithNumbersAreExact) {
  // numpy 2.4.6: [1, 2, 3] (int32) < 2.5 -> [T, T, F]; < 3e9 -> all True; < 2**40 -> all True;
  // == 2**40 -> all False; int64 [INT64_MAX] < 2**64 - 1 -> True.
  const Array x = i32({1, 2, 3});
  EXPECT_TRUE(block_matches((x < 2.5).compute(), ref_of(DType::Bool, {3}, {1, 1, 0})));
  EXPECT_TRUE(block_matches((x < 3e9).compute(), ref_of(DType::Bool, {3}, {1, 1, 1})));
  EXPECT_TRUE(block_matches((x < (std::int64_t{1} << 40)).compute(), ref_of(DType::Bool, {3}, {1, 1, 1})));
  EXPECT_TRUE(block_matches((x == (std::int64_t{1} << 40)).compute(), ref_of(DType::Bool, {3}, {0, 0, 0})));
  EXPECT_TRUE(block_matches((x > -3000000000LL).compute(), ref_of(DType::Bool, {3}, {1, 1, 1})));
  EXPECT_TRUE(block_matches((2 < x).compute(), ref_of(DType::Bool, {3}, {0, 0, 1})));
  const Array big = from_vector<std::int64_t>({kI64Max, 0}, {2}, {1});
  EXPECT_TRUE(block_matches((big < std::numeric_limits<std::uint64_t>::max()).compute(), ref_of(DType::Bool, {2}, {1, 1})));
  EXPECT_TRUE(block_matches((big >= std::numeric_limits<std::uint64_t>::max()).compute(), ref_of(DType::Bool, {2}, {0, 0})));
  EXPECT_TRUE(block_matches((big == kI64Max).compute(), ref_of(DType::Bool, {2}, {1, 0})));
}

TEST(ScalarPromotion, ZeroDimensionalArraysAreStrong) {
  EXPECT_EQ(scalar(2).dtype(), DType::Int64);
  EXPECT_EQ(scalar(2.5).dtype(), DType::Float64);
  EXPECT_EQ(scalar(true).dtype(), DType::Bool);
  EXPECT_EQ(scalar(7, DType::Int32).dtype(), DType::Int32);
  EXPECT_THROW(scalar(std::int64_t{1} << 40, DType::Int32), DTypeError);
  // numpy 2.4.6: np.array([1], np.int32) + np.asarray(1) is int64; + np.asarray(1.0) float64.
  EXPECT_EQ((i32({1}) + scalar(1)).dtype(), DType::Int64);
  EXPECT_EQ((i32({1}) + scalar(1.0)).dtype(), DType::Float64);
  // Integer constants stay exact (no trip through a double).
  EXPECT_EQ(scalar(kI64Max - 1).compute().data<std::int64_t>()[0], kI64Max - 1);
  EXPECT_EQ((from_vector<std::int64_t>({0}, {1}, {1}) + (kI64Max - 1)).compute().data<std::int64_t>()[0], kI64Max - 1);
}

TEST(ArangeDtype, InferredFromTheArgumentsAsNumpyDoes) {
  // numpy 2.4.6: np.arange(0.0, 1.0, 0.25) -> float64 [0, 0.25, 0.5, 0.75]; np.arange(0, 5, 2) -> int64.
  const Array f = arange(0.0, 1.0, 0.25, 2);
  EXPECT_TRUE(block_matches(f.compute(), ref_of(DType::Float64, {4}, {0, 0.25, 0.5, 0.75})));
  EXPECT_EQ(arange(0, 3, 0.5, 2).dtype(), DType::Float64);
  EXPECT_TRUE(block_matches(arange(0, 5, 2, 2).compute(), ref_of(DType::Int64, {3}, {0, 2, 4})));
  EXPECT_EQ(arange(0, 5, 1, 2, DType::Float32).dtype(), DType::Float32);  // an explicit dtype wins
  EXPECT_EQ(arange(0.0, 5.0, 1.0, 2, DType::Int32).dtype(), DType::Int32);
  EXPECT_EQ(arange(7).dtype(), DType::Int64);
}

TEST(BuildTimeErrors, WhatNumpyRejects) {
  const Array x = i32({1, 2, 3});
  // ValueError "Integers to negative integer powers are not allowed."
  EXPECT_THROW(power(x, -1), DTypeError);
  EXPECT_THROW(power(x, scalar(-2)), DTypeError);
  EXPECT_THROW(power(bools({true}), -1), DTypeError);
  EXPECT_NO_THROW(power(x, -1.0));  // float64
  EXPECT_NO_THROW(power(f32({2.0f}), -1));
  // TypeError: numpy boolean subtract and negative.
  EXPECT_THROW(bools({true}) - bools({false}), DTypeError);
  EXPECT_THROW(bools({true}) - true, DTypeError);
  EXPECT_THROW(-bools({true}), DTypeError);
  EXPECT_NO_THROW(bools({true}) - 1);
}

TEST(RuntimeErrors, NegativeIntegerExponentInAnArrayFailsTheTask) {
  const Array base = i32({2, 3, 4}), exps = i32({1, -1, 2});
  for (const auto& e : executors()) {
    try {
      power(base, exps).compute(*e.ex);
      ADD_FAILURE() << e.name << ": no error";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("Integers to negative integer powers are not allowed"), std::string::npos)
          << err.what();
    }
  }
}

}  // namespace
