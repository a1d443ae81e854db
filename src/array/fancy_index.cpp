// Fancy indexing: integer lists and arrays (take), boolean masks (compress, x[mask]) and the
// coordinate functions (argwhere, nonzero, flatnonzero, where, extract). Known indices become
// gather tasks that read only the input chunks holding them; indices or masks that are arrays
// are read when the graph runs, and a mask gives chunks of unknown size.
#include <algorithm>
#include <numeric>

#include "expr.hpp"
#include "gather.hpp"
#include "generated_take.hpp"
#include "task_list.hpp"
#include "tessera/array/array.hpp"
#include "tessera/array.hpp"  // the operations this one is built from
#include "tessera/core/error.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

/** Global coordinates of chunk c along axis a of e. */
std::vector<std::int64_t> chunk_range(const Expr& e, int a, std::int64_t c) {
  std::int64_t start = 0;
  for (std::int64_t i = 0; i < c; ++i) start += e.chunks[a][i];
  std::vector<std::int64_t> r(static_cast<std::size_t>(e.chunks[a][c]));
  std::iota(r.begin(), r.end(), start);
  return r;
}

Array raveled(const Array& x, const char* what) {
  require_known_chunks(expr_of(x), what);
  return x.ndim() == 1 ? x : x.reshape({-1});
}

/**
 * Output pieces along the indexed axis: sorted indices are split where the input chunk they
 * read changes (each piece reads one chunk, as Dask does); any other order in pieces of the
 * largest input chunk size. No piece is longer than that size either way.
 */
std::vector<std::vector<std::int64_t>> split_indices(const std::vector<std::int64_t>& idx,
                                                     const std::vector<std::int64_t>& axis_chunks,
                                                     std::int64_t piece_limit = 0) {
  const auto offs = chunk_offsets(axis_chunks);
  const std::int64_t limit =
      piece_limit > 0 ? piece_limit : std::max<std::int64_t>(1, *std::max_element(axis_chunks.begin(), axis_chunks.end()));
  const bool sorted = std::is_sorted(idx.begin(), idx.end());
  std::vector<std::vector<std::int64_t>> pieces;
  std::int64_t current = -1;
  for (auto i : idx) {
    const std::int64_t c = (std::upper_bound(offs.begin(), offs.end(), i) - offs.begin()) - 1;
    if (pieces.empty() || static_cast<std::int64_t>(pieces.back().size()) >= limit || (sorted && c != current))
      pieces.emplace_back();
    pieces.back().push_back(i);
    current = c;
  }
  return pieces;
}

/**
 * The gather of known, in-bounds indices along `axis`: output pieces as split_indices cuts them
 * (at most piece_limit long when given), each one task reading the input chunks its indices fall in.
 */
Array take_known(const Array& x, const std::vector<std::int64_t>& idx, int axis, std::int64_t piece_limit = 0) {
  const Expr& e = expr_of(x);
  const int nd = static_cast<int>(e.shape.size());
  const auto pieces = split_indices(idx, e.chunks[axis], piece_limit);
  Chunks chunks = e.chunks;
  chunks[axis].clear();
  for (const auto& p : pieces) chunks[axis].push_back(static_cast<std::int64_t>(p.size()));
  if (chunks[axis].empty()) chunks[axis].push_back(0);
  auto t = make_task_list(e.dtype, chunks, {x.expr()}, "take");
  const std::int64_t count = shape_size(chunk_counts(chunks));
  for (std::int64_t f = 0; f < count; ++f) {
    const auto cc = chunk_coords(chunks, f);
    std::vector<std::vector<std::int64_t>> index(nd);
    for (int a = 0; a < nd; ++a)
      index[a] = a == axis ? (pieces.empty() ? std::vector<std::int64_t>{} : pieces[cc[a]]) : chunk_range(e, a, cc[a]);
    t->calls.push_back(gather_call(e, 0, index));
  }
  return Array(t);
}

}  // namespace

