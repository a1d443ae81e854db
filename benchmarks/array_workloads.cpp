// benchmarks/array_workloads: common dask.array workloads nobody tuned (issue 17), one per run,
// printed as one JSON line; benchmarks/dask/array_workloads.py is the Dask side with the same
// data definitions and benchmarks/compare_array_workloads.py runs both.
//
//   array_workloads --workload NAME [--n N] [--chunk C] [--scheduler threads|sync|distributed]
//                   [--repeat K] [--workers 2 --threads 1]   (distributed: its own local cluster)
//
// Workloads (x is n x n in chunk x chunk chunks; defaults of n and chunk in brackets):
//   transpose_sum    (x + x.T).sum(),                           x uniform(0, 1)   [20000, 2000]
//   trig_chain       ((sin(x)**2 + cos(x)**2) * 3 - 2).max(),   x uniform(0, 1)   [10000, 2000]
//   matmul_sum       (x @ y).sum(),                     x, y uniform(0, 1)        [4000, 1000]
//                    (Tessera sums x's columns and y's rows first: src/array/product_sums.cpp)
//   matmul_sq_sum    ((x @ y) ** 2).sum(),              x, y uniform(0, 1)        [4000, 1000]
//                    (the whole product is needed: what a matrix product costs)
//   mean_axis0       x.mean(axis=0),                            x normal(10, 1)   [20000, 2000]
//   std_all          x.std(),                                   x normal(10, 1)   [20000, 2000]
//   rechunk_sum      x.rechunk((2C, C/2)).sum(axis=1),          x uniform(0, 1)   [20000, 2000]
//   slice_sum        x[::3, 100:-100].sum(),                    x uniform(0, 1)   [20000, 2000]
//   elementwise_exp  (exp(-x*x) / (1 + abs(x))).sum(),          x uniform(-1, 1)  [20000, 2000]
//   cumsum_sum       x.cumsum(axis=1).sum(),                    x uniform(0, 1)   [10000, 1000]
//   tensordot_sum    tensordot(x, y, axes=(0, 0)).sum(),  x, y n x n/4 uniform(0, 1)  [8000, 1000]
//   fancy_index_sum  x[idx].sum(), idx the first n/4 of a permutation of range(n) (made in the
//                    timed region, as NumPy's in the Dask script), x uniform(0, 1)    [20000, 2000]
//   mask_sum         x[x > 0.5].sum() (a boolean mask: chunks of unknown size), x uniform(0, 1) [20000, 2000]
//   histogram_counts histogram(x, bins=100, range=(0, 1)) counts,   x uniform(0, 1)  [20000, 2000]
//   topk_rows        topk(x, 10, axis=1),                       x uniform(0, 1)   [10000, 1000]
//   var_axis1        x.var(axis=1),                             x uniform(0, 1)   [20000, 2000]
//   median_axis0     median(x, axis=0),                         x uniform(0, 1)   [10000, 1000]
//   nanmean_all      nanmean(where(x < 0.1, nan, x)),           x uniform(0, 1)   [20000, 2000]
//   argmax_axis1     x.argmax(axis=1),                          x uniform(0, 1)   [20000, 2000]
//   diff_sum         diff(x, axis=1).sum(),                     x uniform(0, 1)   [20000, 2000]
//   bincount_ints    bincount(i, minlength=1000), i n*n integers in [0, 1000) in chunks of c*c [10000, 1000]
//   standardize_sum  ((x - x.mean(axis=0)) / x.std(axis=0)).sum(),  x uniform(0, 1) [20000, 2000]
//   einsum_rowdot    einsum('ij,ij->i', x, y).sum(),        x, y uniform(0, 1)   [20000, 2000]
//   roll_sum         roll(x, 7, axis=1)[:, :n/2].sum(),         x uniform(0, 1)   [20000, 2000]
//   concat_mean      concatenate([x, y]).mean(axis=1),      x, y uniform(0, 1)   [20000, 2000]
// "value" is the scalar result, or the sum of the vector for mean_axis0 and rechunk_sum.
//
// --impl limit runs the workload's limit on this machine instead: a hand-written loop that does
// the same arithmetic once per element (each random element drawn once with the same Philox
// kernels, row by row, on --threads threads, nothing materialised; for a sum of a product the
// operands' sums and a dot product, as Tessera computes it), or for matmul_sq_sum OpenBLAS on
// the whole arrays in memory. "Within 2x of the limit" compares Tessera with it.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "array/program.hpp"
#include "bench_cluster.hpp"

