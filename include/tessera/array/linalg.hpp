#pragma once
/** @file
 * Linear algebra on chunked arrays (dask.array's tensordot, einsum, ... and dask.array.linalg).
 *
 * Products contract chunk by chunk and add the partial products in a tree. Decompositions are
 * Dask's blocked algorithms: tsqr for tall-and-skinny QR and SVD (row chunks only), a blocked
 * Cholesky and LU on square chunks, blocked triangular solves. Integer and bool inputs are
 * computed in float64, float32 stays float32 (NumPy's rule). Blocks run OpenBLAS and LAPACKE
 * on the host, cuBLAS and cuSOLVER on a GPU.
 */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief NumPy's tensordot: sums products over axes_a of a and axes_b of b (equal lengths);
 * the result has a's remaining axes then b's.
 */
Array tensordot(const Array& a, const Array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b);
/** @brief tensordot over the last n axes of a and the first n of b. */
Array tensordot(const Array& a, const Array& b, int n = 2);
/**
 * @brief NumPy's dot: matmul for vectors and matrices; for n-d operands the sum over the last
 * axis of a and the second-to-last of b (as tensordot).
 */
Array dot(const Array& a, const Array& b);
/**
 * @brief NumPy's einsum for explicit ("ij,jk->ik") and implicit ("ij,jk") subscripts over any
 * number of operands: repeated subscripts in one operand take diagonals, subscripts missing
 * from the output are summed; pairs of operands contract through tensordot-like batched
 * products. No ellipsis.
 */
Array einsum(const std::string& subscripts, const std::vector<Array>& operands);
/** @brief Outer product of the flattened operands. */
Array outer(const Array& a, const Array& b);
/** @brief Sum over the last axes of a and b (scalars multiply). */
Array inner(const Array& a, const Array& b);
/** @brief Dot product of the flattened operands (real arrays). */
Array vdot(const Array& a, const Array& b);
/** @brief Kronecker product of two arrays of the same number of dimensions. */
Array kron(const Array& a, const Array& b);
/** @brief Sum along a diagonal (offset above the main one when positive) of axes axis1, axis2. */
Array trace(const Array& a, int offset = 0, int axis1 = 0, int axis2 = 1);

/** @brief The order of a norm: a number (including +-inf) or "fro" / "nuc". */
class NormOrd {
 public:
  NormOrd(double p) : p_(p) {}  // NOLINT: implicit, as NumPy's ord=2
  NormOrd(int p) : p_(p) {}     // NOLINT
  NormOrd(const char* name);    // NOLINT: "fro" or "nuc"
  bool is_number() const { return name_.empty(); }
  double number() const { return p_; }
  const std::string& name() const { return name_; }

 private:
  double p_ = 0;
  std::string name_;
};

/**
 * @brief numpy.linalg.norm: a vector norm over one axis, a matrix norm over two (ord None:
 * 2-norm / Frobenius; inf, -inf, 1, -1, 0 and any p for vectors; "fro", "nuc", inf, -inf, 1,
 * -1, 2, -2 for matrices). No axes: the whole array (as a vector unless it is 2-d).
 */
Array norm(const Array& x, std::optional<NormOrd> ord = std::nullopt, std::vector<int> axes = {},
           bool keepdims = false);

namespace linalg {

/** @brief A factorisation's two factors. */
struct QR {
  Array q, r;
};
/** @brief a = u @ diag(s) @ v (v is V^T, as NumPy's vh). */
struct SVD {
  Array u, s, v;
};
/** @brief a = p @ l @ u. */
struct LU {
  Array p, l, u;
};
/** @brief numpy.linalg.lstsq's results. */
struct Lstsq {
  Array x, residuals, rank, s;
};

/**
 * @brief QR of a tall-and-skinny matrix chunked along rows only (columns are rechunked to one
 * chunk): each row block is QR'd, the stacked R factors QR'd again, and Q_i = Q_block_i Q_small_i.
 */
QR tsqr(const Array& a);
/**
 * @brief QR of a short-and-fat matrix (rows <= columns; rows are rechunked to one chunk): Q and
 * R's leading block from the leading square block, the rest of R is Q^T times the other columns.
 */
QR sfqr(const Array& a);
/** @brief tsqr for tall matrices, sfqr for short-and-fat ones. */
QR qr(const Array& a);
/** @brief Reduced SVD: tall-and-skinny through tsqr then one small SVD; wide ones through a^T. */
SVD svd(const Array& a);
/**
 * @brief Randomised SVD of rank k (Halko et al., as dask.array.linalg.svd_compressed): a
 * random normal test matrix (counter-based: the same for any chunking) of k + oversampling
 * columns, n_power_iter power iterations (each re-orthonormalised by tsqr).
 */
SVD svd_compressed(const Array& a, std::int64_t k, int n_power_iter = 0, std::uint64_t seed = 0,
                   std::int64_t oversampling = 10);
/** @brief Cholesky factor of a symmetric positive definite matrix in square chunks (blocked). */
Array cholesky(const Array& a, bool lower = true);
/**
 * @brief Blocked LU as Dask's: pivoting inside each diagonal block only, so p is block-diagonal.
 * a = p @ l @ u; a is square and chunked alike on both axes.
 */
LU lu(const Array& a);
/** @brief Solves a x = b for x with a triangular (b a vector or a matrix). */
Array solve_triangular(const Array& a, const Array& b, bool lower = false);
/** @brief Solves a x = b (through lu, as Dask). */
Array solve(const Array& a, const Array& b);
/** @brief The inverse (solve with the identity). */
Array inv(const Array& a);
/** @brief Least squares through tsqr: x, the residual sums of squares, the rank of a, its singular values. */
Lstsq lstsq(const Array& a, const Array& b);
/** @brief The n x n identity, in chunks of `chunk`. */
Array eye(std::int64_t n, std::int64_t chunk = -1, DType dtype = DType::Float64);

}  // namespace linalg
}  // namespace tessera
