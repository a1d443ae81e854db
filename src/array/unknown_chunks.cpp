// Chunks of unknown size: what the array layer knows of them (the helpers of unknown_chunks.hpp),
// compute_chunk_sizes, and the op that completes a blockwise program over such chunks from its
// inputs' shapes when the task runs.
#include "unknown_chunks.hpp"

#include <algorithm>
#include <span>

#include "array_ops.hpp"
#include "task_list.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

bool Array::known_chunks() const { return !has_unknown_chunks(chunks()); }

Array Array::compute_chunk_sizes(Executor& executor) const {
  const Expr& e = expr_of(*this);
  if (!has_unknown_chunks(e.chunks)) return *this;
  // One small task per chunk reports its shape; the chunks themselves stay where they are
  // computed and are computed again by whatever uses the result (as in Dask).
  Lowering low(&executor);
  const std::vector<Key> keys = low.lower(expr_);
  Graph& g = low.graph();
  const std::string prefix = unique_name("chunk-shape-" + e.name);
  std::vector<Key> shape_keys;
  for (std::size_t f = 0; f < keys.size(); ++f) {
    Task t{chunk_key(prefix, chunk_coords(e.chunks, static_cast<std::int64_t>(f))), kChunkShapeOp, {Arg(KeyRef{keys[f]})}, {}};
    t.annotations.target = e.target;
    shape_keys.push_back(t.key);
    g.set(std::move(t));
  }
  const auto shapes = executor.get(g, shape_keys);
  std::vector<Shape> chunk_shapes;
  for (const auto& s : shapes) {
    const Block b = tessera::to_host(s.block());
    chunk_shapes.emplace_back(b.data<std::int64_t>(), b.data<std::int64_t>() + b.size());
  }
  const Chunks chunks = resolved_chunks(e, chunk_shapes);
  auto t = make_task_list(e.dtype, chunks, {expr_}, "chunk-sizes");
  for (std::size_t f = 0; f < keys.size(); ++f)
    t->calls.push_back({kIdentityOp, {}, {{0, static_cast<std::int64_t>(f)}}});
  return Array(t);
}

