#pragma once
/**
 * @file Private: the device algorithms of the array chunk ops (scan, sort, topk, quantiles,
 * searchsorted, isin, histogram, bincount, unique), written once with Thrust and templated on
 * the system they run on. Two instantiations exist:
 *  - device_algorithms_host.cpp: g++ with THRUST_DEVICE_SYSTEM_CPP on host memory (the tests);
 *  - cuda/array_algorithms.cu: nvcc for the CUDA system, on the op's stream.
 *
 * A system `Sys` provides policy() (a Thrust execution policy over the system's memory),
 * scratch(bytes) (memory of the system that lives as long as the Sys) and upload(dst, host,
 * bytes). Element-level rules (NaN order, quantile methods, histogram bins) come from
 * sort_semantics.hpp, shared with the host ops, so both give the same answers.
 *
 * C++17 only (nvcc builds .cu files as C++17); device code is plain functors, no lambdas.
 */
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/gather.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "array/sort_semantics.hpp"
#include "tessera/core/dtype.hpp"

#if defined(__CUDACC__)
#define TESSERA_ALGO_HD __host__ __device__
#else
#define TESSERA_ALGO_HD
#endif

namespace tessera::detail::array_algo {

using Index = std::int64_t;

/** f(T{}) for the element type of t: bool, int32, int64, float32, float64. Each type is a set of
 *  Thrust sort/scan instantiations (minutes of nvcc), so the narrow, unsigned, float16 and
 *  complex dtypes are refused with a clear error instead (astype first). */
template <class F>
void for_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: f(bool{}); return;
    case DType::Int32: f(std::int32_t{}); return;
    case DType::Int64: f(std::int64_t{}); return;
    case DType::Float32: f(float{}); return;
    case DType::Float64: f(double{}); return;
    default: break;
  }
  throw std::invalid_argument("array algorithms: dtype " + std::string(dtype_name(t)) +
                              " is not supported on the device (astype to int64 or float64 first)");
}

template <class T, class Sys>
T* scratch(Sys& sys, Index n) {
  return static_cast<T*>(sys.scratch(sizeof(T) * static_cast<std::size_t>(n > 0 ? n : 1)));
}

// ---- functors -------------------------------------------------------------------------------------

struct DivideBy {
  Index n;
  TESSERA_ALGO_HD Index operator()(Index i) const { return i / n; }
};

/** Position p of the (outer, inner, n) scan order -> element index of an (outer, n, inner) block. */
struct ScanOrder {
  Index n, inner;
  TESSERA_ALGO_HD Index operator()(Index p) const {
    const Index o = p / (n * inner), rem = p % (n * inner);
    return o * n * inner + (rem % n) * inner + rem / n;
  }
};

/** + and * with wrap-around for integers, as NumPy's. */
template <class T>
struct ScanPlus {
  TESSERA_ALGO_HD T operator()(T a, T b) const { return a + b; }
};
template <>
struct ScanPlus<std::int64_t> {
  TESSERA_ALGO_HD std::int64_t operator()(std::int64_t a, std::int64_t b) const {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  }
};
template <class T>
struct ScanTimes {
  TESSERA_ALGO_HD T operator()(T a, T b) const { return a * b; }
};
template <>
struct ScanTimes<std::int64_t> {
  TESSERA_ALGO_HD std::int64_t operator()(std::int64_t a, std::int64_t b) const {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
  }
};

/** Position within its row: i - (i / n) * n. */
struct ColumnOf {
  Index n;
  TESSERA_ALGO_HD Index operator()(Index i) const { return i % n; }
};

/** Element (row, j < m) of a (rows, m) result -> position row * n + j of the sorted rows. */
struct FirstOfRow {
  Index m, n;
  TESSERA_ALGO_HD Index operator()(Index i) const { return (i / m) * n + i % m; }
};

template <class T>
struct CandidateIndex {
  const T* idx;  // null: offset + position in the row
  Index n, offset;
  TESSERA_ALGO_HD Index operator()(Index i) const { return idx ? static_cast<Index>(idx[i]) : offset + i % n; }
};

template <class T, class O>
struct QuantileOf {
  const T* sorted;
  const double* q;
  Index rows, n;
  std::uint8_t method;
  bool skip_nan;
  TESSERA_ALGO_HD O operator()(Index i) const {
    const Index qi = i / rows, r = i % rows;
    const T* row = sorted + r * n;
    const Index valid = sorting::count_not_nan_sorted(row, n);
    const double v = (!skip_nan && valid < n) ? static_cast<double>(NAN) : sorting::quantile_sorted(row, valid, q[qi], method);
    return static_cast<O>(v);
  }
};

