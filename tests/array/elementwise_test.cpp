// Element-wise operations: arithmetic and comparisons with arrays and scalars, broadcasting,
// dtype promotion, unary math, astype, where.
#include <limits>

#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

using Fn2 = std::function<double(double, double)>;

// Reference of a binary op with broadcasting.
Ref binary_ref(const Ref& a, const Ref& b, DType out, const Fn2& f) {
  Shape s(std::max(a.shape.size(), b.shape.size()), 1);
  auto fold = [&](const Ref& r) {
    for (std::size_t k = 0; k < r.shape.size(); ++k) {
      auto& o = s[s.size() - r.shape.size() + k];
      if (r.shape[k] != 1) o = r.shape[k];
    }
  };
  fold(a);
  fold(b);
  return make_ref(out, s, [&](auto& i) { return f(bcast_at(a, i), bcast_at(b, i)); });
}

Ref unary_ref(const Ref& a, DType out, const std::function<double(double)>& f) {
  return make_ref(out, a.shape, [&](auto& i) { return f(a.at(i)); });
}

double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

TEST(ArrayElementwise, ArithmeticSameShapeFloat64) {
  const Ref a = sample(DType::Float64, {6, 7}, 1);
  Ref b = sample(DType::Float64, {6, 7}, 2);
  for (double& x : b.v) if (x == 0) x = 0.5;  // no division by zero
  const DType F = DType::Float64;
  check_expr({a, b}, [](auto& x) { return x[0] + x[1]; }, binary_ref(a, b, F, [](double p, double q) { return p + q; }));
  check_expr({a, b}, [](auto& x) { return x[0] - x[1]; }, binary_ref(a, b, F, [](double p, double q) { return p - q; }));
  check_expr({a, b}, [](auto& x) { return x[0] * x[1]; }, binary_ref(a, b, F, [](double p, double q) { return p * q; }));
  check_expr({a, b}, [](auto& x) { return x[0] / x[1]; }, binary_ref(a, b, F, [](double p, double q) { return p / q; }));
  check_expr({a, b}, [](auto& x) { return minimum(x[0], x[1]); },
             binary_ref(a, b, F, [](double p, double q) { return std::min(p, q); }));
  check_expr({a, b}, [](auto& x) { return maximum(x[0], x[1]); },
             binary_ref(a, b, F, [](double p, double q) { return std::max(p, q); }));
  check_expr({a, b}, [](auto& x) { return floor_divide(x[0], x[1]); },
             binary_ref(a, b, F, [](double p, double q) { return std::floor(p / q); }));
  check_expr({a, b}, [](auto& x) { return mod(x[0], x[1]); }, binary_ref(a, b, F, py_mod));
  check_expr({a, b}, [](auto& x) { return power(abs(x[0]), x[1]); },
             binary_ref(a, b, F, [](double p, double q) { return std::pow(std::fabs(p), q); }), {1e-12, 1e-300});
  check_expr({a}, [](auto& x) { return -x[0]; }, unary_ref(a, F, [](double p) { return -p; }));
  // A longer fused chain.
  check_expr({a, b}, [](auto& x) { return (x[0] * 2.0 - x[1]) / 4.0 + x[0] * x[1]; },
             binary_ref(a, b, F, [](double p, double q) { return (p * 2.0 - q) / 4.0 + p * q; }));
}