namespace {

using tessera::Array;

/** The rows fancy_index_sum keeps: the first n/4 of a permutation of range(n), unsorted. */
std::vector<std::int64_t> fancy_rows(std::int64_t n) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::shuffle(idx.begin(), idx.end(), std::mt19937_64(0));
  idx.resize(static_cast<std::size_t>(n / 4));
  return idx;
}

struct Workload {
  std::int64_t n;      // default size
  std::int64_t chunk;  // default chunk
  // Builds the lazy expression; the random input is part of it, so generation is timed too
  // (as in the Dask script, where the graph is built inside the timed region).
  std::function<Array(std::int64_t n, std::int64_t c)> build;
};

const std::map<std::string, Workload>& workloads() {
  using namespace tessera;
  static const std::map<std::string, Workload> all = {
      {"transpose_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return (x + x.T()).sum();
        }}},
      {"trig_chain",
       {10000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return ((power(sin(x), 2) + power(cos(x), 2)) * 3 - 2).max();
        }}},
      {"matmul_sum",
       {4000, 1000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          auto x = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          auto y = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          return matmul(x, y).sum();
        }}},
      {"matmul_sq_sum",
       {4000, 1000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          auto x = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          auto y = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          return power(matmul(x, y), 2).sum();
        }}},
      {"mean_axis0",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
          return x.mean({.axes = {0}});
        }}},
      {"std_all",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
          return x.std();
        }}},
      {"rechunk_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x.rechunk({c * 2, std::max<std::int64_t>(1, c / 2)}).sum({.axes = {1}});
        }}},
      {"slice_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x[{step(3), slice(100, -100)}].sum();
        }}},
      {"elementwise_exp",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, -1.0, 1.0, {n, n}, {c, c});
          return (exp(-x * x) / (1 + abs(x))).sum();
        }}},
      {"cumsum_sum",
       {10000, 1000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return cumsum(x, 1).sum();
        }}},
      {"tensordot_sum",
       {8000, 1000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          const std::int64_t m = std::max<std::int64_t>(1, n / 4);
          auto x = rs.uniform(0.0, 1.0, {n, m}, {c, c});
          auto y = rs.uniform(0.0, 1.0, {n, m}, {c, c});
          return tensordot(x, y, {0}, {0}).sum();
        }}},
      {"fancy_index_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return take(x, fancy_rows(n), 0).sum();
        }}},
      {"mask_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x[x > 0.5].sum();
        }}},
      {"histogram_counts",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return histogram(x, 100, {0.0, 1.0}).counts;
        }}},
      {"topk_rows",
       {10000, 1000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return topk(x, 10, 1);
        }}},
      {"var_axis1",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x.var({.axes = {1}});
        }}},
      {"median_axis0",
       {10000, 1000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return median(x, {0});
        }}},
      {"nanmean_all",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return nanmean(where(x < 0.1, scalar(std::nan("")), x));
        }}},
      {"argmax_axis1",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return x.argmax(1);
        }}},
      {"diff_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return diff(x, 1, 1).sum();
        }}},
      {"bincount_ints",
       {10000, 1000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          auto i = rs.integers(0, 1000, {n * n}, {c * c});
          return bincount(i, std::nullopt, 1000);
        }}},
      {"standardize_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return ((x - x.mean({.axes = {0}})) / x.std({.axes = {0}})).sum();
        }}},
      {"einsum_rowdot",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          auto x = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          auto y = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          return einsum("ij,ij->i", {x, y}).sum();
        }}},
      {"roll_sum",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          auto x = random::uniform(0, 0.0, 1.0, {n, n}, {c, c});
          return roll(x, 7, 1)[{tessera::all(), slice(0, n / 2)}].sum();
        }}},
      {"concat_mean",
       {20000, 2000,
        [](std::int64_t n, std::int64_t c) {
          random::RandomState rs(0);
          auto x = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          auto y = rs.uniform(0.0, 1.0, {n, n}, {c, c});
          return concatenate({x, y}, 0).mean({.axes = {1}});
        }}},
  };
  return all;
}

