// Lowering Array expressions to task graphs.
//
// Blockwise nodes (generators, element-wise ops, views) are never lowered one by one: for each
// output chunk, ProgramBuilder walks the blockwise sub-tree under it, composing every view into
// the index maps of the leaves, and emits one "tessera.array.blockwise" task. Leaves are
// generators (evaluated only at the elements the chunk needs) or chunks of materialised
// expressions, read through strided views. A reduction puts its first step into the same task.
#include <algorithm>
#include <optional>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

#include "array_ops.hpp"
#include "element_semantics.hpp"
#include "expr.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/serialize.hpp"
#include "unknown_chunks.hpp"

namespace tessera::detail {

std::vector<std::int64_t> chunk_coords(const Chunks& chunks, std::int64_t flat) {
  std::vector<std::int64_t> c(chunks.size());
  for (int a = static_cast<int>(chunks.size()) - 1; a >= 0; --a) {
    const auto n = static_cast<std::int64_t>(chunks[a].size());
    c[a] = flat % n;
    flat /= n;
  }
  return c;
}

std::int64_t chunk_flat(const Chunks& chunks, const std::vector<std::int64_t>& coords) {
  std::int64_t f = 0;
  for (std::size_t a = 0; a < chunks.size(); ++a) f = f * static_cast<std::int64_t>(chunks[a].size()) + coords[a];
  return f;
}

const Expr& expr_of(const Array& a) {
  if (!a.valid()) throw Error("operation on an empty (default-constructed) Array");
  return *a.expr();
}

std::vector<std::int64_t> refine_axis_chunks(const std::vector<std::vector<std::int64_t>>& options) {
  std::vector<std::int64_t> bounds;
  for (const auto& o : options) {
    const auto off = chunk_offsets(o);
    bounds.insert(bounds.end(), off.begin(), off.end());
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<std::int64_t> out;
  for (std::size_t i = 1; i < bounds.size(); ++i) out.push_back(bounds[i] - bounds[i - 1]);
  if (out.empty()) out.push_back(0);
  return out;
}

namespace {

CType ctype_of(DType t) { return is_floating(t) ? CType::F64 : CType::I64; }

/** The chunk index on one axis containing coordinate x. Clamped to a valid chunk: an empty
 *  region's (unused) coordinate may lie at or past the end, e.g. x[10:] of 10 elements, and the
 *  only chunk of an empty axis has offsets {0, 0}. */
std::int64_t find_chunk(const std::vector<std::int64_t>& offsets, std::int64_t x) {
  auto it = std::upper_bound(offsets.begin(), offsets.end(), x);
  const auto last = std::max<std::int64_t>(0, static_cast<std::int64_t>(offsets.size()) - 2);
  return std::clamp<std::int64_t>((it - offsets.begin()) - 1, 0, last);
}

}  // namespace

AffineMap elementwise_input_map(const Expr& node, const Expr& input, const AffineMap& m) {
  const int nd = static_cast<int>(node.shape.size());
  const int id = static_cast<int>(input.shape.size());
  AffineMap im{std::vector<int>(id, -1), std::vector<std::int64_t>(id, 0), std::vector<std::int64_t>(id, 0)};
  for (int q = 0; q < id; ++q) {
    const int a = q + (nd - id);
    if (input.shape[q] == 1 && node.shape[a] != 1) continue;  // broadcast: always element 0
    im.src[q] = m.src[a];
    im.offset[q] = m.offset[a];
    im.stride[q] = m.stride[a];
  }
  return im;
}

AffineMap view_input_map(const ViewExpr& v, const AffineMap& m) {
  const int id = static_cast<int>(v.input->shape.size());
  AffineMap im{std::vector<int>(id, -1), std::vector<std::int64_t>(id, 0), std::vector<std::int64_t>(id, 0)};
  for (int k = 0; k < id; ++k) {
    const int vs = v.map.src[k];
    if (vs < 0) {
      im.offset[k] = v.map.offset[k];
      continue;
    }
    im.src[k] = m.src[vs];
    im.offset[k] = v.map.offset[k] + v.map.stride[k] * m.offset[vs];
    im.stride[k] = m.src[vs] >= 0 ? v.map.stride[k] * m.stride[vs] : 0;
  }
  return im;
}

/** Compiles the blockwise sub-tree under a root into one Program for one output region. */
class ProgramBuilder {
 public:
  ProgramBuilder(Lowering& low, const std::vector<std::int64_t>& region_offset, const Shape& region_shape)
      : low_(low), off_(region_offset), shape_(region_shape) {}

  int compile(const Expr* e, const AffineMap& m) {
    if (root_ == nullptr) {
      root_ = e;
      shared_ = &low_.shared_nodes(*e);
    }
    // The same node read through the same map is computed once: exp(-x*x) / (1 + abs(x))
    // draws x once, not three times (registers stay live for the whole program).
    MemoKey key{e, m.src, m.offset, m.stride};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const int reg = compile_uncached(e, m);
    memo_.emplace(std::move(key), reg);
    return reg;
  }

  static AffineMap identity(int nd) {
    AffineMap m{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
    for (int a = 0; a < nd; ++a) m.src[a] = a;
    return m;
  }

  Program& program() { return prog_; }
  std::vector<Key>& arg_keys() { return args_; }

  /** The task running the program: the blockwise op, or over chunks of unknown size the op
   *  that completes the program from its inputs' shapes first (unknown_chunks.cpp). */
  void set_task_program(Task& t) {
    const bool unknown = std::any_of(shape_.begin(), shape_.end(), [](auto n) { return n < 0; });
    t.op = unknown ? kUnknownBlockwiseOp : kBlockwiseOp;
    t.args.emplace_back(Value(to_object(prog_, "Program")));
    if (unknown) t.args.emplace_back(Value(to_object(unknown_, "UnknownPatch")));
    for (auto& k : args_) t.args.emplace_back(KeyRef{k});
  }

 private:
  int compile_uncached(const Expr* e, const AffineMap& m) {
    // A blockwise node placed elsewhere than the task being built is not fused: it becomes
    // its own tasks (on its own target) and is read as an input, which run_op moves. Generators
    // (random, full, arange, scalars) are pure functions of the index: they fuse anywhere.
    if (e->kind != ExprKind::Generator && e->blockwise() && e->target != low_.target_) return compile_input(e, m);
    // A node the cost model chose to compute once (read through several maps, e.g. x and x.T).
    if (e != root_ && shared_->count(e)) return compile_input(e, m);
    switch (e->kind) {
      case ExprKind::Generator: return compile_generator(static_cast<const GeneratorExpr&>(*e), m);
      case ExprKind::Elementwise: return compile_elementwise(static_cast<const ElementwiseExpr&>(*e), m);
      case ExprKind::View: return compile_view(static_cast<const ViewExpr&>(*e), m);
      case ExprKind::Concatenate:
        if (auto r = compile_concatenated(static_cast<const ConcatenateExpr&>(*e), m)) return *r;
        return compile_input(e, m);
      default: return compile_input(e, m);
    }
  }

  // A concatenation read within one of its inputs (its chunks are its inputs' chunks, so a
  // program over one of its chunks always is): that input, shifted along the axis, fused like a
  // view; the inputs are then not made into blocks first. nullopt when the region spans inputs
  // or a length is unknown: the concatenation is read from its chunks.
  std::optional<int> compile_concatenated(const ConcatenateExpr& c, const AffineMap& m) {
    const int ax = c.axis;
    std::int64_t lo = m.offset[ax], hi = m.offset[ax];
    if (m.src[ax] >= 0) {
      const int s = m.src[ax];
      if (shape_[s] <= 0) return std::nullopt;
      const std::int64_t x0 = m.offset[ax] + m.stride[ax] * off_[s];
      const std::int64_t x1 = x0 + m.stride[ax] * (shape_[s] - 1);
      lo = std::min(x0, x1);
      hi = std::max(x0, x1);
    }
    std::int64_t start = 0;
    for (const auto& in : c.inputs) {
      const std::int64_t len = in->shape[ax];
      if (len < 0) return std::nullopt;
      if (lo >= start && hi < start + len) {
        AffineMap shifted = m;
        shifted.offset[ax] -= start;
        return compile(in.get(), shifted);
      }
      start += len;
    }
    return std::nullopt;
  }

  int emit(Instr in) {
    prog_.instrs.push_back(std::move(in));
    return static_cast<int>(prog_.instrs.size()) - 1;
  }

  // Leaf linear index: base + sum_a o[a] * coef[a] for output-region coordinate o, where the leaf
  // coordinate on axis k is m.offset[k] + m.stride[k] * (off_[src] + o[src]).
  void leaf_index(const AffineMap& m, const std::vector<std::int64_t>& origin,
                  const std::vector<std::int64_t>& strides, Instr& in) const {
    in.base = 0;
    in.coef.assign(shape_.size(), 0);
    for (std::size_t k = 0; k < m.src.size(); ++k) {
      std::int64_t c0 = m.offset[k] - origin[k];
      if (m.src[k] >= 0) {
        c0 += m.stride[k] * off_[m.src[k]];
        in.coef[m.src[k]] += m.stride[k] * strides[k];
      }
      in.base += c0 * strides[k];
    }
  }

  int compile_generator(const GeneratorExpr& g, const AffineMap& m) {
    Instr in;
    in.code = InstrCode::Generator;
    in.sub = static_cast<std::uint8_t>(g.gen);
    in.dtype = g.dtype;
    in.ctype = ctype_of(g.dtype);
    in.p0 = g.p0;
    in.p1 = g.p1;
    in.i0 = g.i0;
    in.i1 = g.i1;
    in.key = g.key;
    for (std::size_t k = 0; k < m.src.size(); ++k)
      if (g.gen != GenKind::Full && m.src[k] >= 0 && shape_[m.src[k]] < 0)
        throw ShapeError("array " + g.name + " of shape " + shape_to_string(g.shape) +
                         " cannot be read along an axis of unknown size");
    if (g.gen == GenKind::Full) {
      in.code = InstrCode::Scalar;
      // Constants fill their registers unrounded, so store the value as its dtype holds it:
      // a float32 0.1 must act as 0.1f in arithmetic (as NumPy's float32 scalar does).
      if (g.dtype == DType::Float32) in.p0 = static_cast<double>(static_cast<float>(g.p0));
      if (g.dtype == DType::Float16) in.p0 = static_cast<double>(float16(g.p0));
      // Integer constants are exact in i0 (GeneratorExpr), never rounded through a double.
      in.i0 = elem::wrap_int(g.i0, g.dtype);
      in.coef.assign(shape_.size(), 0);
      return emit(in);
    }
    leaf_index(m, std::vector<std::int64_t>(g.shape.size(), 0), row_major_strides(g.shape), in);
    return emit(in);
  }

  int convert(int reg, CType to) {
    if (prog_.instrs[reg].ctype == to) return reg;
    Instr in;
    in.code = InstrCode::Op;
    in.sub = static_cast<std::uint8_t>(EwOp::Cast);
    in.ctype = to;
    in.dtype = to == CType::F64 ? DType::Float64 : DType::Int64;
    in.a = reg;
    return emit(in);
  }

  int compile_elementwise(const ElementwiseExpr& e, const AffineMap& m) {
    std::vector<int> regs;
    for (const auto& input : e.inputs) regs.push_back(compile(input.get(), elementwise_input_map(e, *input, m)));
    Instr in;
    in.code = InstrCode::Op;
    in.sub = static_cast<std::uint8_t>(e.op);
    in.dtype = e.dtype;
    in.ctype = ctype_of(e.dtype);
    const EwOp op = e.op;
    if (op == EwOp::Cast || op == EwOp::IsNan || op == EwOp::IsFinite) {
      in.a = regs[0];
    } else if (op == EwOp::Where) {
      in.a = convert(regs[0], CType::I64);
      in.b = convert(regs[1], in.ctype);
      in.c = convert(regs[2], in.ctype);
    } else if (op >= EwOp::Lt && op <= EwOp::Ne) {
      const CType common = (prog_.instrs[regs[0]].ctype == CType::F64 || prog_.instrs[regs[1]].ctype == CType::F64)
                               ? CType::F64 : CType::I64;
      in.a = convert(regs[0], common);
      in.b = convert(regs[1], common);
    } else {
      in.a = convert(regs[0], in.ctype);
      if (regs.size() > 1) in.b = convert(regs[1], in.ctype);
    }
    return emit(in);
  }

  int compile_view(const ViewExpr& v, const AffineMap& m) { return compile(v.input.get(), view_input_map(v, m)); }

  int add_arg(const Key& k) {
    auto it = arg_index_.find(k);
    if (it != arg_index_.end()) return it->second;
    args_.push_back(k);
    return arg_index_[k] = static_cast<int>(args_.size()) - 1;
  }

  // A materialised expression read through a strided view: directly from one of its chunks
  // when the region falls inside it, else from an "assemble" task that gathers the bounding box.
  int compile_input(const Expr* e, const AffineMap& m) {
    const auto& keys = low_.lower(std::shared_ptr<const Expr>(std::shared_ptr<const Expr>{}, e));
    const int id = static_cast<int>(e->shape.size());
    for (int k = 0; k < id; ++k)
      if (m.src[k] >= 0 && shape_[m.src[k]] < 0 && !has_unknown_chunks({e->chunks[k]}))
        throw ShapeError("array " + e->name + " of shape " + shape_to_string(e->shape) +
                         " cannot be read along an axis of unknown size");
    if (has_unknown_chunks(e->chunks)) return compile_unknown_input(e, m, keys);
    std::vector<std::int64_t> lo(id), hi(id), chunk(id);
    bool single = true;
    bool empty_region = false;
    for (auto s : shape_) empty_region |= (s == 0);
    const auto& offsets = low_.offsets(*e);
    for (int k = 0; k < id; ++k) {
      std::int64_t a = m.offset[k], b = m.offset[k];
      if (m.src[k] >= 0 && !empty_region) {
        const std::int64_t x0 = m.offset[k] + m.stride[k] * off_[m.src[k]];
        const std::int64_t x1 = x0 + m.stride[k] * (shape_[m.src[k]] - 1);
        a = std::min(x0, x1);
        b = std::max(x0, x1);
      }
      lo[k] = a;
      hi[k] = b;
      chunk[k] = find_chunk(offsets[k], a);
      if (find_chunk(offsets[k], b) != chunk[k]) single = false;
    }
    Instr in;
    in.code = InstrCode::Input;
    in.dtype = e->dtype;
    in.ctype = ctype_of(e->dtype);
    if (single) {
      std::vector<std::int64_t> origin(id), cshape(id);
      for (int k = 0; k < id; ++k) {
        origin[k] = offsets[k][chunk[k]];
        cshape[k] = e->chunks[k][chunk[k]];
      }
      in.input = add_arg(keys[chunk_flat(e->chunks, chunk)]);
      leaf_index(m, origin, row_major_strides(cshape), in);
    } else {
      Shape box(id);
      for (int k = 0; k < id; ++k) box[k] = hi[k] - lo[k] + 1;
      const Key k = low_.emit_assemble(*e, keys, lo, box);
      in.input = add_arg(k);
      leaf_index(m, lo, row_major_strides(box), in);
    }
    return emit(in);
  }

  // A chunk of an array with unknown chunk sizes, read as a whole on its unknown axes (where the
  // region's offset is the chunk index) and inside one chunk on its known ones. Its base and
  // coefficients are filled in when the task runs.
  int compile_unknown_input(const Expr* e, const AffineMap& m, const std::vector<Key>& keys) {
    const int id = static_cast<int>(e->shape.size());
    const auto& offsets = low_.offsets(*e);
    std::vector<std::int64_t> chunk(id);
    UnknownInput u;
    u.src = m.src;
    u.offset.assign(id, 0);
    u.stride.assign(id, 0);
    for (int k = 0; k < id; ++k) {
      const int s = m.src[k];
      if (has_unknown_chunks({e->chunks[k]})) {
        if (s < 0 || shape_[s] >= 0 || m.stride[k] != 1 || m.offset[k] != 0)
          throw ShapeError("array " + e->name + " has chunks of unknown size on axis " + std::to_string(k) +
                           ": it can only be read whole there (call compute_chunk_sizes() first)");
        chunk[k] = off_[s];
        u.stride[k] = 1;
        continue;
      }
      std::int64_t a = m.offset[k], b = m.offset[k];
      if (s >= 0 && shape_[s] > 0) {
        a = std::min(m.offset[k] + m.stride[k] * off_[s], m.offset[k] + m.stride[k] * (off_[s] + shape_[s] - 1));
        b = std::max(m.offset[k] + m.stride[k] * off_[s], m.offset[k] + m.stride[k] * (off_[s] + shape_[s] - 1));
      }
      chunk[k] = find_chunk(offsets[k], a);
      if (find_chunk(offsets[k], b) != chunk[k])
        throw ShapeError("array " + e->name + " has chunks of unknown size: it cannot be read across its chunks on axis " +
                         std::to_string(k) + " (call compute_chunk_sizes() first)");
      const std::int64_t origin = offsets[k][chunk[k]];
      u.offset[k] = m.offset[k] - origin + (s >= 0 ? m.stride[k] * off_[s] : 0);
      u.stride[k] = s >= 0 ? m.stride[k] : 0;
    }
    Instr in;
    in.code = InstrCode::Input;
    in.dtype = e->dtype;
    in.ctype = ctype_of(e->dtype);
    in.input = add_arg(keys[chunk_flat(e->chunks, chunk)]);
    in.coef.assign(shape_.size(), 0);
    u.instr = static_cast<std::int32_t>(prog_.instrs.size());
    unknown_.inputs.push_back(std::move(u));
    return emit(in);
  }

  Lowering& low_;
  const Expr* root_ = nullptr;
  const std::unordered_set<const Expr*>* shared_ = nullptr;
  std::vector<std::int64_t> off_;  // on an axis of unknown size: the chunk index
  Shape shape_;                    // unknown_size on such axes
  UnknownPatch unknown_;
  Program prog_;
  using MemoKey = std::tuple<const Expr*, std::vector<int>, std::vector<std::int64_t>, std::vector<std::int64_t>>;
  std::map<MemoKey, int> memo_;
  std::vector<Key> args_;
  std::unordered_map<Key, int> arg_index_;
};

Key Lowering::emit_assemble(const Expr& e, const std::vector<Key>& keys, const std::vector<std::int64_t>& lo,
                            const Shape& box) {
  const int id = static_cast<int>(e.shape.size());
  AssembleParams p;
  p.dtype = e.dtype;
  p.shape = box;
  Task t;
  t.key = unique_name("assemble-" + e.name);
  t.op = kAssembleOp;
  const auto& offsets = this->offsets(e);
  std::vector<std::int64_t> first(id), last(id);
  for (int k = 0; k < id; ++k) {
    first[k] = find_chunk(offsets[k], lo[k]);
    last[k] = find_chunk(offsets[k], lo[k] + box[k] - 1);
  }
  // Every chunk overlapping the box contributes one piece.
  std::vector<std::int64_t> c = first;
  std::vector<Arg> refs;
  while (true) {
    AssemblePiece piece;
    piece.arg = static_cast<std::int32_t>(refs.size());
    for (int k = 0; k < id; ++k) {
      const std::int64_t c_lo = offsets[k][c[k]], c_hi = offsets[k][c[k] + 1];
      const std::int64_t a = std::max(c_lo, lo[k]), b = std::min(c_hi, lo[k] + box[k]);
      piece.src_start.push_back(a - c_lo);
      piece.dst_start.push_back(a - lo[k]);
      piece.extent.push_back(b - a);
    }
    p.pieces.push_back(piece);
    refs.emplace_back(KeyRef{keys[chunk_flat(e.chunks, c)]});
    int k = id - 1;
    for (; k >= 0; --k) {
      if (++c[k] <= last[k]) break;
      c[k] = first[k];
    }
    if (k < 0) break;
  }
  t.args.emplace_back(Value(to_object(p, "AssembleParams")));
  for (auto& r : refs) t.args.push_back(std::move(r));
  const Key key = t.key;
  add_task(std::move(t));
  return key;
}

void Lowering::add_task(Task t) {
  t.annotations.target = target_;
  graph_.set(std::move(t));
}

const std::vector<Key>& Lowering::lower(const ExprPtr& e) {
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second;
  std::vector<Key> keys;
  // Tasks emitted while lowering e run where e lives; children restore their own.
  const Target saved = target_;
  target_ = e->target;
  struct Restore {
    Target& t;
    Target v;
    ~Restore() { t = v; }
  } restore{target_, saved};
  switch (e->kind) {
    case ExprKind::Generator:
    case ExprKind::Elementwise:
    case ExprKind::View: lower_blockwise(*e, e->chunks, e->name, keys); break;
    case ExprKind::Source: {
      const auto& s = static_cast<const SourceExpr&>(*e);
      if (s.kept && executor_ && executor_->holds(*s.kept)) {
        keys = s.kept->keys;  // already there: no task, the graph depends on them by key
        break;
      }
      const std::vector<Value> fetched = s.kept ? s.kept->values() : std::vector<Value>{};
      const std::vector<Value>& blocks = s.kept ? fetched : s.blocks;
      if (static_cast<std::int64_t>(blocks.size()) != shape_size(chunk_counts(s.chunks)))
        throw Error("array " + s.name + ": " + std::to_string(blocks.size()) + " chunk values for " +
                    std::to_string(shape_size(chunk_counts(s.chunks))) + " chunks");
      for (std::int64_t f = 0; f < static_cast<std::int64_t>(blocks.size()); ++f) {
        Task t{chunk_key(s.name, chunk_coords(s.chunks, f)), kIdentityOp, {Arg(blocks[f])}, {}};
        keys.push_back(t.key);
        add_task(std::move(t));
      }
      break;
    }
    case ExprKind::Reduce: lower_reduce(static_cast<const ReduceExpr&>(*e), keys); break;
    case ExprKind::Rechunk: {
      const auto& r = static_cast<const RechunkExpr&>(*e);
      // A blockwise input is simply evaluated over the new chunks (no data moves); anything
      // else is gathered piece by piece through the same program path.
      lower_blockwise(*r.input, r.chunks, r.name, keys);
      break;
    }
    case ExprKind::Matmul: lower_matmul(static_cast<const MatmulExpr&>(*e), keys); break;
    case ExprKind::Concatenate: lower_concatenate(static_cast<const ConcatenateExpr&>(*e), keys); break;
    case ExprKind::Reshape: lower_reshape(static_cast<const ReshapeExpr&>(*e), keys); break;
    case ExprKind::MapBlocks: lower_map_blocks(static_cast<const MapBlocksExpr&>(*e), keys); break;
    case ExprKind::Custom: static_cast<const CustomExpr&>(*e).lower_custom(*this, keys); break;
    case ExprKind::TaskList: lower_task_list(static_cast<const TaskListExpr&>(*e), keys); break;
    case ExprKind::Tasks: lower_tasks(*e, keys); break;
  }
  return memo_[e.get()] = std::move(keys);
}

const std::vector<std::vector<std::int64_t>>& Lowering::offsets(const Expr& e) {
  auto [it, inserted] = offsets_.try_emplace(&e);
  if (inserted)
    for (const auto& c : e.chunks) it->second.push_back(chunk_offsets(c));
  return it->second;
}

void Lowering::lower_blockwise(const Expr& root, const Chunks& chunks, const std::string& name, std::vector<Key>& keys) {
  const int nd = static_cast<int>(root.shape.size());
  std::vector<std::vector<std::int64_t>> offsets;
  for (const auto& c : chunks) offsets.push_back(chunk_offsets(c));
  const std::int64_t n = shape_size(chunk_counts(chunks));
  keys.reserve(n);
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(chunks, f);
    std::vector<std::int64_t> off(nd);
    Shape shape(nd);
    for (int a = 0; a < nd; ++a) {
      off[a] = chunks[a][cc[a]] < 0 ? cc[a] : offsets[a][cc[a]];
      shape[a] = chunks[a][cc[a]];
    }
    ProgramBuilder b(*this, off, shape);
    b.compile(&root, ProgramBuilder::identity(nd));
    Program& p = b.program();
    p.shape = shape;
    p.out_dtype = root.dtype;
    Task t;
    t.key = chunk_key(name, cc);
    b.set_task_program(t);
    keys.push_back(t.key);
    add_task(std::move(t));
  }
}

void Lowering::lower_reduce(const ReduceExpr& e, std::vector<Key>& keys) {
  const Expr& in = *e.input;
  const int nd = static_cast<int>(in.shape.size());
  std::vector<std::uint8_t> reduced(nd, 0);
  for (int a : e.axes) reduced[a] = 1;
  const bool is_arg = e.reduce == ReduceKind::ArgMin || e.reduce == ReduceKind::ArgMax;
  const auto full_strides = row_major_strides(in.shape);
  const auto& offsets = this->offsets(in);

  // A rechunk of a blockwise expression is that expression over other chunks: each partial
  // evaluates it over its chunk directly, without the rechunk's pieces in memory first (a
  // `materialize` rechunk is there to be computed once, and stays).
  const Expr* source = &in;
  if (in.kind == ExprKind::Rechunk && !static_cast<const RechunkExpr&>(in).materialize) {
    const Expr& inner = *static_cast<const RechunkExpr&>(in).input;
    if (inner.blockwise()) source = &inner;
  }

  // 1. One fused task per input chunk: evaluate the input's program and fold it into a partial.
  const std::int64_t n = shape_size(chunk_counts(in.chunks));
  std::map<std::vector<std::int64_t>, std::vector<Key>> groups;  // output chunk -> partial keys
  const std::string partial_name = e.name + "-partial";
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(in.chunks, f);
    std::vector<std::int64_t> off(nd);
    Shape shape(nd);
    for (int a = 0; a < nd; ++a) {
      off[a] = in.chunks[a][cc[a]] < 0 ? cc[a] : offsets[a][cc[a]];
      shape[a] = in.chunks[a][cc[a]];
    }
    ProgramBuilder b(*this, off, shape);
    b.compile(source, ProgramBuilder::identity(nd));
    Program& p = b.program();
    p.shape = shape;
    p.out_dtype = in.dtype;
    p.reduce.enabled = true;
    p.reduce.kind = static_cast<std::uint8_t>(e.reduce);
    p.reduce.axes = reduced;
    p.reduce.arg_coef.assign(nd, 0);
    if (is_arg) {
      const bool flat = e.axes.size() != 1 || nd == 1;
      for (int a = 0; a < nd; ++a) {
        const std::int64_t s = flat ? full_strides[a] : (reduced[a] ? 1 : 0);
        p.reduce.arg_base += off[a] * s;
        p.reduce.arg_coef[a] = s;
      }
    }
    Task t;
    t.key = chunk_key(partial_name, cc);
    b.set_task_program(t);
    std::vector<std::int64_t> out_cc;
    for (int a = 0; a < nd; ++a)
      if (!reduced[a]) out_cc.push_back(cc[a]);
      else if (e.keepdims) out_cc.push_back(0);
    groups[out_cc].push_back(t.key);
    add_task(std::move(t));
  }

  // 2. Tree of combines, split_every partials at a time; the last one finalises.
  const DType pdtype = partial_dtype(static_cast<std::uint8_t>(e.reduce), in.dtype);
  int level = 0;
  keys.resize(groups.size());
  for (auto& [out_cc, parts] : groups) {
    std::vector<Key> layer = parts;
    level = 0;
    auto combine = [&](const std::vector<Key>& ins, bool finalize, const Key& key) {
      CombineParams cp;
      cp.kind = static_cast<std::uint8_t>(e.reduce);
      cp.partial_dtype = pdtype;
      cp.finalize = finalize;
      cp.out_dtype = e.dtype;
      cp.ddof = e.ddof;
      cp.keepdims = e.keepdims;
      cp.reduced = reduced;
      Task t;
      t.key = key;
      t.op = kCombineOp;
      t.args.emplace_back(Value(to_object(cp, "CombineParams")));
      for (auto& k : ins) t.args.emplace_back(KeyRef{k});
      add_task(std::move(t));
    };
    while (static_cast<int>(layer.size()) > e.split_every) {
      std::vector<Key> next;
      for (std::size_t i = 0; i < layer.size(); i += e.split_every) {
        std::vector<Key> ins(layer.begin() + i, layer.begin() + std::min(layer.size(), i + e.split_every));
        std::vector<std::int64_t> idx = out_cc;
        idx.push_back(level);
        idx.push_back(static_cast<std::int64_t>(i / e.split_every));
        const Key k = chunk_key(e.name + "-combine", idx);
        combine(ins, false, k);
        next.push_back(k);
      }
      layer = std::move(next);
      ++level;
    }
    const Key out_key = chunk_key(e.name, out_cc);
    combine(layer, true, out_key);
    keys[chunk_flat(e.chunks, out_cc)] = out_key;
  }
}

}  // namespace tessera::detail