template <class T>
struct IsNotNan {
  TESSERA_ALGO_HD bool operator()(T x) const { return x == x; }
};

template <class T>
struct BinOf {
  const double* edges;
  Index nedges;
  double norm;  // > 0: equal bins
  TESSERA_ALGO_HD Index operator()(T x) const {
    const double v = static_cast<double>(x);
    return norm > 0 ? sorting::histogram_bin_uniform(edges, nedges, norm, v) : sorting::histogram_bin(edges, nedges, v);
  }
};

template <class T>
struct ValueBin {
  Index length;
  TESSERA_ALGO_HD Index operator()(T x) const {
    const Index i = static_cast<Index>(x);
    return i >= 0 && i < length ? i : -1;
  }
};

template <class T>
struct OutOfRange {
  Index length;
  TESSERA_ALGO_HD bool operator()(T x) const {
    const Index i = static_cast<Index>(x);
    return i < 0 || i >= length;
  }
};

struct NonNegative {
  TESSERA_ALGO_HD bool operator()(Index b) const { return b >= 0; }
};

template <class T>
struct Found {
  bool invert;
  TESSERA_ALGO_HD bool operator()(T x, bool found) const { return (found && x == x) != invert; }
};

template <class From, class To>
struct CastTo {
  TESSERA_ALGO_HD To operator()(From x) const { return static_cast<To>(x); }
};

// ---- segmented sort ---------------------------------------------------------------------------------

/**
 * Stable sort of each row of `values` (rows x n, modified in place) with `less`; perm receives,
 * for every sorted position, the position it came from (row * n + j). Two stable passes: by
 * value over everything, then by row.
 */
template <class T, class Less, class Sys>
void sort_rows_by(Sys& sys, T* values, Index* perm, Index rows, Index n, Less less) {
  const Index total = rows * n;
  if (total == 0) return;
  thrust::sequence(sys.policy(), perm, perm + total);
  thrust::stable_sort_by_key(sys.policy(), values, values + total, perm, less);
  if (rows > 1) {
    Index* row = scratch<Index>(sys, total);
    thrust::transform(sys.policy(), perm, perm + total, row, DivideBy{n});
    thrust::stable_sort_by_key(sys.policy(), row, row + total, thrust::make_zip_iterator(thrust::make_tuple(perm, values)));
  }
}

// ---- the algorithms ---------------------------------------------------------------------------------

/** Inclusive scan of an (outer, n, inner) block along its middle axis; in and out of dtype t. */
template <class Sys>
void scan(Sys& sys, DType t, const void* in, void* out, Index outer, Index n, Index inner, bool product) {
  const Index total = outer * n * inner;
  if (total == 0) return;
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int32_t>) {
      throw std::invalid_argument("scan: int64 or float data expected");
    } else {
      auto order = thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), ScanOrder{n, inner});
      auto src = thrust::make_permutation_iterator(static_cast<const T*>(in), order);
      auto dst = thrust::make_permutation_iterator(static_cast<T*>(out), order);
      auto key = thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), DivideBy{n});
      if (product)
        thrust::inclusive_scan_by_key(sys.policy(), key, key + total, src, dst, thrust::equal_to<Index>(), ScanTimes<T>{});
      else
        thrust::inclusive_scan_by_key(sys.policy(), key, key + total, src, dst, thrust::equal_to<Index>(), ScanPlus<T>{});
    }
  });
}

/** Sorts each row (NaN last): the values into out (dtype t), or (arg) int64 positions. */
template <class Sys>
void sort_rows(Sys& sys, DType t, const void* in, void* out, Index rows, Index n, bool arg) {
  const Index total = rows * n;
  if (total == 0) return;
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* v = arg ? scratch<T>(sys, total) : static_cast<T*>(out);
    thrust::copy(sys.policy(), static_cast<const T*>(in), static_cast<const T*>(in) + total, v);
    Index* perm = scratch<Index>(sys, total);
    sort_rows_by(sys, v, perm, rows, n, sorting::LessNanLast<T>{});
    if (arg) thrust::transform(sys.policy(), perm, perm + total, static_cast<Index*>(out), ColumnOf{n});
  });
}

/**
 * topk over candidate rows (rows x n values of dtype t; indices: null for offset + position, or
 * an array of dtype index_t, int64 or float64): the first m = min(|k|, n) of each row in topk
 * order (largest first for k > 0, smallest first for k < 0; NaN last; ties by position) into
 * out_values (dtype t; may be null) and out_indices (may be null), both (rows, m).
 */
