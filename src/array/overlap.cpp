// Halos (dask.array.overlap): each chunk is extended with its neighbours' elements by one
// gather task that reads every chunk holding them, and past the array's edges by mapping the
// coordinates through the boundary rule; constant boundaries fill. Trimming is a gather inside
// one chunk.
#include "tessera/array/overlap.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <cstring>

#include "expr.hpp"
#include "task_list.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

Boundary::Boundary(const char* name) {
  const std::string n = name ? name : "";
  if (n == "reflect") kind_ = Kind::Reflect;
  else if (n == "periodic") kind_ = Kind::Periodic;
  else if (n == "nearest") kind_ = Kind::Nearest;
  else if (n == "none") kind_ = Kind::None;
  else throw Error("boundary '" + n + "': expected 'reflect', 'periodic', 'nearest', 'none' or a constant");
}

namespace {

struct AxisSpec {
  std::vector<std::int64_t> depth;
  std::vector<Boundary> boundary;
};

AxisSpec per_axis(const char* what, int nd, std::vector<std::int64_t> depth, std::vector<Boundary> boundary) {
  if (depth.size() == 1 && nd > 1) depth.assign(nd, depth[0]);
  if (boundary.size() == 1 && nd > 1) boundary.assign(nd, boundary[0]);
  if (static_cast<int>(depth.size()) != nd || static_cast<int>(boundary.size()) != nd)
    throw ShapeError(std::string(what) + ": " + std::to_string(depth.size()) + " depths and " +
                     std::to_string(boundary.size()) + " boundaries for an array of " + std::to_string(nd) +
                     " dimensions (give one, or one per axis)");
  for (auto d : depth)
    if (d < 0) throw ShapeError(std::string(what) + ": depth must be non-negative, got " + std::to_string(d));
  return {std::move(depth), std::move(boundary)};
}

/** Where coordinate g (possibly outside [0, n)) reads from, or -1 for the constant. */
std::int64_t boundary_source(std::int64_t g, std::int64_t n, const Boundary& b) {
  if (g >= 0 && g < n) return g;
  switch (b.kind()) {
    case Boundary::Kind::Periodic: return ((g % n) + n) % n;
    case Boundary::Kind::Reflect: return g < 0 ? -1 - g : 2 * n - 1 - g;
    case Boundary::Kind::Nearest: return g < 0 ? 0 : n - 1;
    default: return -1;
  }
}

/** Elements added before and after chunk c of an axis of `count` chunks. */
std::pair<std::int64_t, std::int64_t> halo(std::int64_t c, std::int64_t count, std::int64_t depth, const Boundary& b) {
  const bool none = b.kind() == Boundary::Kind::None;
  return {none && c == 0 ? 0 : depth, none && c == count - 1 ? 0 : depth};
}

}  // namespace

Array overlap(const Array& x, std::vector<std::int64_t> depth_in, std::vector<Boundary> boundary_in) {
  const Expr& e = expr_of(x);
  const int nd = static_cast<int>(e.shape.size());
  require_known_chunks(e, "overlap");
  const AxisSpec s = per_axis("overlap", nd, std::move(depth_in), std::move(boundary_in));
  double fill = 0;
  bool constant = false;
  for (int a = 0; a < nd; ++a) {
    const auto& b = s.boundary[a];
    const std::int64_t n = e.shape[a];
    if (b.kind() == Boundary::Kind::Constant) {
      if (constant && b.value() != fill)
        throw Error("overlap: different constant boundaries on different axes are not supported");
      constant = true;
      fill = b.value();
    }
    if (s.depth[a] > 0 && (b.kind() == Boundary::Kind::Reflect || b.kind() == Boundary::Kind::Nearest ||
                           b.kind() == Boundary::Kind::Periodic)) {
      if (n == 0) throw ShapeError("overlap: a boundary that reads the array needs a non-empty axis " + std::to_string(a));
      if (b.kind() == Boundary::Kind::Reflect && s.depth[a] > n)
        throw ShapeError("overlap: depth " + std::to_string(s.depth[a]) + " is larger than axis " + std::to_string(a) +
                         " (" + std::to_string(n) + " elements) for a reflect boundary");
    }
  }
  Chunks chunks(nd);
  std::vector<std::vector<std::int64_t>> offs(nd);
  for (int a = 0; a < nd; ++a) {
    offs[a] = chunk_offsets(e.chunks[a]);
    const auto count = static_cast<std::int64_t>(e.chunks[a].size());
    for (std::int64_t c = 0; c < count; ++c) {
      const auto [l, r] = halo(c, count, s.depth[a], s.boundary[a]);
      chunks[a].push_back(e.chunks[a][c] + l + r);
    }
  }
  auto t = make_task_list(e.dtype, chunks, {x.expr()}, "overlap");
  const std::int64_t n = shape_size(chunk_counts(chunks));
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(chunks, f);
    std::vector<std::vector<std::int64_t>> index(nd);
    for (int a = 0; a < nd; ++a) {
      const auto [l, r] = halo(cc[a], static_cast<std::int64_t>(e.chunks[a].size()), s.depth[a], s.boundary[a]);
      for (std::int64_t g = offs[a][cc[a]] - l; g < offs[a][cc[a] + 1] + r; ++g)
        index[a].push_back(boundary_source(g, e.shape[a], s.boundary[a]));
    }
    t->calls.push_back(gather_call(e, 0, index, fill));
  }
  return Array(t);
}