TEST(ArrayElementwise, ScalarsOnEitherSide) {
  const Ref a = sample(DType::Float64, {5, 4});
  const DType F = DType::Float64;
  check_expr({a}, [](auto& x) { return x[0] + 1.5; }, unary_ref(a, F, [](double p) { return p + 1.5; }));
  check_expr({a}, [](auto& x) { return 1.5 + x[0]; }, unary_ref(a, F, [](double p) { return 1.5 + p; }));
  check_expr({a}, [](auto& x) { return x[0] - 2.0; }, unary_ref(a, F, [](double p) { return p - 2.0; }));
  check_expr({a}, [](auto& x) { return 2.0 - x[0]; }, unary_ref(a, F, [](double p) { return 2.0 - p; }));
  check_expr({a}, [](auto& x) { return x[0] * 3.0; }, unary_ref(a, F, [](double p) { return p * 3.0; }));
  check_expr({a}, [](auto& x) { return 3.0 * x[0]; }, unary_ref(a, F, [](double p) { return 3.0 * p; }));
  check_expr({a}, [](auto& x) { return x[0] / 4.0; }, unary_ref(a, F, [](double p) { return p / 4.0; }));
  check_expr({a}, [](auto& x) { return 4.0 / x[0]; }, unary_ref(a, F, [](double p) { return 4.0 / p; }));
  check_expr({a}, [](auto& x) { return power(x[0], 2.0); }, unary_ref(a, F, [](double p) { return p * p; }));
  // Integer arrays with integer scalars stay integer (NumPy 2's weak Python int).
  const Ref i = sample(DType::Int32, {5, 4});
  check_expr({i}, [](auto& x) { return x[0] + 3; }, unary_ref(i, DType::Int32, [](double p) { return p + 3; }));
  check_expr({i}, [](auto& x) { return 10 - x[0]; }, unary_ref(i, DType::Int32, [](double p) { return 10 - p; }));
  check_expr({i}, [](auto& x) { return x[0] * 2; }, unary_ref(i, DType::Int32, [](double p) { return p * 2; }));
  // ... a floating-point scalar makes them float64, integral or not (NumPy 2's weak Python float).
  check_expr({i}, [](auto& x) { return x[0] + 3.0; }, unary_ref(i, F, [](double p) { return p + 3; }));
  check_expr({i}, [](auto& x) { return x[0] + 0.5; }, unary_ref(i, F, [](double p) { return p + 0.5; }));
  // Division is true division.
  check_expr({i}, [](auto& x) { return x[0] / 2.0; }, unary_ref(i, F, [](double p) { return p / 2; }));
}

TEST(ArrayElementwise, Comparisons) {
  const Ref a = sample(DType::Float64, {6, 5}, 3);
  Ref b = sample(DType::Float64, {6, 5}, 4);
  for (std::size_t k = 0; k < b.v.size(); k += 3) b.v[k] = a.v[k];  // some equal elements
  const DType B = DType::Bool;
  check_expr({a, b}, [](auto& x) { return x[0] < x[1]; }, binary_ref(a, b, B, [](double p, double q) { return double(p < q); }));
  check_expr({a, b}, [](auto& x) { return x[0] <= x[1]; }, binary_ref(a, b, B, [](double p, double q) { return double(p <= q); }));
  check_expr({a, b}, [](auto& x) { return x[0] > x[1]; }, binary_ref(a, b, B, [](double p, double q) { return double(p > q); }));
  check_expr({a, b}, [](auto& x) { return x[0] >= x[1]; }, binary_ref(a, b, B, [](double p, double q) { return double(p >= q); }));
  check_expr({a, b}, [](auto& x) { return x[0] == x[1]; }, binary_ref(a, b, B, [](double p, double q) { return double(p == q); }));
  check_expr({a, b}, [](auto& x) { return x[0] != x[1]; }, binary_ref(a, b, B, [](double p, double q) { return double(p != q); }));
  check_expr({a}, [](auto& x) { return x[0] < 0.5; }, unary_ref(a, B, [](double p) { return double(p < 0.5); }));
  check_expr({a}, [](auto& x) { return x[0] >= -1.0; }, unary_ref(a, B, [](double p) { return double(p >= -1.0); }));
  // Integer array against a fractional scalar compares exactly (1 < 1.5, 2 > 1.5).
  const Ref i = sample(DType::Int64, {6, 5});
  check_expr({i}, [](auto& x) { return x[0] > 1.5; }, unary_ref(i, B, [](double p) { return double(p > 1.5); }));
  check_expr({i}, [](auto& x) { return x[0] == 2.0; }, unary_ref(i, B, [](double p) { return double(p == 2.0); }));
  // Mixed int/float operands.
  check_expr({i, a}, [](auto& x) { return x[0] <= x[1]; }, binary_ref(i, a, B, [](double p, double q) { return double(p <= q); }));
}

