#pragma once
// Internal: the chunk-level ops of scans, sorting and statistics (names and cereal-encoded
// parameters), shared by their host variants (src/array/scan.cpp, sort.cpp, statistics.cpp) and
// device variants (cuda/array_algorithm_ops.cpp). Every op reads its data along the LAST axis
// of a chunk (the builders move the axis there), except the scan, which takes any axis.
#include <cstdint>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera::detail {

inline constexpr const char* kScanOp = "tessera.array.scan";
inline constexpr const char* kSortOp = "tessera.array.sort";
inline constexpr const char* kTopkOp = "tessera.array.topk";
inline constexpr const char* kQuantileOp = "tessera.array.quantile";
inline constexpr const char* kSearchsortedOp = "tessera.array.searchsorted";
inline constexpr const char* kIsinOp = "tessera.array.isin";
inline constexpr const char* kHistogramOp = "tessera.array.histogram";
inline constexpr const char* kBincountOp = "tessera.array.bincount";
inline constexpr const char* kUniqueOp = "tessera.array.unique";

/** Inclusive scan of one chunk along `axis` (in the chunk's dtype, which is the result's). */
struct ScanParams {
  std::uint8_t kind = 0;  // 0: sum, 1: product
  std::int32_t axis = 0;
  template <class Ar>
  void serialize(Ar& ar) { ar(kind, axis); }
};

/** Sorts every row (last axis) of a chunk: the values, or (arg) the int64 sorting indices. */
struct SortParams {
  bool arg = false;
  template <class Ar>
  void serialize(Ar& ar) { ar(arg); }
};

/**
 * One step of topk along the last axis. From a chunk (from_partials false) or from partials
 * concatenated along the last axis. A partial of argtopk is float64 (..., 2m): m values, then
 * their m indices. `final` gives the result: x's dtype, or int64 indices for arg.
 */
struct TopkParams {
  std::int64_t k = 0;
  bool arg = false;
  bool from_partials = false;
  bool final = false;
  std::int64_t offset = 0;  // index along the axis of the chunk's first element
  template <class Ar>
  void serialize(Ar& ar) { ar(k, arg, from_partials, final, offset); }
};

/** Quantiles over the trailing `reduced` axes of a chunk; result (q?, leading axes...). */
struct QuantileParams {
  std::vector<double> q;  // in [0, 1]
  std::uint8_t method = 0;  // sorting::QuantileMethod
  bool skip_nan = false;
  bool q_axis = true;
  std::int32_t reduced = 1;
  DType out_dtype = DType::Float64;
  template <class Ar>
  void serialize(Ar& ar) { ar(q, method, skip_nan, q_axis, reduced, out_dtype); }
};

/** searchsorted: args (sorted 1-d a, values chunk); int64 result of the values' shape. */
struct SearchParams {
  bool right = false;
  template <class Ar>
  void serialize(Ar& ar) { ar(right); }
};

/** isin: args (element chunk, sorted 1-d test elements of the same dtype); bool result. */
struct IsinParams {
  bool invert = false;
  template <class Ar>
  void serialize(Ar& ar) { ar(invert); }
};

/** Partial histogram of a chunk (args: x chunk [, weights chunk]): shape (1, bins). */
struct HistogramParams {
  std::vector<double> edges;  // ascending
  bool weighted = false;
  double norm = 0;  // equal bins: bins / (last - first), the bin computed, not searched; 0: search
  template <class Ar>
  void serialize(Ar& ar) { ar(edges, weighted, norm); }
};

/** Partial bincount of a 1-d chunk (args: x chunk [, weights chunk]): shape (1, length). */
struct BincountParams {
  std::int64_t length = 0;
  bool weighted = false;
  template <class Ar>
  void serialize(Ar& ar) { ar(length, weighted); }
};

/**
 * unique: from a chunk (any shape) or from partials: a partial is (2, m) of int64 (bool and
 * integer data) or float64 (floating data): row 0 the ascending distinct values, row 1 counts.
 */
struct UniqueParams {
  bool from_partials = false;
  template <class Ar>
  void serialize(Ar& ar) { ar(from_partials); }
};

/** The wide dtype unique's partials hold values of `t` in. */
inline DType unique_partial_dtype(DType t) { return is_floating(t) ? DType::Float64 : DType::Int64; }

}  // namespace tessera::detail
