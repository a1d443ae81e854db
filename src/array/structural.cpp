// Structural operations (rechunk, reshape, concatenate, stack, map_blocks): building their
// expressions and lowering them to tasks. matmul is in matmul.cpp, compute and persist in array.cpp.
#include "tessera/array/structural.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "array_ops.hpp"
#include "expr.hpp"
#include "generator.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#include "unknown_chunks.hpp"

namespace tessera {

using namespace detail;

Array detail::rechunk_to(const Array& a, Chunks chunks) {
  if (expr_of(a).chunks == chunks) return a;
  auto e = make_expr<RechunkExpr>(ExprKind::Rechunk, expr_of(a).dtype, expr_of(a).shape, std::move(chunks), "rechunk");
  e->input = a.expr();
  e->target = a.expr()->target;
  return Array(e);
}

Array Array::rechunk(const ChunkSpec& chunks) const {
  const Expr& e = expr_of(*this);
  require_known_chunks(e, "rechunk");
  return rechunk_to(*this, normalize_chunks_from(chunks, e.shape, e.dtype, e.chunks));
}

Array Array::reshape(Shape shape) const {
  const Expr& e = expr_of(*this);
  require_known_chunks(e, "reshape");
  // One -1 extent is inferred, as in NumPy.
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == -1) {
      if (infer >= 0) throw ShapeError("reshape: only one extent can be -1");
      infer = static_cast<int>(a);
    } else {
      known *= shape[a];
    }
  }
  if (infer >= 0 && known > 0) shape[infer] = e.shape.empty() ? 1 : shape_size(e.shape) / known;
  if (shape_size(shape) != shape_size(e.shape))
    throw ShapeError("cannot reshape array of shape " + shape_to_string(e.shape) + " into shape " + shape_to_string(shape));
  if (shape == e.shape) return *this;
  // Axes shared at the front keep their chunks; the rest must be single chunks so that each
  // output chunk is one contiguous range of one input chunk. Inputs are rechunked to that,
  // as Dask's reshape does.
  std::size_t p = 0;
  while (p < shape.size() && p < e.shape.size() && shape[p] == e.shape[p]) ++p;
  Chunks in_chunks = e.chunks;
  for (std::size_t a = p; a < e.shape.size(); ++a) in_chunks[a] = {e.shape[a]};
  Array input = rechunk_to(*this, in_chunks);
  Chunks out_chunks;
  for (std::size_t a = 0; a < shape.size(); ++a) out_chunks.push_back(a < p ? in_chunks[a] : std::vector<std::int64_t>{shape[a]});
  auto r = make_expr<ReshapeExpr>(ExprKind::Reshape, e.dtype, std::move(shape), std::move(out_chunks), "reshape");
  r->input = input.expr();
  r->target = input.expr()->target;
  return Array(r);
}

Array concatenate(const std::vector<Array>& arrays, int axis) {
  if (arrays.empty()) throw Error("concatenate: need at least one array");
  const Expr& first = expr_of(arrays[0]);
  const int nd = static_cast<int>(first.shape.size());
  if (nd == 0) throw ShapeError("concatenate: zero-dimensional arrays cannot be concatenated");
  axis = normalize_axis(axis, nd);
  DType t = first.dtype;
  for (const auto& a : arrays) {
    const Expr& e = expr_of(a);
    if (static_cast<int>(e.shape.size()) != nd)
      throw ShapeError("concatenate: all arrays must have the same number of dimensions");
    for (int k = 0; k < nd; ++k)
      if (k != axis && e.shape[k] != first.shape[k])
        throw ShapeError("concatenate: shapes " + shape_to_string(first.shape) + " and " + shape_to_string(e.shape) +
                         " differ outside axis " + std::to_string(axis));
    t = promote_types(t, e.dtype);
    for (int k = 0; k < nd; ++k)
      if (k != axis && has_unknown_chunks({e.chunks[k]}))
        throw ShapeError("concatenate: array " + e.name + " has chunks of unknown size on axis " + std::to_string(k) +
                         ", which is not the concatenated axis; call compute_chunk_sizes() first");
  }
  // Common chunks on the other axes; the concatenated axis keeps each input's chunks.
  Chunks chunks(nd);
  for (int k = 0; k < nd; ++k) {
    if (k == axis) continue;
    std::vector<std::vector<std::int64_t>> opts;
    for (const auto& a : arrays) opts.push_back(expr_of(a).chunks[k]);
    chunks[k] = refine_axis_chunks(opts);
  }
  auto out = std::make_shared<ConcatenateExpr>(ExprKind::Concatenate, t, Shape{}, Chunks{}, unique_name("concatenate"));
  for (const auto& a : arrays) {
    Chunks c = chunks;
    c[axis] = expr_of(a).chunks[axis];
    Array in = a.dtype() == t ? a : a.astype(t);
    out->inputs.push_back(rechunk_to(in, c).expr());
    for (auto n : expr_of(a).chunks[axis]) chunks[axis].push_back(n);
  }
  out->shape = shape_of_chunks(chunks);
  out->chunks = std::move(chunks);
  out->axis = axis;
  out->target = joint_target_of(out->inputs);
  return Array(out);
}