template <class Sys>
void topk_rows(Sys& sys, DType t, const void* values, const void* indices, DType index_t, Index offset, Index rows,
               Index n, Index k, void* out_values, Index* out_indices) {
  const Index total = rows * n;
  const Index m = (k < 0 ? -k : k) < n ? (k < 0 ? -k : k) : n;
  if (total == 0 || m == 0) return;
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* v = scratch<T>(sys, total);
    thrust::copy(sys.policy(), static_cast<const T*>(values), static_cast<const T*>(values) + total, v);
    Index* perm = scratch<Index>(sys, total);
    if (k > 0) sort_rows_by(sys, v, perm, rows, n, sorting::GreaterNanLast<T>{});
    else sort_rows_by(sys, v, perm, rows, n, sorting::LessNanLast<T>{});
    auto pick = thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), FirstOfRow{m, n});
    if (out_values) thrust::gather(sys.policy(), pick, pick + rows * m, v, static_cast<T*>(out_values));
    if (out_indices) {
      Index* idx = scratch<Index>(sys, rows * m);
      thrust::gather(sys.policy(), pick, pick + rows * m, perm, idx);  // original positions
      auto count = thrust::counting_iterator<Index>(0);
      if (indices && index_t == DType::Float64)
        thrust::transform(sys.policy(), count, count + total, perm,
                          CandidateIndex<double>{static_cast<const double*>(indices), n, offset});
      else
        thrust::transform(sys.policy(), count, count + total, perm,
                          CandidateIndex<Index>{static_cast<const Index*>(indices), n, offset});
      thrust::gather(sys.policy(), idx, idx + rows * m, perm, out_indices);
    }
  });
}

/** Quantiles of each row (rows x n, dtype t): out (nq, rows) of dtype out_t. */
template <class Sys>
void quantile_rows(Sys& sys, DType t, const void* in, Index rows, Index n, const std::vector<double>& q, std::uint8_t method,
                   bool skip_nan, DType out_t, void* out) {
  const Index total = rows * n, nq = static_cast<Index>(q.size());
  if (rows == 0 || nq == 0) return;
  double* qd = scratch<double>(sys, nq);
  sys.upload(qd, q.data(), sizeof(double) * q.size());
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* v = scratch<T>(sys, total);
    if (total > 0) {
      thrust::copy(sys.policy(), static_cast<const T*>(in), static_cast<const T*>(in) + total, v);
      Index* perm = scratch<Index>(sys, total);
      sort_rows_by(sys, v, perm, rows, n, sorting::LessNanLast<T>{});
    }
    for_dtype(out_t, [&](auto otag) {
      using O = decltype(otag);
      auto count = thrust::counting_iterator<Index>(0);
      thrust::transform(sys.policy(), count, count + nq * rows, static_cast<O*>(out),
                        QuantileOf<T, O>{v, qd, rows, n, method, skip_nan});
    });
  });
}

/** NumPy's searchsorted of nv values into the ascending a (same dtype t): int64 positions. */
template <class Sys>
void searchsorted(Sys& sys, DType t, const void* a, Index na, const void* v, Index nv, Index* out, bool right) {
  if (nv == 0) return;
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const T* s = static_cast<const T*>(a);
    const T* x = static_cast<const T*>(v);
    if (right) thrust::upper_bound(sys.policy(), s, s + na, x, x + nv, out, sorting::LessNanLast<T>{});
    else thrust::lower_bound(sys.policy(), s, s + na, x, x + nv, out, sorting::LessNanLast<T>{});
  });
}

/** Whether each of the n values is in the ascending test values (NaN never is). */
template <class Sys>
void isin(Sys& sys, DType t, const void* x, Index n, const void* sorted, Index nt, bool* out, bool invert) {
  if (n == 0) return;
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const T* v = static_cast<const T*>(x);
    const T* s = static_cast<const T*>(sorted);
    bool* found = scratch<bool>(sys, n);
    thrust::binary_search(sys.policy(), s, s + nt, v, v + n, found, sorting::LessNanLast<T>{});
    thrust::transform(sys.policy(), v, v + n, found, out, Found<T>{invert});
  });
}

