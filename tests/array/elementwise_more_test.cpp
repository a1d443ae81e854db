// The element-wise functions beyond arithmetic (elementwise.hpp, "more of NumPy's element-wise
// functions"): result dtypes, values against looped references over several chunkings and both
// local executors, and NaN / inf / signed-zero edge cases as NumPy defines them.
#include <cmath>
#include <limits>

#include "array_test_util.hpp"
#include "element_semantics_cases.hpp"
#include "tessera/array/creation.hpp"
#include "tessera/array/elementwise.hpp"

using namespace tessera_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType F64 = DType::Float64, F32 = DType::Float32, I64 = DType::Int64, I32 = DType::Int32,
                B = DType::Bool;

using Fn1 = std::function<double(double)>;
using Fn2 = std::function<double(double, double)>;

Ref unary_ref(const Ref& a, DType out, const Fn1& f) {
  return make_ref(out, a.shape, [&](auto& i) {
    const double r = f(a.at(i));
    return out == F32 ? static_cast<double>(static_cast<float>(r)) : r;
  });
}

// Reference of a binary function with NumPy broadcasting.
Ref binary_ref(const Ref& a, const Ref& b, DType out, const Fn2& f) {
  Shape s(std::max(a.shape.size(), b.shape.size()), 1);
  for (const Ref* r : {&a, &b})
    for (std::size_t k = 0; k < r->shape.size(); ++k)
      if (r->shape[k] != 1) s[s.size() - r->shape.size() + k] = r->shape[k];
  return make_ref(out, s, [&](auto& i) {
    const double r = f(bcast_at(a, i), bcast_at(b, i));
    return out == F32 ? static_cast<double>(static_cast<float>(r)) : r;
  });
}

// Special values as a column and as a row, so that a binary function sees every pair.
const std::vector<double> kSpecial = {0.0, -0.0, 1.0, -1.0, 2.5, -7.25, 1e300, -1e-300, kInf, -kInf, kNaN, 0.5};
Ref special_column(DType t = F64) { return ref_of(t, {12, 1}, kSpecial); }
Ref special_row(DType t = F64) { return ref_of(t, {1, 12}, kSpecial); }

// SLEEF's functions are within 1 ULP, as glibc's: a couple of ULPs between the two.
constexpr Tol kUlp{6e-16, 1e-300};
constexpr Tol kFloat{3e-7, 1e-30};

// Inputs of a unary function mapped into its domain (x in [-1, 1], x >= 1, ...).
Ref mapped(DType t, Shape s, const Fn1& f, int salt = 0) {
  Ref r = sample(t, std::move(s), salt);
  for (double& v : r.v) v = t == F32 ? static_cast<double>(static_cast<float>(f(v))) : f(v);
  return r;
}

struct UnaryCase {
  const char* name;
  Array (*fn)(const Array&);
  double (*ref)(double);
  Fn1 domain;
};

std::vector<UnaryCase> unary_cases() {
  const Fn1 any = [](double v) { return v; };
  const Fn1 unit = [](double v) { return std::sin(v); };        // [-1, 1]
  const Fn1 above_one = [](double v) { return 1 + std::fabs(v); };
  const Fn1 open_unit = [](double v) { return 0.999 * std::sin(v); };
  const Fn1 positive = [](double v) { return 0.01 + std::fabs(v); };
  const Fn1 modest = [](double v) { return v / 2; };  // no overflow in sinh, cosh, exp2
  return {
      {"arcsin", arcsin, [](double x) { return std::asin(x); }, unit},
      {"arccos", arccos, [](double x) { return std::acos(x); }, unit},
      {"arctan", arctan, [](double x) { return std::atan(x); }, any},
      {"arcsinh", arcsinh, [](double x) { return std::asinh(x); }, any},
      {"arccosh", arccosh, [](double x) { return std::acosh(x); }, above_one},
      {"arctanh", arctanh, [](double x) { return std::atanh(x); }, open_unit},
      {"sinh", sinh, [](double x) { return std::sinh(x); }, modest},
      {"cosh", cosh, [](double x) { return std::cosh(x); }, modest},
      {"log2", log2, [](double x) { return std::log2(x); }, positive},
      {"log10", log10, [](double x) { return std::log10(x); }, positive},
      {"exp2", exp2, [](double x) { return std::exp2(x); }, modest},
      {"expm1", expm1, [](double x) { return std::expm1(x); }, modest},
      {"cbrt", cbrt, [](double x) { return std::cbrt(x); }, any},
      {"sin", sin, [](double x) { return std::sin(x); }, any},
      {"cos", cos, [](double x) { return std::cos(x); }, any},
      {"tan", tan, [](double x) { return std::tan(x); }, any},
      {"tanh", tanh, [](double x) { return std::tanh(x); }, any},
      {"exp", exp, [](double x) { return std::exp(x); }, modest},
      {"log", log, [](double x) { return std::log(x); }, positive},
      {"log1p", log1p, [](double x) { return std::log1p(x); }, positive},
      {"rint", rint, [](double x) { return std::nearbyint(x); }, [](double v) { return v * 2; }},
  };
}

