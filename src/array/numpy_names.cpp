// NumPy's other names, and compositions of existing operations (numpy_names.hpp). Everything
// here builds expressions from public operations, so it fuses and runs wherever they run.
#include "tessera/array/numpy_names.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>

#include "tessera/array/creation_more.hpp"
#include "tessera/array/shape.hpp"
#include "tessera/array/sort.hpp"
#include "tessera/array/structural.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

namespace {

/** A 0-d array of `value` in dtype `dtype`: a constant that broadcasts against anything. */
Array constant(double value, DType dtype) { return scalar(value, dtype); }

/** x[..., newaxis at `axis`, ...]: one more axis of length 1. */
Array insert_axis(const Array& x, int axis) {
  std::vector<Index> index;
  for (int a = 0; a < axis; ++a) index.emplace_back(all());
  index.emplace_back(newaxis);
  return x[index];
}

int normalize_axis(int axis, int ndim, const char* who) {
  if (axis < -ndim || axis >= ndim)
    throw IndexError(std::string(who) + ": axis " + std::to_string(axis) + " is out of bounds for " +
                     std::to_string(ndim) + " dimensions");
  return axis < 0 ? axis + ndim : axis;
}

Array as_float(const Array& x) { return is_floating(x.dtype()) ? x : x.astype(DType::Float64); }

std::pair<Array, Array> triangle_indices(std::int64_t n, std::int64_t k, std::int64_t m, std::int64_t chunk,
                                         bool lower, const char* who) {
  if (n < 0) throw ShapeError(std::string(who) + ": negative n");
  if (m < 0) m = n;
  std::vector<std::int64_t> rows, cols;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j)
      if (lower ? j - i <= k : j - i >= k) {
        rows.push_back(i);
        cols.push_back(j);
      }
  const auto len = static_cast<std::int64_t>(rows.size());
  return {from_vector(rows, {len}, {chunk}), from_vector(cols, {len}, {chunk})};
}

}  // namespace

Array from_array(const Block& block, ChunkSpec chunks) { return from_block(block, std::move(chunks)); }
Array asarray(const Block& block, ChunkSpec chunks) { return from_block(block, std::move(chunks)); }
Array asanyarray(const Block& block, ChunkSpec chunks) { return from_block(block, std::move(chunks)); }
Array array(const Block& block, ChunkSpec chunks) { return from_block(block, std::move(chunks)); }

Array true_divide(const Array& a, const Array& b) { return a / b; }
Array remainder(const Array& a, const Array& b) { return mod(a, b); }
std::pair<Array, Array> divmod(const Array& a, const Array& b) { return {floor_divide(a, b), mod(a, b)}; }
Array fabs(const Array& x) { return abs(as_float(x)); }

Array fix(const Array& x) {
  const Array f = as_float(x);
  return where(f < 0, ceil(f), floor(f));
}

Array iscomplex(const Array& x) { return imag(x) != 0; }
Array isreal(const Array& x) { return imag(x) == 0; }

Array isnull(const Array& x) { return isnan(x); }
Array notnull(const Array& x) { return !isnan(x); }

Array ldexp(const Array& x, const Array& n) {
  if (!is_integer(n.dtype()) && n.dtype() != DType::Bool) throw DTypeError("ldexp: the exponent must be an integer array");
  return as_float(x) * power(2.0, n.astype(DType::Float64)).astype(as_float(x).dtype());
}

std::pair<Array, Array> modf(const Array& x) {
  const Array f = as_float(x);
  const Array whole = fix(f);
  // inf - inf would be NaN: an infinite x has fractional part 0; NaN stays NaN.
  const Array frac = where(isfinite(f), f - whole, where(isnan(f), f, constant(0.0, f.dtype())));
  return {frac, whole};
}

DType result_type(const std::vector<Array>& arrays) {
  if (arrays.empty()) throw Error("result_type: no arrays");
  DType t = arrays[0].dtype();
  for (std::size_t i = 1; i < arrays.size(); ++i) t = promote_types(t, arrays[i].dtype());
  return t;
}