// ---- limits: the same arithmetic once, by hand ----------------------------------------------

constexpr std::uint64_t kLimitKey = 0x5eed;
const auto kNormal = static_cast<std::uint8_t>(tessera::detail::GenKind::Normal);
const auto kUniform = static_cast<std::uint8_t>(tessera::detail::GenKind::Uniform);

/** Runs per_row(row, state) over rows [0, rows) split into `threads` contiguous ranges, each
 *  with its own State, and returns the states for the caller to combine. */
template <typename State, typename PerRow>
std::vector<State> parallel_rows(std::int64_t rows, int threads, const State& init, PerRow per_row) {
  std::vector<State> states(threads, init);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const std::int64_t lo = rows * t / threads, hi = rows * (t + 1) / threads;
      for (std::int64_t r = lo; r < hi; ++r) per_row(r, states[t]);
    });
  for (auto& th : pool) th.join();
  return states;
}

/** Sums per_row(r) over rows [0, rows) on `threads` threads. */
template <typename F>
double sum_rows(std::int64_t rows, int threads, F per_row) {
  auto states = parallel_rows<double>(rows, threads, 0.0, [&](std::int64_t r, double& acc) { acc += per_row(r); });
  double total = 0;
  for (double v : states) total += v;
  return total;
}

/**
 * Elements index, ..., index + n - 1 of a generator (`gen`, key kLimitKey + key_offset) into a
 * buffer of the calling thread; `slot` picks one of two buffers, for two rows at once.
 */
const std::vector<double>& drawn(std::int64_t index, std::int64_t n, std::uint64_t key_offset = 0, int slot = 0,
                                 std::uint8_t gen = kUniform, double p0 = 0, double p1 = 1) {
  thread_local std::vector<double> buffers[2];
  auto& row = buffers[slot];
  row.resize(static_cast<std::size_t>(n));
  tessera::detail::generate_f64(gen, kLimitKey + key_offset, p0, p1, index, 1, n, row.data());
  return row;
}

/** Sums f(x) over every element of an n x n array drawn from `gen`, one row at a time. */
template <typename F>
double limit_sum(std::uint8_t gen, double p0, double p1, std::int64_t n, int threads, F f) {
  return sum_rows(n, threads, [&](std::int64_t r) {
    double s = 0;
    for (double x : drawn(r * n, n, 0, 0, gen, p0, p1)) s += f(x);
    return s;
  });
}