TEST(ArrayElementwiseMore, UnaryFloatFunctionsMatchLibm) {
  for (const auto& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    const Ref a = mapped(F64, {7, 9}, c.domain, 1);
    check_expr({a}, [&](auto& x) { return c.fn(x[0]); }, unary_ref(a, F64, c.ref), kUlp);
    // float32 stays float32: the double result rounded (NumPy's float32 loops are within an ULP of it).
    const Ref f = mapped(F32, {5, 6}, c.domain, 2);
    check_expr({f}, [&](auto& x) { return c.fn(x[0]); }, unary_ref(f, F32, c.ref), kFloat);
  }
}

TEST(ArrayElementwiseMore, UnaryFloatFunctionsOfIntegersAndBoolsAreFloat64) {
  for (const auto& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    const Ref i = sample(I32, {4, 5});
    const Ref b = sample(B, {4, 5});
    check_expr({i}, [&](auto& x) { return c.fn(x[0]); }, unary_ref(i, F64, c.ref), kUlp);
    check_expr({b}, [&](auto& x) { return c.fn(x[0]); }, unary_ref(b, F64, c.ref), kUlp);
  }
}

TEST(ArrayElementwiseMore, UnaryFunctionsAtSpecialValues) {
  const Ref a = ref_of(F64, {12}, kSpecial);
  for (const auto& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    check_expr({a}, [&](auto& x) { return c.fn(x[0]); }, unary_ref(a, F64, c.ref), kUlp);
  }
  // Outside the domain: NaN; at its edges: infinities.
  const Ref edge = ref_of(F64, {6}, {1.0, -1.0, 0.5, 2.0, 0.0, -0.0});
  check_expr({edge}, [](auto& x) { return arctanh(x[0]); }, ref_of(F64, {6}, {kInf, -kInf, std::atanh(0.5), kNaN, 0, 0}), kUlp);
  check_expr({edge}, [](auto& x) { return arccosh(x[0]); },
             ref_of(F64, {6}, {0, kNaN, kNaN, std::acosh(2.0), kNaN, kNaN}), kUlp);
  check_expr({edge}, [](auto& x) { return log2(x[0]); }, ref_of(F64, {6}, {0, kNaN, -1, 1, -kInf, -kInf}), kUlp);
  check_expr({edge}, [](auto& x) { return arcsin(x[0] * 2.0); },
             ref_of(F64, {6}, {kNaN, kNaN, std::asin(1.0), kNaN, 0, 0}), kUlp);
  // sinh and cosh stay finite up to 710.47 (SLEEF's overflowed past 709.78): libm's values.
  const Ref edge_exp = ref_of(F64, {6}, {709.5, 709.9, 710.0, -710.4, 710.47, 710.5});
  check_expr({edge_exp}, [](auto& x) { return sinh(x[0]); }, unary_ref(edge_exp, F64, [](double x) { return std::sinh(x); }), kUlp);
  check_expr({edge_exp}, [](auto& x) { return cosh(x[0]); }, unary_ref(edge_exp, F64, [](double x) { return std::cosh(x); }), kUlp);
  // Large arguments where SLEEF's asinh, acosh and log1p overflow (x * x): libm's values.
  const Ref huge = ref_of(F64, {4}, {1e150, 1e200, 1.7e308, -1e300});
  check_expr({huge}, [](auto& x) { return arcsinh(x[0]); }, unary_ref(huge, F64, [](double x) { return std::asinh(x); }), kUlp);
  check_expr({huge}, [](auto& x) { return arccosh(abs(x[0])); },
             unary_ref(huge, F64, [](double x) { return std::acosh(std::fabs(x)); }), kUlp);
  check_expr({huge}, [](auto& x) { return log1p(abs(x[0])); },
             unary_ref(huge, F64, [](double x) { return std::log1p(std::fabs(x)); }), kUlp);
  // Exact values NumPy gives too.
  const Ref v = ref_of(F64, {5}, {-8, 27, 1000, 0.001, 3});
  check_expr({v}, [](auto& x) { return cbrt(x[0]); }, ref_of(F64, {5}, {-2, 3, 10, 0.1, std::cbrt(3.0)}), kUlp);
  check_expr({v}, [](auto& x) { return log10(x[0]); }, ref_of(F64, {5}, {kNaN, std::log10(27.0), 3, -3, std::log10(3.0)}), kUlp);
  check_expr({v}, [](auto& x) { return exp2(x[0]); }, ref_of(F64, {5}, {1.0 / 256, 134217728, std::exp2(1000.0), std::exp2(0.001), 8}), kUlp);
}

// Magnitudes from 1e-300 to 1e308 of both signs: the vectorised functions agree with libm over
// the whole range (SLEEF's asinh overflowed beyond 1e154 before its elements went to libm).
TEST(ArrayElementwiseMore, UnaryFunctionsOverTheWholeRangeOfMagnitudes) {
  std::vector<double> v;
  for (int e = -300; e <= 307; e += 3) {
    v.push_back(1.2345678901 * std::pow(10.0, e));
    v.push_back(-7.654321 * std::pow(10.0, e));
  }
  const Ref a = ref_of(F64, {static_cast<std::int64_t>(v.size())}, v);
  for (const auto& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    check_expr({a}, [&](auto& x) { return c.fn(x[0]); }, unary_ref(a, F64, c.ref), kUlp);
  }
}