Array take(const Array& x, const std::vector<std::int64_t>& indices, int axis) {
  const Expr& e = expr_of(x);
  const int nd = static_cast<int>(e.shape.size());
  if (nd == 0) throw IndexError("take: cannot index a 0-d array");
  axis = normalize_axis(axis, nd);
  require_known_chunks(e, "take");
  const std::int64_t n = e.shape[axis];
  std::vector<std::int64_t> idx;
  idx.reserve(indices.size());
  for (auto i : indices) {
    const std::int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
      throw IndexError("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                       " with size " + std::to_string(n));
    idx.push_back(k);
  }
  // A generated array (a random one, say) draws the rows asked for, in the asked order, and no
  // other: no gather, nothing else made.
  if (takes_generated_rows(x, axis)) return take_generated_rows(x, split_indices(idx, e.chunks[axis]), axis);
  if (e.chunks[axis].size() <= 1 || std::is_sorted(idx.begin(), idx.end())) return take_known(x, idx, axis);
  // Unsorted indices over several chunks: a piece of the output reads every input chunk its
  // indices touch, so each would hold the whole axis's chunks in memory at once (all of a
  // generated array for a random selection). In two steps instead, as Dask does: first the
  // distinct indices in order, one task per input chunk taking the rows it holds (the input
  // chunk is freed once that is done), then those much smaller pieces put in the asked order.
  std::vector<std::int64_t> distinct = idx;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<std::int64_t> at;
  at.reserve(idx.size());
  for (auto i : idx)
    at.push_back(static_cast<std::int64_t>(std::lower_bound(distinct.begin(), distinct.end(), i) - distinct.begin()));
  // The second step's pieces: as long as an auto-sized chunk allows (at least the input's chunk
  // length). Every piece reads all the first step's pieces of its stretch of the other axes, and
  // the graph is walked one output piece after another, so with pieces shorter than the selection
  // every first-step piece stayed in memory until the last piece of its stretch ran.
  std::int64_t others = static_cast<std::int64_t>(itemsize(e.dtype));
  for (int a = 0; a < nd; ++a)
    if (a != axis) others *= std::max<std::int64_t>(1, *std::max_element(e.chunks[a].begin(), e.chunks[a].end()));
  const std::int64_t piece = std::max(*std::max_element(e.chunks[axis].begin(), e.chunks[axis].end()),
                                      auto_chunk_bytes() / std::max<std::int64_t>(1, others));
  return take_known(take_known(x, distinct, axis), at, axis, piece);
}

Array take(const Array& x, std::initializer_list<std::int64_t> indices, int axis) {
  return take(x, std::vector<std::int64_t>(indices), axis);
}

Array take(const Array& x, const Array& indices, int axis) {
  const Expr& e = expr_of(x);
  const int nd = static_cast<int>(e.shape.size());
  if (nd == 0) throw IndexError("take: cannot index a 0-d array");
  axis = normalize_axis(axis, nd);
  require_known_chunks(e, "take");
  const DType it = expr_of(indices).dtype;
  if (is_floating(it) || it == DType::Bool)
    throw IndexError("arrays used as indices must be of integer type, got " + std::string(dtype_name(it)));
  const Array idx = indices.ndim() == 1 ? indices : raveled(indices, "take");
  Chunks chunks = e.chunks;
  chunks[axis] = expr_of(idx).chunks[0];
  auto t = make_task_list(e.dtype, chunks, {x.expr(), idx.expr()}, "take");
  const std::int64_t count = shape_size(chunk_counts(chunks));
  std::vector<std::int64_t> whole(static_cast<std::size_t>(e.shape[axis]));
  std::iota(whole.begin(), whole.end(), 0);
  for (std::int64_t f = 0; f < count; ++f) {
    const auto cc = chunk_coords(chunks, f);
    std::vector<std::vector<std::int64_t>> index(nd);
    for (int a = 0; a < nd; ++a) index[a] = a == axis ? whole : chunk_range(e, a, cc[a]);
    auto call = gather_call(e, 0, index, 0, axis);
    call.reads.emplace_back(1, cc[axis]);
    t->calls.push_back(std::move(call));
  }
  if (indices.ndim() == 1) return Array(t);
  // NumPy: the indices' shape replaces the axis (known sizes only: a reshape).
  Shape shape(e.shape.begin(), e.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), e.shape.begin() + axis + 1, e.shape.end());
  return Array(t).reshape(shape);
}