double run_limit(const std::string& w, std::int64_t n, int threads) {
  if (w == "transpose_sum") return 2 * limit_sum(kUniform, 0, 1, n, threads, [](double x) { return x; });
  if (w == "rechunk_sum") return limit_sum(kUniform, 0, 1, n, threads, [](double x) { return x; });
  if (w == "elementwise_exp")
    return limit_sum(kUniform, -1, 1, n, threads, [](double x) { return std::exp(-x * x) / (1 + std::abs(x)); });
  if (w == "trig_chain") {
    thread_local std::vector<double> row;
    auto states = parallel_rows<double>(n, threads, -1e300, [&](std::int64_t r, double& m) {
      row.resize(n);
      tessera::detail::generate_f64(kUniform, kLimitKey, 0, 1, r * n, 1, n, row.data());
      for (double x : row) {
        const double s = std::sin(x), c = std::cos(x);
        m = std::max(m, (s * s + c * c) * 3 - 2);
      }
    });
    return *std::max_element(states.begin(), states.end());
  }
  if (w == "slice_sum") {
    // x[::3, 100:-100]: only the kept elements are drawn.
    const std::int64_t kept = std::max<std::int64_t>(0, n - 200);
    return sum_rows((n + 2) / 3, threads, [&](std::int64_t r) {
      const auto& row = drawn(3 * r * n + 100, kept);
      return std::accumulate(row.begin(), row.end(), 0.0);
    });
  }
  if (w == "mean_axis0") {
    thread_local std::vector<double> row;
    auto states = parallel_rows<std::vector<double>>(n, threads, std::vector<double>(n, 0.0),
                                                     [&](std::int64_t r, std::vector<double>& cols) {
                                                       row.resize(n);
                                                       tessera::detail::generate_f64(kNormal, kLimitKey, 10, 1, r * n, 1, n, row.data());
                                                       for (std::int64_t j = 0; j < n; ++j) cols[j] += row[j];
                                                     });
    double total = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      double c = 0;
      for (auto& s : states) c += s[j];
      total += c / static_cast<double>(n);
    }
    return total;
  }
  if (w == "std_all") {
    thread_local std::vector<double> row;
    struct Moments {
      double sum = 0, sumsq = 0;
    };
    auto states = parallel_rows<Moments>(n, threads, Moments{}, [&](std::int64_t r, Moments& m) {
      row.resize(n);
      tessera::detail::generate_f64(kNormal, kLimitKey, 10, 1, r * n, 1, n, row.data());
      for (double x : row) {
        m.sum += x;
        m.sumsq += x * x;
      }
    });
    double s = 0, ss = 0;
    for (auto& m : states) {
      s += m.sum;
      ss += m.sumsq;
    }
    const double count = static_cast<double>(n) * static_cast<double>(n), mean = s / count;
    return std::sqrt(ss / count - mean * mean);
  }
  if (w == "cumsum_sum") {
    // The running sum of each row, summed as it goes: one pass, nothing stored.
    return sum_rows(n, threads, [&](std::int64_t r) {
      double prefix = 0, s = 0;
      for (double x : drawn(r * n, n)) {
        prefix += x;
        s += prefix;
      }
      return s;
    });
  }
  if (w == "fancy_index_sum") {
    // Only the kept rows are drawn.
    const auto idx = fancy_rows(n);
    return sum_rows(static_cast<std::int64_t>(idx.size()), threads, [&](std::int64_t r) {
      const auto& row = drawn(idx[static_cast<std::size_t>(r)] * n, n);
      return std::accumulate(row.begin(), row.end(), 0.0);
    });
  }
  if (w == "tensordot_sum" || w == "matmul_sum") {
    // The sum of a product needs only the operands' sums (src/array/product_sums.cpp): for
    // (x @ y).sum() x's column sums and y's row sums, for tensordot(x, y, (0, 0)).sum() both
    // row sums; then a dot product. Each element drawn once, row by row.
    const bool td = w == "tensordot_sum";
    const std::int64_t rows = n, cols = td ? std::max<std::int64_t>(1, n / 4) : n;
    thread_local std::vector<double> row;
    struct Sums {
      std::vector<double> x_cols, x_rows, y_rows;
    };
    const Sums init{std::vector<double>(td ? 0 : cols, 0.0), std::vector<double>(td ? rows : 0, 0.0),
                    std::vector<double>(rows, 0.0)};
    auto states = parallel_rows<Sums>(rows, threads, init, [&](std::int64_t r, Sums& s) {
      row.resize(cols);
      tessera::detail::generate_f64(kUniform, kLimitKey, 0, 1, r * cols, 1, cols, row.data());
      if (td) s.x_rows[r] = std::accumulate(row.begin(), row.end(), 0.0);
      else
        for (std::int64_t j = 0; j < cols; ++j) s.x_cols[j] += row[j];
      tessera::detail::generate_f64(kUniform, kLimitKey + 1, 0, 1, r * cols, 1, cols, row.data());
      s.y_rows[r] = std::accumulate(row.begin(), row.end(), 0.0);
    });
    double total = 0;
    for (std::int64_t k = 0; k < rows; ++k) {
      double a = 0, b = 0;
      for (auto& s : states) {
        a += td ? s.x_rows[k] : s.x_cols[k];
        b += s.y_rows[k];
      }
      total += a * b;
    }
    return total;
  }
  if (w == "mask_sum") return limit_sum(kUniform, 0, 1, n, threads, [](double x) { return x > 0.5 ? x : 0.0; });
  if (w == "histogram_counts") {
    // 100 equal bins over [0, 1): a bin index per element, counted per thread.
    auto states = parallel_rows<std::vector<std::int64_t>>(n, threads, std::vector<std::int64_t>(100, 0),
                                                           [&](std::int64_t r, std::vector<std::int64_t>& counts) {
                                                             for (double x : drawn(r * n, n))
                                                               if (x >= 0 && x <= 1) ++counts[std::min<std::int64_t>(99, static_cast<std::int64_t>(x * 100))];
                                                           });
    double total = 0;
    for (auto& c : states) total += static_cast<double>(std::accumulate(c.begin(), c.end(), std::int64_t{0}));
    return total;
  }
  if (w == "topk_rows") {
    // The 10 largest of each row: a sorted list of 10, each element compared with its smallest.
    return sum_rows(n, threads, [&](std::int64_t r) {
      double top[10];
      std::int64_t kept = 0;
      for (double x : drawn(r * n, n)) {
        if (kept == 10 && x <= top[9]) continue;
        std::int64_t i = kept < 10 ? kept++ : 9;
        for (; i > 0 && top[i - 1] < x; --i) top[i] = top[i - 1];
        top[i] = x;
      }
      return std::accumulate(top, top + kept, 0.0);
    });
  }
  if (w == "var_axis1") {
    // Each row's sum and sum of squares in one pass, its population variance from them.
    return sum_rows(n, threads, [&](std::int64_t r) {
      double s = 0, ss = 0;
      for (double x : drawn(r * n, n)) {
        s += x;
        ss += x * x;
      }
      const double mean = s / static_cast<double>(n);
      return ss / static_cast<double>(n) - mean * mean;
    });
  }
  if (w == "matmul_sq_sum") {
    // OpenBLAS on the whole arrays in memory, then the squares summed.
    std::vector<double> x(n * n), y(n * n), z(n * n);
    tessera::detail::generate_f64(kUniform, kLimitKey, 0, 1, 0, 1, n * n, x.data());
    tessera::detail::generate_f64(kUniform, kLimitKey + 1, 0, 1, 0, 1, n * n, y.data());
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, x.data(), n, y.data(), n, 0.0, z.data(), n);
    double total = 0;
    for (double v : z) total += v * v;
    return total;
  }
  if (w == "median_axis0") {
    // The whole array in memory (rows drawn in parallel), then each column copied out and its
    // middle found with nth_element.
    std::vector<double> x(static_cast<std::size_t>(n * n));
    parallel_rows<int>(n, threads, 0, [&](std::int64_t r, int&) {
      tessera::detail::generate_f64(kUniform, kLimitKey, 0, 1, r * n, 1, n, x.data() + r * n);
    });
    // Columns in bands of 64, copied out a row segment at a time (contiguous reads).
    constexpr std::int64_t kBand = 64;
    thread_local std::vector<double> cols;
    auto states = parallel_rows<double>((n + kBand - 1) / kBand, threads, 0.0, [&](std::int64_t b, double& acc) {
      const std::int64_t c0 = b * kBand, w = std::min(kBand, n - c0);
      cols.resize(static_cast<std::size_t>(w * n));
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t k = 0; k < w; ++k) cols[static_cast<std::size_t>(k * n + r)] = x[static_cast<std::size_t>(r * n + c0 + k)];
      for (std::int64_t k = 0; k < w; ++k) {
        const auto first = cols.begin() + k * n, mid = first + n / 2;
        std::nth_element(first, mid, first + n);
        acc += n % 2 ? *mid : (*mid + *std::max_element(first, mid)) / 2;
      }
    });
    double total = 0;
    for (double v : states) total += v;
    return total;
  }
  if (w == "nanmean_all") {
    // Elements below 0.1 are NaN and left out: a sum and a count.
    struct SumCount {
      double sum = 0, count = 0;
    };
    auto states = parallel_rows<SumCount>(n, threads, SumCount{}, [&](std::int64_t r, SumCount& s) {
      for (double x : drawn(r * n, n)) {
        const bool kept = !(x < 0.1);
        s.sum += kept ? x : 0.0;
        s.count += kept ? 1.0 : 0.0;
      }
    });
    double sum = 0, count = 0;
    for (auto& s : states) {
      sum += s.sum;
      count += s.count;
    }
    return sum / count;
  }
  if (w == "argmax_axis1")
    return sum_rows(n, threads, [&](std::int64_t r) {
      const auto& row = drawn(r * n, n);
      return static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin());
    });
  if (w == "diff_sum")
    return sum_rows(n, threads, [&](std::int64_t r) {
      const auto& row = drawn(r * n, n);
      double s = 0;
      for (std::int64_t j = 0; j + 1 < n; ++j) s += row[j + 1] - row[j];
      return s;
    });
  if (w == "bincount_ints") {
    // n * n integers in [0, 1000), drawn n at a time and counted.
    const auto kIntegers = static_cast<std::uint8_t>(tessera::detail::GenKind::Integers);
    thread_local std::vector<std::int64_t> piece;
    auto states = parallel_rows<std::vector<std::int64_t>>(n, threads, std::vector<std::int64_t>(1000, 0),
                                                           [&](std::int64_t r, std::vector<std::int64_t>& counts) {
                                                             piece.resize(n);
                                                             tessera::detail::generate_i64(kIntegers, kLimitKey, 0, 1000, 0, 0, r * n, 1, n, piece.data());
                                                             for (auto v : piece) ++counts[static_cast<std::size_t>(v)];
                                                           });
    double total = 0;
    for (auto& c : states) total += static_cast<double>(std::accumulate(c.begin(), c.end(), std::int64_t{0}));
    return total;
  }
  if (w == "standardize_sum") {
    // Two passes: each column's sum and sum of squares, then (x - mean) / std summed.
    struct Columns {
      std::vector<double> sum, sumsq;
    };
    auto states = parallel_rows<Columns>(n, threads, Columns{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)},
                                         [&](std::int64_t r, Columns& c) {
                                           const auto& row = drawn(r * n, n);
                                           for (std::int64_t j = 0; j < n; ++j) {
                                             c.sum[j] += row[j];
                                             c.sumsq[j] += row[j] * row[j];
                                           }
                                         });
    std::vector<double> mean(n), inv_std(n);
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0, ss = 0;
      for (auto& c : states) {
        s += c.sum[j];
        ss += c.sumsq[j];
      }
      mean[j] = s / static_cast<double>(n);
      inv_std[j] = 1.0 / std::sqrt(ss / static_cast<double>(n) - mean[j] * mean[j]);
    }
    return sum_rows(n, threads, [&](std::int64_t r) {
      const auto& row = drawn(r * n, n);
      double s = 0;
      for (std::int64_t j = 0; j < n; ++j) s += (row[j] - mean[j]) * inv_std[j];
      return s;
    });
  }
  if (w == "einsum_rowdot") {
    return sum_rows(n, threads, [&](std::int64_t r) {
      const auto& a = drawn(r * n, n, 0, 0);
      const auto& b = drawn(r * n, n, 1, 1);
      return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
    });
  }
  if (w == "roll_sum") {
    // roll(x, 7, axis=1)[:, :n/2] holds x's last 7 columns and its first n/2 - 7: only those drawn.
    const std::int64_t half = n / 2, tail = std::min<std::int64_t>(7, half);
    return sum_rows(n, threads, [&](std::int64_t r) {
      const auto& last = drawn(r * n + n - tail, tail, 0, 0);
      const auto& first = drawn(r * n, half - tail, 0, 1);
      return std::accumulate(last.begin(), last.end(), 0.0) + std::accumulate(first.begin(), first.end(), 0.0);
    });
  }
  if (w == "concat_mean") {
    // The 2n rows of x then y, each row's mean, summed.
    return sum_rows(2 * n, threads, [&](std::int64_t r) {
      const bool second = r >= n;
      const auto& row = drawn((second ? r - n : r) * n, n, second ? 1 : 0);
      return std::accumulate(row.begin(), row.end(), 0.0) / static_cast<double>(n);
    });
  }
  throw std::invalid_argument("no limit for workload " + w);
}

