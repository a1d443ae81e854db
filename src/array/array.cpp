// The Array handle: its accessors, placement (to_device / to_host), lowering to a graph, and
// compute / persist (running that graph on an executor). The operations live beside it, one file per kind (creation, random, elementwise, indexing,
// reductions, structural); every check on shapes, dtypes and bounds happens when an expression
// is built, so that nothing invalid ever reaches a task.
#include "tessera/array/array.hpp"

#include <unordered_map>

#include "array_ops.hpp"
#include "expr.hpp"
#include "tessera/core/error.hpp"
#include "unknown_chunks.hpp"

namespace tessera {

using namespace detail;

// ---- Array accessors ------------------------------------------------------------------------
DType Array::dtype() const { return expr_of(*this).dtype; }
const Shape& Array::shape() const { return expr_of(*this).shape; }
const Chunks& Array::chunks() const { return expr_of(*this).chunks; }
const std::string& Array::name() const { return expr_of(*this).name; }

Target Array::target() const { return expr_of(*this).target; }

namespace {
// The same array placed on `target`: a generator, or (to the device) a blockwise tree of
// generators, is re-made there (random numbers are generated on the GPU directly, with the same values); anything else is read through an identity view
// placed there, which lowering does not fuse with its differently placed input.
// A blockwise tree whose leaves are all generators (eye, tri, linspace, ...), rebuilt on
// `target`, so that it is computed there in one fused program per chunk; nullptr when some leaf
// is not a generator (or a custom node that draws like one: CustomExpr::copy_to_place).
ExprPtr remade_on(const ExprPtr& e, Target target, std::unordered_map<const Expr*, ExprPtr>& done) {
  if (auto it = done.find(e.get()); it != done.end()) return it->second;
  std::shared_ptr<Expr> copy;
  switch (e->kind) {
    case ExprKind::Generator: copy = std::make_shared<GeneratorExpr>(static_cast<const GeneratorExpr&>(*e)); break;
    case ExprKind::Elementwise: {
      auto w = std::make_shared<ElementwiseExpr>(static_cast<const ElementwiseExpr&>(*e));
      for (auto& in : w->inputs)
        if (!(in = remade_on(in, target, done))) return nullptr;
      copy = w;
      break;
    }
    case ExprKind::View: {
      auto v = std::make_shared<ViewExpr>(static_cast<const ViewExpr&>(*e));
      if (!(v->input = remade_on(v->input, target, done))) return nullptr;
      copy = v;
      break;
    }
    case ExprKind::Custom:
      if (!(copy = static_cast<const CustomExpr&>(*e).copy_to_place())) return nullptr;
      break;
    default: return nullptr;
  }
  copy->name = unique_name(e->name + (target == Target::Device ? "-device" : "-host"));
  copy->target = target;
  return done[e.get()] = copy;
}

Array place(const Array& a, Target target) {
  const Expr& e = expr_of(a);
  if (e.target == target) return a;
  // to_host() of a tree keeps its device part where it was asked to run; a single generator (or
  // a custom node that draws like one) is generated on the host again.
  std::unordered_map<const Expr*, ExprPtr> done;
  if (target == Target::Device || e.kind == ExprKind::Generator || e.kind == ExprKind::Custom)
    if (auto remade = remade_on(a.expr(), target, done)) return Array(remade);
  auto v = make_expr<ViewExpr>(ExprKind::View, e.dtype, e.shape, e.chunks, target == Target::Device ? "to_device" : "to_host");
  v->input = a.expr();
  const int nd = static_cast<int>(e.shape.size());
  v->map = AffineMap{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  for (int k = 0; k < nd; ++k) v->map.src[k] = k;
  v->target = target;
  return Array(v);
}
}  // namespace

Array Array::to_device() const { return place(*this, Target::Device); }
Array Array::to_host() const { return place(*this, Target::Host); }
std::int64_t Array::num_chunks() const { return shape_size(chunk_counts(chunks())); }

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

// ---- to_graph -------------------------------------------------------------------------------
Graph Array::to_graph(std::vector<Key>* chunk_keys) const { return detail::graph_for(*this, nullptr, chunk_keys); }

namespace detail {

Graph graph_for(const Array& a, const Executor* executor, std::vector<Key>* chunk_keys) {
  Lowering low(executor);
  const auto& keys = low.lower(a.expr());
  if (chunk_keys) *chunk_keys = keys;
  return std::move(low.graph());
}

}  // namespace detail


}  // namespace tessera
