// Structural operations (rechunk, reshape, concatenate, stack, matmul, map_blocks) and
// compute/persist: building their expressions and lowering them to tasks.
#include "tessera/array/structural.hpp"

#include <cblas.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "array_ops.hpp"
#include "expr.hpp"
#include "wrapping.hpp"
#include "generator.hpp"
#include "linalg_tasks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#include "unknown_chunks.hpp"

namespace tessera {

using namespace detail;

namespace {

Array rechunk_to(const Array& a, Chunks chunks) {
  if (expr_of(a).chunks == chunks) return a;
  auto e = make_expr<RechunkExpr>(ExprKind::Rechunk, expr_of(a).dtype, expr_of(a).shape, std::move(chunks), "rechunk");
  e->input = a.expr();
  e->target = a.expr()->target;
  return Array(e);
}

}  // namespace

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

namespace {

// The product of two 2-d arrays of one numeric dtype: one task per output chunk.
Array matmul_2d(Array a, Array b, DType t) {
  if (a.dtype() != t) a = a.astype(t);
  if (b.dtype() != t) b = b.astype(t);
  // The contracted axis must be chunked the same way on both sides.
  const auto k = refine_axis_chunks({a.chunks()[1], b.chunks()[0]});
  a = rechunk_to(a, {a.chunks()[0], k});
  b = rechunk_to(b, {k, b.chunks()[1]});
  auto e = make_expr<MatmulExpr>(ExprKind::Matmul, t, {a.shape()[0], b.shape()[1]}, {a.chunks()[0], b.chunks()[1]}, "matmul");
  e->a = a.expr();
  e->b = b.expr();
  e->target = joint_target_of(std::initializer_list<const Expr*>{e->a.get(), e->b.get()});
  return Array(e);
}

}  // namespace

Array matmul(const Array& a_in, const Array& b_in) {
  require_known_chunks(expr_of(a_in), "matmul");
  require_known_chunks(expr_of(b_in), "matmul");
  Array a = a_in, b = b_in;
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  if (a.ndim() == 0 || b.ndim() == 0) throw ShapeError("matmul: operands must be at least 1-d");
  // NumPy: a vector on the left is a row (1, k), on the right a column (k, 1); the added axis is
  // dropped from the result.
  if (a_vec) a = a[{newaxis, all()}];
  if (b_vec) b = b[{all(), newaxis}];
  const int na = a.ndim(), nb = b.ndim();
  if (a.shape()[na - 1] != b.shape()[nb - 2])
    throw ShapeError("matmul: shapes " + shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()) +
                     " are not aligned (" + std::to_string(a.shape()[na - 1]) + " != " +
                     std::to_string(b.shape()[nb - 2]) + ")");
  // The batch axes (all but the last two) broadcast.
  const int nbatch = std::max(na, nb) - 2;
  Shape batch(nbatch, 1);
  for (int i = 0; i < nbatch; ++i) {
    const int ia = i - (nbatch - (na - 2)), ib = i - (nbatch - (nb - 2));
    const std::int64_t da = ia >= 0 ? a.shape()[ia] : 1, db = ib >= 0 ? b.shape()[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError("matmul: batch axes of shapes " + shape_to_string(a_in.shape()) + " and " +
                       shape_to_string(b_in.shape()) + " cannot be broadcast together");
    batch[i] = da == 1 ? db : da;
  }
  // bool: NumPy's result is bool, any(a_ik and b_kj): the integer product is nonzero exactly then.
  const bool boolean = a.dtype() == DType::Bool && b.dtype() == DType::Bool;
  const DType t = boolean ? DType::Int64 : promote_types(a.dtype(), b.dtype());
  const std::int64_t m = a.shape()[na - 2], p = b.shape()[nb - 1];
  Array out;
  if (nbatch == 0) {
    out = matmul_2d(a, b, t);
  } else {
    Shape full_a = batch, full_b = batch, out_shape = batch;
    full_a.insert(full_a.end(), {m, a.shape()[na - 1]});
    full_b.insert(full_b.end(), {b.shape()[nb - 2], p});
    out_shape.insert(out_shape.end(), {m, p});
    if (shape_size(batch) == 0) out = zeros(out_shape, ChunkSpec{-1}, t);
    else out = contract(a.broadcast_to(full_a), b.broadcast_to(full_b), nbatch, 1, 1, 1, t);
  }
  if (boolean) out = out != 0;
  const int nd = out.ndim();
  if (a_vec || b_vec) {  // drop the axes the vectors gained
    std::vector<Index> ix(nd - 2, Index(all()));
    ix.emplace_back(a_vec ? Index(0) : Index(all()));
    ix.emplace_back(b_vec ? Index(0) : Index(all()));
    out = out[ix];
  }
  return out;
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

// ---- compute / persist -----------------------------------------------------------------------
namespace {

void check_chunk(const Value& v, const Expr& e, const Chunks& chunks, const std::vector<std::int64_t>& cc, const Key& key) {
  if (!v.is_block()) throw Error("chunk " + key + " holds " + v.describe() + ", not an array block");
  const Block& b = v.block();
  Shape want(cc.size());
  for (std::size_t a = 0; a < cc.size(); ++a) want[a] = chunks[a][cc[a]];
  if (b.shape() != want || b.dtype() != e.dtype)
    throw ShapeError("chunk " + key + " is " + std::string(dtype_name(b.dtype())) + " " + shape_to_string(b.shape()) +
                     ", expected " + std::string(dtype_name(e.dtype)) + " " + shape_to_string(want));
}

// The chunk keys of an array may repeat (concatenate({x, x}) and tile reuse x's chunks), and
// a cluster answers each output key once: ask for every key once and hand the values out again.
struct UniqueKeys {
  std::vector<Key> keys;           // each once, in first-seen order
  std::vector<std::size_t> which;  // per chunk: its key's index in keys
  explicit UniqueKeys(const std::vector<Key>& chunk_keys) {
    std::unordered_map<Key, std::size_t> seen;
    for (const auto& k : chunk_keys) {
      auto [it, fresh] = seen.try_emplace(k, keys.size());
      if (fresh) keys.push_back(k);
      which.push_back(it->second);
    }
  }
  template <typename T>
  std::vector<T> spread(const std::vector<T>& per_key) const {
    std::vector<T> out;
    out.reserve(which.size());
    for (auto i : which) out.push_back(per_key[i]);
    return out;
  }
};

/** The shapes of computed chunks (for chunks of unknown size). */
std::vector<Shape> chunk_shapes(const std::vector<Value>& values, const std::vector<Key>& keys) {
  std::vector<Shape> shapes;
  for (std::size_t f = 0; f < values.size(); ++f) {
    if (!values[f].is_block()) throw Error("chunk " + keys[f] + " holds " + values[f].describe() + ", not an array block");
    shapes.push_back(values[f].block().shape());
  }
  return shapes;
}

}  // namespace

Block Array::compute(Executor& executor) const {
  const Expr& e = expr_of(*this);
  std::vector<Key> keys;
  Graph g = graph_for(*this, &executor, &keys);
  const UniqueKeys unique(keys);
  const auto values = unique.spread(executor.get(g, unique.keys));
  const Chunks chunks = resolved_chunks(e, chunk_shapes(values, keys));
  if (keys.size() == 1) {
    check_chunk(values[0], e, chunks, std::vector<std::int64_t>(e.shape.size(), 0), keys[0]);
    return tessera::to_host(values[0].block());
  }
  Block out(e.dtype, chunks_shape(chunks));
  std::vector<std::vector<std::int64_t>> offsets;
  for (const auto& c : chunks) offsets.push_back(chunk_offsets(c));
  for (std::size_t f = 0; f < keys.size(); ++f) {
    const auto cc = chunk_coords(chunks, static_cast<std::int64_t>(f));
    check_chunk(values[f], e, chunks, cc, keys[f]);
    std::vector<std::int64_t> dst(cc.size()), zero(cc.size(), 0);
    for (std::size_t a = 0; a < cc.size(); ++a) dst[a] = offsets[a][cc[a]];
    const Block chunk = tessera::to_host(values[f].block());
    copy_box(chunk, zero, out, dst, chunk.shape());
  }
  return out;
}

Block Array::compute(Executor& executor, Target where) const {
  Block b = compute(executor);
  return where == Target::Device ? tessera::to_device(b, 0) : b;
}

Array Array::persist(Executor& executor) const {
  const Expr& e = expr_of(*this);
  std::vector<Key> keys;
  Graph g = graph_for(*this, &executor, &keys);
  const UniqueKeys unique(keys);
  auto kept = executor.keep(g, unique.keys);
  if (unique.keys.size() != keys.size()) {  // one key per chunk again
    auto per_chunk = std::make_shared<KeptResults>(*kept);
    per_chunk->keys = unique.spread(kept->keys);
    per_chunk->values = [values = kept->values, unique] { return unique.spread(values()); };
    kept = std::move(per_chunk);
  }
  auto s = make_expr<SourceExpr>(ExprKind::Source, e.dtype, e.shape, e.chunks, "persist-" + e.name);
  // Chunks of unknown size stay unknown where the executor keeps them; values in this process
  // tell their sizes.
  s->target = e.target;  // persisted device chunks stay on the device
  if (executor.holds(*kept)) {
    // The chunks stay where the executor keeps them (a cluster's workers); graphs it runs later
    // read them there; other executors fetch them when they lower a graph that needs them.
    s->kept = std::move(kept);
    return Array(s);
  }
  auto values = kept->values();
  s->chunks = resolved_chunks(e, chunk_shapes(values, keys));
  s->shape = chunks_shape(s->chunks);
  for (std::size_t f = 0; f < keys.size(); ++f)
    check_chunk(values[f], e, s->chunks, chunk_coords(e.chunks, static_cast<std::int64_t>(f)), keys[f]);
  s->blocks = std::move(values);
  return Array(s);
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

void Lowering::lower_matmul(const MatmulExpr& e, std::vector<Key>& keys) {
  const auto& ak = lower(e.a);
  const auto& bk = lower(e.b);
  const std::int64_t ni = static_cast<std::int64_t>(e.a->chunks[0].size());
  const std::int64_t nk = static_cast<std::int64_t>(e.a->chunks[1].size());
  const std::int64_t nj = static_cast<std::int64_t>(e.b->chunks[1].size());
  for (std::int64_t i = 0; i < ni; ++i)
    for (std::int64_t j = 0; j < nj; ++j) {
      Task t;
      t.key = chunk_key(e.name, {i, j});
      t.op = kMatmulOp;
      t.args.emplace_back(Value(to_object(nk, "int64")));
      for (std::int64_t k = 0; k < nk; ++k) t.args.emplace_back(KeyRef{ak[i * nk + k]});
      for (std::int64_t k = 0; k < nk; ++k) t.args.emplace_back(KeyRef{bk[k * nj + j]});
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

template <typename T>
void gemm_acc(const Block& a, const Block& b, Block& c) {
  const auto m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a.data<double>(), std::max<std::int64_t>(k, 1),
                b.data<double>(), std::max<std::int64_t>(n, 1), 1.0, c.data<double>(), std::max<std::int64_t>(n, 1));
  } else if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data<float>(), std::max<std::int64_t>(k, 1),
                b.data<float>(), std::max<std::int64_t>(n, 1), 1.0f, c.data<float>(), std::max<std::int64_t>(n, 1));
  } else if constexpr (std::is_same_v<T, std::complex<double>> || std::is_same_v<T, std::complex<float>>) {
    const T one(1);
    const auto gemm = std::is_same_v<T, std::complex<double>> ? cblas_zgemm : cblas_cgemm;
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, &one, a.data<T>(), std::max<std::int64_t>(k, 1),
         b.data<T>(), std::max<std::int64_t>(n, 1), &one, c.data<T>(), std::max<std::int64_t>(n, 1));
  } else if constexpr (std::is_same_v<T, float16>) {
    // float16 is storage only: each output element sums in double and is rounded once per chunk.
    const float16* A = a.data<float16>();
    const float16* B = b.data<float16>();
    float16* C = c.data<float16>();
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = static_cast<double>(C[i * n + j]);
        for (std::int64_t p = 0; p < k; ++p) acc += static_cast<double>(A[i * k + p]) * static_cast<double>(B[p * n + j]);
        C[i * n + j] = float16(acc);
      }
  } else {
    const T* A = a.data<T>();
    const T* B = b.data<T>();
    T* C = c.data<T>();
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) {
        const T x = A[i * k + p];
        // Integers wrap as NumPy's do, without signed overflow (wrapping.hpp).
        for (std::int64_t j = 0; j < n; ++j) C[i * n + j] = wrapping_mul_add<T>(C[i * n + j], x, B[p * n + j]);
      }
  }
}

Value matmul_op(const OpContext&, std::span<const Value> args) {
  const auto nk = from_value<std::int64_t>(args[0]);
  if (static_cast<std::int64_t>(args.size()) != 1 + 2 * nk) throw Error("matmul: wrong number of blocks");
  const Block& a0 = args[1].block();
  const Block& b0 = args[1 + nk].block();
  Block c(a0.dtype(), {a0.shape()[0], b0.shape()[1]});
  std::memset(c.raw(), 0, c.nbytes());
  for (std::int64_t k = 0; k < nk; ++k) {
    const Block& a = args[1 + k].block();
    const Block& b = args[1 + nk + k].block();
    if (a.shape()[1] != b.shape()[0]) throw ShapeError("matmul: misaligned chunks");
    dispatch_any_dtype(c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) gemm_acc<T>(a, b, c);
    });
  }
  return Value(std::move(c));
}

const bool structural_registered = [] {
  register_op(kReshapeOp, reshape_op);
  register_device_op(kReshapeOp, reshape_op);  // metadata only: valid for device blocks too
  register_op(kMatmulOp, matmul_op);
  return true;
}();

}  // namespace
}  // namespace detail
}  // namespace tessera
