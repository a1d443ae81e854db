// Reductions: sum/prod/min/max/mean/var/std/any/all/argmin/argmax over all axes, single axes,
// several axes, keepdims, split_every, on float/int/bool inputs, with NumPy's result dtypes.
#include <limits>

#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

enum class R { Sum, Prod, Min, Max, Mean, Var, Std, Any, All };
const char* rname(R r) {
  static const char* n[] = {"sum", "prod", "min", "max", "mean", "var", "std", "any", "all"};
  return n[static_cast<int>(r)];
}

DType result_dtype(R r, DType in) {
  switch (r) {
    case R::Sum: case R::Prod: return is_floating(in) ? in : DType::Int64;
    case R::Min: case R::Max: return in;
    case R::Mean: case R::Var: case R::Std: return in == DType::Float32 ? DType::Float32 : DType::Float64;
    case R::Any: case R::All: return DType::Bool;
  }
  return in;
}

double fold(R r, const std::vector<double>& xs, int ddof) {
  const double n = static_cast<double>(xs.size());
  switch (r) {
    case R::Sum: { double s = 0; for (double x : xs) s += x; return s; }
    case R::Prod: { double s = 1; for (double x : xs) s *= x; return s; }
    case R::Min: { double m = xs[0]; for (double x : xs) m = std::min(m, x); return m; }
    case R::Max: { double m = xs[0]; for (double x : xs) m = std::max(m, x); return m; }
    case R::Mean: { double s = 0; for (double x : xs) s += x; return s / n; }
    case R::Var: case R::Std: {
      double s = 0;
      for (double x : xs) s += x;
      const double mean = s / n;
      double m2 = 0;
      for (double x : xs) m2 += (x - mean) * (x - mean);
      const double v = m2 / (n - ddof);
      return r == R::Var ? v : std::sqrt(v);
    }
    case R::Any: { for (double x : xs) if (x != 0) return 1; return 0; }
    case R::All: { for (double x : xs) if (x == 0) return 0; return 1; }
  }
  return 0;
}

// Reference reduction over the given axes (empty: all).
Ref reduce_ref(const Ref& a, R r, std::vector<int> axes, bool keepdims, int ddof = 0) {
  const int nd = static_cast<int>(a.shape.size());
  if (axes.empty()) for (int k = 0; k < nd; ++k) axes.push_back(k);
  for (int& k : axes) if (k < 0) k += nd;
  std::vector<bool> red(nd, false);
  for (int k : axes) red[k] = true;
  Shape out, kept;
  for (int k = 0; k < nd; ++k) {
    if (!red[k]) { out.push_back(a.shape[k]); kept.push_back(a.shape[k]); }
    else if (keepdims) out.push_back(1);
  }
  Ref want{result_dtype(r, a.dtype), out, {}};
  const std::int64_t n_out = shape_size(kept);
  for (std::int64_t f = 0; f < n_out; ++f) {
    const auto o = unravel(f, kept);
    std::vector<double> xs;
    for (std::int64_t g = 0; g < a.size(); ++g) {
      const auto i = unravel(g, a.shape);
      bool match = true;
      for (int k = 0, q = 0; k < nd; ++k)
        if (!red[k]) match &= i[k] == o[q++];
      if (match) xs.push_back(a.v[g]);
    }
    double v = fold(r, xs, ddof);
    if (want.dtype == DType::Float32) v = static_cast<float>(v);
    want.v.push_back(v);
  }
  return want;
}

Array apply(R r, const Array& x, const ReduceOptions& o) {
  switch (r) {
    case R::Sum: return x.sum(o);
    case R::Prod: return x.prod(o);
    case R::Min: return x.min(o);
    case R::Max: return x.max(o);
    case R::Mean: return x.mean(o);
    case R::Var: return x.var(o);
    case R::Std: return x.std(o);
    case R::Any: return x.any(o);
    case R::All: return x.all(o);
  }
  return x;
}

const std::vector<std::vector<int>> kAxes3 = {{}, {0}, {1}, {2}, {-1}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};

void check_all_reductions(const Ref& a, Tol tol, const std::vector<R>& kinds) {
  for (R r : kinds)
    for (const auto& axes : kAxes3)
      for (bool keepdims : {false, true})
        for (int split : {0, 2}) {
          SCOPED_TRACE(::testing::Message() << rname(r) << " axes " << ::testing::PrintToString(axes) << " keepdims "
                                            << keepdims << " split_every " << split);
          ReduceOptions o;
          o.axes = axes;
          o.keepdims = keepdims;
          o.split_every = split;
          check_expr({a}, [&](auto& x) { return apply(r, x[0], o); }, reduce_ref(a, r, axes, keepdims), tol);
        }
}

