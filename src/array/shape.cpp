// Shape manipulation: views for axis changes and reversals, concatenations of views for rolls,
// pads, tiles and joins.
#include "tessera/array/shape.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>
#include <string>

#include "expr.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace {

// Index that takes the whole of every axis but `axis`, where it takes `ix`.
std::vector<Index> along(int nd, int axis, Index ix) {
  std::vector<Index> v(nd, Index(all()));
  v[axis] = std::move(ix);
  return v;
}

Array slice_along(const Array& a, int axis, std::int64_t start, std::int64_t stop) {
  return a[along(a.ndim(), axis, slice(start, stop))];
}

// A view with chosen output chunks (a blockwise node is evaluated over any chunking).
Array view_of(const Array& in, Shape shape, Chunks chunks, AffineMap map, const char* prefix) {
  auto e = make_expr<ViewExpr>(ExprKind::View, expr_of(in).dtype, std::move(shape), std::move(chunks), prefix);
  e->input = in.expr();
  e->target = in.expr()->target;
  e->map = std::move(map);
  return Array(e);
}

// `x` repeated `n` times along `axis`, where x has length 1 there (a stride-0 view).
Array spread_along(const Array& x, int axis, std::int64_t n) {
  const Expr& e = expr_of(x);
  const int nd = static_cast<int>(e.shape.size());
  AffineMap map{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  for (int k = 0; k < nd; ++k) map.src[k] = k;
  map.src[axis] = -1;
  Shape shape = e.shape;
  Chunks chunks = e.chunks;
  shape[axis] = n;
  chunks[axis] = {n};
  return view_of(x, std::move(shape), std::move(chunks), std::move(map), "broadcast");
}

std::int64_t floor_mod(std::int64_t a, std::int64_t n) {
  const std::int64_t r = a % n;
  return r < 0 ? r + n : r;
}

std::vector<int> normalize_axes(std::vector<int> axes, int nd, const char* what) {
  std::set<int> seen;
  for (auto& a : axes) {
    a = normalize_axis(a, nd);
    if (!seen.insert(a).second) throw ShapeError(std::string(what) + ": repeated axis " + std::to_string(a));
  }
  return axes;
}

}  // namespace

Array squeeze(const Array& a, std::optional<std::vector<int>> axes) {
  const int nd = a.ndim();
  std::vector<bool> drop(nd, false);
  if (axes) {
    for (int ax : normalize_axes(*axes, nd, "squeeze")) {
      if (a.shape()[ax] != 1)
        throw ShapeError("squeeze: cannot select an axis to squeeze out which has size not equal to one (axis " +
                         std::to_string(ax) + " of shape " + shape_to_string(a.shape()) + ")");
      drop[ax] = true;
    }
  } else {
    for (int k = 0; k < nd; ++k) drop[k] = a.shape()[k] == 1;
  }
  std::vector<Index> ix;
  for (int k = 0; k < nd; ++k) ix.emplace_back(drop[k] ? Index(0) : Index(all()));
  return a[ix];
}

Array expand_dims(const Array& a, std::vector<int> axes) {
  const int out_nd = a.ndim() + static_cast<int>(axes.size());
  axes = normalize_axes(std::move(axes), out_nd, "expand_dims");
  std::vector<Index> ix;
  for (int k = 0; k < out_nd; ++k)
    ix.emplace_back(std::find(axes.begin(), axes.end(), k) != axes.end() ? Index(newaxis) : Index(all()));
  return a[ix];
}

Array atleast_1d(const Array& a) { return a.ndim() >= 1 ? a : a[{newaxis}]; }

Array atleast_2d(const Array& a) {
  if (a.ndim() >= 2) return a;
  return a.ndim() == 1 ? a[{newaxis, all()}] : a[{newaxis, newaxis}];
}

Array atleast_3d(const Array& a) {
  switch (a.ndim()) {
    case 0: return a[{newaxis, newaxis, newaxis}];
    case 1: return a[{newaxis, all(), newaxis}];
    case 2: return a[{all(), all(), newaxis}];
    default: return a;
  }
}

Array ravel(const Array& a) { return a.ndim() == 1 ? a : a.reshape({a.size()}); }