Array select(const std::vector<Array>& condlist, const std::vector<Array>& choicelist, Scalar fallback) {
  if (condlist.size() != choicelist.size())
    throw ShapeError("select: " + std::to_string(condlist.size()) + " conditions for " +
                     std::to_string(choicelist.size()) + " choices");
  if (condlist.empty()) throw Error("select: no conditions");
  for (const auto& c : condlist)
    if (c.dtype() != DType::Bool) throw DTypeError("select: conditions must be bool arrays, not " + std::string(dtype_name(c.dtype())));
  const DType out = result_type(choicelist);
  Array result = scalar(fallback, out);
  // The first true condition wins: build from the last one outwards.
  for (std::size_t i = condlist.size(); i-- > 0;) result = where(condlist[i], choicelist[i].astype(out), result);
  return result;
}

Array choose(const Array& a, const std::vector<Array>& choices, const std::string& mode) {
  if (choices.empty()) throw Error("choose: no choices");
  if (!is_integer(a.dtype())) throw DTypeError("choose: the index array must be integer, not " + std::string(dtype_name(a.dtype())));
  const auto n = static_cast<std::int64_t>(choices.size());
  Array idx;
  if (mode == "clip") idx = minimum(maximum(a, scalar(0, a.dtype())), scalar(n - 1, a.dtype()));
  else if (mode == "wrap") idx = mod(a, scalar(n, a.dtype()));
  else throw Error("choose: mode '" + mode + "' is not supported (use \"clip\" or \"wrap\"; \"raise\" cannot be checked lazily)");
  const DType out = result_type(choices);
  Array result = choices[n - 1].astype(out);
  for (std::int64_t i = n - 1; i-- > 0;) result = where(idx == i, choices[i].astype(out), result);
  return result;
}

Array piecewise(const Array& x, const std::vector<Array>& condlist,
                const std::vector<std::function<Array(const Array&)>>& funclist) {
  const std::size_t nc = condlist.size();
  if (funclist.size() != nc && funclist.size() != nc + 1)
    throw ShapeError("piecewise: " + std::to_string(funclist.size()) + " functions for " + std::to_string(nc) +
                     " conditions (expected as many, or one more for the default)");
  Array result = where(x == x, constant(0, x.dtype()), constant(0, x.dtype()));  // zeros shaped like x
  if (funclist.size() == nc + 1) {
    Array none = scalar(true, DType::Bool);
    for (const auto& c : condlist) none = none && !c;
    result = where(none, funclist[nc](x).astype(x.dtype()), result);
  }
  for (std::size_t i = 0; i < nc; ++i) result = where(condlist[i], funclist[i](x).astype(x.dtype()), result);
  return result;
}

Array ravel_multi_index(const std::vector<Array>& multi_index, const Shape& dims, const std::string& mode) {
  if (multi_index.size() != dims.size())
    throw ShapeError("ravel_multi_index: " + std::to_string(multi_index.size()) + " index arrays for " +
                     std::to_string(dims.size()) + " dimensions");
  if (mode != "clip" && mode != "wrap")
    throw Error("ravel_multi_index: mode '" + mode + "' is not supported (use \"clip\" or \"wrap\")");
  Array flat;
  std::int64_t stride = 1;
  for (std::size_t k = dims.size(); k-- > 0;) {
    if (dims[k] <= 0) throw ShapeError("ravel_multi_index: dimensions must be positive");
    const Array& i = multi_index[k];
    if (!is_integer(i.dtype())) throw DTypeError("ravel_multi_index: index arrays must be integer");
    const Array i64 = i.astype(DType::Int64);
    const Array fixed = mode == "clip" ? minimum(maximum(i64, scalar(0, DType::Int64)), scalar(dims[k] - 1, DType::Int64))
                                       : mod(i64, scalar(dims[k], DType::Int64));
    const Array term = fixed * stride;
    flat = flat.valid() ? flat + term : term;
    stride *= dims[k];
  }
  return flat;
}