// The checksum: the scalar itself, or the sum of a vector result.
double checksum(const tessera::Block& result) {
  if (result.ndim() == 0) return result.item();
  double total = 0;
  for (double v : result.to_doubles()) total += v;
  return total;
}

int run(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string workload;
  std::int64_t n = 0, chunk = 0;
  std::string scheduler = "threads";
  int repeat = 1;
  std::string impl = "tessera";
  int limit_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bench::ClusterArgs cluster;
  CLI::App app{"array_workloads benchmark"};
  std::vector<std::string> names;
  for (const auto& [name, w] : workloads()) names.push_back(name);
  app.add_option("--workload", workload, "which workload")->required()->check(CLI::IsMember(names));
  app.add_option("--n", n, "arrays are n x n (default: the workload's)");
  app.add_option("--chunk", chunk, "chunks are chunk x chunk (default: the workload's)");
  app.add_option("--scheduler", scheduler, "sync, threads, distributed (a local cluster) or a scheduler address");
  app.add_option("--repeat", repeat, "runs; the best time is reported");
  app.add_option("--impl", impl, "tessera, or limit: the same arithmetic once by hand (see the top of the file)")
      ->check(CLI::IsMember({"tessera", "limit"}));
  app.add_option("--limit-threads", limit_threads, "threads of the limit loops (default: one per core)");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  const Workload& w = workloads().at(workload);
  if (n <= 0) n = w.n;
  if (chunk <= 0) chunk = w.chunk;
  if (impl == "limit") {
    double best = 1e300, value = 0;
    for (int r = 0; r < std::max(1, repeat); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      value = run_limit(workload, n, limit_threads);
      best = std::min(best, bench::seconds_since(t0));
    }
    std::printf(
        "{\"benchmark\": \"array_workloads\", \"workload\": \"%s\", \"impl\": \"limit\", \"threads\": %d, "
        "\"n\": %lld, \"seconds\": %.6f, \"value\": %.17g}\n",
        workload.c_str(), limit_threads, static_cast<long long>(n), best, value);
    return 0;
  }
  // The cluster (if any) starts here, outside the timed region.
  auto execution = bench::open_execution("array_workloads", scheduler, "host", cluster);
  if (!execution.executor) return 2;
  // One untimed run at a tiny size first: the thread pool or the workers start up then, not
  // in the timed runs (the Dask script does the same).
  w.build(256, std::max<std::int64_t>(16, std::min<std::int64_t>(chunk, 64))).compute(*execution.executor);
  double best = 1e300, value = 0;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    value = checksum(w.build(n, chunk).compute(*execution.executor));
    best = std::min(best, bench::seconds_since(t0));
  }
  std::printf(
      "{\"benchmark\": \"array_workloads\", \"workload\": \"%s\", \"impl\": \"tessera\", \"scheduler\": \"%s\", "
      "\"n\": %lld, \"chunk\": %lld, \"seconds\": %.6f, \"value\": %.17g}\n",
      workload.c_str(), execution.distributed() ? "distributed" : scheduler.c_str(), static_cast<long long>(n),
      static_cast<long long>(chunk), best, value);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::run_main("array_workloads", run, argc, argv); }
