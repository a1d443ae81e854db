// sort/argsort along each axis (NaN last), topk/argtopk through multi-level trees, unique with
// counts, isin, searchsorted and digitize, against plain loops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool less_nan_last(double a, double b) { return a < b || (std::isnan(b) && !std::isnan(a)); }

/** For every 1-d line along axis: f(values) -> new values of length m (shape updated). */
Ref per_line(const Ref& a, int axis, DType out, std::int64_t m,
             const std::function<std::vector<double>(const std::vector<double>&)>& f) {
  Shape s = a.shape;
  s[static_cast<std::size_t>(axis)] = m;
  Ref r{out, s, std::vector<double>(static_cast<std::size_t>(shape_size(s)))};
  const auto n = a.shape[static_cast<std::size_t>(axis)];
  for (std::int64_t g = 0; g < a.size(); ++g) {
    auto idx = unravel(g, a.shape);
    if (idx[static_cast<std::size_t>(axis)] != 0) continue;
    std::vector<double> line;
    for (std::int64_t j = 0; j < n; ++j) {
      idx[static_cast<std::size_t>(axis)] = j;
      line.push_back(a.at(idx));
    }
    const auto res = f(line);
    for (std::int64_t j = 0; j < m; ++j) {
      idx[static_cast<std::size_t>(axis)] = j;
      std::int64_t o = 0;
      for (std::size_t k = 0; k < idx.size(); ++k) o = o * s[k] + idx[k];
      r.v[static_cast<std::size_t>(o)] = res[static_cast<std::size_t>(j)];
    }
  }
  return r;
}

std::vector<double> argsorted(const std::vector<double>& line) {
  std::vector<double> idx(line.size());
  std::iota(idx.begin(), idx.end(), 0.0);
  std::stable_sort(idx.begin(), idx.end(), [&](double i, double j) {
    return less_nan_last(line[static_cast<std::size_t>(i)], line[static_cast<std::size_t>(j)]);
  });
  return idx;
}

/** topk / argtopk reference of one line. */
std::vector<double> top(const std::vector<double>& line, std::int64_t k, bool arg) {
  std::vector<double> idx(line.size());
  std::iota(idx.begin(), idx.end(), 0.0);
  std::stable_sort(idx.begin(), idx.end(), [&](double i, double j) {
    const double a = line[static_cast<std::size_t>(i)], b = line[static_cast<std::size_t>(j)];
    return k > 0 ? (a > b || (std::isnan(b) && !std::isnan(a))) : less_nan_last(a, b);
  });
  idx.resize(static_cast<std::size_t>(k < 0 ? -k : k));
  if (!arg)
    for (double& v : idx) v = line[static_cast<std::size_t>(v)];
  return idx;
}

}  // namespace

TEST(ArraySort, SortAndArgsortAlongEveryAxisNaNLast) {
  Ref a = sample(DType::Float64, {5, 4, 6});
  a.v[3] = kNaN;
  a.v[40] = kNaN;
  for (int axis : {0, 1, 2, -1}) {
    const int ax = axis < 0 ? 2 : axis;
    SCOPED_TRACE(::testing::Message() << "axis " << axis);
    check_expr({a}, [&](auto& x) { return sort(x[0], axis); },
               per_line(a, ax, DType::Float64, a.shape[static_cast<std::size_t>(ax)], [](auto line) {
                 std::stable_sort(line.begin(), line.end(), less_nan_last);
                 return line;
               }));
    check_expr({a}, [&](auto& x) { return argsort(x[0], axis); },
               per_line(a, ax, DType::Int64, a.shape[static_cast<std::size_t>(ax)], argsorted));
  }
  // Integers keep their dtype; argsort is stable on ties.
  const Ref i = sample(DType::Int32, {3, 9});
  check_expr({i}, [](auto& x) { return sort(x[0]); }, per_line(i, 1, DType::Int32, 9, [](auto line) {
               std::sort(line.begin(), line.end());
               return line;
             }));
  check_expr({i}, [](auto& x) { return argsort(x[0], 0); }, per_line(i, 0, DType::Int64, 3, argsorted));
}

TEST(ArraySort, TopkAndArgtopkThroughATree) {
  const Ref a = sample(DType::Float64, {4, 23});
  for (std::int64_t k : {1, 3, -2, 5}) {
    for (int split : {0, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << "k " << k << " split_every " << split);
      const std::int64_t m = k < 0 ? -k : k;
      check_expr({a}, [&](auto& x) { return topk(x[0], k, -1, split); },
                 per_line(a, 1, DType::Float64, m, [&](auto& line) { return top(line, k, false); }));
      check_expr({a}, [&](auto& x) { return argtopk(x[0], k, 1, split); },
                 per_line(a, 1, DType::Int64, m, [&](auto& line) { return top(line, k, true); }));
    }
  }
  // Along axis 0 of an int array.
  const Ref i = sample(DType::Int64, {11, 3});
  check_expr({i}, [](auto& x) { return topk(x[0], 4, 0, 2); },
             per_line(i, 0, DType::Int64, 4, [](auto& line) { return top(line, 4, false); }));
  check_expr({i}, [](auto& x) { return argtopk(x[0], -3, 0, 2); },
             per_line(i, 0, DType::Int64, 3, [](auto& line) { return top(line, -3, true); }));
  EXPECT_THROW(topk(to_array(a, {5}), 0), Error);
  EXPECT_THROW(topk(to_array(a, {5}), 24), ShapeError);
}

