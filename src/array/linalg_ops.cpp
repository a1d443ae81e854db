// Host implementations of the linear algebra block ops (src/array/linalg_tasks.hpp):
// OpenBLAS's CBLAS for products and triangular solves, LAPACKE for the factorisations. Blocks
// are row-major, which both take directly.
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "wrapping.hpp"
#include "linalg_tasks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::detail {
namespace {

std::int64_t prod(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

int ld(std::int64_t n) { return static_cast<int>(std::max<std::int64_t>(n, 1)); }

/** C (m x n) += alpha op(A) op(B), row-major, A and B contiguous with their natural strides. */
template <typename T>
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, const T* b, T* c) {
  if (m == 0 || n == 0 || k == 0) return;
  const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  const int lda = ld(ta ? m : k), ldb = ld(tb ? k : n);
  if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, TA, TB, m, n, k, alpha, a, lda, b, ldb, 1.0, c, ld(n));
  } else if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, TA, TB, m, n, k, alpha, a, lda, b, ldb, 1.0f, c, ld(n));
  } else {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) {
        const T x = wrapping_mul<T>(alpha, ta ? a[p * m + i] : a[i * k + p]);
        for (std::int64_t j = 0; j < n; ++j) c[i * n + j] = wrapping_mul_add<T>(c[i * n + j], x, tb ? b[j * k + p] : b[p * n + j]);
      }
  }
}

template <typename F>
void dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float64: f(double{}); break;
    case DType::Float32: f(float{}); break;
    case DType::Int64: f(std::int64_t{}); break;
    case DType::Int32: f(std::int32_t{}); break;
    default: throw DTypeError(std::string(op) + ": unsupported dtype " + std::string(dtype_name(t)));
  }
}

template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float64: f(double{}); break;
    case DType::Float32: f(float{}); break;
    default: throw DTypeError(std::string(op) + ": needs float32 or float64 blocks, got " + std::string(dtype_name(t)));
  }
}

Block copy_of(const Block& b) {
  Block out(b.dtype(), b.shape());
  if (b.nbytes()) std::memcpy(out.raw(), b.raw(), b.nbytes());
  return out;
}

Block zeros_block(DType t, Shape s) {
  Block out(t, std::move(s));
  if (out.nbytes()) std::memset(out.raw(), 0, out.nbytes());
  return out;
}

/** Argument i of a task; a missing one is the task's error, not undefined behaviour. */
const Value& arg(std::span<const Value> args, std::size_t i) {
  if (i >= args.size()) throw Error("linalg: missing argument " + std::to_string(i));
  return args[i];
}

void check_lapack(int info, const char* call) {
  if (info < 0) throw Error(std::string(call) + ": argument " + std::to_string(-info) + " is invalid");
}

// ---- contract, add ------------------------------------------------------------------------------

