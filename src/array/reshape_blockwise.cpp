// reshape_blockwise (dask.array.reshape_blockwise): each chunk reshaped on its own, in place of a
// row-major reshape. Chunk f of the result (row-major over the chunk grid) is chunk f of the
// input reshaped, so no data moves between chunks and the elements come out in another order
// than NumPy's, which is fine for what does not depend on it (reductions, say).
//
// Fewer dimensions: every output axis merges consecutive input axes; its chunks are the products
// of theirs, in row-major order, so the grids' flat orders agree. More (or as many) dimensions:
// the caller says the output chunks, which must give as many chunks as the input has, each of
// the same size as its input chunk. Either way the lowering is the plain reshape's (ReshapeExpr,
// a metadata-only task per chunk, on host or device blocks).
#include <numeric>
#include <string>

#include "expr.hpp"
#include "tessera/array/shape.hpp"
#include "tessera/core/error.hpp"
#include "unknown_chunks.hpp"

namespace tessera {

using namespace detail;

namespace {

/** shape with its one -1 extent worked out from `size` elements. */
Shape infer_extent(Shape shape, std::int64_t size, const Shape& from) {
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == -1) {
      if (infer >= 0) throw ShapeError("reshape_blockwise: only one extent can be -1");
      infer = static_cast<int>(a);
    } else if (shape[a] < 0) {
      throw ShapeError("reshape_blockwise: negative extent in " + shape_to_string(shape));
    } else {
      known *= shape[a];
    }
  }
  if (infer >= 0) shape[static_cast<std::size_t>(infer)] = known > 0 ? size / known : 0;
  if (shape_size(shape) != size)
    throw ShapeError("reshape_blockwise: cannot reshape an array of shape " + shape_to_string(from) + " into shape " +
                     shape_to_string(shape));
  return shape;
}

/** The output chunks when `shape` merges consecutive axes of `in` (chunks `chunks`). */
Chunks merged_chunks(const Shape& in, const Chunks& chunks, const Shape& shape) {
  Chunks out;
  std::size_t i = 0;
  for (std::size_t o = 0; o < shape.size(); ++o) {
    // The input axes of output axis o: consecutive ones whose extents multiply to shape[o] (the
    // length-1 axes after the last group join it).
    const std::size_t first = i;
    std::int64_t product = 1;
    do {
      if (i >= in.size()) break;
      product *= in[i++];
    } while (product != shape[o]);
    if (o + 1 == shape.size())
      while (i < in.size() && in[i] == 1) ++i;
    if (product != shape[o] || first == i)
      throw ShapeError("reshape_blockwise: to fewer dimensions, each axis of " + shape_to_string(shape) +
                       " must merge consecutive axes of " + shape_to_string(in));
    // Its chunks: the products of the group's chunk lengths, the last axis of the group fastest.
    std::vector<std::int64_t> lengths{1};
    for (std::size_t a = first; a < i; ++a) {
      std::vector<std::int64_t> next;
      next.reserve(lengths.size() * chunks[a].size());
      for (auto l : lengths)
        for (auto c : chunks[a]) next.push_back(l * c);
      lengths = std::move(next);
    }
    out.push_back(std::move(lengths));
  }
  if (i != in.size())
    throw ShapeError("reshape_blockwise: cannot merge the axes of " + shape_to_string(in) + " into " +
                     shape_to_string(shape));
  return out;
}

}  // namespace

Array reshape_blockwise(const Array& x, Shape shape, std::optional<Chunks> chunks) {
  const Expr& e = expr_of(x);
  require_known_chunks(e, "reshape_blockwise");
  shape = infer_extent(std::move(shape), shape_size(e.shape), e.shape);
  Chunks out;
  if (shape.size() < e.shape.size()) {
    if (chunks) throw Error("reshape_blockwise: chunks cannot be given when the number of dimensions decreases");
    out = merged_chunks(e.shape, e.chunks, shape);
  } else if (!chunks) {
    if (shape == e.shape) return x;
    throw Error("reshape_blockwise: the output chunks must be given when the number of dimensions does not decrease");
  } else {
    out = *chunks;
    if (out.size() != shape.size())
      throw ShapeError("reshape_blockwise: chunks for " + std::to_string(out.size()) + " axes, the shape has " +
                       std::to_string(shape.size()));
    for (std::size_t a = 0; a < shape.size(); ++a)
      if (std::accumulate(out[a].begin(), out[a].end(), std::int64_t{0}) != shape[a])
        throw ShapeError("reshape_blockwise: the chunks of axis " + std::to_string(a) + " do not add up to " +
                         std::to_string(shape[a]));
    const std::int64_t n = shape_size(chunk_counts(out));
    if (n != shape_size(chunk_counts(e.chunks)))
      throw ShapeError("reshape_blockwise: " + std::to_string(n) + " output chunks for " +
                       std::to_string(shape_size(chunk_counts(e.chunks))) + " input chunks");
    for (std::int64_t f = 0; f < n; ++f) {
      const auto oc = chunk_coords(out, f), ic = chunk_coords(e.chunks, f);
      std::int64_t on = 1, in = 1;
      for (std::size_t a = 0; a < oc.size(); ++a) on *= out[a][static_cast<std::size_t>(oc[a])];
      for (std::size_t a = 0; a < ic.size(); ++a) in *= e.chunks[a][static_cast<std::size_t>(ic[a])];
      if (on != in)
        throw ShapeError("reshape_blockwise: output chunk " + std::to_string(f) + " holds " + std::to_string(on) +
                         " elements, input chunk " + std::to_string(f) + " " + std::to_string(in));
    }
  }
  if (shape == e.shape && out == e.chunks) return x;
  auto r = make_expr<ReshapeExpr>(ExprKind::Reshape, e.dtype, std::move(shape), std::move(out), "reshape-blockwise");
  r->input = x.expr();
  r->target = e.target;
  return Array(r);
}

}  // namespace tessera
