// The Array handle: its accessors, placement (to_device / to_host) and lowering to a graph. The
// operations live beside it, one file per kind (creation, random, elementwise, indexing,
// reductions, structural); every check on shapes, dtypes and bounds happens when an expression
// is built, so that nothing invalid ever reaches a task.
#include "tessera/array/array.hpp"

#include <unordered_map>

#include "expr.hpp"
#include "tessera/core/error.hpp"

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

// ---- compute --------------------------------------------------------------------------------
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