TEST(ArraySort, UniqueValuesAndCountsCollapseNaN) {
  const Ref a = ref_of(DType::Float64, {3, 4}, {3, 1, kNaN, 2, 1, 3, kNaN, 0, 2, 2, 5, 1});
  for (const auto& c : chunkings()) {
    for (const auto& e : executors()) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << e.name);
      const UniqueResult u = unique(to_array(a, c.spec), *e.ex, 2);
      EXPECT_TRUE(block_matches(u.values.compute(), ref_of(DType::Float64, {6}, {0, 1, 2, 3, 5, kNaN})));
      EXPECT_TRUE(block_matches(u.counts.compute(), ref_of(DType::Int64, {6}, {1, 3, 3, 2, 1, 2})));
    }
  }
  // Integers beyond 2^53 stay exact.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const UniqueResult u = unique(from_vector(std::vector<std::int64_t>{big, big - 1, big, 7}, {4}, {1}));
  const Block v = u.values.compute();
  ASSERT_EQ(v.dtype(), DType::Int64);
  EXPECT_EQ(v.data<std::int64_t>()[0], 7);
  EXPECT_EQ(v.data<std::int64_t>()[1], big - 1);
  EXPECT_EQ(v.data<std::int64_t>()[2], big);
  EXPECT_EQ(u.counts.compute().data<std::int64_t>()[2], 2);
}

TEST(ArraySort, IsinWithNaNNeverFound) {
  const Ref x = ref_of(DType::Float64, {2, 4}, {1, 2, kNaN, 4, 5, 6, 7, 1});
  const Ref t = ref_of(DType::Int64, {2, 2}, {4, 1, 9, 6});
  check_expr({x, t}, [](auto& a) { return isin(a[0], a[1]); }, ref_of(DType::Bool, {2, 4}, {1, 0, 0, 1, 0, 1, 0, 1}));
  check_expr({x, t}, [](auto& a) { return isin(a[0], a[1], true); }, ref_of(DType::Bool, {2, 4}, {0, 1, 1, 0, 1, 0, 1, 0}));
}

TEST(ArraySort, IsinOfIntegersNarrowAndWideRanges) {
  // A narrow range of test values takes a lookup table, a wide one a binary search.
  const Ref x = ref_of(DType::Int32, {8}, {-5, 0, 3, 7, 1000000, -2000000000, 2, 3});
  const Ref narrow = ref_of(DType::Int32, {3}, {3, -5, 2});
  const Ref wide = ref_of(DType::Int32, {3}, {3, -2000000000, 1000000});
  check_expr({x, narrow}, [](auto& a) { return isin(a[0], a[1]); }, ref_of(DType::Bool, {8}, {1, 0, 1, 0, 0, 0, 1, 1}));
  check_expr({x, wide}, [](auto& a) { return isin(a[0], a[1]); }, ref_of(DType::Bool, {8}, {0, 0, 1, 0, 1, 1, 0, 1}));
  check_expr({x, narrow}, [](auto& a) { return isin(a[0], a[1], true); }, ref_of(DType::Bool, {8}, {0, 1, 0, 1, 1, 1, 0, 0}));
}

TEST(ArraySort, SearchsortedLeftAndRight) {
  const Ref a = ref_of(DType::Float64, {6}, {1, 2, 2, 3, 5, 8});
  const Ref v = ref_of(DType::Int64, {2, 4}, {0, 2, 3, 9, 5, 4, 8, 1});
  check_expr({a, v}, [](auto& x) { return searchsorted(x[0], x[1]); }, ref_of(DType::Int64, {2, 4}, {0, 1, 3, 6, 4, 4, 5, 0}));
  check_expr({a, v}, [](auto& x) { return searchsorted(x[0], x[1], "right"); },
             ref_of(DType::Int64, {2, 4}, {0, 3, 4, 6, 5, 4, 6, 1}));
  EXPECT_THROW(searchsorted(to_array(a, {2}), to_array(v, {2}), "middle"), Error);
}

TEST(ArraySort, DigitizeIncreasingAndDecreasingBins) {
  const Ref x = ref_of(DType::Float64, {7}, {-1, 0, 0.5, 1, 2.5, 4, 5});
  // np.digitize(x, [0, 1, 2.5, 4]) and right=True
  check_expr({x}, [](auto& a) { return digitize(a[0], {0, 1, 2.5, 4}); }, ref_of(DType::Int64, {7}, {0, 1, 1, 2, 3, 4, 4}));
  check_expr({x}, [](auto& a) { return digitize(a[0], {0, 1, 2.5, 4}, true); }, ref_of(DType::Int64, {7}, {0, 0, 1, 1, 2, 3, 4}));
  // np.digitize(x, [4, 2.5, 1, 0]) -> [4, 3, 3, 2, 1, 0, 0]
  check_expr({x}, [](auto& a) { return digitize(a[0], {4, 2.5, 1, 0}); }, ref_of(DType::Int64, {7}, {4, 3, 3, 2, 1, 0, 0}));
  EXPECT_THROW(digitize(to_array(x, {2}), {0, 2, 1}), Error);
}