Array flip(const Array& a, std::optional<std::vector<int>> axes) {
  const int nd = a.ndim();
  std::vector<int> ax;
  if (axes) ax = normalize_axes(*axes, nd, "flip");
  else
    for (int k = 0; k < nd; ++k) ax.push_back(k);
  std::vector<Index> ix(nd, Index(all()));
  for (int k : ax) ix[k] = step(-1);
  return a[ix];
}

Array fliplr(const Array& a) {
  if (a.ndim() < 2) throw ShapeError("fliplr: input must be at least 2-d");
  return flip(a, 1);
}

Array flipud(const Array& a) {
  if (a.ndim() < 1) throw ShapeError("flipud: input must be at least 1-d");
  return flip(a, 0);
}

Array swapaxes(const Array& a, int axis1, int axis2) {
  const int nd = a.ndim();
  axis1 = normalize_axis(axis1, nd);
  axis2 = normalize_axis(axis2, nd);
  std::vector<int> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[axis1], perm[axis2]);
  return a.transpose(perm);
}

Array moveaxis(const Array& a, std::vector<int> source, std::vector<int> destination) {
  const int nd = a.ndim();
  if (source.size() != destination.size())
    throw ShapeError("moveaxis: source and destination must have the same number of elements");
  source = normalize_axes(std::move(source), nd, "moveaxis");
  destination = normalize_axes(std::move(destination), nd, "moveaxis");
  // NumPy: the other axes keep their order; the moved ones are inserted at their destinations.
  std::vector<int> order;
  for (int k = 0; k < nd; ++k)
    if (std::find(source.begin(), source.end(), k) == source.end()) order.push_back(k);
  std::vector<std::pair<int, int>> moves;
  for (std::size_t i = 0; i < source.size(); ++i) moves.emplace_back(destination[i], source[i]);
  std::sort(moves.begin(), moves.end());
  for (const auto& [dst, src] : moves) order.insert(order.begin() + dst, src);
  return a.transpose(order);
}

Array rollaxis(const Array& a, int axis, int start) {
  const int nd = a.ndim();
  axis = normalize_axis(axis, nd);
  if (start < 0) start += nd;
  if (start < 0 || start > nd)
    throw ShapeError("rollaxis: start " + std::to_string(start) + " is out of bounds for " + std::to_string(nd) +
                     " dimensions");
  if (axis < start) --start;
  if (axis == start) return a;
  std::vector<int> order;
  for (int k = 0; k < nd; ++k)
    if (k != axis) order.push_back(k);
  order.insert(order.begin() + start, axis);
  return a.transpose(order);
}

Array rot90(const Array& a, int k, std::pair<int, int> axes) {
  const int nd = a.ndim();
  if (nd < 2) throw ShapeError("rot90: the array must be at least 2-d");
  if (axes.first == axes.second || std::abs(axes.first - axes.second) == nd)
    throw ShapeError("rot90: axes must be different");
  const int a0 = normalize_axis(axes.first, nd), a1 = normalize_axis(axes.second, nd);
  k = static_cast<int>(floor_mod(k, 4));
  if (k == 0) return a;
  if (k == 2) return flip(a, std::vector<int>{a0, a1});
  std::vector<int> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[a0], perm[a1]);
  if (k == 1) return flip(a, a1).transpose(perm);
  return flip(a.transpose(perm), a1);
}

Array roll(const Array& a, const std::vector<std::int64_t>& shifts, const std::vector<int>& axes) {
  const int nd = a.ndim();
  // NumPy broadcasts one shift over several axes or one axis over several shifts.
  const std::size_t n = std::max(shifts.size(), axes.size());
  if ((shifts.size() != n && shifts.size() != 1) || (axes.size() != n && axes.size() != 1))
    throw ShapeError("roll: shift and axis must have matching lengths");
  std::vector<std::int64_t> total(nd, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const int ax = normalize_axis(axes[axes.size() == 1 ? 0 : i], nd);
    total[ax] += shifts[shifts.size() == 1 ? 0 : i];
  }
  Array out = a;
  for (int ax = 0; ax < nd; ++ax) {
    const std::int64_t len = a.shape()[ax];
    if (len == 0) continue;
    const std::int64_t s = floor_mod(total[ax], len);
    if (s == 0) continue;
    out = concatenate({slice_along(out, ax, len - s, len), slice_along(out, ax, 0, len - s)}, ax);
  }
  return out;
}