std::vector<Array> unravel_index(const Array& indices, const Shape& dims) {
  if (!is_integer(indices.dtype())) throw DTypeError("unravel_index: indices must be integer");
  std::vector<Array> out(dims.size());
  std::int64_t stride = 1;
  const Array i64 = indices.astype(DType::Int64);
  for (std::size_t k = dims.size(); k-- > 0;) {
    if (dims[k] <= 0) throw ShapeError("unravel_index: dimensions must be positive");
    out[k] = mod(floor_divide(i64, stride), dims[k]);
    stride *= dims[k];
  }
  return out;
}

std::pair<Array, Array> tril_indices(std::int64_t n, std::int64_t k, std::int64_t m, std::int64_t chunk) {
  return triangle_indices(n, k, m, chunk, true, "tril_indices");
}
std::pair<Array, Array> triu_indices(std::int64_t n, std::int64_t k, std::int64_t m, std::int64_t chunk) {
  return triangle_indices(n, k, m, chunk, false, "triu_indices");
}
std::pair<Array, Array> tril_indices_from(const Array& a, std::int64_t k) {
  if (a.ndim() != 2) throw ShapeError("tril_indices_from: needs a 2-d array");
  return tril_indices(a.shape()[0], k, a.shape()[1]);
}
std::pair<Array, Array> triu_indices_from(const Array& a, std::int64_t k) {
  if (a.ndim() != 2) throw ShapeError("triu_indices_from: needs a 2-d array");
  return triu_indices(a.shape()[0], k, a.shape()[1]);
}

Array moment(const Array& a, int order, std::vector<int> axes, int ddof) {
  if (order < 0) throw Error("moment: order must be non-negative");
  if (axes.empty())
    for (int k = 0; k < a.ndim(); ++k) axes.push_back(k);
  std::int64_t n = 1;
  for (int& ax : axes) {
    ax = normalize_axis(ax, a.ndim(), "moment");
    n *= a.shape()[ax];
  }
  const Array f = as_float(a);
  const Array centred = f - f.mean({.axes = axes, .keepdims = true});
  Array powered = centred;
  if (order == 0) powered = centred * 0.0 + 1.0;
  for (int i = 1; i < order; ++i) powered = powered * centred;
  return powered.sum({.axes = axes}) / static_cast<double>(n - ddof);
}

Array apply_over_axes(const std::function<Array(const Array&, int)>& func, const Array& a, const std::vector<int>& axes) {
  Array val = a;
  for (int axis : axes) {
    axis = normalize_axis(axis, val.ndim(), "apply_over_axes");
    Array res = func(val, axis);
    if (res.ndim() == val.ndim()) val = res;
    else if (res.ndim() == val.ndim() - 1) val = insert_axis(res, axis);
    else throw ShapeError("apply_over_axes: the function must keep the dimensions or drop the one axis");
  }
  return val;
}

