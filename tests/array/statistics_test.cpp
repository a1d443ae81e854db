// median/nanmedian, quantile/percentile (every method, several axes, keepdims), average,
// cov/corrcoef, histogram and bincount against plain loops and NumPy's documented values.
#include <algorithm>
#include <cmath>
#include <limits>

#include "array_test_util.hpp"
#include "slice_reference.hpp"

using namespace tessera_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median_of(std::vector<double> v) {
  for (double x : v)
    if (x != x) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/** NumPy's quantile methods on a sorted vector without NaN. */
double quantile_of(std::vector<double> v, double q, const std::string& method) {
  std::sort(v.begin(), v.end());
  const double vi = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(vi));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double g = vi - std::floor(vi);
  if (method == "lower") return v[lo];
  if (method == "higher") return g > 0 ? v[hi] : v[lo];
  if (method == "nearest") return v[static_cast<std::size_t>(std::nearbyint(vi))];
  if (method == "midpoint") return g > 0 ? (v[lo] + v[hi]) / 2 : v[lo];
  return v[lo] + (v[hi] - v[lo]) * g;
}

}  // namespace

TEST(ArrayStatistics, MedianAlongAxesWithKeepdims) {
  const Ref a = sample(DType::Float64, {4, 5, 6});
  for (const auto& axes : std::vector<std::vector<int>>{{}, {0}, {1}, {2}, {0, 2}, {1, 2}})
    for (bool keepdims : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "axes " << ::testing::PrintToString(axes) << " keepdims " << keepdims);
      check_expr({a}, [&](auto& x) { return median(x[0], axes, keepdims); },
                 slice_ref(a, axes, keepdims, DType::Float64, median_of));
    }
  const Ref i = sample(DType::Int32, {5, 4});
  check_expr({i}, [](auto& x) { return median(x[0], {0}); }, slice_ref(i, {0}, false, DType::Float64, median_of));
}

TEST(ArrayStatistics, NanMedianSkipsNaNAndMedianPropagatesIt) {
  const Ref a = ref_of(DType::Float64, {3, 4}, {1, kNaN, 3, 2, kNaN, kNaN, kNaN, kNaN, 5, 4, kNaN, 7});
  check_expr({a}, [](auto& x) { return nanmedian(x[0], {1}); }, ref_of(DType::Float64, {3}, {2, kNaN, 5}));
  check_expr({a}, [](auto& x) { return median(x[0], {1}); }, ref_of(DType::Float64, {3}, {kNaN, kNaN, kNaN}));
  check_expr({a}, [](auto& x) { return nanmedian(x[0]); }, ref_of(DType::Float64, {}, {3.5}));
}

TEST(ArrayStatistics, QuantileEveryMethod) {
  const Ref a = sample(DType::Float64, {3, 7});
  const std::vector<double> qs = {0, 0.1, 0.25, 0.5, 0.9, 1};
  for (const std::string method : {"linear", "lower", "higher", "nearest", "midpoint"}) {
    SCOPED_TRACE(method);
    Ref want{DType::Float64, {static_cast<std::int64_t>(qs.size()), 3}, {}};
    for (double q : qs)
      for (int r = 0; r < 3; ++r)
        want.v.push_back(quantile_of(std::vector<double>(a.v.begin() + r * 7, a.v.begin() + r * 7 + 7), q, method));
    check_expr({a}, [&](auto& x) { return quantile(x[0], qs, {.axes = {1}, .method = method}); }, want);
    Ref pct = want;
    check_expr({a}, [&](auto& x) {
      std::vector<double> p;
      for (double q : qs) p.push_back(q * 100);
      return percentile(x[0], p, {.axes = {1}, .method = method});
    }, pct, {1e-12, 1e-12});
  }
  // One q selects instead of sorting: every method, odd and even slice lengths, with NaN.
  for (const std::string method : {"linear", "lower", "higher", "nearest", "midpoint"})
    for (double q : {0.0, 0.3, 0.5, 0.77, 1.0})
      for (std::int64_t n : {6, 7}) {
        SCOPED_TRACE(::testing::Message() << method << " q " << q << " n " << n);
        Ref b = sample(DType::Float64, {2, n}, 5);
        b.v[1] = kNaN;
        Ref want{DType::Float64, {2}, {kNaN, quantile_of(std::vector<double>(b.v.begin() + n, b.v.end()), q, method)}};
        check_expr({b}, [&](auto& x) { return quantile(x[0], q, {.axes = {1}, .method = method}); }, want);
        want.v[0] = quantile_of(without_nan(std::vector<double>(b.v.begin(), b.v.begin() + n)), q, method);
        check_expr({b}, [&](auto& x) { return nanquantile(x[0], q, {.axes = {1}, .method = method}); }, want);
      }
  // One q: no q axis; over all axes: a scalar.
  check_expr({a}, [](auto& x) { return quantile(x[0], 0.3); },
             ref_of(DType::Float64, {}, {quantile_of(a.v, 0.3, "linear")}));
  EXPECT_THROW(quantile(to_array(a, {2}), 1.5), Error);
  EXPECT_THROW(percentile(to_array(a, {2}), 50.0, {.method = "cubic"}), Error);
}

