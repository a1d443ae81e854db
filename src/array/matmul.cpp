// matmul (NumPy's, over OpenBLAS on the host): building its expression, lowering it to one task
// per output chunk, and the chunk kernel that sums the products over the contracted chunks. The
// batched (n-d) products lower through linalg's contract (linalg_tasks.cpp); the device variant of
// the op is the CUDA back end's (cuda/device_ops.cpp).
#include "tessera/array/matmul.hpp"

#include <cblas.h>

#include <algorithm>
#include <complex>
#include <cstring>

#include "array_ops.hpp"
#include "expr.hpp"
#include "linalg_tasks.hpp"
#include "tessera/array/creation.hpp"
#include "tessera/array/elementwise.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#include "unknown_chunks.hpp"
#include "wrapping.hpp"

namespace tessera {

using namespace detail;

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


namespace detail {

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

namespace {

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

const bool matmul_registered = [] {
  register_op(kMatmulOp, matmul_op);
  return true;
}();

}  // namespace
}  // namespace detail
}  // namespace tessera
