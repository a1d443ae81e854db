// The Array handle: its accessors, placement (to_device / to_host) and lowering to a graph. The
// operations live beside it, one file per kind (creation, random, elementwise, indexing,
// reductions, structural); every check on shapes, dtypes and bounds happens when an expression
// is built, so that nothing invalid ever reaches a task.
#include "tessera/array/array.hpp"

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
// The same array placed on `target`: a generator is re-made there (random numbers are generated
// on the GPU directly, with the same values); anything else is read through an identity view
// placed there, which lowering does not fuse with its differently placed input.
Array place(const Array& a, Target target) {
  const Expr& e = expr_of(a);
  if (e.target == target) return a;
  if (e.kind == ExprKind::Generator) {
    auto g = std::make_shared<GeneratorExpr>(static_cast<const GeneratorExpr&>(e));
    g->name = unique_name(e.name + (target == Target::Device ? "-device" : "-host"));
    g->target = target;
    return Array(g);
  }
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