TEST(ArrayStatistics, PercentileOfIntegersAndNanPercentile) {
  // np.percentile(np.arange(10), [25, 50, 90]) -> [2.25, 4.5, 8.1]
  const Ref a = make_ref(DType::Int64, {10}, [](auto& i) { return static_cast<double>(i[0]); });
  check_expr({a}, [](auto& x) { return percentile(x[0], std::vector<double>{25, 50, 90}); },
             ref_of(DType::Float64, {3}, {2.25, 4.5, 8.1}), {1e-12, 1e-12});
  // method="lower" keeps the integer dtype.
  check_expr({a}, [](auto& x) { return percentile(x[0], 55.0, {.method = "lower"}); }, ref_of(DType::Int64, {}, {4}));
  const Ref n = ref_of(DType::Float64, {5}, {kNaN, 1, 4, kNaN, 2});
  check_expr({n}, [](auto& x) { return nanpercentile(x[0], 50.0); }, ref_of(DType::Float64, {}, {2}));
  check_expr({n}, [](auto& x) { return nanquantile(x[0], std::vector<double>{0, 1}); }, ref_of(DType::Float64, {2}, {1, 4}));
}

TEST(ArrayStatistics, AverageWithWeightsAndReturned) {
  const Ref a = sample(DType::Float64, {4, 6});
  const Ref w = make_ref(DType::Float64, {6}, [](auto& i) { return 1.0 + static_cast<double>(i[0]); });
  Ref want{DType::Float64, {4}, {}};
  for (int r = 0; r < 4; ++r) {
    double s = 0, sw = 0;
    for (int c = 0; c < 6; ++c) {
      s += a.v[static_cast<std::size_t>(r * 6 + c)] * w.v[static_cast<std::size_t>(c)];
      sw += w.v[static_cast<std::size_t>(c)];
    }
    want.v.push_back(s / sw);
  }
  check_expr({a, w}, [](auto& x) { return average(x[0], 1, x[1]); }, want, {1e-12, 1e-12});
  check_expr({a, w}, [](auto& x) { return average_returned(x[0], 1, x[1]).second; }, ref_of(DType::Float64, {4}, {21, 21, 21, 21}));
  const Ref i = sample(DType::Int32, {3, 4});
  check_expr({i}, [](auto& x) { return average(x[0]); },
             ref_of(DType::Float64, {}, {[&] { double s = 0; for (double v : i.v) s += v; return s / 12; }()}), {1e-12, 1e-12});
  EXPECT_THROW(average(to_array(a, {2}), std::nullopt, to_array(w, {2})), ShapeError);
}

