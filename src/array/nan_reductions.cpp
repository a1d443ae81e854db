// NaN-aware reductions, count_nonzero and ptp, composed from the fused element-wise machinery:
// where(isnan(x), 0, x).sum() is one task per chunk (the where folds into the partial sum), so
// none of these needs a kernel of its own, on the host or on the device.
#include <cmath>
#include <limits>

#include "tessera/array/array.hpp"
#include "tessera/array.hpp"  // the operations this one is built from
#include "tessera/core/error.hpp"

namespace tessera {

namespace detail {
/** The one-pass mean of the non-NaN elements (reductions.cpp, ReduceKind::NanMean; host only). */
Array nan_mean_reduction(const Array& x, ReduceOptions o);
}  // namespace detail

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Array constant(double v, DType t) { return scalar(v, t); }

/** x with NaN replaced by v (x floating). */
Array nan_to(const Array& x, double v) { return where(isnan(x), constant(v, x.dtype()), x); }

/** NumPy keeps float32 for the float32 nan-statistics; int64 counts would promote to float64. */
Array as_float_of(const Array& r, DType in) { return in == DType::Float32 ? r.astype(DType::Float32) : r; }

ReduceOptions keep(ReduceOptions o) {
  o.keepdims = true;
  return o;
}

ReduceOptions axis_options(std::optional<int> axis, int split_every) {
  ReduceOptions o;
  if (axis) o.axes = {*axis};
  o.split_every = split_every;
  return o;
}

/** NaN where every element of the slice is NaN, else r. */
Array nan_where_all_nan(const Array& x, const Array& r, const ReduceOptions& o) {
  return where(isnan(x).all(o), constant(kNaN, r.dtype()), r);
}

Array nan_count(const Array& x, const ReduceOptions& o) { return (!isnan(x)).sum(o); }

}  // namespace

Array nansum(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.sum(o);
  return nan_to(x, 0).sum(o);
}

Array nanprod(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.prod(o);
  return nan_to(x, 1).prod(o);
}

Array nanmin(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.min(o);
  return nan_where_all_nan(x, nan_to(x, kInf).min(o), o);
}

Array nanmax(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.max(o);
  return nan_where_all_nan(x, nan_to(x, -kInf).max(o), o);
}

Array nanmean(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.mean(o);
  // On the host one pass keeps the sum and the count of the non-NaN elements; the device
  // evaluator has no such reduction, so there it is a sum and a count. 0 / 0 is NaN for an
  // all-NaN slice, NumPy's result, either way.
  if (x.target() == Target::Host) return detail::nan_mean_reduction(x, o);
  return as_float_of(nansum(x, o) / nan_count(x, o), x.dtype());
}

Array nanvar(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.var(o);
  // Two passes, as NumPy's nanvar: the mean (kept as a broadcastable array), then the squared
  // deviations of the non-NaN values.
  const Array m = nanmean(x, keep(o)).astype(DType::Float64);
  const Array d = where(isnan(x), scalar(0.0), x.astype(DType::Float64) - m);
  const Array dof = nan_count(x, o) - o.ddof;
  const Array v = where(dof <= 0, scalar(kNaN), (d * d).sum(o) / dof);
  return as_float_of(v, x.dtype());
}

Array nanstd(const Array& x, ReduceOptions o) {
  if (!is_floating(x.dtype())) return x.std(o);
  return as_float_of(sqrt(nanvar(x.astype(DType::Float64), o)), x.dtype());
}

Array nanargmin(const Array& x, std::optional<int> axis, int split_every) {
  if (!is_floating(x.dtype())) return x.argmin(axis, split_every);
  const ReduceOptions o = axis_options(axis, split_every);
  return where(isnan(x).all(o), scalar(std::int64_t{-1}), nan_to(x, kInf).argmin(axis, split_every));
}

Array nanargmax(const Array& x, std::optional<int> axis, int split_every) {
  if (!is_floating(x.dtype())) return x.argmax(axis, split_every);
  const ReduceOptions o = axis_options(axis, split_every);
  return where(isnan(x).all(o), scalar(std::int64_t{-1}), nan_to(x, -kInf).argmax(axis, split_every));
}

Array count_nonzero(const Array& x, ReduceOptions o) { return (x != 0).sum(o); }

Array ptp(const Array& x, ReduceOptions o) { return x.max(o) - x.min(o); }

}  // namespace tessera