Array roll(const Array& a, std::int64_t shift, std::optional<int> axis) {
  if (axis) return roll(a, std::vector<std::int64_t>{shift}, std::vector<int>{*axis});
  if (a.size() == 0) return a;
  return roll(ravel(a), std::vector<std::int64_t>{shift}, std::vector<int>{0}).reshape(a.shape());
}

namespace {

// The source index of padded position q (q < 0 before the array, q >= n after it).
std::int64_t pad_source(PadMode mode, std::int64_t q, std::int64_t n) {
  switch (mode) {
    case PadMode::Edge: return std::clamp<std::int64_t>(q, 0, n - 1);
    case PadMode::Wrap: return floor_mod(q, n);
    case PadMode::Symmetric: {
      const std::int64_t m = floor_mod(q, 2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case PadMode::Reflect: {
      if (n == 1) return 0;
      const std::int64_t m = floor_mod(q, 2 * n - 2);
      return m < n ? m : 2 * n - 2 - m;
    }
    case PadMode::Constant: break;
  }
  return q;
}

// Pads one axis: the padded positions map to source indices that run in steps of +1, -1 or 0;
// each run is a slice (forwards or reversed) or a repeated edge, and the runs are concatenated.
Array pad_axis(const Array& a, int axis, std::int64_t before, std::int64_t after, PadMode mode, double value) {
  if (before == 0 && after == 0) return a;
  const std::int64_t n = a.shape()[axis];
  std::vector<Array> parts;
  auto constant = [&](std::int64_t w) {
    Shape s = a.shape();
    s[axis] = w;
    Chunks c = a.chunks();
    c[axis] = {w};
    Array f = full(s, value, ChunkSpec(c), a.dtype());
    parts.push_back(a.target() == Target::Device ? f.to_device() : f);
  };
  if (mode == PadMode::Constant) {
    if (before) constant(before);
    parts.push_back(a);
    if (after) constant(after);
    return concatenate(parts, axis);
  }
  if (n == 0)
    throw ShapeError("pad: can't extend an empty axis " + std::to_string(axis) + " using modes other than 'constant'");
  auto emit_run = [&](std::int64_t first, std::int64_t len, int dir) {
    if (dir == 0 && len > 1) parts.push_back(spread_along(slice_along(a, axis, first, first + 1), axis, len));
    else if (dir >= 0) parts.push_back(slice_along(a, axis, first, first + len));
    else
      parts.push_back(a[along(a.ndim(), axis,
                              slice(first, first - len >= 0 ? std::optional<std::int64_t>(first - len) : std::nullopt, -1))]);
  };
  auto add_range = [&](std::int64_t q0, std::int64_t q1) {  // padded positions [q0, q1)
    std::int64_t q = q0;
    while (q < q1) {
      const std::int64_t first = pad_source(mode, q, n);
      std::int64_t len = 1;
      int dir = 0;
      if (q + 1 < q1) {
        dir = static_cast<int>(pad_source(mode, q + 1, n) - first);
        if (dir < -1 || dir > 1) dir = 1;  // a jump: this run is one element
        else
          while (q + len < q1 && pad_source(mode, q + len, n) == first + dir * len) ++len;
      }
      emit_run(first, len, len == 1 ? 1 : dir);
      q += len;
    }
  };
  add_range(-before, 0);
  parts.push_back(a);
  add_range(n, n + after);
  return concatenate(parts, axis);
}

}  // namespace

Array pad(const Array& a, const std::vector<std::pair<std::int64_t, std::int64_t>>& widths, PadMode mode,
          double constant_value) {
  const int nd = a.ndim();
  if (widths.size() != 1 && static_cast<int>(widths.size()) != nd)
    throw ShapeError("pad: " + std::to_string(widths.size()) + " widths for an array of " + std::to_string(nd) +
                     " dimensions");
  Array out = a;
  for (int ax = 0; ax < nd; ++ax) {
    const auto [before, after] = widths[widths.size() == 1 ? 0 : ax];
    if (before < 0 || after < 0) throw ShapeError("pad: index can't contain negative values");
    out = pad_axis(out, ax, before, after, mode, constant_value);
  }
  return out;
}

Array pad(const Array& a, std::int64_t width, PadMode mode, double constant_value) {
  return pad(a, {{width, width}}, mode, constant_value);
}

Array tile(const Array& a, const std::vector<std::int64_t>& reps_in) {
  for (auto r : reps_in)
    if (r < 0) throw ShapeError("tile: negative dimensions are not allowed");
  Array out = a;
  // Fewer repetitions than axes repeat the last axes; more add leading axes of length 1.
  while (out.ndim() < static_cast<int>(reps_in.size())) out = out[{newaxis}];
  std::vector<std::int64_t> reps(out.ndim() - reps_in.size(), 1);
  reps.insert(reps.end(), reps_in.begin(), reps_in.end());
  for (int ax = 0; ax < out.ndim(); ++ax) {
    if (reps[ax] == 1) continue;
    if (reps[ax] == 0) {
      out = slice_along(out, ax, 0, 0);
      continue;
    }
    out = concatenate(std::vector<Array>(static_cast<std::size_t>(reps[ax]), out), ax);
  }
  return out;
}

Array repeat(const Array& a, std::int64_t repeats, std::optional<int> axis_in) {
  if (repeats < 0) throw ShapeError("repeat: negative repeats are not allowed");
  if (!axis_in) return repeat(ravel(a), repeats, 0);
  const int nd = a.ndim();
  const int axis = normalize_axis(*axis_in, nd);
  if (repeats == 1) return a;
  if (repeats == 0) return slice_along(a, axis, 0, 0);
  // Per chunk along the axis (moved last): the piece with a new last axis of `repeats`
  // (a stride-0 view) reshaped to one axis; each chunk grows `repeats` times, as in Dask.
  const Array moved = moveaxis(a, axis, -1);
  const auto offsets = chunk_offsets(moved.chunks()[nd - 1]);
  std::vector<Array> parts;
  for (std::size_t c = 0; c + 1 < offsets.size(); ++c) {
    const Array piece = slice_along(moved, nd - 1, offsets[c], offsets[c + 1]);
    const Array spread = spread_along(piece[along(nd + 1, nd, newaxis)], nd, repeats);
    Shape s = piece.shape();
    s.back() *= repeats;
    parts.push_back(spread.reshape(s));
  }
  return moveaxis(concatenate(parts, nd - 1), -1, axis);
}

namespace {

int block_depth(const BlockList& b) {
  if (!b.is_list()) return 0;
  if (b.items().empty()) throw ShapeError("block: lists cannot be empty");
  const int d = block_depth(b.items()[0]);
  for (const auto& i : b.items())
    if (block_depth(i) != d) throw ShapeError("block: list depths are mismatched");
  return d + 1;
}

int block_ndim(const BlockList& b) {
  if (!b.is_list()) return b.array().ndim();
  int n = 0;
  for (const auto& i : b.items()) n = std::max(n, block_ndim(i));
  return n;
}

Array block_join(const BlockList& b, int depth, int nd) {
  if (!b.is_list()) {
    Array x = b.array();
    while (x.ndim() < nd) x = x[{newaxis}];
    return x;
  }
  std::vector<Array> parts;
  for (const auto& i : b.items()) parts.push_back(block_join(i, depth - 1, nd));
  return concatenate(parts, nd - depth);  // the innermost lists join along the last axis
}

}  // namespace

Array block(const BlockList& blocks) {
  const int depth = block_depth(blocks);
  const int nd = std::max(depth, block_ndim(blocks));
  return block_join(blocks, depth, nd);
}

namespace {
std::vector<Array> map_all(const std::vector<Array>& arrays, Array (*f)(const Array&)) {
  std::vector<Array> out;
  for (const auto& a : arrays) out.push_back(f(a));
  return out;
}
}  // namespace

Array hstack(const std::vector<Array>& arrays) {
  auto xs = map_all(arrays, atleast_1d);
  if (xs.empty()) throw Error("hstack: need at least one array");
  return concatenate(xs, xs[0].ndim() == 1 ? 0 : 1);
}

Array vstack(const std::vector<Array>& arrays) { return concatenate(map_all(arrays, atleast_2d), 0); }

Array dstack(const std::vector<Array>& arrays) { return concatenate(map_all(arrays, atleast_3d), 2); }

Array column_stack(const std::vector<Array>& arrays) {
  std::vector<Array> xs;
  for (const auto& a : arrays) xs.push_back(a.ndim() < 2 ? atleast_2d(a).T() : a);
  return concatenate(xs, 1);
}

std::vector<Array> split(const Array& a, const std::vector<std::int64_t>& indices, int axis) {
  const int nd = a.ndim();
  if (nd == 0) throw ShapeError("split: the array must be at least 1-d");
  axis = normalize_axis(axis, nd);
  const std::int64_t n = a.shape()[axis];
  std::vector<Array> out;
  std::int64_t prev = 0;
  auto clamp = [&](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + n : i, 0, n); };
  for (std::size_t i = 0; i <= indices.size(); ++i) {
    const std::int64_t stop = i < indices.size() ? clamp(indices[i]) : n;
    out.push_back(slice_along(a, axis, prev, std::max(prev, stop)));  // a[prev:stop], empty if stop < prev
    prev = stop;
  }
  return out;
}

std::vector<Array> array_split(const Array& a, std::int64_t sections, int axis) {
  if (sections <= 0) throw ShapeError("array_split: number sections must be larger than 0");
  if (a.ndim() == 0) throw ShapeError("array_split: the array must be at least 1-d");
  const std::int64_t n = a.shape()[normalize_axis(axis, a.ndim())];
  const std::int64_t each = n / sections, extra = n % sections;
  std::vector<std::int64_t> cuts;
  std::int64_t at = 0;
  for (std::int64_t i = 0; i + 1 < sections; ++i) {
    at += each + (i < extra ? 1 : 0);
    cuts.push_back(at);
  }
  return split(a, cuts, axis);
}

std::vector<Array> split(const Array& a, std::int64_t sections, int axis) {
  if (sections <= 0) throw ShapeError("split: number sections must be larger than 0");
  if (a.ndim() == 0) throw ShapeError("split: the array must be at least 1-d");
  const std::int64_t n = a.shape()[normalize_axis(axis, a.ndim())];
  if (n % sections != 0) throw ShapeError("split: array split does not result in an equal division");
  return array_split(a, sections, axis);
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& arrays) {
  std::size_t nd = 0;
  for (const auto& a : arrays) nd = std::max(nd, static_cast<std::size_t>(a.ndim()));
  Shape shape(nd, 1);
  std::vector<std::vector<std::vector<std::int64_t>>> options(nd);
  for (const auto& a : arrays) {
    const std::size_t off = nd - a.ndim();
    for (std::size_t k = 0; k < static_cast<std::size_t>(a.ndim()); ++k) {
      const auto n = a.shape()[k];
      auto& o = shape[off + k];
      if (n != o && n != 1 && o != 1) {
        std::string shapes;
        for (const auto& x : arrays) shapes += (shapes.empty() ? "" : " and ") + shape_to_string(x.shape());
        throw ShapeError("broadcast_arrays: shapes " + shapes + " cannot be broadcast together");
      }
      if (o == 1) o = n;
    }
  }
  // Each axis takes the common chunks of the arrays that span it (Dask's unify_chunks).
  Chunks chunks(nd);
  for (const auto& a : arrays) {
    const std::size_t off = nd - a.ndim();
    for (std::size_t k = 0; k < static_cast<std::size_t>(a.ndim()); ++k)
      if (a.shape()[k] == shape[off + k]) options[off + k].push_back(a.chunks()[k]);
  }
  for (std::size_t k = 0; k < nd; ++k)
    chunks[k] = options[k].empty() ? std::vector<std::int64_t>{shape[k]} : refine_axis_chunks(options[k]);
  std::vector<Array> out;
  for (const auto& a : arrays) {
    const int ad = a.ndim();
    const int off = static_cast<int>(nd) - ad;
    AffineMap map{std::vector<int>(ad, -1), std::vector<std::int64_t>(ad, 0), std::vector<std::int64_t>(ad, 0)};
    for (int k = 0; k < ad; ++k)
      if (a.shape()[k] == shape[off + k]) {
        map.src[k] = off + k;
        map.stride[k] = 1;
      }
    out.push_back(view_of(a, shape, chunks, std::move(map), "broadcast_arrays"));
  }
  return out;
}

}  // namespace tessera
