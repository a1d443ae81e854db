// Views: NumPy basic indexing (integers, slices with steps, newaxis), transpose and broadcast_to,
// all affine re-indexings that lowering fuses into the reading program.
#include "tessera/array/indexing.hpp"

#include <algorithm>
#include <set>

#include "expr.hpp"
#include "unknown_chunks.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace {
Array make_view(const Array& in, Shape shape, Chunks chunks, AffineMap map, const char* prefix) {
  auto e = make_expr<ViewExpr>(ExprKind::View, expr_of(in).dtype, std::move(shape), std::move(chunks), prefix);
  e->input = in.expr();
  e->target = in.expr()->target;
  e->map = std::move(map);
  return Array(e);
}
}  // namespace

Array Array::operator[](const std::vector<Index>& index) const {
  const Expr& e = expr_of(*this);
  const int nd = static_cast<int>(e.shape.size());
  int consumed = 0;
  for (const auto& ix : index)
    if (!std::holds_alternative<NewAxis>(ix.get())) ++consumed;
  if (consumed > nd)
    throw IndexError("too many indices: " + std::to_string(consumed) + " for an array of " + std::to_string(nd) +
                     " dimensions");
  AffineMap map;
  map.src.assign(nd, -1);
  map.offset.assign(nd, 0);
  map.stride.assign(nd, 0);
  Shape shape;
  Chunks chunks;
  int in_axis = 0;
  auto handle = [&](const Index& ix) {
    const auto& v = ix.get();
    if (std::holds_alternative<NewAxis>(v)) {
      shape.push_back(1);
      chunks.push_back({1});
      return;
    }
    const std::int64_t n = e.shape[in_axis];
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      if (n == unknown_size)
        throw IndexError("axis " + std::to_string(in_axis) + " of array " + e.name +
                         " has chunks of unknown size: it cannot take an integer index; call compute_chunk_sizes() first");
      const std::int64_t k = *i < 0 ? *i + n : *i;
      if (k < 0 || k >= n)
        throw IndexError("index " + std::to_string(*i) + " is out of bounds for axis " + std::to_string(in_axis) +
                         " with size " + std::to_string(n));
      map.offset[in_axis] = k;
      ++in_axis;
      return;
    }
    const Slice& s = std::get<Slice>(v);
    if (n == unknown_size) {  // only ":" keeps the chunks, whatever their sizes turn out to be
      if (s.start || s.stop || s.step != 1)
        throw IndexError("axis " + std::to_string(in_axis) + " of array " + e.name +
                         " has chunks of unknown size: only ':' can index it; call compute_chunk_sizes() first");
      map.src[in_axis] = static_cast<int>(shape.size());
      map.stride[in_axis] = 1;
      shape.push_back(n);
      chunks.push_back(e.chunks[in_axis]);
      ++in_axis;
      return;
    }
    if (s.step == 0) throw IndexError("slice step cannot be zero");
    // Python's slice.indices(n).
    std::int64_t start, stop;
    const std::int64_t st = s.step;
    auto clamp = [&](std::int64_t x, std::int64_t lo, std::int64_t hi) { return std::max(lo, std::min(hi, x)); };
    if (st > 0) {
      start = s.start ? (*s.start < 0 ? clamp(*s.start + n, 0, n) : clamp(*s.start, 0, n)) : 0;
      stop = s.stop ? (*s.stop < 0 ? clamp(*s.stop + n, 0, n) : clamp(*s.stop, 0, n)) : n;
    } else {
      start = s.start ? (*s.start < 0 ? clamp(*s.start + n, -1, n - 1) : clamp(*s.start, -1, n - 1)) : n - 1;
      stop = s.stop ? (*s.stop < 0 ? clamp(*s.stop + n, -1, n - 1) : clamp(*s.stop, -1, n - 1)) : -1;
    }
    std::int64_t len = 0;
    if (st > 0 && stop > start) len = (stop - start + st - 1) / st;
    if (st < 0 && start > stop) len = (start - stop + (-st) - 1) / (-st);
    const int out_axis = static_cast<int>(shape.size());
    map.src[in_axis] = out_axis;
    map.offset[in_axis] = start;
    map.stride[in_axis] = st;
    shape.push_back(len);
    // Output chunks: the part of each input chunk the slice keeps (as Dask does), so that each
    // output chunk reads one input chunk; empty pieces are dropped.
    std::vector<std::int64_t> oc;
    const auto offs = chunk_offsets(e.chunks[in_axis]);
    std::int64_t taken = 0;
    const std::size_t nc = e.chunks[in_axis].size();
    for (std::size_t ci = 0; ci < nc && taken < len; ++ci) {
      const std::size_t c = st > 0 ? ci : nc - 1 - ci;
      const std::int64_t lo = offs[c], hi = offs[c + 1];
      // Count output positions t >= taken with start + t*st in [lo, hi).
      std::int64_t cnt = 0;
      while (taken + cnt < len) {
        const std::int64_t p = start + (taken + cnt) * st;
        if (p < lo || p >= hi) break;
        ++cnt;
      }
      if (cnt) oc.push_back(cnt);
      taken += cnt;
    }
    if (oc.empty()) oc.push_back(0);
    chunks.push_back(std::move(oc));
    ++in_axis;
  };
  for (const auto& ix : index) handle(ix);
  while (in_axis < nd) handle(Index(Slice{}));
  return make_view(*this, std::move(shape), std::move(chunks), std::move(map), "getitem");
}

Array Array::transpose(std::vector<int> axes) const {
  const Expr& e = expr_of(*this);
  const int nd = static_cast<int>(e.shape.size());
  if (axes.empty()) {
    axes.resize(nd);
    for (int a = 0; a < nd; ++a) axes[a] = nd - 1 - a;
  }
  if (static_cast<int>(axes.size()) != nd) throw ShapeError("transpose: axes do not match the array's dimensions");
  std::set<int> seen;
  for (auto& a : axes) {
    a = normalize_axis(a, nd);
    if (!seen.insert(a).second) throw ShapeError("transpose: repeated axis " + std::to_string(a));
  }
  AffineMap map{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  Shape shape(nd);
  Chunks chunks(nd);
  for (int o = 0; o < nd; ++o) {
    map.src[axes[o]] = o;
    shape[o] = e.shape[axes[o]];
    chunks[o] = e.chunks[axes[o]];
  }
  return make_view(*this, std::move(shape), std::move(chunks), std::move(map), "transpose");
}

Array Array::broadcast_to(Shape shape) const {
  const Expr& e = expr_of(*this);
  require_known_chunks(e, "broadcast_to");
  const int nd = static_cast<int>(e.shape.size());
  const int od = static_cast<int>(shape.size());
  if (od < nd) throw ShapeError("broadcast_to: cannot broadcast " + shape_to_string(e.shape) + " to " + shape_to_string(shape));
  AffineMap map{std::vector<int>(nd, -1), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 0)};
  Chunks chunks(od);
  for (int o = 0; o < od; ++o) {
    const int a = o - (od - nd);
    if (a < 0) { chunks[o] = {shape[o]}; continue; }
    if (e.shape[a] == shape[o]) {
      map.src[a] = o;
      map.stride[a] = 1;
      chunks[o] = e.chunks[a];
    } else if (e.shape[a] == 1) {
      chunks[o] = {shape[o]};
    } else {
      throw ShapeError("broadcast_to: cannot broadcast " + shape_to_string(e.shape) + " to " + shape_to_string(shape));
    }
  }
  return make_view(*this, std::move(shape), std::move(chunks), std::move(map), "broadcast_to");
}

}  // namespace tessera