Array trim_internal(const Array& x, std::vector<std::int64_t> depth_in, std::vector<Boundary> boundary_in) {
  const Expr& e = expr_of(x);
  const int nd = static_cast<int>(e.shape.size());
  require_known_chunks(e, "trim_internal");
  const AxisSpec s = per_axis("trim_internal", nd, std::move(depth_in), std::move(boundary_in));
  Chunks chunks(nd);
  for (int a = 0; a < nd; ++a) {
    const auto count = static_cast<std::int64_t>(e.chunks[a].size());
    for (std::int64_t c = 0; c < count; ++c) {
      const auto [l, r] = halo(c, count, s.depth[a], s.boundary[a]);
      if (e.chunks[a][c] < l + r)
        throw ShapeError("trim_internal: chunk " + std::to_string(c) + " of axis " + std::to_string(a) + " has " +
                         std::to_string(e.chunks[a][c]) + " elements, fewer than the " + std::to_string(l + r) +
                         " to trim");
      chunks[a].push_back(e.chunks[a][c] - l - r);
    }
  }
  auto t = make_task_list(e.dtype, chunks, {x.expr()}, "trim");
  const std::int64_t n = shape_size(chunk_counts(chunks));
  std::vector<std::vector<std::int64_t>> offs(nd);
  for (int a = 0; a < nd; ++a) offs[a] = chunk_offsets(e.chunks[a]);
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(chunks, f);
    std::vector<std::vector<std::int64_t>> index(nd);
    for (int a = 0; a < nd; ++a) {
      const auto [l, r] = halo(cc[a], static_cast<std::int64_t>(e.chunks[a].size()), s.depth[a], s.boundary[a]);
      for (std::int64_t g = offs[a][cc[a]] + l; g < offs[a][cc[a] + 1] - r; ++g) index[a].push_back(g);
    }
    t->calls.push_back(gather_call(e, 0, index));
  }
  return Array(t);
}

Array map_overlap(const std::string& op, const std::vector<Array>& inputs, std::vector<std::int64_t> depth,
                  std::vector<Boundary> boundary, bool trim, std::optional<DType> dtype) {
  if (inputs.empty()) throw Error("map_overlap: need at least one input");
  const Expr& first = expr_of(inputs[0]);
  require_known_chunks(first, "map_overlap");
  std::vector<Array> extended;
  for (const auto& a : inputs) {
    if (expr_of(a).shape != first.shape)
      throw ShapeError("map_overlap: inputs must have one shape, got " + shape_to_string(first.shape) + " and " +
                       shape_to_string(expr_of(a).shape));
    // Chunked alike before the halos are added, so that the extended chunks match too.
    extended.push_back(overlap(rechunked(a, first.chunks), depth, boundary));
  }
  Array out = map_blocks(op, extended, dtype ? *dtype : first.dtype);
  return trim ? trim_internal(out, std::move(depth), std::move(boundary)) : out;
}

}  // namespace tessera