Array coarsen(CoarsenKind kind, const Array& x, const std::map<int, std::int64_t>& factors, bool trim_excess) {
  const int nd = x.ndim();
  std::vector<std::int64_t> f(nd, 1), m(nd);
  std::int64_t window = 1;
  for (auto [axis, factor] : factors) {
    const int a = normalize_axis(axis, nd, "coarsen");
    if (factor <= 0) throw ShapeError("coarsen: factors must be positive");
    f[a] = factor;
    window *= factor;
  }
  for (int a = 0; a < nd; ++a) {
    m[a] = x.shape()[a] / f[a];
    if (!trim_excess && x.shape()[a] % f[a] != 0)
      throw ShapeError("coarsen: axis " + std::to_string(a) + " of length " + std::to_string(x.shape()[a]) +
                       " is not a multiple of its factor " + std::to_string(f[a]) + " (pass trim_excess)");
  }
  if (window > 256) throw ShapeError("coarsen: windows of more than 256 elements (coarsen in steps)");
  // Window element o is the strided view x[o_0::f_0, o_1::f_1, ...]; combining the views is one
  // fused program per output chunk that reads every input element once.
  Array result;
  std::vector<std::int64_t> o(nd, 0);
  for (std::int64_t w = 0; w < window; ++w) {
    std::vector<Index> index;
    for (int a = 0; a < nd; ++a) index.emplace_back(slice(o[a], o[a] + f[a] * m[a], f[a]));
    Array view = x[index];
    if (!result.valid()) result = (kind == CoarsenKind::Mean) ? as_float(view) : view;
    else switch (kind) {
        case CoarsenKind::Sum: case CoarsenKind::Mean: result = result + view; break;
        case CoarsenKind::Prod: result = result * view; break;
        case CoarsenKind::Min: result = minimum(result, view); break;
        case CoarsenKind::Max: result = maximum(result, view); break;
      }
    for (int a = nd - 1; a >= 0; --a) {
      if (++o[a] < f[a]) break;
      o[a] = 0;
    }
  }
  if (kind == CoarsenKind::Mean) result = result / static_cast<double>(window);
  return result;
}

namespace {

/** a[lo:hi] along axis (all of the other axes). */
Array take_range(const Array& a, int axis, std::int64_t lo, std::int64_t hi) {
  std::vector<Index> index;
  for (int k = 0; k < axis; ++k) index.emplace_back(all());
  index.emplace_back(slice(lo, hi));
  return a[index];
}

std::vector<std::int64_t> normalized_positions(std::vector<std::int64_t> idx, std::int64_t len, bool inclusive_end,
                                               const char* who) {
  for (auto& i : idx) {
    const std::int64_t hi = inclusive_end ? len : len - 1;
    if (i < -len || i > hi)
      throw IndexError(std::string(who) + ": index " + std::to_string(i) + " is out of bounds for an axis of length " +
                       std::to_string(len));
    if (i < 0) i += len;
  }
  std::stable_sort(idx.begin(), idx.end());
  return idx;
}

Array insert_slabs(const Array& a, std::vector<std::int64_t> indices, const std::function<Array(const Shape&)>& slab,
                   int axis) {
  axis = normalize_axis(axis, a.ndim(), "insert");
  const std::int64_t len = a.shape()[axis];
  indices = normalized_positions(std::move(indices), len, true, "insert");
  Shape slab_shape = a.shape();
  slab_shape[axis] = 1;
  std::vector<Array> pieces;
  std::int64_t prev = 0;
  for (auto i : indices) {
    if (i > prev) pieces.push_back(take_range(a, axis, prev, i));
    pieces.push_back(slab(slab_shape));
    prev = i;
  }
  if (prev < len || pieces.empty()) pieces.push_back(take_range(a, axis, prev, len));
  return pieces.size() == 1 ? pieces[0] : concatenate(pieces, axis);
}

}  // namespace

Array insert(const Array& a, std::vector<std::int64_t> indices, const Array& values, int axis) {
  return insert_slabs(a, std::move(indices), [&](const Shape& s) { return values.astype(a.dtype()).broadcast_to(s); }, axis);
}

Array insert(const Array& a, std::vector<std::int64_t> indices, Scalar value, int axis) {
  return insert_slabs(a, std::move(indices), [&](const Shape& s) { return scalar(value, a.dtype()).broadcast_to(s); }, axis);
}

Array delete_(const Array& a, std::vector<std::int64_t> indices, int axis) {
  axis = normalize_axis(axis, a.ndim(), "delete");
  const std::int64_t len = a.shape()[axis];
  indices = normalized_positions(std::move(indices), len, false, "delete");
  std::vector<Array> pieces;
  std::int64_t prev = 0;
  for (auto i : indices) {
    if (i > prev) pieces.push_back(take_range(a, axis, prev, i));
    prev = std::max(prev, i + 1);
  }
  if (prev < len) pieces.push_back(take_range(a, axis, prev, len));
  if (pieces.empty()) return take_range(a, axis, 0, 0);
  return pieces.size() == 1 ? pieces[0] : concatenate(pieces, axis);
}