Value contract_op(const OpContext&, std::span<const Value> args) {
  const auto p = from_value<ContractParams>(arg(args, 0));
  if (p.pairs < 1 || static_cast<std::int64_t>(args.size()) != 1 + 2 * p.pairs) throw Error("contract: wrong number of blocks");
  const Block& a0 = args[1].block();
  const Block& b0 = args[1 + p.pairs].block();
  const std::size_t nb = p.batch, na = a0.ndim(), nbd = b0.ndim();
  if (na < nb + p.free_a || nbd < nb + p.free_b) throw ShapeError("contract: blocks have too few axes");
  Shape out(a0.shape().begin(), a0.shape().begin() + nb + p.free_a);
  out.insert(out.end(), b0.shape().end() - p.free_b, b0.shape().end());
  Block c = zeros_block(a0.dtype(), out);
  for (std::int32_t q = 0; q < p.pairs; ++q) {
    const Block& a = args[1 + q].block();
    const Block& b = args[1 + p.pairs + q].block();
    if (a.dtype() != c.dtype() || b.dtype() != c.dtype()) throw DTypeError("contract: blocks of different dtypes");
    const std::int64_t batch = prod(a.shape(), 0, nb), m = prod(a.shape(), nb, nb + p.free_a);
    const std::int64_t k = prod(a.shape(), nb + p.free_a, a.ndim()), n = prod(b.shape(), b.ndim() - p.free_b, b.ndim());
    if (batch * m != prod(out, 0, nb + p.free_a) || batch * k * n != b.size() || batch * m * n != c.size())
      throw ShapeError("contract: misaligned blocks " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
    dispatch_numeric(c.dtype(), "contract", [&](auto tag) {
      using T = decltype(tag);
      for (std::int64_t i = 0; i < batch; ++i)
        gemm<T>(false, false, m, n, k, T(1), a.data<T>() + i * m * k, b.data<T>() + i * k * n, c.data<T>() + i * m * n);
    });
  }
  return Value(std::move(c));
}

Value add_op(const OpContext&, std::span<const Value> args) {
  if (args.empty()) throw Error("add: no blocks");
  Block out = copy_of(args[0].block());
  for (std::size_t i = 1; i < args.size(); ++i) {
    const Block& b = args[i].block();
    if (b.shape() != out.shape() || b.dtype() != out.dtype()) throw ShapeError("add: blocks of different shapes");
    dispatch_numeric(out.dtype(), "add", [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data<T>();
      const T* x = b.data<T>();
      for (std::int64_t j = 0; j < out.size(); ++j) o[j] = static_cast<T>(o[j] + x[j]);
    });
  }
  return Value(std::move(out));
}

// ---- qr, svd ------------------------------------------------------------------------------------

template <typename T>
int geqrf(int m, int n, T* a, T* tau) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, ld(n), tau);
  else return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, ld(n), tau);
}
template <typename T>
int orgqr(int m, int n, int k, T* a, int lda, const T* tau) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
  else return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
}

// A (m x n) -> (m + k) x n, k = min(m, n): Q (m x k) in the first k columns of the first m rows,
// R (k x n) below it.
Value qr_op(const OpContext&, std::span<const Value> args) {
  const Block& a = arg(args, 0).block();
  if (a.ndim() != 2) throw ShapeError("qr: block must be 2-d, got " + shape_to_string(a.shape()));
  const std::int64_t m = a.shape()[0], n = a.shape()[1], k = std::min(m, n);
  Block out = zeros_block(a.dtype(), {m + k, n});
  if (k == 0) return Value(std::move(out));
  dispatch_float(a.dtype(), "qr", [&](auto tag) {
    using T = decltype(tag);
    Block w = copy_of(a);
    T* wa = w.data<T>();
    std::vector<T> tau(static_cast<std::size_t>(k));
    check_lapack(geqrf<T>(static_cast<int>(m), static_cast<int>(n), wa, tau.data()), "geqrf");
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = i; j < n; ++j) o[(m + i) * n + j] = wa[i * n + j];
    check_lapack(orgqr<T>(static_cast<int>(m), static_cast<int>(k), static_cast<int>(k), wa, ld(n), tau.data()), "orgqr");
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < k; ++j) o[i * n + j] = wa[i * n + j];
  });
  return Value(std::move(out));
}

// A (m x n) -> (m + 1 + k) x n, k = min(m, n): U (m x k), then the singular values (one row),
// then V^T (k x n).
Value svd_op(const OpContext&, std::span<const Value> args) {
  const Block& a = arg(args, 0).block();
  if (a.ndim() != 2) throw ShapeError("svd: block must be 2-d, got " + shape_to_string(a.shape()));
  const std::int64_t m = a.shape()[0], n = a.shape()[1], k = std::min(m, n);
  Block out = zeros_block(a.dtype(), {m + 1 + k, n});
  if (k == 0) return Value(std::move(out));
  dispatch_float(a.dtype(), "svd", [&](auto tag) {
    using T = decltype(tag);
    Block w = copy_of(a);
    std::vector<T> u(static_cast<std::size_t>(m * k)), s(static_cast<std::size_t>(k)), vt(static_cast<std::size_t>(k * n));
    int info;
    if constexpr (std::is_same_v<T, double>)
      info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, w.data<T>(), ld(n), s.data(), u.data(), ld(k), vt.data(), ld(n));
    else
      info = LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', m, n, w.data<T>(), ld(n), s.data(), u.data(), ld(k), vt.data(), ld(n));
    check_lapack(info, "gesdd");
    if (info > 0) throw Error("svd: did not converge");
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < k; ++j) o[i * n + j] = u[i * k + j];
    for (std::int64_t j = 0; j < k; ++j) o[m * n + j] = s[j];
    std::memcpy(o + (m + 1) * n, vt.data(), sizeof(T) * k * n);
  });
  return Value(std::move(out));
}