/** Sums weights (or counts, when weights is null) per bin (bins[i] < 0: none) into out. */
template <class Sys>
void count_bins(Sys& sys, Index* bins, const double* weights, Index n, Index nbins, void* out) {
  if (weights) thrust::fill(sys.policy(), static_cast<double*>(out), static_cast<double*>(out) + nbins, 0.0);
  else thrust::fill(sys.policy(), static_cast<Index*>(out), static_cast<Index*>(out) + nbins, Index{0});
  if (n == 0) return;
  Index* keys = scratch<Index>(sys, n);
  if (weights) {
    double* w = scratch<double>(sys, n);
    thrust::copy(sys.policy(), weights, weights + n, w);
    thrust::sort_by_key(sys.policy(), bins, bins + n, w);
    double* sums = scratch<double>(sys, n);
    auto end = thrust::reduce_by_key(sys.policy(), bins, bins + n, w, keys, sums);
    const Index m = end.first - keys;
    thrust::scatter_if(sys.policy(), sums, sums + m, keys, keys, static_cast<double*>(out), NonNegative{});
  } else {
    thrust::sort(sys.policy(), bins, bins + n);
    Index* counts = scratch<Index>(sys, n);
    auto end = thrust::reduce_by_key(sys.policy(), bins, bins + n, thrust::constant_iterator<Index>(1), keys, counts);
    const Index m = end.first - keys;
    thrust::scatter_if(sys.policy(), counts, counts + m, keys, keys, static_cast<Index*>(out), NonNegative{});
  }
}

/**
 * Histogram of n values over ascending edges (host vector): out (nedges - 1) int64 or float64
 * sums. norm > 0: equal bins (HistogramParams::norm).
 */
template <class Sys>
void histogram(Sys& sys, DType t, const void* x, Index n, const double* weights, const std::vector<double>& edges,
               double norm, void* out) {
  const Index ne = static_cast<Index>(edges.size());
  double* e = scratch<double>(sys, ne);
  sys.upload(e, edges.data(), sizeof(double) * edges.size());
  Index* bins = scratch<Index>(sys, n);
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if (n > 0) thrust::transform(sys.policy(), static_cast<const T*>(x), static_cast<const T*>(x) + n, bins, BinOf<T>{e, ne, norm});
  });
  count_bins(sys, bins, weights, n, ne - 1, out);
}

/** bincount of n non-negative integers below length; false (nothing written) when one is not. */
template <class Sys>
bool bincount(Sys& sys, DType t, const void* x, Index n, const double* weights, Index length, void* out) {
  bool ok = true;
  Index* bins = scratch<Index>(sys, n);
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    const T* v = static_cast<const T*>(x);
    ok = thrust::count_if(sys.policy(), v, v + n, OutOfRange<T>{length}) == 0;
    if (ok) thrust::transform(sys.policy(), v, v + n, bins, ValueBin<T>{length});
  });
  if (ok) count_bins(sys, bins, weights, n, length, out);
  return ok;
}

/**
 * Distinct values and their total counts: values (dtype wide, int64 or float64) and counts,
 * both n long and modified in place; writes m ascending distinct values (NaNs collapsed) and
 * their counts, and returns m.
 */
template <class Sys>
Index unique_counts(Sys& sys, DType wide, void* values, Index* counts, Index n, void* out_values, Index* out_counts) {
  if (n == 0) return 0;
  Index m = 0;
  for_dtype(wide, [&](auto tag) {
    using W = decltype(tag);
    if constexpr (std::is_same_v<W, double> || std::is_same_v<W, std::int64_t>) {
      W* v = static_cast<W*>(values);
      thrust::stable_sort_by_key(sys.policy(), v, v + n, counts, sorting::LessNanLast<W>{});
      auto end = thrust::reduce_by_key(sys.policy(), v, v + n, counts, static_cast<W*>(out_values), out_counts,
                                       sorting::EqualNan<W>{});
      m = end.first - static_cast<W*>(out_values);
    } else {
      throw std::invalid_argument("unique: int64 or float64 partials expected");
    }
  });
  return m;
}

/** Converts n values of dtype t to the wide dtype of unique (int64 or float64). */
template <class Sys>
void widen(Sys& sys, DType t, const void* in, Index n, void* out) {
  if (n == 0) return;
  for_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const T* v = static_cast<const T*>(in);
    if constexpr (std::is_floating_point_v<T>) thrust::transform(sys.policy(), v, v + n, static_cast<double*>(out), CastTo<T, double>{});
    else thrust::transform(sys.policy(), v, v + n, static_cast<Index*>(out), CastTo<T, Index>{});
  });
}

}  // namespace tessera::detail::array_algo