Array append(const Array& a, const Array& values, int axis) { return concatenate({a, values}, axis); }

std::vector<Array> gradient(const Array& f, std::vector<int> axes, std::vector<double> spacing) {
  if (axes.empty())
    for (int k = 0; k < f.ndim(); ++k) axes.push_back(k);
  if (spacing.size() > 1 && spacing.size() != axes.size())
    throw ShapeError("gradient: give one spacing, or one per axis (" + std::to_string(axes.size()) + ")");
  const Array x = as_float(f);
  std::vector<Array> out;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int axis = normalize_axis(axes[i], f.ndim(), "gradient");
    const double h = spacing.empty() ? 1.0 : spacing.size() == 1 ? spacing[0] : spacing[i];
    const std::int64_t n = f.shape()[axis];
    if (n < 2) throw ShapeError("gradient: axis " + std::to_string(axis) + " needs at least 2 elements");
    const Array first = (take_range(x, axis, 1, 2) - take_range(x, axis, 0, 1)) / h;
    const Array last = (take_range(x, axis, n - 1, n) - take_range(x, axis, n - 2, n - 1)) / h;
    if (n == 2) {
      out.push_back(concatenate({first, last}, axis));
      continue;
    }
    const Array inner = (take_range(x, axis, 2, n) - take_range(x, axis, 0, n - 2)) / (2 * h);
    out.push_back(concatenate({first, inner, last}, axis));
  }
  return out;
}

Array union1d(const Array& a, const Array& b, Executor& executor) {
  return unique(concatenate({ravel(a), ravel(b)}), executor).values;
}

Array fromfunction(const std::function<Array(const std::vector<Array>&)>& f, const Shape& shape, ChunkSpec chunks,
                   DType dtype) {
  // indices() has the grid's axes after a leading axis of one chunk per coordinate.
  ChunkSpec grid_chunks = chunks;
  if (!chunks.is_explicit() && !chunks.sizes().empty() && chunks.sizes().size() == shape.size()) {
    std::vector<std::int64_t> sizes{1};
    sizes.insert(sizes.end(), chunks.sizes().begin(), chunks.sizes().end());
    grid_chunks = ChunkSpec(sizes);
  }
  const Array grid = indices(shape, dtype, grid_chunks);
  std::vector<Array> axes;
  for (std::size_t k = 0; k < shape.size(); ++k) axes.push_back(grid[{static_cast<std::int64_t>(k)}]);
  return f(axes);
}

std::vector<Array> unify_chunks(const std::vector<Array>& arrays) {
  if (arrays.empty()) return {};
  const Shape& shape = arrays.front().shape();
  for (const Array& a : arrays)
    if (a.shape() != shape)
      throw ShapeError("unify_chunks: the arrays have different shapes (" + shape_to_string(shape) + " and " +
                       shape_to_string(a.shape()) + ")");
  Chunks common(shape.size());
  for (std::size_t ax = 0; ax < shape.size(); ++ax) {
    // Every array's chunk boundaries on this axis, then the pieces between them.
    std::vector<std::int64_t> cuts{0, shape[ax]};
    for (const Array& a : arrays) {
      if (!a.known_chunks()) throw ShapeError("unify_chunks: chunks of unknown size (call compute_chunk_sizes() first)");
      std::int64_t at = 0;
      for (std::int64_t c : a.chunks()[ax]) cuts.push_back(at += c);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (std::size_t i = 1; i < cuts.size(); ++i) common[ax].push_back(cuts[i] - cuts[i - 1]);
    if (common[ax].empty()) common[ax].push_back(0);
  }
  std::vector<Array> out;
  for (const Array& a : arrays) out.push_back(a.chunks() == common ? a : a.rechunk(ChunkSpec(common)));
  return out;
}

}  // namespace tessera