TEST(ArrayElementwise, LogicalOps) {
  const Ref p = sample(DType::Bool, {5, 6}, 1);
  const Ref q = sample(DType::Bool, {5, 6}, 2);
  const DType B = DType::Bool;
  check_expr({p, q}, [](auto& x) { return x[0] && x[1]; }, binary_ref(p, q, B, [](double u, double v) { return double(u && v); }));
  check_expr({p, q}, [](auto& x) { return x[0] || x[1]; }, binary_ref(p, q, B, [](double u, double v) { return double(u || v); }));
  check_expr({p}, [](auto& x) { return !x[0]; }, unary_ref(p, B, [](double u) { return double(!u); }));
  // Integers are truthy when non-zero.
  const Ref i = sample(DType::Int32, {5, 6});
  check_expr({i, p}, [](auto& x) { return x[0] && x[1]; }, binary_ref(i, p, B, [](double u, double v) { return double(u != 0 && v != 0); }));
  check_expr({i}, [](auto& x) { return !x[0]; }, unary_ref(i, B, [](double u) { return double(u == 0); }));
}

TEST(ArrayElementwise, BroadcastingColumnPlusRow) {
  const Ref col = sample(DType::Float64, {3, 1}, 1);
  const Ref row = sample(DType::Float64, {1, 4}, 2);
  const Ref want = binary_ref(col, row, DType::Float64, [](double p, double q) { return p + q; });
  ASSERT_EQ(want.shape, (Shape{3, 4}));
  check_expr({col, row}, [](auto& x) { return x[0] + x[1]; }, want);
  check_expr({row, col}, [](auto& x) { return x[0] * x[1]; },
             binary_ref(row, col, DType::Float64, [](double p, double q) { return p * q; }));
}

TEST(ArrayElementwise, BroadcastingVectorAgainstMatrix) {
  const Ref v = sample(DType::Float64, {4}, 1);
  const Ref m = sample(DType::Float64, {3, 4}, 2);
  check_expr({v, m}, [](auto& x) { return x[0] + x[1]; },
             binary_ref(v, m, DType::Float64, [](double p, double q) { return p + q; }));
  check_expr({m, v}, [](auto& x) { return x[0] - x[1]; },
             binary_ref(m, v, DType::Float64, [](double p, double q) { return p - q; }));
  // 3-d against 1-d and 2-d.
  const Ref c = sample(DType::Float64, {2, 3, 4}, 3);
  check_expr({c, m, v}, [](auto& x) { return x[0] * x[1] + x[2]; },
             make_ref(DType::Float64, {2, 3, 4}, [&](auto& i) { return c.at(i) * bcast_at(m, i) + bcast_at(v, i); }));
}

TEST(ArrayElementwise, BroadcastingZeroDArrays) {
  const Ref m = sample(DType::Float64, {4, 5});
  const Ref s = ref_of(DType::Float64, {}, {2.5});
  check_expr({m, s}, [](auto& x) { return x[0] * x[1]; },
             binary_ref(m, s, DType::Float64, [](double p, double q) { return p * q; }));
  check_expr({s, m}, [](auto& x) { return x[0] - x[1]; },
             binary_ref(s, m, DType::Float64, [](double p, double q) { return p - q; }));
  check_expr({m}, [](auto& x) { return x[0] + scalar(1.25); }, unary_ref(m, DType::Float64, [](double p) { return p + 1.25; }));
  // 0-d with 0-d stays 0-d.
  check_expr({s}, [](auto& x) { return x[0] * scalar(4); }, ref_of(DType::Float64, {}, {10.0}));
  // A scalar array's dtype takes part in promotion: int32 array + float64 0-d is float64.
  const Ref i = sample(DType::Int32, {4, 5});
  check_expr({i}, [](auto& x) { return x[0] + scalar(1.0); }, unary_ref(i, DType::Float64, [](double p) { return p + 1; }));
  check_expr({i}, [](auto& x) { return x[0] + scalar(1.0, DType::Int32); }, unary_ref(i, DType::Int32, [](double p) { return p + 1; }));
}