// The vectorised functions evaluate the tail of a tile like its body: a value never depends on the
// chunking (exact comparison over chunkings of 1, 2, 3 and the whole array).
TEST(ArrayElementwiseMore, VectorisedMathDoesNotDependOnTheChunking) {
  const Ref a = make_ref(F64, {2, 1027}, [](auto& i) { return (i[0] * 1027 + i[1]) * 0.01 - 10.0; });
  for (const auto& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    const Ref in = mapped(F64, {2, 1027}, c.domain);
    const Block whole = compute_sync(c.fn(to_array(in, {-1})));
    check_expr({in}, [&](auto& x) { return c.fn(x[0]); }, ref_from_block(whole), Tol{0, 0});
  }
  // Large arguments of sin and cos are reduced exactly (as glibc does), not to garbage.
  const Ref big = ref_of(F64, {6}, {1e6, 1e10, 1e15, 1e22, 1e300, -3e8});
  check_expr({big}, [](auto& x) { return sin(x[0]); }, unary_ref(big, F64, [](double x) { return std::sin(x); }), kUlp);
  check_expr({big}, [](auto& x) { return cos(x[0]); }, unary_ref(big, F64, [](double x) { return std::cos(x); }), kUlp);
  check_expr({a}, [](auto& x) { return (sin(x[0]) * sin(x[0]) + cos(x[0]) * cos(x[0])) * 3.0 - 2.0; },
             unary_ref(a, F64, [](double) { return 1.0; }), Tol{4e-15, 4e-15});
}

TEST(ArrayElementwiseMore, BinaryFloatFunctionsAtEveryPairOfSpecialValues) {
  const Ref a = special_column(), b = special_row();
  auto check2 = [&](const char* name, Array (*fn)(const Array&, const Array&), const Fn2& ref) {
    SCOPED_TRACE(name);
    check_expr({a, b}, [&](auto& x) { return fn(x[0], x[1]); }, binary_ref(a, b, F64, ref), kUlp);
  };
  check2("arctan2", arctan2, [](double y, double x) { return std::atan2(y, x); });
  check2("hypot", hypot, [](double p, double q) { return std::hypot(p, q); });
  check2("copysign", copysign, [](double p, double q) { return std::copysign(p, q); });
  check2("fmin", fmin, [](double p, double q) { return std::fmin(p, q); });
  check2("fmax", fmax, [](double p, double q) { return std::fmax(p, q); });
  check2("fmod", fmod, [](double p, double q) { return std::fmod(p, q); });
  // numpy's logaddexp: log(exp(a) + exp(b)) without overflow, a + log(2) where they are equal.
  auto lae = [](double p, double q) {
    if (p == q) return p + std::log(2.0);
    const double m = std::max(p, q), d = std::fabs(p - q);
    return std::isnan(p - q) ? kNaN : m + std::log1p(std::exp(-d));
  };
  check2("logaddexp", logaddexp, lae);
  check2("logaddexp2", logaddexp2, [](double p, double q) {
    if (p == q) return p + 1;
    const double m = std::max(p, q), d = std::fabs(p - q);
    return std::isnan(p - q) ? kNaN : m + std::log1p(std::exp2(-d)) / std::log(2.0);
  });
}

