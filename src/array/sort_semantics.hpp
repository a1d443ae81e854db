#pragma once
// Internal: the element-level rules of sorting, quantiles and binning, written once for the host
// ops (src/array/sort.cpp, statistics.cpp) and the Thrust algorithms the device runs
// (src/array/device_algorithms.cuh), so the two agree: NaN sorts last (NumPy's order), NaNs
// count as equal in unique, quantiles interpolate as NumPy's methods do, and a value's histogram
// bin is NumPy's (half-open bins, the last one closed).
//
// C++17 and <math.h>/<cstdint> only: nvcc compiles this as device code.
#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define TESSERA_SORT_HD __host__ __device__ __forceinline__
#else
// Forced inline on the host too: these run once per element inside the ops' loops, and a call
// through the shared library's PLT costs more than the rule itself.
#define TESSERA_SORT_HD inline __attribute__((always_inline))
#endif

namespace tessera::detail::sorting {

/** NumPy's sort order: NaN after every number. */
template <class T>
struct LessNanLast {
  TESSERA_SORT_HD bool operator()(T a, T b) const { return a < b || (b != b && a == a); }
};

/** The reverse order (largest first), NaN still last. */
template <class T>
struct GreaterNanLast {
  TESSERA_SORT_HD bool operator()(T a, T b) const { return a > b || (b != b && a == a); }
};

/** Equality with NaN == NaN (NumPy 2's unique, equal_nan=True). */
template <class T>
struct EqualNan {
  TESSERA_SORT_HD bool operator()(T a, T b) const { return a == b || (a != a && b != b); }
};

/** Quantile methods (NumPy's names). Median is NumPy's median: the mean of the middle two. */
enum QuantileMethod : std::uint8_t { Linear = 0, Lower, Higher, Nearest, Midpoint, Median };

/** NumPy's _lerp: a + (b - a) t, computed from b's side when t >= 0.5 (monotone, exact at 1). */
TESSERA_SORT_HD double lerp(double a, double b, double t) {
  const double d = b - a;
  return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

/** Round half to even, as np.around. */
TESSERA_SORT_HD double round_half_even(double x) {
  const double r = ::floor(x + 0.5);
  if (r - x == 0.5 && ::fmod(r, 2.0) != 0.0) return r - 1.0;
  return r;
}

/**
 * The q-quantile (0 <= q <= 1) of n ascending values s[0..n) without NaN; NaN when n == 0.
 */
template <class T>
TESSERA_SORT_HD double quantile_sorted(const T* s, std::int64_t n, double q, std::uint8_t method) {
  if (n <= 0) return NAN;
  if (method == Median) {
    const std::int64_t h = n / 2;
    if (n % 2) return static_cast<double>(s[h]);
    return (static_cast<double>(s[h - 1]) + static_cast<double>(s[h])) / 2.0;
  }
  const double vi = q * static_cast<double>(n - 1);
  double lo = ::floor(vi);
  if (lo < 0) lo = 0;
  if (lo > static_cast<double>(n - 1)) lo = static_cast<double>(n - 1);
  const std::int64_t i = static_cast<std::int64_t>(lo);
  const std::int64_t j = i + 1 < n ? i + 1 : n - 1;
  const double a = static_cast<double>(s[i]), b = static_cast<double>(s[j]);
  const double g = vi - lo;
  switch (method) {
    case Lower: return a;
    case Higher: return g > 0 ? b : a;
    case Nearest: {
      std::int64_t k = static_cast<std::int64_t>(round_half_even(vi));
      if (k < 0) k = 0;
      if (k > n - 1) k = n - 1;
      return static_cast<double>(s[k]);
    }
    case Midpoint: return lerp(a, b, g > 0 ? 0.5 : 0.0);
    default: return lerp(a, b, g);
  }
}

/** Number of leading non-NaN values of an ascending (NaN-last) run of n values. */
template <class T>
TESSERA_SORT_HD std::int64_t count_not_nan_sorted(const T* s, std::int64_t n) {
  std::int64_t lo = 0, hi = n;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (s[mid] != s[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The histogram bin of x for ascending edges e[0..nedges): i with e[i] <= x < e[i+1], the last
 * bin closed (x == e[nedges-1] is in bin nedges-2); -1 outside the edges or for NaN.
 */
TESSERA_SORT_HD std::int64_t histogram_bin(const double* e, std::int64_t nedges, double x) {
  if (!(x >= e[0] && x <= e[nedges - 1])) return -1;
  if (x == e[nedges - 1]) return nedges - 2;
  std::int64_t lo = 0, hi = nedges;  // first edge > x
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (e[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/**
 * histogram_bin for equal bins, computed as NumPy does ((x - e[0]) * norm, norm = bins / (last -
 * first), then corrected against the edges), which gives the same bin without a search.
 */
TESSERA_SORT_HD std::int64_t histogram_bin_uniform(const double* e, std::int64_t nedges, double norm, double x) {
  if (!(x >= e[0] && x <= e[nedges - 1])) return -1;
  const std::int64_t nb = nedges - 1;
  std::int64_t i = static_cast<std::int64_t>((x - e[0]) * norm);
  if (i >= nb) i = nb - 1;
  if (i < 0) i = 0;
  if (x < e[i]) --i;
  else if (x >= e[i + 1] && i != nb - 1) ++i;
  return i;
}

}  // namespace tessera::detail::sorting
