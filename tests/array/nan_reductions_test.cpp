// NaN-aware reductions, count_nonzero and ptp against loops over each slice, for several axes,
// keepdims and chunkings, on both local executors; all-NaN slices give NumPy's results.
#include <cmath>
#include <limits>

#include "array_test_util.hpp"
#include "slice_reference.hpp"

using namespace tessera_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/** sample() with NaN at some places, and one all-NaN row (index 1 on axis 0, 0 on axis 1). */
Ref with_nans(Shape s) {
  Ref a = sample(DType::Float64, s);
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const auto idx = unravel(i, a.shape);
    if (i % 5 == 2 || (idx[0] == 1 && idx[1] == 0)) a.v[static_cast<std::size_t>(i)] = kNaN;
  }
  return a;
}

double sum(const std::vector<double>& xs) {
  double s = 0;
  for (double x : xs) s += x;
  return s;
}

const std::vector<std::vector<int>> kAxes = {{}, {0}, {1}, {2}, {0, 2}};

}  // namespace

TEST(ArrayNanReductions, SumProdMinMaxMeanVarStdSkipNaN) {
  const Ref a = with_nans({3, 4, 5});
  for (const auto& axes : kAxes)
    for (bool keepdims : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "axes " << ::testing::PrintToString(axes) << " keepdims " << keepdims);
      const ReduceOptions o{.axes = axes, .keepdims = keepdims};
      check_expr({a}, [&](auto& x) { return nansum(x[0], o); },
                 slice_ref(a, axes, keepdims, DType::Float64, [](auto& xs) { return sum(without_nan(xs)); }), {1e-12, 1e-12});
      check_expr({a}, [&](auto& x) { return nanprod(x[0] / 10.0 + 1.0, o); },
                 slice_ref(a, axes, keepdims, DType::Float64, [](auto& xs) {
                   double p = 1;
                   for (double v : without_nan(xs)) p *= v / 10.0 + 1.0;
                   return p;
                 }), {1e-12, 1e-12});
      check_expr({a}, [&](auto& x) { return nanmin(x[0], o); },
                 slice_ref(a, axes, keepdims, DType::Float64, [](auto& xs) {
                   const auto v = without_nan(xs);
                   return v.empty() ? kNaN : *std::min_element(v.begin(), v.end());
                 }));
      check_expr({a}, [&](auto& x) { return nanmax(x[0], o); },
                 slice_ref(a, axes, keepdims, DType::Float64, [](auto& xs) {
                   const auto v = without_nan(xs);
                   return v.empty() ? kNaN : *std::max_element(v.begin(), v.end());
                 }));
      check_expr({a}, [&](auto& x) { return nanmean(x[0], o); },
                 slice_ref(a, axes, keepdims, DType::Float64, [](auto& xs) {
                   const auto v = without_nan(xs);
                   return sum(v) / static_cast<double>(v.size());
                 }), {1e-12, 1e-12});
      for (int ddof : {0, 1}) {
        auto var = [ddof](const std::vector<double>& xs) {
          const auto v = without_nan(xs);
          const double n = static_cast<double>(v.size());
          if (n - ddof <= 0) return kNaN;
          const double m = sum(v) / n;
          double ss = 0;
          for (double x : v) ss += (x - m) * (x - m);
          return ss / (n - ddof);
        };
        ReduceOptions od = o;
        od.ddof = ddof;
        check_expr({a}, [&](auto& x) { return nanvar(x[0], od); }, slice_ref(a, axes, keepdims, DType::Float64, var),
                   {1e-11, 1e-12});
        check_expr({a}, [&](auto& x) { return nanstd(x[0], od); },
                   slice_ref(a, axes, keepdims, DType::Float64, [&](auto& xs) { return std::sqrt(var(xs)); }), {1e-11, 1e-12});
      }
    }
}

