// Sums of products, pushed into the operands.
//
// For C = A B (any contraction: matmul, tensordot, einsum of two operands), the sum of C over a
// free axis of A equals the product of A summed over that axis with B:
//     sum_i C[i, j] = sum_i sum_k A[i, k] B[k, j] = sum_k (sum_i A[i, k]) B[k, j],
// and likewise for B's free axes. So `(x @ y).sum()` becomes x.sum(axis=0) @ y.sum(axis=1): two
// passes over the operands and a dot product of length k, instead of m k n multiply-adds. Sums
// over batch axes cannot move (both operands carry them) and are taken of the smaller product.
// Linear-algebra systems with a rewriting optimiser do the same (SystemDS rewrites
// sum(X %*% Y) into colSums(X) %*% rowSums(Y)); Dask and NumPy compute the whole product.
//
// Exactness: integer products in int64 and uint64 wrap modulo 2**64, where the identity holds
// exactly; narrower integer products wrap at their own width before being summed in int64, so
// they are left alone. Floating-point sums come out in another order, which changes the last
// bits as any change of chunking does; a product that overflows to inf element by element can
// stay finite when summed first, and the reverse. TESSERA_ARRAY_PUSH_SUMS=0 turns this off.
#include "sum_rewrites.hpp"

#include <algorithm>

#include "expr.hpp"
#include "linalg_tasks.hpp"
#include "tessera/array/linalg.hpp"
#include "tessera/array/matmul.hpp"
#include "tessera/array/structural.hpp"

namespace tessera::detail {

namespace {

// Dtypes whose product, summed, equals the sums' product exactly up to rounding (see above).
bool sums_commute_with_products(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Int64 || t == DType::UInt64;
}

std::optional<ProductOperands> operands_of(const Expr& e) {
  if (e.kind == ExprKind::Matmul) {
    const auto& m = static_cast<const MatmulExpr&>(e);
    return ProductOperands{m.a, m.b, 0, 1, 1, 1};
  }
  if (e.kind == ExprKind::Tasks) return static_cast<const TasksExpr&>(e).product;
  return std::nullopt;
}

// x summed over `axes` with keepdims (x itself when there are none).
Array sum_keeping(const Array& x, const std::vector<int>& axes, int split_every) {
  if (axes.empty()) return x;
  ReduceOptions o;
  o.axes = axes;
  o.keepdims = true;
  o.split_every = split_every;
  return x.sum(o);
}

}  // namespace

std::optional<Array> sum_of_product(const Array& c, const std::vector<int>& axes, bool keepdims, int split_every) {
  if (!sum_rewrites_enabled()) return std::nullopt;
  const Expr& e = expr_of(c);
  if (!sums_commute_with_products(e.dtype)) return std::nullopt;
  const auto p = operands_of(e);
  if (!p) return std::nullopt;
  const Array a(p->a), b(p->b);
  if (a.dtype() != e.dtype || b.dtype() != e.dtype) return std::nullopt;
  // Output axes: [0, nbatch) batch, then A's nfa free axes, then B's nfb. A is (batch, free_a,
  // contracted), B (batch, contracted, free_b).
  std::vector<int> sum_a, sum_b;
  for (int x : axes) {
    if (x >= p->nbatch && x < p->nbatch + p->nfa) {
      if (a.shape()[x] > 1) sum_a.push_back(x);
    } else if (x >= p->nbatch + p->nfa) {
      const int xb = x - p->nfa + p->nc;
      if (b.shape()[xb] > 1) sum_b.push_back(xb);
    }
  }
  if (sum_a.empty() && sum_b.empty()) return std::nullopt;
  const Array a1 = sum_keeping(a, sum_a, split_every), b1 = sum_keeping(b, sum_b, split_every);
  // The same kind of product of the summed operands: its summed free axes now have length 1,
  // so the sum below finds nothing more to push and reduces what is left (batch axes).
  const Array product = e.kind == ExprKind::Matmul ? matmul(a1, b1)
                                                   : contract(a1, b1, p->nbatch, p->nfa, p->nc, p->nfb, e.dtype);
  ReduceOptions o;
  o.axes = axes;
  o.keepdims = keepdims;
  o.split_every = split_every;
  return product.sum(o);
}

}  // namespace tessera::detail