// ---- the factorisations' updates --------------------------------------------------------------

/** R = C - sum_k A_k op(B_k) (args[first..]: A_1, B_1, A_2, B_2, ...), in a fresh block. */
Block update(const Block& c, std::span<const Value> pairs, bool trans_b) {
  Block r = copy_of(c);
  if (pairs.size() % 2) throw Error("linalg update: unpaired block");
  if (c.ndim() != 2) throw ShapeError("linalg update: blocks must be 2-d");
  dispatch_float(c.dtype(), "linalg update", [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < pairs.size(); i += 2) {
      const Block& a = pairs[i].block();
      const Block& b = pairs[i + 1].block();
      const std::int64_t m = c.shape()[0], n = c.shape()[1], k = a.shape()[1];
      if (a.shape()[0] != m || (trans_b ? b.shape()[1] != k || b.shape()[0] != n : b.shape()[0] != k || b.shape()[1] != n))
        throw ShapeError("linalg update: misaligned blocks " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
      gemm<T>(false, trans_b, m, n, k, T(-1), a.data<T>(), b.data<T>(), r.data<T>());
    }
  });
  return r;
}

Value potrf_op(const OpContext&, std::span<const Value> args) {
  Block r = update(arg(args, 0).block(), args.subspan(1), true);
  const std::int64_t n = r.shape()[0];
  if (r.shape()[1] != n) throw ShapeError("cholesky: diagonal block is not square: " + shape_to_string(r.shape()));
  dispatch_float(r.dtype(), "cholesky", [&](auto tag) {
    using T = decltype(tag);
    T* x = r.data<T>();
    int info = 0;
    if (n) {
      if constexpr (std::is_same_v<T, double>) info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, x, ld(n));
      else info = LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', n, x, ld(n));
    }
    check_lapack(info, "potrf");
    if (info > 0) throw Error("cholesky: matrix is not positive definite");
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = i + 1; j < n; ++j) x[i * n + j] = T(0);
  });
  return Value(std::move(r));
}

/** The row permutation stored in row n of a getrf block (n = its column count). */
std::vector<std::int64_t> perm_of(const Block& d) {
  const std::int64_t n = d.shape()[1];
  if (d.ndim() != 2 || d.shape()[0] != n + 1) throw ShapeError("lu: not a factor block: " + shape_to_string(d.shape()));
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  dispatch_float(d.dtype(), "lu", [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t i = 0; i < n; ++i) perm[i] = static_cast<std::int64_t>(d.data<T>()[n * n + i]);
  });
  return perm;
}

Block permute_rows(const Block& x, const std::vector<std::int64_t>& perm) {
  Block out(x.dtype(), x.shape());
  const std::size_t row = x.ndim() == 2 ? x.shape()[1] * itemsize(x.dtype()) : 0;
  if (static_cast<std::int64_t>(perm.size()) != x.shape()[0]) throw ShapeError("lu: pivots do not match the block");
  for (std::size_t i = 0; i < perm.size(); ++i)
    std::memcpy(static_cast<char*>(out.raw()) + i * row, static_cast<const char*>(x.raw()) + perm[i] * row, row);
  return out;
}