TEST(ArrayNanReductions, AllNaNSlicesGiveNumPysResults) {
  const Ref a = ref_of(DType::Float64, {2, 3}, {kNaN, kNaN, kNaN, 1, kNaN, 3});
  const ReduceOptions o{.axes = {1}};
  check_expr({a}, [&](auto& x) { return nansum(x[0], o); }, ref_of(DType::Float64, {2}, {0, 4}));
  check_expr({a}, [&](auto& x) { return nanprod(x[0], o); }, ref_of(DType::Float64, {2}, {1, 3}));
  check_expr({a}, [&](auto& x) { return nanmin(x[0], o); }, ref_of(DType::Float64, {2}, {kNaN, 1}));
  check_expr({a}, [&](auto& x) { return nanmax(x[0], o); }, ref_of(DType::Float64, {2}, {kNaN, 3}));
  check_expr({a}, [&](auto& x) { return nanmean(x[0], o); }, ref_of(DType::Float64, {2}, {kNaN, 2}));
  check_expr({a}, [&](auto& x) { return nanvar(x[0], o); }, ref_of(DType::Float64, {2}, {kNaN, 1}));
  check_expr({a}, [&](auto& x) { return nanargmin(x[0], 1); }, ref_of(DType::Int64, {2}, {-1, 0}));
  check_expr({a}, [&](auto& x) { return nanargmax(x[0], 1); }, ref_of(DType::Int64, {2}, {-1, 2}));
  check_expr({a}, [&](auto& x) { return nanargmax(x[0]); }, ref_of(DType::Int64, {}, {5}));
}

TEST(ArrayNanReductions, ArgMinMaxSkipNaN) {
  const Ref a = with_nans({4, 6, 3});
  for (int axis : {0, 1, 2}) {
    auto arg = [&](bool is_min) {
      Shape out;
      for (int k = 0; k < 3; ++k)
        if (k != axis) out.push_back(a.shape[static_cast<std::size_t>(k)]);
      Ref want{DType::Int64, out, {}};
      for (std::int64_t f = 0; f < shape_size(out); ++f) {
        const auto o = unravel(f, out);
        std::int64_t best = -1;
        double bv = 0;
        for (std::int64_t j = 0; j < a.shape[static_cast<std::size_t>(axis)]; ++j) {
          std::vector<std::int64_t> i(o.begin(), o.end());
          i.insert(i.begin() + axis, j);
          const double v = a.at(i);
          if (v != v) continue;
          if (best < 0 || (is_min ? v < bv : v > bv)) { best = j; bv = v; }
        }
        want.v.push_back(static_cast<double>(best));
      }
      return want;
    };
    check_expr({a}, [&](auto& x) { return nanargmin(x[0], axis); }, arg(true));
    check_expr({a}, [&](auto& x) { return nanargmax(x[0], axis, 2); }, arg(false));
  }
}

TEST(ArrayNanReductions, IntegersAreThePlainReductions) {
  const Ref a = sample(DType::Int32, {4, 5});
  check_expr({a}, [](auto& x) { return nansum(x[0]); }, slice_ref(a, {}, false, DType::Int64, sum));
  check_expr({a}, [](auto& x) { return nanmax(x[0], {.axes = {0}}); },
             slice_ref(a, {0}, false, DType::Int32, [](auto& xs) { return *std::max_element(xs.begin(), xs.end()); }));
  EXPECT_EQ(nanmean(to_array(a, {2})).dtype(), DType::Float64);
}

TEST(ArrayNanReductions, Float32KeepsItsDType) {
  Ref a = sample(DType::Float32, {6, 4});
  a.v[3] = kNaN;
  const Array x = to_array(a, {4});
  EXPECT_EQ(nanmean(x).dtype(), DType::Float32);
  EXPECT_EQ(nanvar(x).dtype(), DType::Float32);
  EXPECT_EQ(nanstd(x, {.axes = {0}}).dtype(), DType::Float32);
  check_expr({a}, [](auto& x) { return nanmean(x[0], {.axes = {1}}); },
             slice_ref(a, {1}, false, DType::Float32, [](auto& xs) {
               const auto v = without_nan(xs);
               return sum(v) / static_cast<double>(v.size());
             }), {1e-6, 1e-6});
}

TEST(ArrayNanReductions, CountNonzeroAndPtp) {
  Ref a = sample(DType::Float64, {4, 5, 3});
  a.v[7] = 0;
  a.v[8] = kNaN;  // NaN is nonzero
  for (const auto& axes : kAxes) {
    check_expr({a}, [&](auto& x) { return count_nonzero(x[0], {.axes = axes}); },
               slice_ref(a, axes, false, DType::Int64, [](auto& xs) {
                 double n = 0;
                 for (double v : xs) n += v != 0;
                 return n;
               }));
  }
  const Ref b = sample(DType::Int32, {4, 5});
  check_expr({b}, [](auto& x) { return ptp(x[0], {.axes = {1}, .keepdims = true}); },
             slice_ref(b, {1}, true, DType::Int32, [](auto& xs) {
               return *std::max_element(xs.begin(), xs.end()) - *std::min_element(xs.begin(), xs.end());
             }));
  EXPECT_THROW(ptp(to_array(sample(DType::Bool, {3}), {2})), DTypeError);
}
