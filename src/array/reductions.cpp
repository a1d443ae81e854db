// Reductions: checks, result dtypes and the reduction expression (lower.cpp builds the tree).
#include "tessera/array/reductions.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <limits>
#include <numeric>

#include "complex_ops.hpp"
#include "expr.hpp"
#include "sum_rewrites.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace {

ReduceOptions with_axes(std::optional<int> axis, int split_every) {
  ReduceOptions o;
  if (axis) o.axes = {*axis};
  o.split_every = split_every;
  return o;
}

Array reduce(const Array& in, ReduceKind kind, ReduceOptions o, const char* name) {
  const Expr& e = expr_of(in);
  if (is_complex(e.dtype)) return complex_reduce(in, kind, o, name);
  if (e.dtype == DType::UInt64 && (kind == ReduceKind::Min || kind == ReduceKind::Max || kind == ReduceKind::ArgMin ||
                                   kind == ReduceKind::ArgMax)) {
    // Partials compare as int64, where uint64 values above 2**63 are negative. Shifting by
    // -2**63 (wrapping) maps uint64 order onto int64 order; the extreme is shifted back. Arg
    // reductions compare doubles: there the values' float64 conversion keeps their order.
    if (kind == ReduceKind::ArgMin || kind == ReduceKind::ArgMax) return reduce(in.astype(DType::Float64), kind, o, name);
    const Array low = scalar(std::numeric_limits<std::int64_t>::min());
    return (reduce(in.astype(DType::Int64) + low, kind, o, name) + low).astype(DType::UInt64);
  }
  const int nd = static_cast<int>(e.shape.size());
  std::vector<int> axes;
  if (o.axes.empty()) {
    axes.resize(nd);
    std::iota(axes.begin(), axes.end(), 0);
  } else {
    for (int a : o.axes) axes.push_back(normalize_axis(a, nd));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw ShapeError(std::string(name) + ": repeated axis");
  }
  if (o.split_every != 0 && o.split_every < 2) throw Error(std::string(name) + ": split_every must be >= 2");
  if ((kind == ReduceKind::ArgMin || kind == ReduceKind::ArgMax) && axes.size() != 1 && axes.size() != static_cast<std::size_t>(nd))
    throw ShapeError(std::string(name) + ": needs one axis or all axes");
  if (kind == ReduceKind::ArgMin || kind == ReduceKind::ArgMax)  // global indices need the chunks' offsets
    for (int a = 0; a < nd; ++a)
      if (e.shape[a] == unknown_size)
        throw ShapeError(std::string(name) + ": array " + e.name + " has chunks of unknown size on axis " +
                         std::to_string(a) + "; call compute_chunk_sizes() first");
  if ((kind == ReduceKind::Min || kind == ReduceKind::Max || kind == ReduceKind::ArgMin || kind == ReduceKind::ArgMax))
    for (int a : axes)
      if (e.shape[a] == 0) throw Error(std::string(name) + ": zero-size array to reduction operation which has no identity");
  if (kind == ReduceKind::Sum || (kind == ReduceKind::Mean && is_floating(e.dtype))) {
    // A sum or mean of a boolean selection: a masked sum of the data (selection_sums.cpp).
    if (auto s = sum_of_selection(in, axes, o.keepdims, o.split_every, kind == ReduceKind::Mean)) return *s;
    // A sum (or a floating mean) of a product: the operands are summed first (product_sums.cpp).
    if (auto s = sum_of_product(in, axes, o.keepdims, o.split_every ? o.split_every : 8)) {
      if (kind == ReduceKind::Sum) return *s;
      std::int64_t count = 1;
      for (int a : axes) count *= e.shape[a];
      return (*s / scalar(static_cast<double>(count))).astype(e.dtype);
    }
  }
  DType t = e.dtype;
  switch (kind) {
    case ReduceKind::Sum: case ReduceKind::Prod:
      // NumPy: integers narrower than int64 sum as int64, unsigned ones as uint64.
      t = is_floating(e.dtype) ? e.dtype : is_unsigned(e.dtype) ? DType::UInt64 : DType::Int64;
      break;
    case ReduceKind::Mean: case ReduceKind::NanMean: case ReduceKind::Var: case ReduceKind::Std:
      t = (e.dtype == DType::Float32 || e.dtype == DType::Float16) ? e.dtype : DType::Float64;
      break;
    case ReduceKind::Any: case ReduceKind::All: t = DType::Bool; break;
    case ReduceKind::ArgMin: case ReduceKind::ArgMax: t = DType::Int64; break;
    default: break;
  }
  Shape shape;
  Chunks chunks;
  for (int a = 0; a < nd; ++a) {
    const bool r = std::binary_search(axes.begin(), axes.end(), a);
    if (!r) { shape.push_back(e.shape[a]); chunks.push_back(e.chunks[a]); }
    else if (o.keepdims) { shape.push_back(1); chunks.push_back({1}); }
  }
  auto out = make_expr<ReduceExpr>(ExprKind::Reduce, t, std::move(shape), std::move(chunks), name);
  out->input = in.expr();
  out->target = in.expr()->target;
  out->reduce = kind;
  out->axes = axes;
  out->keepdims = o.keepdims;
  out->split_every = o.split_every ? o.split_every : 8;
  out->ddof = o.ddof;
  return Array(out);
}
}  // namespace

namespace detail {
Array nan_mean_reduction(const Array& x, ReduceOptions o) { return reduce(x, ReduceKind::NanMean, o, "nanmean"); }
}  // namespace detail

Array Array::sum(ReduceOptions o) const { return reduce(*this, ReduceKind::Sum, o, "sum"); }
Array Array::prod(ReduceOptions o) const { return reduce(*this, ReduceKind::Prod, o, "prod"); }
Array Array::min(ReduceOptions o) const { return reduce(*this, ReduceKind::Min, o, "min"); }
Array Array::max(ReduceOptions o) const { return reduce(*this, ReduceKind::Max, o, "max"); }
Array Array::mean(ReduceOptions o) const { return reduce(*this, ReduceKind::Mean, o, "mean"); }
Array Array::var(ReduceOptions o) const { return reduce(*this, ReduceKind::Var, o, "var"); }
Array Array::std(ReduceOptions o) const { return reduce(*this, ReduceKind::Std, o, "std"); }
Array Array::any(ReduceOptions o) const { return reduce(*this, ReduceKind::Any, o, "any"); }
Array Array::all(ReduceOptions o) const { return reduce(*this, ReduceKind::All, o, "all"); }
Array Array::argmin(std::optional<int> axis, int split_every) const {
  return reduce(*this, ReduceKind::ArgMin, with_axes(axis, split_every), "argmin");
}
Array Array::argmax(std::optional<int> axis, int split_every) const {
  return reduce(*this, ReduceKind::ArgMax, with_axes(axis, split_every), "argmax");
}
Array Array::argmin(const ReduceOptions& o) const { return reduce(*this, ReduceKind::ArgMin, o, "argmin"); }
Array Array::argmax(const ReduceOptions& o) const { return reduce(*this, ReduceKind::ArgMax, o, "argmax"); }

}  // namespace tessera