Value trsm_op(const OpContext&, std::span<const Value> args) {
  const auto p = from_value<TrsmParams>(arg(args, 0));
  const Block& t = arg(args, 1).block();
  Block r = update(arg(args, 2).block(), args.subspan(3), p.trans_b);
  if (p.pivots) r = permute_rows(r, perm_of(t));
  const std::int64_t n = t.shape()[1], m = r.shape()[0], q = r.shape()[1];
  if (t.shape()[0] < n || (p.left ? m : q) != n)
    throw ShapeError("solve_triangular: blocks " + shape_to_string(t.shape()) + " and " + shape_to_string(r.shape()) +
                     " do not align");
  if (m == 0 || q == 0) return Value(std::move(r));
  dispatch_float(r.dtype(), "solve_triangular", [&](auto tag) {
    using T = decltype(tag);
    const auto side = p.left ? CblasLeft : CblasRight;
    const auto uplo = p.lower ? CblasLower : CblasUpper;
    const auto tr = p.trans ? CblasTrans : CblasNoTrans;
    const auto diag = p.unit ? CblasUnit : CblasNonUnit;
    if constexpr (std::is_same_v<T, double>)
      cblas_dtrsm(CblasRowMajor, side, uplo, tr, diag, m, q, 1.0, t.data<T>(), ld(n), r.data<T>(), ld(q));
    else
      cblas_strsm(CblasRowMajor, side, uplo, tr, diag, m, q, 1.0f, t.data<T>(), ld(n), r.data<T>(), ld(q));
  });
  return Value(std::move(r));
}

// C - sum -> (n + 1) x n: L (unit, below the diagonal) and U combined, then the permutation
// perm (C[perm] = L U) as values in the last row.
Value getrf_op(const OpContext&, std::span<const Value> args) {
  Block r = update(arg(args, 0).block(), args.subspan(1), false);
  const std::int64_t n = r.shape()[0];
  if (r.shape()[1] != n) throw ShapeError("lu: diagonal block is not square: " + shape_to_string(r.shape()));
  Block out = zeros_block(r.dtype(), {n + 1, n});
  dispatch_float(r.dtype(), "lu", [&](auto tag) {
    using T = decltype(tag);
    std::vector<std::int32_t> ipiv(static_cast<std::size_t>(n));
    int info = 0;
    if (n) {
      if constexpr (std::is_same_v<T, double>) info = LAPACKE_dgetrf(LAPACK_ROW_MAJOR, n, n, r.data<T>(), ld(n), ipiv.data());
      else info = LAPACKE_sgetrf(LAPACK_ROW_MAJOR, n, n, r.data<T>(), ld(n), ipiv.data());
    }
    check_lapack(info, "getrf");  // info > 0: U is singular, which lu() reports as scipy does: not at all
    T* o = out.data<T>();
    std::memcpy(o, r.data<T>(), sizeof(T) * n * n);
    const auto perm = pivots_to_perm(ipiv, n);
    for (std::int64_t i = 0; i < n; ++i) o[n * n + i] = static_cast<T>(perm[i]);
  });
  return Value(std::move(out));
}

Value lu_extract_op(const OpContext&, std::span<const Value> args) {
  const auto part = static_cast<LuPart>(from_value<std::uint8_t>(arg(args, 0)));
  const Block& d = arg(args, 1).block();
  const auto perm = perm_of(d);
  const std::int64_t n = d.shape()[1];
  if (part == LuPart::PermRows) return Value(permute_rows(arg(args, 2).block(), perm));
  Block out = zeros_block(d.dtype(), {n, n});
  dispatch_float(d.dtype(), "lu", [&](auto tag) {
    using T = decltype(tag);
    const T* x = d.data<T>();
    T* o = out.data<T>();
    if (part == LuPart::P) {  // C = P (LU) with C[perm] = LU: column j of P is e_perm[j]
      for (std::int64_t j = 0; j < n; ++j) o[perm[j] * n + j] = T(1);
      return;
    }
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        o[i * n + j] = part == LuPart::L ? (i == j ? T(1) : (j < i ? x[i * n + j] : T(0))) : (j >= i ? x[i * n + j] : T(0));
  });
  return Value(std::move(out));
}

Value zeros_op(const OpContext&, std::span<const Value> args) {
  const auto p = from_value<ZerosParams>(arg(args, 0));
  return Value(zeros_block(p.dtype, p.shape));
}

const bool linalg_ops_registered = [] {
  register_op(kContractOp, contract_op);
  register_op(kAddOp, add_op);
  register_op(kQrOp, qr_op);
  register_op(kSvdOp, svd_op);
  register_op(kPotrfOp, potrf_op);
  register_op(kTrsmOp, trsm_op);
  register_op(kGetrfOp, getrf_op);
  register_op(kLuExtractOp, lu_extract_op);
  register_op(kZerosOp, zeros_op);
  return true;
}();

}  // namespace
}  // namespace tessera::detail
