// The cost model that decides which nodes of a fused tree are computed once and shared.
//
// Fusion evaluates every node of a blockwise tree inside the program of each output chunk, at
// the elements that chunk needs. A node read through one map costs nothing extra. A node read
// through several maps that overlap -- x and x.T in (x + x.T), x[1:] and x[:-1] in a diff -- is
// evaluated once per map: fused, the tree pays k times the node's cost per element. Computed
// once as its own tasks and read back, it pays its cost once, plus writing it and reading it k
// times (strided reads for a transpose). The model compares the two with per-element costs in
// nanoseconds of one core, fitted on the reference machine (2 cores, AVX-512) to (x + x.T).sum()
// at 8000 x 8000 in 2000 x 2000 chunks with x uniform, normal and exp(uniform), each run fused
// and shared (docs/benchmarks-history.md, "Second round"): fused wins for uniform (0.28 s
// against 0.35 s) and normal (0.31 against 0.33), sharing for exp(uniform) (0.50 against 0.85).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "expr.hpp"

namespace tessera::detail {

namespace {

// Per-element costs in core-nanoseconds.
constexpr double kReadCost = 1.5;
constexpr double kWriteCost = 1.5;
// Reading through a permuted map (a transpose) walks memory with a large stride.
constexpr double kStridedReadCost = 2.2;

double generator_cost(GenKind g) {
  switch (g) {
    case GenKind::Normal: return 5.0;
    case GenKind::Uniform: return 3.5;
    case GenKind::Integers: return 3.5;
    case GenKind::Arange: return 0.2;
    case GenKind::Full: return 0.0;
    // Distributions (random_semantics.hpp), one element at a time: estimates from their Philox
    // calls and transcendental functions per element (rejection loops at their mean trials), not fitted.
    case GenKind::Exponential: return 8.0;
    case GenKind::Geometric: return 10.0;
    case GenKind::Gamma: return 40.0;
    case GenKind::Poisson: return 40.0;
    case GenKind::Binomial: return 50.0;
    case GenKind::StandardT: return 50.0;
    case GenKind::Beta: return 80.0;
    case GenKind::Permutation: return 40.0;
    case GenKind::NegativeBinomial: return 90.0;
    case GenKind::NoncentralChisquare: return 60.0;
    case GenKind::VonMises: return 40.0;
    case GenKind::Zipf: return 30.0;
    case GenKind::Logseries: return 15.0;
    case GenKind::Hypergeometric: return 40.0;
  }
  return 1.0;
}

double op_cost(EwOp op) {
  switch (op) {
    case EwOp::Exp: case EwOp::Log: case EwOp::Log1p: case EwOp::Sin: case EwOp::Cos: case EwOp::Tan:
    case EwOp::Tanh: case EwOp::Pow:
    case EwOp::Arcsin: case EwOp::Arccos: case EwOp::Arctan: case EwOp::Arcsinh: case EwOp::Arccosh:
    case EwOp::Arctanh: case EwOp::Sinh: case EwOp::Cosh: case EwOp::Log2: case EwOp::Log10: case EwOp::Exp2:
    case EwOp::Expm1: case EwOp::Cbrt: case EwOp::Arctan2: case EwOp::Hypot: case EwOp::LogAddExp:
    case EwOp::LogAddExp2:
      return 8.0;
    case EwOp::I0: return 60.0;  // a series of up to 40 terms
    case EwOp::FMod: return 1.0;
    case EwOp::Div: case EwOp::FloorDiv: case EwOp::Mod: case EwOp::Sqrt: return 1.0;
    default: return 0.3;
  }
}

using MapKey = std::tuple<std::vector<int>, std::vector<std::int64_t>, std::vector<std::int64_t>>;

struct Analysis {
  const Expr* root;
  Target target;
  std::map<const Expr*, std::set<MapKey>> maps;
  std::vector<const Expr*> order;  // first visit, parents before children
  std::map<const Expr*, double> cost;

  bool fused(const Expr* e) const {
    return e == root || (e->blockwise() && (e->kind == ExprKind::Generator || e->target == target));
  }

  void walk(const Expr* e, const AffineMap& m) {
    if (!fused(e)) return;
    auto [it, first] = maps.try_emplace(e);
    if (first) order.push_back(e);
    if (!it->second.insert(MapKey{m.src, m.offset, m.stride}).second) return;
    if (e->kind == ExprKind::Elementwise) {
      const auto& ew = static_cast<const ElementwiseExpr&>(*e);
      for (const auto& in : ew.inputs) walk(in.get(), elementwise_input_map(*e, *in, m));
    } else if (e->kind == ExprKind::View) {
      const auto& v = static_cast<const ViewExpr&>(*e);
      walk(v.input.get(), view_input_map(v, m));
    }
  }

  /** Cost per element of evaluating e's fused subtree once. */
  double subtree_cost(const Expr* e) {
    if (!fused(e)) return kReadCost;
    if (auto it = cost.find(e); it != cost.end()) return it->second;
    double c = 0;
    if (e->kind == ExprKind::Generator) {
      c = generator_cost(static_cast<const GeneratorExpr&>(*e).gen);
    } else if (e->kind == ExprKind::Elementwise) {
      const auto& ew = static_cast<const ElementwiseExpr&>(*e);
      c = op_cost(ew.op);
      for (const auto& in : ew.inputs) c += subtree_cost(in.get());
    } else if (e->kind == ExprKind::View) {
      c = subtree_cost(static_cast<const ViewExpr&>(*e).input.get());
    }
    return cost[e] = c;
  }

  /** Elements of e evaluated per element of e when fused: the maps' boxes over e's size. */
  double evaluations_per_element(const Expr* e, const Shape& root_shape, bool& permuted) const {
    const double size = static_cast<double>(std::max<std::int64_t>(shape_size(e->shape), 1));
    double total = 0;
    for (const auto& [src, offset, stride] : maps.at(e)) {
      double box = 1;
      int last_src = -1;
      for (std::size_t k = 0; k < src.size(); ++k) {
        if (src[k] < 0) continue;
        box *= static_cast<double>(root_shape[src[k]]);
        if (src[k] < last_src) permuted = true;
        last_src = src[k];
      }
      total += box;
    }
    return total / size;
  }
};

}  // namespace

const std::unordered_set<const Expr*>& Lowering::shared_nodes(const Expr& root) {
  auto [it, inserted] = shared_.try_emplace(&root);
  if (!inserted) return it->second;
  Analysis a{&root, root.target, {}, {}, {}};
  const int nd = static_cast<int>(root.shape.size());
  AffineMap identity{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  for (int k = 0; k < nd; ++k) identity.src[k] = k;
  a.walk(&root, identity);
  for (const Expr* e : a.order) {
    if (e == &root || a.maps[e].size() < 2) continue;
    if (e->kind == ExprKind::Generator && static_cast<const GeneratorExpr*>(e)->gen == GenKind::Full) continue;
    bool permuted = false;
    const double k = a.evaluations_per_element(e, root.shape, permuted);
    if (k < 1.5) continue;  // the maps mostly read different elements: nothing is recomputed
    const double c = a.subtree_cost(e);
    const double fused = k * c;
    const double once = c + kWriteCost + k * (permuted ? kStridedReadCost : kReadCost);
    if (fused > once) it->second.insert(e);
  }
  return it->second;
}

}  // namespace tessera::detail