TEST(ArrayStatistics, CovAndCorrcoefAsNumPy) {
  // np.cov([[0, 1, 2], [2, 1, 0]]) -> [[1, -1], [-1, 1]]
  const Ref m = ref_of(DType::Int64, {2, 3}, {0, 1, 2, 2, 1, 0});
  check_expr({m}, [](auto& x) { return cov(x[0]); }, ref_of(DType::Float64, {2, 2}, {1, -1, -1, 1}), {1e-12, 1e-12});
  check_expr({m}, [](auto& x) { return cov(x[0], std::nullopt, true, true); },
             ref_of(DType::Float64, {2, 2}, {2.0 / 3, -2.0 / 3, -2.0 / 3, 2.0 / 3}), {1e-12, 1e-12});
  // rowvar=false: columns are variables.
  const Ref a = sample(DType::Float64, {6, 3});
  Ref want{DType::Float64, {3, 3}, {}};
  std::vector<double> mean(3, 0);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 3; ++c) mean[static_cast<std::size_t>(c)] += a.v[static_cast<std::size_t>(r * 3 + c)] / 6;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int r = 0; r < 6; ++r)
        s += (a.v[static_cast<std::size_t>(r * 3 + i)] - mean[static_cast<std::size_t>(i)]) *
             (a.v[static_cast<std::size_t>(r * 3 + j)] - mean[static_cast<std::size_t>(j)]);
      want.v.push_back(s / 5);
    }
  check_expr({a}, [](auto& x) { return cov(x[0], std::nullopt, false); }, want, {1e-11, 1e-12});
  Ref corr = want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      corr.v[static_cast<std::size_t>(i * 3 + j)] =
          want.v[static_cast<std::size_t>(i * 3 + j)] /
          std::sqrt(want.v[static_cast<std::size_t>(i * 4)] * want.v[static_cast<std::size_t>(j * 4)]);
  check_expr({a}, [](auto& x) { return corrcoef(x[0], std::nullopt, false); }, corr, {1e-11, 1e-12});
  // Two 1-d variables: x and y stacked.
  const Ref x = ref_of(DType::Float64, {4}, {1, 2, 3, 4});
  const Ref y = ref_of(DType::Float64, {4}, {2, 4, 6, 9});
  const Block c = corrcoef(to_array(x, {2}), to_array(y, {3})).compute();
  ASSERT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_DOUBLE_EQ(c.data<double>()[0], 1.0);
  EXPECT_NEAR(c.data<double>()[1], 0.99, 0.01);
  EXPECT_EQ(cov(to_array(x, {2})).ndim(), 0);
}

TEST(ArrayStatistics, HistogramCountsEdgesWeightsDensity) {
  const Ref a = ref_of(DType::Float64, {2, 5}, {0, 0.5, 1, 1.5, 2, 2.5, 3, 3, -1, 4});
  // np.histogram(a, bins=3, range=(0, 3)) -> [2, 2, 4], edges [0, 1, 2, 3]
  check_expr({a}, [](auto& x) { return histogram(x[0], 3, {0.0, 3.0}).counts; }, ref_of(DType::Int64, {3}, {2, 2, 4}));
  const Histogram h = histogram(to_array(a, {2}), 3, {0.0, 3.0});
  EXPECT_TRUE(block_matches(h.edges.compute(), ref_of(DType::Float64, {4}, {0, 1, 2, 3})));
  // Given edges; the last bin is closed.
  check_expr({a}, [](auto& x) { return histogram(x[0], std::vector<double>{-1, 0, 2, 4}).counts; },
             ref_of(DType::Int64, {3}, {1, 4, 5}));
  // Weights and density.
  const Ref w = make_ref(DType::Float64, {2, 5}, [](auto& i) { return 1.0 + static_cast<double>(i[1]); });
  check_expr({a, w}, [](auto& x) { return histogram(x[0], 3, {0.0, 3.0}, x[1]).counts; },
             ref_of(DType::Float64, {3}, {1 + 2, 3 + 4, 5 + 1 + 2 + 3}));
  check_expr({a}, [](auto& x) { return histogram(x[0], std::vector<double>{0, 1, 3}, std::nullopt, true).counts; },
             ref_of(DType::Float64, {2}, {2.0 / 8 / 1, 6.0 / 8 / 2}), {1e-12, 1e-12});
  EXPECT_THROW(histogram(to_array(a, {2}), std::vector<double>{0, 2, 1}), Error);
}