TEST(ArrayElementwise, BroadcastingGeneratorsWithData) {
  // Generators broadcast too: a (3, 1) arange-like column from data against ones((1, 6)).
  const Ref col = sample(DType::Int64, {3, 1});
  check_configs(
      [&](std::size_t k) {
        return to_array(col, chunkings()[k].spec) + ones({1, 6}, chunkings()[(k + 1) % 4].spec, DType::Int64);
      },
      make_ref(DType::Int64, {3, 6}, [&](auto& i) { return col.at({i[0], 0}) + 1; }));
}

TEST(ArrayElementwise, DTypePromotion) {
  const Ref i32 = sample(DType::Int32, {4, 5}, 1);
  const Ref i64 = sample(DType::Int64, {4, 5}, 2);
  const Ref f32 = sample(DType::Float32, {4, 5}, 3);
  const Ref f64 = sample(DType::Float64, {4, 5}, 4);
  const Ref b = sample(DType::Bool, {4, 5}, 5);
  auto add = [](double p, double q) { return p + q; };
  // int32 + float32 -> float64 (NumPy), computed exactly in double.
  check_expr({i32, f32}, [](auto& x) { return x[0] + x[1]; }, binary_ref(i32, f32, DType::Float64, add));
  check_expr({i32, i64}, [](auto& x) { return x[0] + x[1]; }, binary_ref(i32, i64, DType::Int64, add));
  check_expr({i64, f64}, [](auto& x) { return x[0] * x[1]; },
             binary_ref(i64, f64, DType::Float64, [](double p, double q) { return p * q; }));
  check_expr({f32, f64}, [](auto& x) { return x[0] - x[1]; },
             binary_ref(f32, f64, DType::Float64, [](double p, double q) { return p - q; }));
  check_expr({i32, b}, [](auto& x) { return x[0] + x[1]; }, binary_ref(i32, b, DType::Int32, add));
  // int64 / int64 is true division to float64.
  Ref den = i64;
  for (double& x : den.v) if (x == 0) x = 3;
  check_expr({i64, den}, [](auto& x) { return x[0] / x[1]; },
             binary_ref(i64, den, DType::Float64, [](double p, double q) { return p / q; }));
  check_expr({i32, den}, [](auto& x) { return x[0] / x[1]; },
             binary_ref(i32, den, DType::Float64, [](double p, double q) { return p / q; }));
}

TEST(ArrayElementwise, Float32StaysFloat32AndRoundsLikeFloat) {
  const Ref a = sample(DType::Float32, {6, 7}, 1);
  Ref b = sample(DType::Float32, {6, 7}, 2);
  for (double& x : b.v) if (x == 0) x = 0.5;
  auto f32 = [](auto op) {
    return [op](double p, double q) { return static_cast<double>(op(static_cast<float>(p), static_cast<float>(q))); };
  };
  const DType F = DType::Float32;
  check_expr({a, b}, [](auto& x) { return x[0] + x[1]; }, binary_ref(a, b, F, f32([](float p, float q) { return p + q; })), {0, 0});
  check_expr({a, b}, [](auto& x) { return x[0] * x[1]; }, binary_ref(a, b, F, f32([](float p, float q) { return p * q; })), {0, 0});
  check_expr({a, b}, [](auto& x) { return x[0] / x[1]; }, binary_ref(a, b, F, f32([](float p, float q) { return p / q; })), {0, 0});
  // Each intermediate is rounded to float32, as NumPy stores it.
  check_expr({a, b}, [](auto& x) { return x[0] * x[1] + x[0]; },
             binary_ref(a, b, F, f32([](float p, float q) { float t = p * q; return t + p; })), {0, 0});
  // Python scalars keep float32 (value-based casting) and act as float32 values.
  check_expr({a}, [](auto& x) { return x[0] * 2.5; }, unary_ref(a, F, [](double p) { return double(float(p) * 2.5f); }), {0, 0});
  check_expr({a}, [](auto& x) { return x[0] + 0.1; }, unary_ref(a, F, [](double p) { return double(float(p) + 0.1f); }), {0, 0});
  check_expr({a}, [](auto& x) { return x[0] * 0.1; }, unary_ref(a, F, [](double p) { return double(float(p) * 0.1f); }), {0, 0});
  check_expr({a}, [](auto& x) { return sqrt(abs(x[0])); },
             unary_ref(a, F, [](double p) { return double(std::sqrt(std::fabs(float(p)))); }), {1e-7, 0});
  check_expr({a}, [](auto& x) { return exp(x[0] / 10.0); },
             unary_ref(a, F, [](double p) { return double(std::exp(float(p) / 10.0f)); }), {1e-6, 0});
}