TEST(ArrayReductions, Float64EveryKindAxesKeepdimsSplitEvery) {
  const Ref a = sample(DType::Float64, {4, 5, 6});
  check_all_reductions(a, {1e-11, 1e-11}, {R::Sum, R::Min, R::Max, R::Mean, R::Var, R::Std, R::Any, R::All});
  Ref small = a;
  for (double& x : small.v) x = 1.0 + x / 100.0;  // keep the product tame
  check_all_reductions(small, {1e-11, 1e-12}, {R::Prod});
}

TEST(ArrayReductions, IntegerInputsGiveNumPyDTypes) {
  const Ref a = sample(DType::Int32, {4, 5, 6});
  check_all_reductions(a, {1e-12, 1e-12}, {R::Sum, R::Min, R::Max, R::Mean, R::Var, R::Std, R::Any, R::All});
  // Spot-check the dtypes called out by NumPy.
  Array x = to_array(a, {2});
  EXPECT_EQ(x.sum().dtype(), DType::Int64);
  EXPECT_EQ(x.prod().dtype(), DType::Int64);
  EXPECT_EQ(x.mean().dtype(), DType::Float64);
  EXPECT_EQ(x.min().dtype(), DType::Int32);
  EXPECT_EQ(x.any().dtype(), DType::Bool);
  EXPECT_EQ(x.argmax().dtype(), DType::Int64);
  // Products of small integers are exact.
  const Ref p = make_ref(DType::Int64, {3, 4}, [](auto& i) { return double((i[0] + i[1]) % 3 + 1) * (i[1] % 2 ? -1 : 1); });
  for (const auto& axes : std::vector<std::vector<int>>{{}, {0}, {1}})
    check_expr({p}, [&](auto& x) { return x[0].prod({.axes = axes}); }, reduce_ref(p, R::Prod, axes, false));
}

TEST(ArrayReductions, IntegerSumIsExactBeyondFloatPrecision) {
  // 2^53 + small odd numbers: a sum through doubles would round.
  std::vector<std::int64_t> v = {(std::int64_t{1} << 53), 1, 1, 1, 3, (std::int64_t{1} << 52), 5};
  const std::int64_t want = (std::int64_t{1} << 53) + (std::int64_t{1} << 52) + 11;
  for (const auto& c : chunkings())
    for (const auto& e : executors()) {
      Block b = from_vector(v, {7}, c.spec).sum({.split_every = 2}).compute(*e.ex);
      ASSERT_EQ(b.dtype(), DType::Int64);
      EXPECT_EQ(b.data<std::int64_t>()[0], want) << c.name << " " << e.name;
      Block m = from_vector(v, {7}, c.spec).max().compute(*e.ex);
      EXPECT_EQ(m.data<std::int64_t>()[0], std::int64_t{1} << 53);
    }
}

TEST(ArrayReductions, BoolInputs) {
  const Ref b = sample(DType::Bool, {5, 7});
  for (const auto& axes : std::vector<std::vector<int>>{{}, {0}, {1}})
    for (R r : {R::Sum, R::Any, R::All, R::Mean, R::Min, R::Max}) {
      SCOPED_TRACE(rname(r));
      check_expr({b}, [&](auto& x) { return apply(r, x[0], {.axes = axes}); }, reduce_ref(b, r, axes, false));
    }
  // all() of all-true and any() of all-false.
  const Ref t = make_ref(DType::Bool, {4, 4}, [](auto&) { return 1.0; });
  check_expr({t}, [](auto& x) { return x[0].all(); }, ref_of(DType::Bool, {}, {1}));
  check_expr({t}, [](auto& x) { return (!x[0]).any(); }, ref_of(DType::Bool, {}, {0}));
}

TEST(ArrayReductions, Float32) {
  const Ref a = sample(DType::Float32, {6, 5});
  for (R r : {R::Sum, R::Min, R::Max, R::Mean, R::Std})
    for (const auto& axes : std::vector<std::vector<int>>{{}, {0}, {1}}) {
      SCOPED_TRACE(rname(r));
      check_expr({a}, [&](auto& x) { return apply(r, x[0], {.axes = axes}); }, reduce_ref(a, r, axes, false), {1e-6, 1e-6});
    }
}