// numpy 2.4.6's results for every added binary function on edge values of every dtype pair
// (element_semantics_more_tables.inc): bit for bit, but for a couple of ulps of the transcendental
// ones (ulps_op); a DTypeError where numpy raises (bitwise operations of floats).
TEST(ArrayElementwiseMore, BinaryFunctionsOnEdgeValuesMatchNumpy) {
  namespace ec = tessera_test::elem_cases;
  int checked = 0, refused = 0;
  for (const auto& c : ec::more_tables().cases) {
    SCOPED_TRACE(c.op + " of " + std::string(dtype_name(c.a)) + ", " + std::string(dtype_name(c.b)));
    if (c.numpy_dtype == "none") {
      ++refused;
      const Array one_a = from_block(ec::block_of(c.a, {"1"}), {-1}), one_b = from_block(ec::block_of(c.b, {"1"}), {-1});
      EXPECT_THROW(ec::apply(c.op, one_a, one_b), DTypeError);
      continue;
    }
    const auto o = ec::operands(c, false);
    ASSERT_EQ(o.a.size(), static_cast<std::int64_t>(c.results.size())) << "numpy raised for some elements only";
    for (const std::int64_t chunk : {std::int64_t{-1}, std::int64_t{5}}) {
      const Array r = ec::apply(c.op, from_block(o.a, {chunk}), from_block(o.b, {chunk}));
      for (const auto& e : executors()) {
        SCOPED_TRACE(std::string(e.name) + ", chunks of " + std::to_string(chunk));
        EXPECT_TRUE(ec::matches_numpy(c, o, r.compute(*e.ex), 2));
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked + refused, 14 * 25);
  EXPECT_EQ(refused, 5 * 16);  // bitwise and/or/xor and the shifts of floats with anything
}

TEST(ArrayElementwiseMore, BinaryFloatFunctionsHandValues) {
  const Ref a = ref_of(F64, {6}, {kInf, -kInf, 1.0, 800.0, kNaN, -0.0});
  const Ref b = ref_of(F64, {6}, {kInf, -kInf, kNaN, 800.0, 1.0, 0.0});
  check_expr({a, b}, [](auto& x) { return logaddexp(x[0], x[1]); },
             ref_of(F64, {6}, {kInf, -kInf, kNaN, 800 + std::log(2.0), kNaN, std::log(2.0)}), kUlp);
  check_expr({a, b}, [](auto& x) { return fmin(x[0], x[1]); }, ref_of(F64, {6}, {kInf, -kInf, 1, 800, 1, 0}));
  check_expr({a, b}, [](auto& x) { return fmax(x[0], x[1]); }, ref_of(F64, {6}, {kInf, -kInf, 1, 800, 1, 0}));
  // Equal arguments give the first (NumPy's scalar loop), host and device alike: fmin(-0.0, 0.0) is -0.0.
  const Ref z = ref_of(F64, {4}, {-0.0, 0.0, -0.0, 0.0}), w = ref_of(F64, {4}, {0.0, -0.0, -0.0, 0.0});
  check_expr({z, w}, [](auto& x) { return signbit(fmin(x[0], x[1])); }, ref_of(B, {4}, {1, 0, 1, 0}));
  check_expr({z, w}, [](auto& x) { return signbit(fmax(x[0], x[1])); }, ref_of(B, {4}, {1, 0, 1, 0}));
  // fmod takes the sign of a (C), mod the sign of b (Python).
  const Ref p = ref_of(F64, {4}, {-7.5, 7.5, -7.5, 7.5});
  const Ref q = ref_of(F64, {4}, {2, -2, -2, 2});
  check_expr({p, q}, [](auto& x) { return fmod(x[0], x[1]); }, ref_of(F64, {4}, {-1.5, 1.5, -1.5, 1.5}));
  check_expr({p, q}, [](auto& x) { return mod(x[0], x[1]); }, ref_of(F64, {4}, {0.5, -0.5, -1.5, 1.5}));
  check_expr({p}, [](auto& x) { return hypot(x[0], 10.0); }, ref_of(F64, {4}, {12.5, 12.5, 12.5, 12.5}), kUlp);
  check_expr({p}, [](auto& x) { return arctan2(1.0, x[0]); },
             unary_ref(p, F64, [](double v) { return std::atan2(1.0, v); }), kUlp);
}

TEST(ArrayElementwiseMore, BinaryFloatFunctionDtypes) {
  const Ref i = sample(I32, {3, 4}, 1), j = sample(I64, {3, 4}, 2), f = sample(F32, {3, 4}, 3);
  const Array ai = to_array(i, {2}), aj = to_array(j, {2}), af = to_array(f, {2});
  EXPECT_EQ(arctan2(ai, aj).dtype(), F64);
  EXPECT_EQ(hypot(af, af).dtype(), F32);
  EXPECT_EQ(hypot(af, 2).dtype(), F32);  // a weak Python int
  EXPECT_EQ(hypot(af, aj).dtype(), F64);
  EXPECT_EQ(copysign(ai, -1).dtype(), F64);
  EXPECT_EQ(logaddexp(af, 1.5).dtype(), F32);
  EXPECT_EQ(fmin(ai, ai).dtype(), I32);  // no NaN in integers: minimum
  EXPECT_EQ(fmax(ai, 2.5).dtype(), F64);
  EXPECT_EQ(fmod(ai, 3).dtype(), I32);
  EXPECT_EQ(float_power(af, af).dtype(), F64);
  EXPECT_EQ(heaviside(ai, 0.5).dtype(), F64);
  EXPECT_EQ(heaviside(af, 0.5).dtype(), F32);
  check_expr({f, i}, [](auto& x) { return hypot(x[0], x[1]); },
             binary_ref(f, i, F64, [](double p, double q) { return std::hypot(p, q); }), kUlp);
  check_expr({f}, [](auto& x) { return logaddexp(x[0], x[0]); },
             unary_ref(f, F32, [](double p) { return p + std::log(2.0); }), kFloat);
}

TEST(ArrayElementwiseMore, IntegerFmodIsCRemainder) {
  const Ref a = ref_of(I64, {6}, {-7, 7, -7, 7, 5, -9223372036854775808.0});
  const Ref b = ref_of(I64, {6}, {2, -2, -2, 0, 3, -1});
  check_expr({a, b}, [](auto& x) { return fmod(x[0], x[1]); }, ref_of(I64, {6}, {-1, 1, -1, 0, 2, 0}));
  check_expr({a, b}, [](auto& x) { return mod(x[0], x[1]); }, ref_of(I64, {6}, {1, -1, -1, 0, 2, 0}));
  const Ref i = sample(I32, {4, 6});
  check_expr({i}, [](auto& x) { return fmod(x[0], 4); },
             unary_ref(i, I32, [](double v) { return std::fmod(v, 4.0); }));
  const Ref p = sample(B, {3, 3}, 1), q = ref_of(B, {3}, {1, 1, 1});
  check_expr({p, q}, [](auto& x) { return fmod(x[0], x[1]); }, binary_ref(p, q, I64, [](double, double) { return 0.0; }));
}

TEST(ArrayElementwiseMore, BitwiseOperations) {
  const Ref a = sample(I64, {5, 4}, 1), b = sample(I32, {4}, 2);
  auto ll = [](double v) { return static_cast<std::int64_t>(v); };
  check_expr({a, b}, [](auto& x) { return bitwise_and(x[0], x[1]); },
             binary_ref(a, b, I64, [&](double p, double q) { return double(ll(p) & ll(q)); }));
  check_expr({a, b}, [](auto& x) { return bitwise_or(x[0], x[1]); },
             binary_ref(a, b, I64, [&](double p, double q) { return double(ll(p) | ll(q)); }));
  check_expr({a, b}, [](auto& x) { return bitwise_xor(x[0], x[1]); },
             binary_ref(a, b, I64, [&](double p, double q) { return double(ll(p) ^ ll(q)); }));
  check_expr({b}, [](auto& x) { return bitwise_not(x[0]); }, unary_ref(b, I32, [&](double p) { return double(~ll(p)); }));
  check_expr({b}, [](auto& x) { return invert(x[0]); }, unary_ref(b, I32, [&](double p) { return double(-ll(p) - 1); }));
  check_expr({b}, [](auto& x) { return bitwise_and(x[0], 6); }, unary_ref(b, I32, [&](double p) { return double(ll(p) & 6); }));
  check_expr({b}, [](auto& x) { return bitwise_xor(-1, x[0]); }, unary_ref(b, I32, [&](double p) { return double(~ll(p)); }));
  // Bools stay bools; ~ of a bool is logical not.
  const Ref p = sample(B, {4, 5}, 3), q = sample(B, {4, 5}, 4);
  check_expr({p, q}, [](auto& x) { return bitwise_and(x[0], x[1]); }, binary_ref(p, q, B, [](double u, double v) { return double(u && v); }));
  check_expr({p, q}, [](auto& x) { return bitwise_or(x[0], x[1]); }, binary_ref(p, q, B, [](double u, double v) { return double(u || v); }));
  check_expr({p, q}, [](auto& x) { return bitwise_xor(x[0], x[1]); }, binary_ref(p, q, B, [](double u, double v) { return double(u != v); }));
  check_expr({p}, [](auto& x) { return invert(x[0]); }, unary_ref(p, B, [](double u) { return double(!u); }));
  const Ref r = sample(B, {5, 4}, 5);
  check_expr({r, a}, [](auto& x) { return bitwise_or(x[0], x[1]); },
             binary_ref(r, a, I64, [&](double u, double v) { return double(ll(u) | ll(v)); }));
}

TEST(ArrayElementwiseMore, Shifts) {
  const Ref a = ref_of(I64, {8}, {1, -1, 5, -8, 1, -8, 3, -3});
  const Ref s = ref_of(I64, {8}, {3, 3, 62, 1, 64, 70, -1, -1});
  check_expr({a, s}, [](auto& x) { return left_shift(x[0], x[1]); },
             ref_of(I64, {8}, {8, -8, 4611686018427387904.0, -16, 0, 0, 0, 0}));  // 5 << 62 wraps to 2**62
  check_expr({a, s}, [](auto& x) { return right_shift(x[0], x[1]); }, ref_of(I64, {8}, {0, -1, 0, -4, 0, -1, 0, -1}));
  // int32 keeps its 32-bit wrap-around: 1 << 31 is INT32_MIN, shifts of 32 and more give 0 / the sign.
  const Ref i = ref_of(I32, {5}, {1, 1, -1, -5, 7});
  const Ref t = ref_of(I32, {5}, {31, 32, 40, 33, 2});
  check_expr({i, t}, [](auto& x) { return left_shift(x[0], x[1]); }, ref_of(I32, {5}, {-2147483648.0, 0, 0, 0, 28}));
  check_expr({i, t}, [](auto& x) { return right_shift(x[0], x[1]); }, ref_of(I32, {5}, {0, 0, -1, -1, 1}));
  check_expr({i}, [](auto& x) { return left_shift(x[0], 2); }, ref_of(I32, {5}, {4, 4, -4, -20, 28}));
  check_expr({i}, [](auto& x) { return right_shift(64, x[0]); }, ref_of(I32, {5}, {32, 32, 0, 0, 0}));
  // Bools shift as integers (NumPy's int8 is int64 here).
  const Ref p = ref_of(B, {3}, {1, 0, 1});
  check_expr({p, p}, [](auto& x) { return left_shift(x[0], x[1]); }, ref_of(I64, {3}, {2, 0, 2}));
}

TEST(ArrayElementwiseMore, BitwiseOperationsRejectFloats) {
  const Array f = from_vector<double>({1.5, 2.0}, {2}, {1});
  const Array i = from_vector<std::int64_t>({1, 2}, {2}, {1});
  EXPECT_THROW(bitwise_and(f, i), DTypeError);
  EXPECT_THROW(bitwise_or(i, f), DTypeError);
  EXPECT_THROW(bitwise_xor(f, f), DTypeError);
  EXPECT_THROW(bitwise_not(f), DTypeError);
  EXPECT_THROW(invert(f.astype(F32)), DTypeError);
  EXPECT_THROW(left_shift(f, 1), DTypeError);
  EXPECT_THROW(right_shift(i, 1.0), DTypeError);  // a weak float makes the operand float64
  try {
    (void)left_shift(i, f);
    ADD_FAILURE() << "left_shift of a float did not throw";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("left_shift"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(positive(i.astype(B)), DTypeError);
}

TEST(ArrayElementwiseMore, RoundHalfToEven) {
  const Ref a = ref_of(F64, {10}, {0.5, 1.5, 2.5, -0.5, -1.5, 3.7, -3.7, kNaN, kInf, -0.0});
  check_expr({a}, [](auto& x) { return round(x[0]); }, ref_of(F64, {10}, {0, 2, 2, -0.0, -2, 4, -4, kNaN, kInf, -0.0}));
  check_expr({a}, [](auto& x) { return rint(x[0]); }, ref_of(F64, {10}, {0, 2, 2, -0.0, -2, 4, -4, kNaN, kInf, -0.0}));
  check_expr({a}, [](auto& x) { return around(x[0]); }, ref_of(F64, {10}, {0, 2, 2, -0.0, -2, 4, -4, kNaN, kInf, -0.0}));
  // decimals: rint(x * 10**d) / 10**d, as NumPy: 2.675 * 100 rounds to 267.5, so 2.68 (Python's
  // round, exact in decimal, gives 2.67), and 1.005 * 100 to 100.49999999999999, so 1.0.
  const Ref d = ref_of(F64, {7}, {1.25, 1.35, 2.675, -0.125, 1234.5678, 0.05, 1.005});
  check_expr({d}, [](auto& x) { return round(x[0], 1); }, ref_of(F64, {7}, {1.2, 1.4, 2.7, -0.1, 1234.6, 0.0, 1.0}));
  check_expr({d}, [](auto& x) { return round(x[0], 2); }, ref_of(F64, {7}, {1.25, 1.35, 2.68, -0.12, 1234.57, 0.05, 1.0}));
  check_expr({d}, [](auto& x) { return round(x[0], -2); }, ref_of(F64, {7}, {0, 0, 0, -0.0, 1200, 0, 0}));
  check_expr({d}, [](auto& x) { return round(x[0], -1); }, ref_of(F64, {7}, {0, 0, 0, -0.0, 1230, 0, 0}));
  // 10**400 overflows: inf * x / inf is NaN, as in NumPy; x / inf * inf too.
  check_expr({d}, [](auto& x) { return round(x[0], 400); }, ref_of(F64, {7}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}));
  check_expr({d}, [](auto& x) { return round(x[0], std::numeric_limits<int>::min()); },
             ref_of(F64, {7}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}));
  // Integers: unchanged for decimals >= 0, rounded half to even to tens for -1.
  const Ref i = ref_of(I32, {6}, {15, 25, -15, 14, 16, 5});
  check_expr({i}, [](auto& x) { return round(x[0], 2); }, i);
  check_expr({i}, [](auto& x) { return round(x[0], -1); }, ref_of(I32, {6}, {20, 20, -20, 10, 20, 0}));
  // float32 stays float32.
  const Ref f = ref_of(F32, {3}, {2.5, 0.125, -1.75});
  check_expr({f}, [](auto& x) { return round(x[0], 1); }, ref_of(F32, {3}, {2.5, 0.1f, -1.8f}), kFloat);
  EXPECT_EQ(round(to_array(ref_of(B, {2}, {1, 0}), {1})).dtype(), F64);
  EXPECT_EQ(rint(to_array(i, {2})).dtype(), F64);
}

TEST(ArrayElementwiseMore, TruncKeepsIntegers) {
  const Ref a = ref_of(F64, {7}, {2.7, -2.7, 0.5, -0.5, kNaN, -kInf, 1e300});
  check_expr({a}, [](auto& x) { return trunc(x[0]); }, ref_of(F64, {7}, {2, -2, 0, -0.0, kNaN, -kInf, 1e300}));
  const Ref f = ref_of(F32, {3}, {2.5, -3.75, 7});
  check_expr({f}, [](auto& x) { return trunc(x[0]); }, ref_of(F32, {3}, {2, -3, 7}));
  const Ref i = sample(I32, {4, 3});
  check_expr({i}, [](auto& x) { return trunc(x[0]); }, i);
  const Ref b = sample(B, {4, 3});
  check_expr({b}, [](auto& x) { return trunc(x[0]); }, b);
}

TEST(ArrayElementwiseMore, Clip) {
  const Ref a = ref_of(F64, {7}, {-5, 0, 2.5, 9, kNaN, kInf, -kInf});
  check_expr({a}, [](auto& x) { return clip(x[0], -1.0, 3); }, ref_of(F64, {7}, {-1, 0, 2.5, 3, kNaN, 3, -1}));
  const Ref lo = ref_of(F64, {7}, {-10, 1, 1, 1, 1, 1, kNaN});
  const Ref hi = ref_of(F64, {1}, {4});
  check_expr({a, lo, hi}, [](auto& x) { return clip(x[0], x[1], x[2]); }, ref_of(F64, {7}, {-5, 1, 2.5, 4, kNaN, 4, kNaN}));
  const Ref i = ref_of(I32, {5}, {1, 5, 9, -3, 7});
  check_expr({i}, [](auto& x) { return clip(x[0], 2, 7); }, ref_of(I32, {5}, {2, 5, 7, 2, 7}));
  check_expr({i}, [](auto& x) { return clip(x[0], 2.5, 7); }, ref_of(F64, {5}, {2.5, 5, 7, 2.5, 7}));
  const Ref m = sample(F32, {6, 5});
  check_expr({m}, [](auto& x) { return clip(x[0], -3, 4.5); },
             unary_ref(m, F32, [](double v) { return std::min(std::max(v, -3.0), 4.5); }));
}

TEST(ArrayElementwiseMore, InfinityAndSignTests) {
  const Ref a = ref_of(F64, {8}, {kInf, -kInf, kNaN, -kNaN, 0.0, -0.0, -1e-300, 3});
  check_expr({a}, [](auto& x) { return isinf(x[0]); }, ref_of(B, {8}, {1, 1, 0, 0, 0, 0, 0, 0}));
  check_expr({a}, [](auto& x) { return isposinf(x[0]); }, ref_of(B, {8}, {1, 0, 0, 0, 0, 0, 0, 0}));
  check_expr({a}, [](auto& x) { return isneginf(x[0]); }, ref_of(B, {8}, {0, 1, 0, 0, 0, 0, 0, 0}));
  check_expr({a}, [](auto& x) { return signbit(x[0]); }, ref_of(B, {8}, {0, 1, 0, 1, 0, 1, 1, 0}));
  check_expr({a}, [](auto& x) { return isinf(x[0].astype(DType::Float32)); }, ref_of(B, {8}, {1, 1, 0, 0, 0, 0, 0, 0}));
  check_expr({a}, [](auto& x) { return signbit(x[0].astype(DType::Float32)); }, ref_of(B, {8}, {0, 1, 0, 1, 0, 1, 1, 0}));
  const Ref i = ref_of(I64, {3}, {-2, 0, 5});
  check_expr({i}, [](auto& x) { return isinf(x[0]); }, ref_of(B, {3}, {0, 0, 0}));
  check_expr({i}, [](auto& x) { return isposinf(x[0]); }, ref_of(B, {3}, {0, 0, 0}));
  check_expr({i}, [](auto& x) { return signbit(x[0]); }, ref_of(B, {3}, {1, 0, 0}));
  // copysign carries signed zeros: signbit(copysign(0, -1)) is true.
  check_expr({i}, [](auto& x) { return signbit(copysign(0.0, x[0])); }, ref_of(B, {3}, {1, 0, 0}));
}

TEST(ArrayElementwiseMore, IsCloseAndAllClose) {
  const Ref a = ref_of(F64, {8}, {1.0, 1.0, kInf, kInf, kNaN, 1e-9, 100.0, 0.0});
  const Ref b = ref_of(F64, {8}, {1.0 + 1e-6, 1.1, kInf, -kInf, kNaN, 0.0, 100.0009, -0.0});
  check_expr({a, b}, [](auto& x) { return isclose(x[0], x[1]); }, ref_of(B, {8}, {1, 0, 1, 0, 0, 1, 1, 1}));
  check_expr({a, b}, [](auto& x) { return isclose(x[0], x[1], 1e-5, 1e-8, true); }, ref_of(B, {8}, {1, 0, 1, 0, 1, 1, 1, 1}));
  check_expr({a, b}, [](auto& x) { return isclose(x[0], x[1], 0.0, 0.0); }, ref_of(B, {8}, {0, 0, 1, 0, 0, 0, 0, 1}));
  check_expr({a}, [](auto& x) { return isclose(x[0], 1); }, ref_of(B, {8}, {1, 1, 0, 0, 0, 0, 0, 0}));
  // Integers against floats (int64 and float32 compute in float64).
  const Ref i = ref_of(I64, {3}, {1, 2, 3});
  const Ref f = ref_of(F32, {3}, {1.0, 2.00001f, 3.1f});
  check_expr({i, f}, [](auto& x) { return isclose(x[0], x[1]); }, ref_of(B, {3}, {1, 1, 0}));
  check_expr({i, i}, [](auto& x) { return isclose(x[0], x[1]); }, ref_of(B, {3}, {1, 1, 1}));
  const Ref p = sample(F64, {6, 7}, 1);
  Ref q = p;
  for (double& v : q.v) v *= 1 + 1e-7;
  check_expr({p, q}, [](auto& x) { return allclose(x[0], x[1]); }, ref_of(B, {}, {1}));
  q.v[17] += 1e-3;
  check_expr({p, q}, [](auto& x) { return allclose(x[0], x[1]); }, ref_of(B, {}, {0}));
  check_expr({a, a}, [](auto& x) { return allclose(x[0], x[1]); }, ref_of(B, {}, {0}));  // NaN != NaN
  check_expr({a, a}, [](auto& x) { return allclose(x[0], x[1], 1e-5, 1e-8, true); }, ref_of(B, {}, {1}));
}

TEST(ArrayElementwiseMore, NanToNum) {
  const Ref a = ref_of(F64, {5}, {kNaN, kInf, -kInf, 1.5, -0.0});
  const double big = std::numeric_limits<double>::max();
  check_expr({a}, [](auto& x) { return nan_to_num(x[0]); }, ref_of(F64, {5}, {0, big, -big, 1.5, -0.0}));
  check_expr({a}, [](auto& x) { return nan_to_num(x[0], -1, 7, -7); }, ref_of(F64, {5}, {-1, 7, -7, 1.5, -0.0}));
  const double fbig = std::numeric_limits<float>::max();
  check_expr({a}, [](auto& x) { return nan_to_num(x[0].astype(F32)); }, ref_of(F32, {5}, {0, fbig, -fbig, 1.5, 0}));
  // Replacements take the array's dtype: 1e300 is inf in float32, as in NumPy.
  check_expr({a}, [](auto& x) { return nan_to_num(x[0].astype(F32), 0.0, 1e300); }, ref_of(F32, {5}, {0, kInf, -fbig, 1.5, 0}));
  const Ref i = sample(I32, {3, 4});
  check_expr({i}, [](auto& x) { return nan_to_num(x[0]); }, i);
}

TEST(ArrayElementwiseMore, AnglesSincHeaviside) {
  const Ref d = ref_of(F64, {5}, {0, 90, 180, -45, 360});
  constexpr double pi = 3.141592653589793;
  check_expr({d}, [](auto& x) { return deg2rad(x[0]); }, ref_of(F64, {5}, {0, pi / 2, pi, -pi / 4, 2 * pi}), kUlp);
  check_expr({d}, [](auto& x) { return radians(x[0]); }, ref_of(F64, {5}, {0, pi / 2, pi, -pi / 4, 2 * pi}), kUlp);
  check_expr({d}, [](auto& x) { return rad2deg(deg2rad(x[0])); }, d, kUlp);
  check_expr({d}, [](auto& x) { return degrees(x[0] * (pi / 180)); }, d, kUlp);
  const Ref i = ref_of(I32, {2}, {180, -90});
  check_expr({i}, [](auto& x) { return deg2rad(x[0]); }, ref_of(F64, {2}, {pi, -pi / 2}), kUlp);
  // float32: NumPy's factor is computed in float32 (180.0f / (float)pi).
  const Ref f = ref_of(F32, {3}, {1, 45, 1e10});
  const float to_deg = 180.0f / static_cast<float>(pi);
  check_expr({f}, [&](auto& x) { return rad2deg(x[0]); },
             ref_of(F32, {3}, {to_deg * 1.0f, to_deg * 45.0f, to_deg * 1e10f}), Tol{0, 0});
  const Ref s = ref_of(F64, {6}, {0, 0.5, 1, -1.5, kInf, kNaN});
  check_expr({s}, [](auto& x) { return sinc(x[0]); },
             ref_of(F64, {6}, {1, 2 / pi, std::sin(pi) / pi, std::sin(-1.5 * pi) / (-1.5 * pi), kNaN, kNaN}), Tol{1e-15, 1e-16});
  const Ref h = ref_of(F64, {5}, {-1, 0, 2, kNaN, -0.0});
  check_expr({h}, [](auto& x) { return heaviside(x[0], 0.5); }, ref_of(F64, {5}, {0, 0.5, 1, kNaN, 0.5}));
  const Ref h0 = ref_of(F64, {2, 1}, {kNaN, 7});
  check_expr({h, h0}, [](auto& x) { return heaviside(x[0], x[1]); },
             ref_of(F64, {2, 5}, {0, kNaN, 1, kNaN, kNaN, 0, 7, 1, kNaN, 7}));
}

TEST(ArrayElementwiseMore, ReciprocalPositiveNegativeFloatPower) {
  const Ref a = ref_of(F64, {5}, {2, -0.5, 0.0, -0.0, kInf});
  check_expr({a}, [](auto& x) { return reciprocal(x[0]); }, ref_of(F64, {5}, {0.5, -2, kInf, -kInf, 0}));
  const Ref i = ref_of(I32, {5}, {1, 2, -1, 0, 7});
  // 1 / 0 of integers is the dtype's minimum, as NumPy on x86-64.
  check_expr({i}, [](auto& x) { return reciprocal(x[0]); }, ref_of(I32, {5}, {1, 0, -1, -2147483648.0, 0}));
  check_expr({i}, [](auto& x) { return reciprocal(x[0].astype(I64)); },
             ref_of(I64, {5}, {1, 0, -1, -9223372036854775808.0, 0}));
  check_expr({i}, [](auto& x) { return positive(x[0]); }, i);
  check_expr({i}, [](auto& x) { return negative(x[0]); }, ref_of(I32, {5}, {-1, -2, 1, 0, -7}));
  const Ref f = ref_of(F32, {3}, {1.5, 2, -3});
  check_expr({f}, [](auto& x) { return float_power(x[0], 2); }, ref_of(F64, {3}, {2.25, 4, 9}));
  check_expr({i}, [](auto& x) { return float_power(x[0], -1); }, ref_of(F64, {5}, {1, 0.5, -1, kInf, 1.0 / 7}), kUlp);
}

TEST(ArrayElementwiseMore, LogicalXor) {
  const Ref a = ref_of(F64, {5}, {0, 1.5, kNaN, 0, -0.0});
  const Ref b = ref_of(I32, {5}, {0, 0, 3, 2, 0});
  check_expr({a, b}, [](auto& x) { return logical_xor(x[0], x[1]); }, ref_of(B, {5}, {0, 1, 0, 1, 0}));
  check_expr({a}, [](auto& x) { return logical_xor(x[0], true); }, ref_of(B, {5}, {1, 0, 0, 1, 1}));
}

TEST(ArrayElementwiseMore, ChainsOfNewFunctionsFuseAndBroadcast) {
  const Ref col = sample(F64, {4, 1}, 1), row = sample(F64, {1, 7}, 2);
  check_expr({col, row}, [](auto& x) { return arctan2(x[0], x[1]) + hypot(x[0], x[1]) * cbrt(x[1]); },
             binary_ref(col, row, F64, [](double p, double q) { return std::atan2(p, q) + std::hypot(p, q) * std::cbrt(q); }),
             Tol{1e-14, 1e-14});
  const Ref m = sample(F64, {9, 8}, 3);
  check_expr({m}, [](auto& x) { return (fmax(sinh(x[0] / 4.0), 0) + clip(x[0], -1, 1)).sum(); },
             [&] {
               double s = 0;
               for (double v : m.v) s += std::fmax(std::sinh(v / 4), 0) + std::min(std::max(v, -1.0), 1.0);
               return ref_of(F64, {}, {s});
             }(),
             Tol{1e-12, 1e-12});
}

}  // namespace
