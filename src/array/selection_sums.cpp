// Sums of boolean selections, taken as masked sums.
//
// x[mask].sum() adds the elements the mask keeps; where(mask, x, 0).sum() adds the same elements
// and zeros, and is blockwise: it fuses with whatever draws or computes x and the mask, and the
// selected elements are never copied into blocks of unknown size (at 20000 x 20000 that copy is
// 1.6 GB, which Dask makes too). The same holds for a 1-d mask along an axis (compress, x[m] on
// the first axis) when the sum covers that axis. A mean divides by the number of elements kept.
// NaN and inf where the mask is false are replaced by zeros, as the selection drops them.
#include <algorithm>
#include <numeric>

#include "expr.hpp"
#include "sum_rewrites.hpp"
#include "tessera/array/creation.hpp"
#include "tessera/array/elementwise.hpp"

namespace tessera::detail {

std::optional<Array> sum_of_selection(const Array& s, const std::vector<int>& axes, bool keepdims, int split_every,
                                      bool mean) {
  if (!sum_rewrites_enabled()) return std::nullopt;
  const Expr& e = expr_of(s);
  if (e.kind != ExprKind::TaskList) return std::nullopt;
  const auto& sel = static_cast<const TaskListExpr&>(e).selection;
  if (!sel) return std::nullopt;
  const Array data(sel->data);
  Array mask(sel->mask);
  if (mask.dtype() != DType::Bool) mask = mask != scalar(0, mask.dtype());
  ReduceOptions o;
  o.split_every = split_every;
  Array kept_mask = mask;
  if (sel->axis < 0) {
    // The selection is 1-d and `axes` is {0}: every element of data.
    o.axes.resize(static_cast<std::size_t>(data.ndim()));
    std::iota(o.axes.begin(), o.axes.end(), 0);
  } else {
    if (std::find(axes.begin(), axes.end(), sel->axis) == axes.end()) return std::nullopt;
    o.axes = axes;
    o.keepdims = keepdims;
    // The 1-d mask along its axis, broadcast over the others.
    std::vector<Index> ix;
    for (int a = 0; a < data.ndim(); ++a) ix.emplace_back(a == sel->axis ? Index(all()) : Index(newaxis));
    kept_mask = mask[ix];
  }
  Array total = where(kept_mask, data, scalar(0, data.dtype())).sum(o);
  if (sel->axis < 0 && keepdims) total = total.reshape({1});
  if (!mean) return total;
  // Elements kept: those of the mask, times the other summed axes' lengths along a 1-d mask.
  Array count = mask.astype(DType::Float64).sum();
  if (sel->axis >= 0)
    for (int a : axes)
      if (a != sel->axis) count = count * scalar(static_cast<double>(data.shape()[a]));
  return (total.astype(DType::Float64) / count).astype(e.dtype);
}

}  // namespace tessera::detail