Array stack(const std::vector<Array>& arrays, int axis) {
  if (arrays.empty()) throw Error("stack: need at least one array");
  const int nd = static_cast<int>(expr_of(arrays[0]).shape.size());
  axis = normalize_axis(axis, nd + 1);
  std::vector<Array> expanded;
  for (const auto& a : arrays) {
    if (expr_of(a).shape != expr_of(arrays[0]).shape)
      throw ShapeError("stack: all arrays must have the same shape, got " + shape_to_string(expr_of(arrays[0]).shape) +
                       " and " + shape_to_string(expr_of(a).shape));
    std::vector<Index> ix;
    for (int k = 0; k < axis; ++k) ix.emplace_back(all());
    ix.emplace_back(newaxis);
    expanded.push_back(a[ix]);
  }
  return concatenate(expanded, axis);
}

Array map_blocks(const std::string& op, const std::vector<Array>& inputs, DType out_dtype, std::optional<Chunks> out_chunks) {
  if (inputs.empty()) throw Error("map_blocks: need at least one input");
  if (!OpRegistry::global().contains(op))
    throw UnknownOperationError("map_blocks: unknown operation '" + op + "' (register it with TESSERA_REGISTER_FUNCTION)");
  const Expr& first = expr_of(inputs[0]);
  std::vector<ExprPtr> ins;
  for (const auto& a : inputs) {
    if (expr_of(a).shape != first.shape)
      throw ShapeError("map_blocks: inputs must have one shape, got " + shape_to_string(first.shape) + " and " +
                       shape_to_string(expr_of(a).shape));
    ins.push_back(rechunk_to(a, first.chunks).expr());
  }
  Chunks chunks = out_chunks ? *out_chunks : first.chunks;
  if (chunk_counts(chunks) != chunk_counts(first.chunks))
    throw ShapeError("map_blocks: out_chunks must have as many chunks per axis as the inputs");
  auto e = make_expr<MapBlocksExpr>(ExprKind::MapBlocks, out_dtype, shape_of_chunks(chunks), chunks, op);
  e->op = op;
  e->inputs = std::move(ins);
  e->target = joint_target_of(e->inputs);
  return Array(e);
}

namespace detail {

void Lowering::lower_concatenate(const ConcatenateExpr& e, std::vector<Key>& keys) {
  // No tasks: the output's chunks are the inputs' chunks, re-indexed.
  std::vector<const std::vector<Key>*> in_keys;
  for (const auto& i : e.inputs) in_keys.push_back(&lower(i));
  const std::int64_t n = shape_size(chunk_counts(e.chunks));
  keys.resize(n);
  for (std::int64_t f = 0; f < n; ++f) {
    auto cc = chunk_coords(e.chunks, f);
    std::int64_t c = cc[e.axis];
    std::size_t which = 0;
    while (c >= static_cast<std::int64_t>(e.inputs[which]->chunks[e.axis].size())) {
      c -= static_cast<std::int64_t>(e.inputs[which]->chunks[e.axis].size());
      ++which;
    }
    cc[e.axis] = c;
    keys[f] = (*in_keys[which])[chunk_flat(e.inputs[which]->chunks, cc)];
  }
}

void Lowering::lower_reshape(const ReshapeExpr& e, std::vector<Key>& keys) {
  const auto& in = lower(e.input);
  const std::int64_t n = shape_size(chunk_counts(e.chunks));
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(e.chunks, f);
    Shape s(cc.size());
    for (std::size_t a = 0; a < cc.size(); ++a) s[a] = e.chunks[a][cc[a]];
    Task t;
    t.key = chunk_key(e.name, cc);
    t.op = kReshapeOp;
    t.args.emplace_back(Value(to_object(s, "Shape")));
    t.args.emplace_back(KeyRef{in[f]});  // same row-major chunk order by construction
    keys.push_back(t.key);
    add_task(std::move(t));
  }
}

void Lowering::lower_map_blocks(const MapBlocksExpr& e, std::vector<Key>& keys) {
  std::vector<const std::vector<Key>*> in;
  for (const auto& i : e.inputs) in.push_back(&lower(i));
  const std::int64_t n = shape_size(chunk_counts(e.chunks));
  for (std::int64_t f = 0; f < n; ++f) {
    Task t;
    t.key = chunk_key(e.name, chunk_coords(e.chunks, f));
    t.op = e.op;
    if (e.params) t.args.emplace_back(*e.params);
    if (!e.chunk_args.empty()) t.args.emplace_back(e.chunk_args[f]);
    for (const auto* k : in) t.args.emplace_back(KeyRef{(*k)[k->size() == 1 ? 0 : f]});
    keys.push_back(t.key);
    add_task(std::move(t));
  }
}

namespace {

Value reshape_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 2) throw Error("reshape: expected a shape and one block");
  return Value(args[1].block().reshaped(from_value<Shape>(args[0])));
}

const bool structural_registered = [] {
  register_op(kReshapeOp, reshape_op);
  register_device_op(kReshapeOp, reshape_op);  // metadata only: valid for device blocks too
  return true;
}();
}  // namespace
}  // namespace detail
}  // namespace tessera