TEST(ArrayElementwise, Float32ScalarArithmeticMatchesFloat) {
  // A denser search for double-rounding differences between float32(x * 0.1) computed in
  // double and x * 0.1f computed in float.
  std::vector<float> v(200);
  for (int k = 0; k < 200; ++k) v[k] = 1.0f + k * 0.013f;
  const Ref a = ref_of(DType::Float32, {200}, std::vector<double>(v.begin(), v.end()));
  for (double s : {0.1, 0.3, 1.7, 3.3}) {
    SCOPED_TRACE(s);
    const float sf = static_cast<float>(s);
    check_expr({a}, [&](auto& x) { return x[0] * s; }, unary_ref(a, DType::Float32, [&](double p) { return double(float(p) * sf); }), {0, 0});
    check_expr({a}, [&](auto& x) { return x[0] + s; }, unary_ref(a, DType::Float32, [&](double p) { return double(float(p) + sf); }), {0, 0});
    check_expr({a}, [&](auto& x) { return s / x[0]; }, unary_ref(a, DType::Float32, [&](double p) { return double(sf / float(p)); }), {0, 0});
  }
}

TEST(ArrayElementwise, BoolArithmetic) {
  const Ref p = sample(DType::Bool, {4, 6}, 1);
  const Ref q = sample(DType::Bool, {4, 6}, 2);
  // NumPy: bool + bool and bool * bool stay bool (logical or / and).
  check_expr({p, q}, [](auto& x) { return x[0] + x[1]; },
             binary_ref(p, q, DType::Bool, [](double u, double v) { return double(u || v); }));
  check_expr({p, q}, [](auto& x) { return x[0] * x[1]; },
             binary_ref(p, q, DType::Bool, [](double u, double v) { return double(u && v); }));
  // bool with integers counts as 0/1.
  const Ref i = sample(DType::Int64, {4, 6});
  check_expr({p, i}, [](auto& x) { return x[0] * x[1]; },
             binary_ref(p, i, DType::Int64, [](double u, double v) { return u * v; }));
  check_expr({p}, [](auto& x) { return x[0] + 1; }, unary_ref(p, DType::Int64, [](double u) { return u + 1; }));
  check_expr({p}, [](auto& x) { return x[0] + 1.0; }, unary_ref(p, DType::Float64, [](double u) { return u + 1; }));
  check_expr({p}, [](auto& x) { return x[0] * 0.5; }, unary_ref(p, DType::Float64, [](double u) { return u * 0.5; }));
  check_expr({p}, [](auto& x) { return x[0] / 2.0; }, unary_ref(p, DType::Float64, [](double u) { return u / 2; }));
  // Sum of bools counts the true ones, as int64.
  double count = 0;
  for (double u : p.v) count += u;
  check_expr({p}, [](auto& x) { return x[0].sum(); }, ref_of(DType::Int64, {}, {count}));
}