TEST(ArrayReductions, VarAndStdWithDdof) {
  const Ref a = sample(DType::Float64, {6, 7});
  for (int ddof : {0, 1, 2})
    for (const auto& axes : std::vector<std::vector<int>>{{}, {0}, {1}}) {
      SCOPED_TRACE(ddof);
      check_expr({a}, [&](auto& x) { return x[0].var({.axes = axes, .ddof = ddof}); }, reduce_ref(a, R::Var, axes, false, ddof));
      check_expr({a}, [&](auto& x) { return x[0].std({.axes = axes, .split_every = 2, .ddof = ddof}); },
                 reduce_ref(a, R::Std, axes, false, ddof));
    }
  // Large offset: the merge of moments stays accurate.
  const Ref off = make_ref(DType::Float64, {40}, [](auto& i) { return 1e8 + (i[0] % 5); });
  check_expr({off}, [](auto& x) { return x[0].var(); }, ref_of(DType::Float64, {}, {2.0}), {1e-6, 0});
}

TEST(ArrayReductions, ArgminArgmax) {
  const Ref a = sample(DType::Float64, {5, 6, 4});
  auto arg_ref = [&](bool is_max, std::optional<int> axis) {
    if (!axis) {
      std::int64_t best = 0;
      for (std::int64_t g = 1; g < a.size(); ++g)
        if (is_max ? a.v[g] > a.v[best] : a.v[g] < a.v[best]) best = g;
      return ref_of(DType::Int64, {}, {double(best)});
    }
    const int ax = *axis < 0 ? *axis + 3 : *axis;
    Shape out;
    for (int k = 0; k < 3; ++k) if (k != ax) out.push_back(a.shape[k]);
    return make_ref(DType::Int64, out, [&](auto& o) {
      std::vector<std::int64_t> i(3);
      for (int k = 0, q = 0; k < 3; ++k) i[k] = k == ax ? 0 : o[q++];
      std::int64_t best = 0;
      for (std::int64_t t = 1; t < a.shape[ax]; ++t) {
        auto j = i, bj = i;
        j[ax] = t;
        bj[ax] = best;
        if (is_max ? a.at(j) > a.at(bj) : a.at(j) < a.at(bj)) best = t;
      }
      return double(best);
    });
  };
  for (std::optional<int> axis : {std::optional<int>{}, std::optional<int>{0}, std::optional<int>{1}, std::optional<int>{2},
                                  std::optional<int>{-1}})
    for (int split : {0, 2}) {
      SCOPED_TRACE(::testing::Message() << "axis " << (axis ? std::to_string(*axis) : "none") << " split " << split);
      check_expr({a}, [&](auto& x) { return x[0].argmax(axis, split); }, arg_ref(true, axis));
      check_expr({a}, [&](auto& x) { return x[0].argmin(axis, split); }, arg_ref(false, axis));
    }
}

TEST(ArrayReductions, ArgReductionsTakeReduceOptions) {
  // numpy 2.4.6: a = [[3, 1, 4], [1, 5, 9]]; a.argmin(axis=1, keepdims=True) = [[1], [0]];
  // a.argmax(keepdims=True) = [[5]]; a.argmax(axis=0) = [0, 1, 1].
  const Ref a = ref_of(DType::Int64, {2, 3}, {3, 1, 4, 1, 5, 9});
  check_expr({a}, [](auto& x) { return x[0].argmin({.axes = {1}, .keepdims = true}); },
             ref_of(DType::Int64, {2, 1}, {1, 0}));
  check_expr({a}, [](auto& x) { return x[0].argmax({.keepdims = true, .split_every = 2}); },
             ref_of(DType::Int64, {1, 1}, {5}));
  check_expr({a}, [](auto& x) { return x[0].argmax({.axes = {0}}); }, ref_of(DType::Int64, {3}, {0, 1, 1}));
  check_expr({a}, [](auto& x) { return x[0].argmin(ReduceOptions{}); }, ref_of(DType::Int64, {}, {1}));
}

TEST(ArrayReductions, ArgTiesPickTheFirstIndex) {
  // Many equal maxima spread over chunks: NumPy returns the first.
  const Ref a = make_ref(DType::Int32, {12}, [](auto& i) { return double(i[0] % 4 == 1 ? 7 : i[0] % 3); });
  check_expr({a}, [](auto& x) { return x[0].argmax(); }, ref_of(DType::Int64, {}, {1}));
  check_expr({a}, [](auto& x) { return x[0].argmin(); }, ref_of(DType::Int64, {}, {0}));
  check_expr({a}, [](auto& x) { return x[0].argmax(std::nullopt, 2); }, ref_of(DType::Int64, {}, {1}));
  // Integer extremes work (no float sentinel mixups).
  const Ref big = ref_of(DType::Int64, {4}, {-9e15, -9e15 - 2, 9e15, 9e15});
  check_expr({big}, [](auto& x) { return x[0].argmin(); }, ref_of(DType::Int64, {}, {1}));
  check_expr({big}, [](auto& x) { return x[0].argmax(); }, ref_of(DType::Int64, {}, {2}));
  // NaN wins, first occurrence.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Ref n = ref_of(DType::Float64, {7}, {1, 5, nan, 9, nan, -3, 2});
  check_expr({n}, [](auto& x) { return x[0].argmax(); }, ref_of(DType::Int64, {}, {2}));
  check_expr({n}, [](auto& x) { return x[0].argmin(); }, ref_of(DType::Int64, {}, {2}));
  check_expr({n}, [](auto& x) { return x[0].max(); }, ref_of(DType::Float64, {}, {nan}));
  check_expr({n}, [](auto& x) { return x[0].sum(); }, ref_of(DType::Float64, {}, {nan}));
}