TEST(ArrayStatistics, BincountWithMinlengthAndWeights) {
  const Ref x = ref_of(DType::Int64, {7}, {0, 1, 1, 3, 2, 1, 7});
  check_expr({x}, [](auto& a) { return bincount(a[0]); }, ref_of(DType::Int64, {8}, {1, 3, 1, 1, 0, 0, 0, 1}));
  check_expr({x}, [](auto& a) { return bincount(a[0], std::nullopt, 10); },
             ref_of(DType::Int64, {10}, {1, 3, 1, 1, 0, 0, 0, 1, 0, 0}));
  const Ref w = ref_of(DType::Float64, {7}, {0.3, 0.5, 0.2, 0.7, 1., -0.6, 0.1});
  check_expr({x, w}, [](auto& a) { return bincount(a[0], a[1]); },
             ref_of(DType::Float64, {8}, {0.3, 0.1, 1, 0.7, 0, 0, 0, 0.1}), {1e-12, 1e-12});
  // A negative value fails the task (the maximum, computed first, is not negative here) ...
  EXPECT_THROW(bincount(from_vector(std::vector<std::int64_t>{1, -2}, {2}, {1})).compute(), Error);
  // ... or the build, when the maximum is.
  EXPECT_THROW(bincount(from_vector(std::vector<std::int64_t>{-1, -2}, {2}, {1})), Error);
  EXPECT_THROW(bincount(to_array(w, {2})), DTypeError);
}

namespace {

/** An executor that fails the test if anything is computed with it. */
struct RefusingExecutor : Executor {
  std::vector<Value> get(const Graph&, const std::vector<Key>&) override {
    ADD_FAILURE() << "computed eagerly";
    throw Error("refusing executor");
  }
  std::string name() const override { return "refusing"; }
};

int ops_named(const Array& a, const std::string& op) {
  int n = 0;
  const Graph g = a.to_graph(nullptr);
  for (const auto& [key, t] : g.tasks()) n += t.op == op;
  return n;
}

}  // namespace

TEST(ArrayStatistics, CountsOfAGeneratedArrayAreDrawnWhereTheyAreCounted) {
  // A generator's chunks are drawn in pieces by the counting tasks (count_generated); the counts
  // equal those of the same values made into blocks first (x + 0 is not a generator).
  for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{700, 333}, ChunkSpec{64}}) {
    const Array x = random::uniform(7, -0.2, 1.2, {1000, 900}, c);
    const Array h = histogram(x, 37, {0.0, 1.0}).counts;
    EXPECT_EQ(ops_named(h, "tessera.array.count_generated"), static_cast<int>(x.num_chunks()));
    EXPECT_EQ(ops_named(histogram(x + 0.0, 37, {0.0, 1.0}).counts, "tessera.array.count_generated"), 0);
    const Block got = h.compute(), want = histogram(x + 0.0, 37, {0.0, 1.0}).counts.compute();
    EXPECT_EQ(got.to_doubles(), want.to_doubles());
    const Block uneven = histogram(x, std::vector<double>{-1, 0, 0.1, 0.5, 2}).counts.compute();
    EXPECT_EQ(uneven.to_doubles(), histogram(x + 0.0, std::vector<double>{-1, 0, 0.1, 0.5, 2}).counts.compute().to_doubles());
  }
  const Array i = random::integers(3, 0, 50, {100000}, {30000});
  const Array counts = bincount(i, std::nullopt, 50);
  EXPECT_EQ(ops_named(counts, "tessera.array.count_generated"), 4);
  const Block got = counts.compute(), want = bincount(i + std::int64_t{0}, std::nullopt, 50).compute();
  EXPECT_EQ(got.to_doubles(), want.to_doubles());
  double total = 0;
  for (double v : got.to_doubles()) total += v;
  EXPECT_EQ(total, 100000.0);
}

TEST(ArrayStatistics, BincountOfBoundedIntegersNeedsNoPassForItsLength) {
  RefusingExecutor refuse;
  // integers in [2, 9) with minlength 9: every value is below 9, nothing is computed to know it.
  const Array x = random::integers(5, 2, 9, {5000}, {1000});
  const Array b = bincount(x, std::nullopt, 9, refuse);
  EXPECT_EQ(b.shape(), (Shape{9}));
  const auto v = b.compute().to_doubles();
  EXPECT_EQ(v[0] + v[1], 0.0);
  for (int k = 2; k < 9; ++k) EXPECT_GT(v[static_cast<std::size_t>(k)], 0.0);
  // A minlength below the range's top: the largest value is computed (length max + 1).
  const Array y = random::integers(5, 0, 20, {5000}, {1000});
  EXPECT_EQ(bincount(y, std::nullopt, 5).shape(), (Shape{20}));
}