TEST(ArrayElementwise, IntegerSemantics) {
  // Python floor division and modulo (rounding toward -inf), on negative operands too.
  std::vector<double> av, bv;
  for (int p = -7; p <= 7; ++p)
    for (int q : {-3, -2, 2, 3, 5}) { av.push_back(p); bv.push_back(q); }
  const Shape s{static_cast<std::int64_t>(av.size())};
  const Ref a = ref_of(DType::Int64, s, av), b = ref_of(DType::Int64, s, bv);
  check_expr({a, b}, [](auto& x) { return floor_divide(x[0], x[1]); },
             binary_ref(a, b, DType::Int64, [](double p, double q) { return std::floor(p / q); }));
  check_expr({a, b}, [](auto& x) { return mod(x[0], x[1]); }, binary_ref(a, b, DType::Int64, py_mod));
  const Ref af = ref_of(DType::Float64, s, av), bf = ref_of(DType::Float64, s, bv);
  check_expr({af, bf}, [](auto& x) { return mod(x[0], x[1]); }, binary_ref(af, bf, DType::Float64, py_mod));
  check_expr({af, bf}, [](auto& x) { return floor_divide(x[0], x[1]); },
             binary_ref(af, bf, DType::Float64, [](double p, double q) { return std::floor(p / q); }));
  // Integer powers are exact.
  const Ref base = ref_of(DType::Int64, {5}, {-3, -1, 0, 2, 7});
  const Ref ex = ref_of(DType::Int64, {5}, {3, 4, 5, 10, 2});
  check_expr({base, ex}, [](auto& x) { return power(x[0], x[1]); }, ref_of(DType::Int64, {5}, {-27, 1, 0, 1024, 49}));
  // int32 arithmetic wraps at 32 bits, as NumPy's int32 does.
  const Ref big = ref_of(DType::Int32, {3}, {2147483647.0, -2147483648.0, 5});
  check_expr({big}, [](auto& x) { return x[0] + scalar(1, DType::Int32); },
             ref_of(DType::Int32, {3}, {-2147483648.0, -2147483647.0, 6}));
  check_expr({big}, [](auto& x) { return -x[0]; }, ref_of(DType::Int32, {3}, {-2147483647.0, -2147483648.0, -5}));
  // min/max/abs/sign/square of integers stay integers.
  const Ref i = sample(DType::Int32, {3, 7});
  check_expr({i}, [](auto& x) { return abs(x[0]); }, unary_ref(i, DType::Int32, [](double p) { return std::fabs(p); }));
  check_expr({i}, [](auto& x) { return sign(x[0]); }, unary_ref(i, DType::Int32, [](double p) { return double((p > 0) - (p < 0)); }));
  check_expr({i}, [](auto& x) { return square(x[0]); }, unary_ref(i, DType::Int32, [](double p) { return p * p; }));
  check_expr({i, i}, [](auto& x) { return maximum(x[0], x[1] * 2); },
             binary_ref(i, i, DType::Int32, [](double p, double q) { return std::max(p, q * 2); }));
}

TEST(ArrayElementwise, UnaryMath) {
  const Ref a = sample(DType::Float64, {5, 6});
  const Ref pos = unary_ref(a, DType::Float64, [](double p) { return std::fabs(p) + 0.25; });
  const DType F = DType::Float64;
  struct Case {
    const char* name;
    std::function<Array(const Array&)> f;
    std::function<double(double)> ref;
    const Ref* in;
  };
  const std::vector<Case> cases = {
      {"abs", [](const Array& x) { return abs(x); }, [](double p) { return std::fabs(p); }, &a},
      {"exp", [](const Array& x) { return exp(x / 10.0); }, [](double p) { return std::exp(p / 10); }, &a},
      {"log", [](const Array& x) { return log(x); }, [](double p) { return std::log(p); }, &pos},
      {"log1p", [](const Array& x) { return log1p(x); }, [](double p) { return std::log1p(p); }, &pos},
      {"sqrt", [](const Array& x) { return sqrt(x); }, [](double p) { return std::sqrt(p); }, &pos},
      {"square", [](const Array& x) { return square(x); }, [](double p) { return p * p; }, &a},
      {"sin", [](const Array& x) { return sin(x); }, [](double p) { return std::sin(p); }, &a},
      {"cos", [](const Array& x) { return cos(x); }, [](double p) { return std::cos(p); }, &a},
      {"tan", [](const Array& x) { return tan(x / 20.0); }, [](double p) { return std::tan(p / 20); }, &a},
      {"tanh", [](const Array& x) { return tanh(x); }, [](double p) { return std::tanh(p); }, &a},
      {"floor", [](const Array& x) { return floor(x); }, [](double p) { return std::floor(p); }, &a},
      {"ceil", [](const Array& x) { return ceil(x); }, [](double p) { return std::ceil(p); }, &a},
      {"sign", [](const Array& x) { return sign(x); }, [](double p) { return double((p > 0) - (p < 0)); }, &a},
      {"neg", [](const Array& x) { return -x; }, [](double p) { return -p; }, &a},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    check_expr({*c.in}, [&](auto& x) { return c.f(x[0]); }, unary_ref(*c.in, F, c.ref), {1e-14, 1e-15});
  }
  // Transcendentals of integers compute in float64.
  const Ref i = sample(DType::Int32, {4, 4});
  check_expr({i}, [](auto& x) { return exp(x[0] / 4.0); }, unary_ref(i, F, [](double p) { return std::exp(p / 4); }), {1e-14, 0});
  check_expr({i}, [](auto& x) { return sqrt(abs(x[0])); }, unary_ref(i, F, [](double p) { return std::sqrt(std::fabs(p)); }), {1e-15, 0});
  check_expr({i}, [](auto& x) { return sin(x[0]); }, unary_ref(i, F, [](double p) { return std::sin(p); }), {1e-14, 1e-15});
}