TEST(ArrayReductions, OfFusedExpressions) {
  const Ref a = sample(DType::Float64, {9, 8}, 1);
  const Ref b = sample(DType::Float64, {9, 8}, 2);
  const Ref expr = make_ref(DType::Float64, {9, 8}, [&](auto& i) { return a.at(i) * b.at(i) - 1; });
  check_expr({a, b}, [](auto& x) { return (x[0] * x[1] - 1.0).mean({.axes = {1}}); }, reduce_ref(expr, R::Mean, {1}, false));
  // Reduce a slice with negative steps, then reduce again.
  check_expr({a}, [](auto& x) { return x[0][{step(-2), slice(1, 7)}].sum({.axes = {0}}).max(); },
             ref_of(DType::Float64, {}, {[&] {
                      double best = -1e300;
                      for (int c = 1; c < 7; ++c) {
                        double s = 0;
                        for (int r = 8; r >= 0; r -= 2) s += a.at({r, c});
                        best = std::max(best, s);
                      }
                      return best;
                    }()}));
  // Comparisons counted: (x > 0).sum().
  double pos = 0;
  for (double x : a.v) pos += x > 0;
  check_expr({a}, [](auto& x) { return (x[0] > 0.0).sum(); }, ref_of(DType::Int64, {}, {pos}));
  // Reduction of a reduction result combined element-wise: x - x.mean(axis 0, keepdims).
  const Ref m = reduce_ref(a, R::Mean, {0}, true);
  check_expr({a}, [](auto& x) { return x[0] - x[0].mean({.axes = {0}, .keepdims = true}); },
             make_ref(DType::Float64, {9, 8}, [&](auto& i) { return a.at(i) - m.at({0, i[1]}); }));
}

TEST(ArrayReductions, ManyChunksDeepTree) {
  // 1-element chunks with split_every 2: a tree several levels deep.
  const Ref a = sample(DType::Int64, {37});
  for (int split : {2, 3, 8}) {
    Array x = to_array(a, {1});
    const Ref want = reduce_ref(a, R::Sum, {}, false);
    for (const auto& e : executors()) EXPECT_TRUE(block_matches(x.sum({.split_every = split}).compute(*e.ex), want));
    EXPECT_TRUE(block_matches(compute_sync(x.var({.split_every = split})), reduce_ref(a, R::Var, {}, false)));
  }
  EXPECT_THROW(to_array(a, {1}).sum({.split_every = 1}), Error);
}

TEST(ArrayReductions, ShapesAndChunksOfResults) {
  Array x = zeros({6, 8, 10}, {2, 3, 4});
  EXPECT_EQ(x.sum({.axes = {1}}).shape(), (Shape{6, 10}));
  EXPECT_EQ(x.sum({.axes = {1}}).chunks(), (Chunks{{2, 2, 2}, {4, 4, 2}}));
  EXPECT_EQ(x.sum({.axes = {0, 2}, .keepdims = true}).shape(), (Shape{1, 8, 1}));
  EXPECT_EQ(x.sum().shape(), Shape{});
  EXPECT_EQ(x.argmax(1).shape(), (Shape{6, 10}));
  EXPECT_THROW(x.sum({.axes = {3}}), ShapeError);
  EXPECT_THROW(x.sum({.axes = {-4}}), ShapeError);
  EXPECT_THROW(x.sum({.axes = {1, 1}}), ShapeError);
  EXPECT_THROW(x.argmax(5), ShapeError);
}

TEST(ArrayReductions, EmptyInputs) {
  Array e = arange(5, 5, 1, 2, DType::Float64);
  EXPECT_EQ(compute_sync(e.sum()).item(), 0.0);
  EXPECT_EQ(compute_sync(e.prod()).item(), 1.0);
  EXPECT_THROW(e.max(), Error);
  EXPECT_THROW(e.argmin(), Error);
}

}  // namespace