Array compress(const std::vector<bool>& condition, const Array& x, std::optional<int> axis) {
  const Array in = axis ? x : raveled(x, "compress");
  const int a = axis ? normalize_axis(*axis, in.ndim()) : 0;
  const std::int64_t n = in.shape()[a];
  std::vector<std::int64_t> idx;
  for (std::size_t i = 0; i < condition.size(); ++i) {
    if (!condition[i]) continue;
    if (static_cast<std::int64_t>(i) >= n)
      throw IndexError("compress: index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(a) +
                       " with size " + std::to_string(n));
    idx.push_back(static_cast<std::int64_t>(i));
  }
  return take(in, idx, a);
}

Array compress(const Array& condition, const Array& x, std::optional<int> axis) {
  const Expr& ce = expr_of(condition);
  if (ce.shape.size() != 1) throw ShapeError("compress: condition must be a 1-d array, got shape " + shape_to_string(ce.shape));
  require_known_chunks(ce, "compress");
  const Array in = axis ? x : raveled(x, "compress");
  const Expr& e = expr_of(in);
  const int nd = static_cast<int>(e.shape.size());
  if (nd == 0) throw ShapeError("compress: cannot compress a 0-d array");
  const int a = axis ? normalize_axis(*axis, nd) : 0;
  require_known_chunks(e, "compress");
  const std::int64_t n = e.shape[a];
  Array cond = condition;
  if (ce.shape[0] > n)
    throw IndexError("compress: condition of length " + std::to_string(ce.shape[0]) + " for axis " +
                     std::to_string(a) + " with size " + std::to_string(n));
  if (ce.shape[0] < n)  // NumPy: false past the condition's end
    cond = concatenate({condition, zeros({n - ce.shape[0]}, ChunkSpec{-1}, ce.dtype)}, 0);
  cond = rechunked(cond, {e.chunks[a]});
  Chunks chunks = e.chunks;
  std::fill(chunks[a].begin(), chunks[a].end(), unknown_size);
  auto t = make_task_list(e.dtype, chunks, {in.expr(), cond.expr()}, "compress");
  t->selection = TaskListExpr::Selection{in.expr(), cond.expr(), a};
  MaskSelectParams p;
  p.axis = a;
  const Value params(to_object(p, "MaskSelectParams"));
  const std::int64_t count = shape_size(chunk_counts(chunks));
  for (std::int64_t f = 0; f < count; ++f) {
    TaskListExpr::Call call;
    call.op = kMaskSelectOp;
    call.params.push_back(params);
    call.reads.emplace_back(0, f);
    call.reads.emplace_back(1, chunk_coords(chunks, f)[a]);
    t->calls.push_back(std::move(call));
  }
  return Array(t);
}