TEST(ArrayElementwise, NanAndInfHandling) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Ref a = ref_of(DType::Float64, {6}, {1.0, nan, -inf, inf, 0.0, -2.0});
  check_expr({a}, [](auto& x) { return isnan(x[0]); }, ref_of(DType::Bool, {6}, {0, 1, 0, 0, 0, 0}));
  check_expr({a}, [](auto& x) { return isfinite(x[0]); }, ref_of(DType::Bool, {6}, {1, 0, 0, 0, 1, 1}));
  check_expr({a}, [](auto& x) { return log(x[0]); }, unary_ref(a, DType::Float64, [](double p) { return std::log(p); }));
  check_expr({a}, [](auto& x) { return sign(x[0]); }, ref_of(DType::Float64, {6}, {1, nan, -1, 1, 0, -1}));
  const Ref b = ref_of(DType::Float64, {6}, {nan, 0.0, 0.0, 5.0, nan, -3.0});
  // NaN propagates through minimum/maximum.
  check_expr({a, b}, [](auto& x) { return minimum(x[0], x[1]); }, ref_of(DType::Float64, {6}, {nan, nan, -inf, 5.0, nan, -3.0}));
  check_expr({a, b}, [](auto& x) { return maximum(x[0], x[1]); }, ref_of(DType::Float64, {6}, {nan, nan, 0.0, inf, nan, -2.0}));
  const Ref i = sample(DType::Int64, {6});
  check_expr({i}, [](auto& x) { return isnan(x[0]); }, ref_of(DType::Bool, {6}, std::vector<double>(6, 0.0)));
  check_expr({i}, [](auto& x) { return isfinite(x[0]); }, ref_of(DType::Bool, {6}, std::vector<double>(6, 1.0)));
}

TEST(ArrayElementwise, Astype) {
  const Ref f = ref_of(DType::Float64, {8}, {-2.7, -0.5, 0.0, 0.4, 1.0, 2.5, 3.9, 100.25});
  check_expr({f}, [](auto& x) { return x[0].astype(DType::Int64); }, ref_of(DType::Int64, {8}, {-2, 0, 0, 0, 1, 2, 3, 100}));
  check_expr({f}, [](auto& x) { return x[0].astype(DType::Int32); }, ref_of(DType::Int32, {8}, {-2, 0, 0, 0, 1, 2, 3, 100}));
  check_expr({f}, [](auto& x) { return x[0].astype(DType::Bool); }, ref_of(DType::Bool, {8}, {1, 1, 0, 1, 1, 1, 1, 1}));
  check_expr({f}, [](auto& x) { return x[0].astype(DType::Float32); },
             unary_ref(f, DType::Float32, [](double p) { return double(float(p)); }), {0, 0});
  const Ref i = sample(DType::Int32, {3, 5});
  check_expr({i}, [](auto& x) { return x[0].astype(DType::Float64) / 3.0; },
             unary_ref(i, DType::Float64, [](double p) { return p / 3; }));
  check_expr({i}, [](auto& x) { return x[0].astype(DType::Bool); }, unary_ref(i, DType::Bool, [](double p) { return double(p != 0); }));
  const Ref b = sample(DType::Bool, {3, 5});
  check_expr({b}, [](auto& x) { return x[0].astype(DType::Float32) * 3.0; }, unary_ref(b, DType::Float32, [](double p) { return p * 3; }));
  // Same dtype: the same array.
  Array a = to_array(f, {2});
  EXPECT_EQ(a.astype(DType::Float64).name(), a.name());
  // int64 -> int32 wraps.
  const Ref big = ref_of(DType::Int64, {2}, {4294967297.0, -4294967295.0});
  check_expr({big}, [](auto& x) { return x[0].astype(DType::Int32); }, ref_of(DType::Int32, {2}, {1, 1}));
}