namespace detail {

bool has_unknown_chunks(const Chunks& chunks) {
  for (const auto& axis : chunks)
    for (auto c : axis)
      if (c < 0) return true;
  return false;
}

Shape shape_of_chunks(const Chunks& chunks) {
  Shape shape(chunks.size(), 0);
  for (std::size_t a = 0; a < chunks.size(); ++a)
    for (auto c : chunks[a]) {
      if (c < 0) {
        shape[a] = unknown_size;
        break;
      }
      shape[a] += c;
    }
  return shape;
}

void require_known_chunks(const Expr& e, const char* what) {
  for (std::size_t a = 0; a < e.chunks.size(); ++a)
    if (has_unknown_chunks({e.chunks[a]}))
      throw ShapeError(std::string(what) + ": array " + e.name + " has chunks of unknown size on axis " +
                       std::to_string(a) + "; call compute_chunk_sizes() first");
}

Chunks resolved_chunks(const Expr& e, const std::vector<Shape>& shapes) {
  if (!has_unknown_chunks(e.chunks)) return e.chunks;
  Chunks chunks = e.chunks;
  for (std::size_t f = 0; f < shapes.size(); ++f) {
    const auto cc = chunk_coords(e.chunks, static_cast<std::int64_t>(f));
    const Shape& s = shapes[f];
    if (s.size() != cc.size())
      throw ShapeError("chunk " + std::to_string(f) + " of " + e.name + " has shape " + shape_to_string(s) + ", expected " +
                       std::to_string(cc.size()) + " dimensions");
    for (std::size_t a = 0; a < cc.size(); ++a) {
      if (e.chunks[a][cc[a]] >= 0) continue;  // known: check_chunk compares it
      auto& c = chunks[a][cc[a]];
      if (c < 0) c = s[a];
      else if (c != s[a])
        throw ShapeError("array " + e.name + ": chunks in one slice along axis " + std::to_string(a) +
                         " have different sizes (" + std::to_string(c) + " and " + std::to_string(s[a]) + ")");
    }
  }
  return chunks;
}

namespace {

// Fills in a program compiled over chunks of unknown size: the region's unknown extents (the
// shape of the inputs read whole there; they must agree) and those inputs' index coefficients.
Program completed(Program p, const UnknownPatch& u, std::span<const Value> blocks) {
  const std::size_t nd = p.shape.size();
  // Pass 1: unknown extents from the inputs read whole on them.
  std::vector<std::uint8_t> open(nd, 0);
  for (std::size_t a = 0; a < nd; ++a) open[a] = p.shape[a] < 0;
  for (const auto& in : u.inputs) {
    const Shape& s = blocks[static_cast<std::size_t>(p.instrs[static_cast<std::size_t>(in.instr)].input)].block().shape();
    for (std::size_t k = 0; k < s.size(); ++k) {
      const int o = in.src[k];
      if (o < 0 || !open[static_cast<std::size_t>(o)]) continue;
      auto& extent = p.shape[static_cast<std::size_t>(o)];
      if (extent < 0) extent = s[k];
      else if (extent != s[k])
        throw ShapeError("operands could not be broadcast together: chunks of unknown size turned out as " +
                         std::to_string(extent) + " and " + std::to_string(s[k]) + " elements on axis " +
                         std::to_string(o));
    }
  }
  for (std::size_t a = 0; a < nd; ++a)
    if (p.shape[a] < 0) throw ShapeError("blockwise (unknown chunks): no input gives the size of axis " + std::to_string(a));
  // Pass 2: the inputs' index maps over their actual shapes.
  for (const auto& in : u.inputs) {
    Instr& ins = p.instrs[static_cast<std::size_t>(in.instr)];
    const Shape& s = blocks[static_cast<std::size_t>(ins.input)].block().shape();
    const auto strides = row_major_strides(s);
    ins.base = 0;
    ins.coef.assign(nd, 0);
    for (std::size_t k = 0; k < s.size(); ++k) {
      ins.base += in.offset[k] * strides[k];
      if (in.src[k] >= 0) ins.coef[static_cast<std::size_t>(in.src[k])] += in.stride[k] * strides[k];
    }
  }
  return p;
}

Value blockwise_unknown(const OpContext& ctx, std::span<const Value> args, bool on_device) {
  if (args.size() < 2) throw Error("blockwise (unknown chunks): missing program");
  const auto u = from_value<UnknownPatch>(args[1]);
  const Program p = completed(from_value<Program>(args[0]), u, args.subspan(2));
  std::vector<Value> call;
  call.reserve(args.size() - 1);
  call.emplace_back(to_object(p, "Program"));
  for (std::size_t i = 2; i < args.size(); ++i) call.push_back(args[i]);
  const OpInfo& blockwise = OpRegistry::global().get(kBlockwiseOp);
  if (!on_device) return blockwise.host(ctx, call);
  if (blockwise.device) return blockwise.device(ctx, call);
  // No device program (a fake device in tests): run it on host copies, return device memory.
  const int device = ctx.device < 0 ? 0 : ctx.device;
  const StreamView stream = ctx.stream.is_default() ? device_runtime()->thread_stream(device) : ctx.stream;
  device_runtime()->synchronize(stream);
  for (std::size_t i = 1; i < call.size(); ++i) call[i] = Value(to_host(call[i].block()));
  return Value(to_device(blockwise.host(ctx, call).block(), device, stream));
}

const bool unknown_chunks_registered = [] {
  register_op(kUnknownBlockwiseOp, [](const OpContext& c, std::span<const Value> a) { return blockwise_unknown(c, a, false); });
  register_device_op(kUnknownBlockwiseOp, [](const OpContext& c, std::span<const Value> a) { return blockwise_unknown(c, a, true); });
  return true;
}();

}  // namespace
}  // namespace detail
}  // namespace tessera