namespace {

// x[mask] for a mask of x's shape: one task per band of chunks along the first axis selects the
// band's elements in row-major order, so the bands in turn give NumPy's order without raveling
// (a reshape would move every element through rechunked rows first).
Array mask_bands(const Array& x, const Array& mask) {
  const Expr& e = expr_of(x);
  require_known_chunks(e, "boolean indexing");
  require_known_chunks(expr_of(mask), "boolean indexing");
  const Array m = rechunked(mask, e.chunks);
  const int nd = static_cast<int>(e.shape.size());
  const auto bands = static_cast<std::int64_t>(e.chunks[0].size());
  MaskBandParams p;
  std::int64_t per_band = 1;
  for (int a = 1; a < nd; ++a) {
    p.counts.push_back(static_cast<std::int64_t>(e.chunks[a].size()));
    per_band *= p.counts.back();
  }
  auto t = make_task_list(e.dtype, {std::vector<std::int64_t>(static_cast<std::size_t>(bands), unknown_size)},
                          {x.expr(), m.expr()}, "getitem-mask");
  t->selection = TaskListExpr::Selection{x.expr(), m.expr(), -1};
  const Value params(to_object(p, "MaskBandParams"));
  for (std::int64_t b = 0; b < bands; ++b) {
    TaskListExpr::Call call;
    call.op = kMaskBandOp;
    call.params.push_back(params);
    for (int input = 0; input < 2; ++input)
      for (std::int64_t k = 0; k < per_band; ++k) call.reads.emplace_back(input, b * per_band + k);
    t->calls.push_back(std::move(call));
  }
  return Array(t);
}

}  // namespace

Array Array::operator[](const Array& index) const {
  const Expr& e = expr_of(*this);
  const Expr& ie = expr_of(index);
  if (ie.dtype == DType::Bool) {
    if (ie.shape == e.shape && e.shape.size() > 1) return mask_bands(*this, index);
    if (ie.shape.size() == 1 && !e.shape.empty() && ie.shape[0] == e.shape[0]) return compress(index, *this, 0);
    throw IndexError("boolean index of shape " + shape_to_string(ie.shape) + " does not match the indexed array of shape " +
                     shape_to_string(e.shape) + " (it must have the array's shape or be 1-d along the first axis)");
  }
  return take(*this, index, 0);
}

namespace {

Array argwhere_column(const Array& x, int column, bool flat) {
  const Expr& xe = expr_of(x);
  require_known_chunks(xe, "argwhere");
  const Array f = xe.shape.size() == 1 ? x : x.reshape({xe.shape.empty() ? 1 : -1});
  const Expr& e = expr_of(f);
  const std::int64_t nc = static_cast<std::int64_t>(e.chunks[0].size());
  Chunks chunks{std::vector<std::int64_t>(static_cast<std::size_t>(nc), unknown_size)};
  if (column < 0) chunks.push_back({static_cast<std::int64_t>(xe.shape.size())});
  auto t = make_task_list(DType::Int64, chunks, {f.expr()}, column < 0 ? "argwhere" : "nonzero");
  std::int64_t start = 0;
  for (std::int64_t c = 0; c < nc; ++c) {
    ArgwhereParams p;
    p.start = start;
    p.shape = flat ? Shape{std::max<std::int64_t>(1, shape_size(xe.shape))} : xe.shape;
    p.column = column;
    TaskListExpr::Call call;
    call.op = kArgwhereOp;
    call.params.emplace_back(to_object(p, "ArgwhereParams"));
    call.reads.emplace_back(0, c);
    t->calls.push_back(std::move(call));
    start += e.chunks[0][c];
  }
  return Array(t);
}

}  // namespace

Array argwhere(const Array& x) { return argwhere_column(x, -1, false); }

std::vector<Array> nonzero(const Array& x) {
  if (x.ndim() == 0) throw ShapeError("nonzero: calling nonzero on 0-d arrays is not allowed (as in NumPy 2)");
  std::vector<Array> out;
  for (int a = 0; a < x.ndim(); ++a) out.push_back(argwhere_column(x, a, false));
  return out;
}

Array flatnonzero(const Array& x) { return argwhere_column(x, 0, true); }

std::vector<Array> where(const Array& condition) { return nonzero(condition); }

Array extract(const Array& condition, const Array& x) {
  if (expr_of(condition).shape != expr_of(x).shape && shape_size(condition.shape()) != shape_size(x.shape()))
    throw ShapeError("extract: condition of shape " + shape_to_string(condition.shape()) + " for an array of shape " +
                     shape_to_string(x.shape()));
  return compress(raveled(condition, "extract"), raveled(x, "extract"), 0);
}

}  // namespace tessera