TEST(ArrayElementwise, Where) {
  const Ref c = sample(DType::Bool, {4, 6}, 1);
  const Ref a = sample(DType::Float64, {4, 6}, 2);
  const Ref b = sample(DType::Float64, {4, 6}, 3);
  check_expr({c, a, b}, [](auto& x) { return where(x[0], x[1], x[2]); },
             make_ref(DType::Float64, {4, 6}, [&](auto& i) { return c.at(i) ? a.at(i) : b.at(i); }));
  // Condition computed from data, broadcast scalar branch, mixed dtypes promote.
  const Ref i = sample(DType::Int32, {4, 6});
  check_expr({a, i}, [](auto& x) { return where(x[0] > 0.0, x[1], scalar(-1.5)); },
             make_ref(DType::Float64, {4, 6}, [&](auto& k) { return a.at(k) > 0 ? i.at(k) : -1.5; }));
  check_expr({i}, [](auto& x) { return where(x[0] > 0, x[0], x[0] * -1); },
             unary_ref(i, DType::Int32, [](double p) { return std::fabs(p); }));
  // Broadcast condition (column) against a row.
  const Ref col = sample(DType::Bool, {4, 1}, 4);
  const Ref row = sample(DType::Int64, {6}, 5);
  check_expr({col, row, a}, [](auto& x) { return where(x[0], x[1], x[2]); },
             make_ref(DType::Float64, {4, 6}, [&](auto& k) { return col.at({k[0], 0}) ? row.at({k[1]}) : a.at(k); }));
}

TEST(ArrayElementwise, WhereAndLogicalOpsTakeTheTruthOfNumbers) {
  // numpy 2.4.6: np.where([nan, 0., -2., 0.5], 1, 0) = [1, 0, 1, 1]; np.where of int64 [0, 3, 0, -1]
  // likewise; np.logical_and([nan, 0., 2.], [1., 1., 0.]) = [T, F, F]; np.logical_not([0., nan]) = [T, F].
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Ref f = ref_of(DType::Float64, {4}, {nan, 0.0, -2.0, 0.5});
  const Ref i = ref_of(DType::Int64, {4}, {0, 3, 0, -1});
  check_expr({f}, [](auto& x) { return where(x[0], scalar(1), scalar(0)); }, ref_of(DType::Int64, {4}, {1, 0, 1, 1}));
  check_expr({i}, [](auto& x) { return where(x[0], scalar(1), scalar(0)); }, ref_of(DType::Int64, {4}, {0, 1, 0, 1}));
  const Ref g = ref_of(DType::Float64, {3}, {nan, 0.0, 2.0}), h = ref_of(DType::Float64, {3}, {1.0, 1.0, 0.0});
  check_expr({g, h}, [](auto& x) { return x[0] && x[1]; }, ref_of(DType::Bool, {3}, {1, 0, 0}));
  check_expr({g, h}, [](auto& x) { return x[0] || x[1]; }, ref_of(DType::Bool, {3}, {1, 1, 1}));
  check_expr({g}, [](auto& x) { return !x[0]; }, ref_of(DType::Bool, {3}, {0, 1, 0}));
}

}  // namespace
