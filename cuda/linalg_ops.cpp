// Device variants of the linear algebra block ops (src/array/linalg_tasks.hpp), registered
// under the host ops' names when the CUDA back end loads: cuBLAS for products and triangular
// solves, cuSOLVER for the factorisations, small kernels (linalg_kernels.cu) for the rest.
// Each returns what its host twin (src/array/linalg_ops.cpp) returns: the same dtype, shape
// and packing, in device memory of ctx.device, queued on ctx.stream (run_op synchronises it).
//
// Blocks are row-major and cuBLAS/cuSOLVER column-major: a row-major r x c buffer is the
// column-major c x r transpose. Products use that directly (C^T = B^T A^T); factorisations
// transpose into a column-major work copy with geam and back.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "array/linalg_tasks.hpp"
#include "array_kernels.hpp"
#include "check.hpp"
#include "linalg_kernels.hpp"
#include "runtime.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda {
namespace {

using detail::ContractParams;
using detail::LuPart;
using detail::TrsmParams;
using detail::ZerosParams;

struct Where {
  int device;
  cudaStream_t stream;
};

Where where(const OpContext& ctx) {
  const int device = ctx.device < 0 ? 0 : ctx.device;
  return {device, stream_or_default(ctx.stream, device)};
}

const Value& arg(std::span<const Value> args, std::size_t i) {
  if (i >= args.size()) throw Error("linalg (device): missing argument " + std::to_string(i));
  return args[i];
}

/** Block argument i, in device memory of w.device (run_op moves it there). */
const Block& dev(std::span<const Value> args, std::size_t i, const Where& w) {
  const Block& b = arg(args, i).block();
  if (b.size() && (b.memory_kind() != MemoryKind::Device || b.buffer()->device() != w.device))
    throw DeviceError("linalg (device): argument " + std::to_string(i) + " is not on device " + std::to_string(w.device));
  return b;
}

int extent(std::int64_t v) {
  if (v > INT_MAX) throw ShapeError("linalg (device): extent " + std::to_string(v) + " is too large for cuBLAS/cuSOLVER");
  return static_cast<int>(std::max<std::int64_t>(v, 1));
}

void blas_check(cublasStatus_t s, const char* call, int device) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_device_error(call, device, cublasGetStatusString(s));
}

void solver_check(cusolverStatus_t s, const char* call, int device) {
  if (s != CUSOLVER_STATUS_SUCCESS) throw_device_error(call, device, "cuSOLVER status " + std::to_string(static_cast<int>(s)));
}

/** Binds the current device once for a handle's creation (a handle belongs to that device). */
void use_device(int device) {
  int current = -1;
  check(cudaGetDevice(&current), "cudaGetDevice", device);
  if (current != device) check(cudaSetDevice(device), "cudaSetDevice", device);
}

/** This thread's cuBLAS handle for the device, set to the stream. */
cublasHandle_t blas(const Where& w) {
  thread_local cublasHandle_t handles[kMaxDevices] = {};
  if (w.device < 0 || w.device >= kMaxDevices) throw DeviceError("linalg (device): no device " + std::to_string(w.device));
  if (!handles[w.device]) {
    use_device(w.device);
    blas_check(cublasCreate(&handles[w.device]), "cublasCreate", w.device);
  }
  blas_check(cublasSetStream(handles[w.device], w.stream), "cublasSetStream", w.device);
  return handles[w.device];
}

/** This thread's cuSOLVER handle for the device, set to the stream. */
cusolverDnHandle_t solver(const Where& w) {
  thread_local cusolverDnHandle_t handles[kMaxDevices] = {};
  if (w.device < 0 || w.device >= kMaxDevices) throw DeviceError("linalg (device): no device " + std::to_string(w.device));
  if (!handles[w.device]) {
    use_device(w.device);
    solver_check(cusolverDnCreate(&handles[w.device]), "cusolverDnCreate", w.device);
  }
  solver_check(cusolverDnSetStream(handles[w.device], w.stream), "cusolverDnSetStream", w.device);
  return handles[w.device];
}

template <typename F>
void dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::Float64: f(double{}); break;
    case DType::Float32: f(float{}); break;
    default: throw DTypeError("linalg (device): needs float32 or float64 blocks, got " + std::string(dtype_name(t)));
  }
}

Block new_block(DType t, Shape s, const Where& w) {
  return tessera::device_block(t, std::move(s), w.device, as_view(w.stream));
}

void zero(Block& b, const Where& w) {
  if (b.nbytes()) check(cudaMemsetAsync(b.raw(), 0, b.nbytes(), w.stream), "cudaMemsetAsync (linalg)", w.device);
}

void copy(void* dst, const void* src, std::size_t bytes, const Where& w) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, w.stream), "cudaMemcpyAsync (linalg)", w.device);
}

/** Scratch device memory freed in order on the stream. */
template <typename T>
T* scratch(std::shared_ptr<Buffer>& keep, std::int64_t count, const Where& w) {
  keep = allocate_scratch(sizeof(T) * static_cast<std::size_t>(std::max<std::int64_t>(count, 1)), w.device, w.stream);
  return static_cast<T*>(keep->data());
}

// C (m x n col-major, ldc) = alpha op(A) + beta op(B): the cuBLAS geam of T.
template <typename T>
void geam(const Where& w, cublasOperation_t ta, int m, int n, const T* a, int lda, T* c, int ldc) {
  const T one = 1, zero_v = 0;
  if constexpr (std::is_same_v<T, double>)
    blas_check(cublasDgeam(blas(w), ta, CUBLAS_OP_N, m, n, &one, a, lda, &zero_v, c, ldc, c, ldc), "cublasDgeam", w.device);
  else
    blas_check(cublasSgeam(blas(w), ta, CUBLAS_OP_N, m, n, &one, a, lda, &zero_v, c, ldc, c, ldc), "cublasSgeam", w.device);
}

/** Column-major copy (ld rows) of a row-major rows x cols block. */
template <typename T>
void to_col_major(const Where& w, std::int64_t rows, std::int64_t cols, const T* src, T* dst) {
  if (rows && cols) geam<T>(w, CUBLAS_OP_T, extent(rows), extent(cols), src, extent(cols), dst, extent(rows));
}

/**
 * Writes the column-major rows x cols matrix src (ld lds) into a row-major destination with row
 * stride ldd: as column-major, dst is its cols x rows transpose.
 */
template <typename T>
void from_col_major(const Where& w, std::int64_t rows, std::int64_t cols, const T* src, int lds, T* dst, std::int64_t ldd) {
  if (rows && cols) geam<T>(w, CUBLAS_OP_T, extent(cols), extent(rows), src, lds, dst, extent(ldd));
}

/** Row-major C (m x n) += alpha A op(B): A m x k, B k x n (or n x k transposed), batched. */
template <typename T>
void gemm(const Where& w, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, const T* b,
          T* c, std::int64_t batch = 1) {
  if (!m || !n || !k || !batch) return;
  // Column-major C^T (n x m) = op(B)^T (n x k) A^T (k x m); B's buffer is B^T (n x k, ld n) or,
  // transposed, B (k x n, ld k) read with op T.
  const T one = 1;
  const auto tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int N = extent(n), M = extent(m), K = extent(k), ldb = trans_b ? K : N;
  if constexpr (std::is_same_v<T, double>)
    blas_check(cublasDgemmStridedBatched(blas(w), tb, CUBLAS_OP_N, N, M, K, &alpha, b, ldb, n * k, a, K, m * k, &one, c,
                                         N, m * n, extent(batch)),
               "cublasDgemmStridedBatched", w.device);
  else
    blas_check(cublasSgemmStridedBatched(blas(w), tb, CUBLAS_OP_N, N, M, K, &alpha, b, ldb, n * k, a, K, m * k, &one, c,
                                         N, m * n, extent(batch)),
               "cublasSgemmStridedBatched", w.device);
}

int read_info(const int* dev_info, const Where& w) {
  int info = 0;
  check(cudaMemcpyAsync(&info, dev_info, sizeof(int), cudaMemcpyDeviceToHost, w.stream), "cudaMemcpyAsync (info)", w.device);
  check(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize", w.device);
  return info;
}

std::int64_t prod(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// ---- contract, add, zeros ---------------------------------------------------------------------

Value contract_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const auto p = from_value<ContractParams>(arg(args, 0));
  if (p.pairs < 1 || static_cast<std::int64_t>(args.size()) != 1 + 2 * p.pairs) throw Error("contract: wrong number of blocks");
  const Block& a0 = dev(args, 1, w);
  const Block& b0 = dev(args, 1 + p.pairs, w);
  const std::size_t nb = static_cast<std::size_t>(p.batch);
  if (a0.ndim() < p.batch + p.free_a || b0.ndim() < p.batch + p.free_b) throw ShapeError("contract: blocks have too few axes");
  Shape out(a0.shape().begin(), a0.shape().begin() + p.batch + p.free_a);
  out.insert(out.end(), b0.shape().end() - p.free_b, b0.shape().end());
  Block c = new_block(a0.dtype(), out, w);
  zero(c, w);
  for (std::int32_t q = 0; q < p.pairs; ++q) {
    const Block& a = dev(args, 1 + q, w);
    const Block& b = dev(args, 1 + p.pairs + q, w);
    if (a.dtype() != c.dtype() || b.dtype() != c.dtype()) throw DTypeError("contract: blocks of different dtypes");
    const std::int64_t batch = prod(a.shape(), 0, nb), m = prod(a.shape(), nb, nb + p.free_a);
    const std::int64_t k = prod(a.shape(), nb + p.free_a, a.ndim()), n = prod(b.shape(), b.ndim() - p.free_b, b.ndim());
    if (batch * m * n != c.size() || batch * k * n != b.size())
      throw ShapeError("contract: misaligned blocks " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
    switch (c.dtype()) {
      case DType::Float64:
        gemm<double>(w, false, m, n, k, 1.0, static_cast<const double*>(a.raw()), static_cast<const double*>(b.raw()),
                     static_cast<double*>(c.raw()), batch);
        break;
      case DType::Float32:
        gemm<float>(w, false, m, n, k, 1.0f, static_cast<const float*>(a.raw()), static_cast<const float*>(b.raw()),
                    static_cast<float*>(c.raw()), batch);
        break;
      case DType::Int32: case DType::Int64: {
        const std::size_t is = itemsize(c.dtype());
        for (std::int64_t i = 0; i < batch; ++i)
          matmul_accumulate_int(c.dtype(), m, n, k, static_cast<const char*>(a.raw()) + i * m * k * is,
                                static_cast<const char*>(b.raw()) + i * k * n * is, static_cast<char*>(c.raw()) + i * m * n * is,
                                w.device, w.stream);
        break;
      }
      default: throw DTypeError("contract (device): unsupported dtype " + std::string(dtype_name(c.dtype())));
    }
  }
  return Value(std::move(c));
}

Value add_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const Block& first = dev(args, 0, w);
  Block out = new_block(first.dtype(), first.shape(), w);
  copy(out.raw(), first.raw(), first.nbytes(), w);
  for (std::size_t i = 1; i < args.size(); ++i) {
    const Block& b = dev(args, i, w);
    if (b.shape() != out.shape() || b.dtype() != out.dtype()) throw ShapeError("add: blocks of different shapes");
    linalg_add_into(out.dtype(), out.size(), b.raw(), out.raw(), w.device, w.stream);
  }
  return Value(std::move(out));
}

Value zeros_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const auto p = from_value<ZerosParams>(arg(args, 0));
  Block out = new_block(p.dtype, p.shape, w);
  zero(out, w);
  return Value(std::move(out));
}

// ---- qr, svd ------------------------------------------------------------------------------------

Value qr_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const Block& a = dev(args, 0, w);
  if (a.ndim() != 2) throw ShapeError("qr: block must be 2-d, got " + shape_to_string(a.shape()));
  const std::int64_t m = a.shape()[0], n = a.shape()[1], k = std::min(m, n);
  Block out = new_block(a.dtype(), {m + k, n}, w);
  zero(out, w);
  if (k == 0) return Value(std::move(out));
  dispatch_float(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::shared_ptr<Buffer> wk, tk, lk, ik;
    T* W = scratch<T>(wk, m * n, w);
    T* tau = scratch<T>(tk, k, w);
    int* info = scratch<int>(ik, 1, w);
    to_col_major<T>(w, m, n, static_cast<const T*>(a.raw()), W);
    auto h = solver(w);
    const int M = extent(m), N = extent(n), K = extent(k);
    int lwork = 0, lwork2 = 0;
    if constexpr (std::is_same_v<T, double>) {
      solver_check(cusolverDnDgeqrf_bufferSize(h, M, N, W, M, &lwork), "cusolverDnDgeqrf_bufferSize", w.device);
      solver_check(cusolverDnDorgqr_bufferSize(h, M, K, K, W, M, tau, &lwork2), "cusolverDnDorgqr_bufferSize", w.device);
    } else {
      solver_check(cusolverDnSgeqrf_bufferSize(h, M, N, W, M, &lwork), "cusolverDnSgeqrf_bufferSize", w.device);
      solver_check(cusolverDnSorgqr_bufferSize(h, M, K, K, W, M, tau, &lwork2), "cusolverDnSorgqr_bufferSize", w.device);
    }
    lwork = std::max(lwork, lwork2);
    T* work = scratch<T>(lk, lwork, w);
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDgeqrf(h, M, N, W, M, tau, work, lwork, info), "cusolverDnDgeqrf", w.device);
    else
      solver_check(cusolverDnSgeqrf(h, M, N, W, M, tau, work, lwork, info), "cusolverDnSgeqrf", w.device);
    // R: the first k rows of W, below Q in the output, with the reflectors under it zeroed.
    T* o = static_cast<T*>(out.raw());
    from_col_major<T>(w, k, n, W, M, o + m * n, n);
    linalg_zero_triangle(a.dtype(), k, n, o + m * n, false, false, w.device, w.stream);
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDorgqr(h, M, K, K, W, M, tau, work, lwork, info), "cusolverDnDorgqr", w.device);
    else
      solver_check(cusolverDnSorgqr(h, M, K, K, W, M, tau, work, lwork, info), "cusolverDnSorgqr", w.device);
    from_col_major<T>(w, m, k, W, M, o, n);
    if (const int i = read_info(info, w); i < 0) throw Error("qr (device): argument " + std::to_string(-i) + " is invalid");
  });
  return Value(std::move(out));
}

Value svd_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const Block& a = dev(args, 0, w);
  if (a.ndim() != 2) throw ShapeError("svd: block must be 2-d, got " + shape_to_string(a.shape()));
  const std::int64_t m = a.shape()[0], n = a.shape()[1], k = std::min(m, n);
  Block out = new_block(a.dtype(), {m + 1 + k, n}, w);
  zero(out, w);
  if (k == 0) return Value(std::move(out));
  dispatch_float(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::shared_ptr<Buffer> wk, uk, vk, lk, ik;
    T* W = scratch<T>(wk, m * n, w);
    T* U = scratch<T>(uk, m * k, w);
    T* V = scratch<T>(vk, n * k, w);
    int* info = scratch<int>(ik, 1, w);
    T* o = static_cast<T*>(out.raw());
    T* S = o + m * n;  // the singular values go straight into their output row
    to_col_major<T>(w, m, n, static_cast<const T*>(a.raw()), W);
    auto h = solver(w);
    gesvdjInfo_t params = nullptr;
    solver_check(cusolverDnCreateGesvdjInfo(&params), "cusolverDnCreateGesvdjInfo", w.device);
    struct Destroy {
      gesvdjInfo_t p;
      ~Destroy() { cusolverDnDestroyGesvdjInfo(p); }
    } destroy{params};
    const int M = extent(m), N = extent(n);
    int lwork = 0;
    const auto job = CUSOLVER_EIG_MODE_VECTOR;
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDgesvdj_bufferSize(h, job, 1, M, N, W, M, S, U, M, V, N, &lwork, params),
                   "cusolverDnDgesvdj_bufferSize", w.device);
    else
      solver_check(cusolverDnSgesvdj_bufferSize(h, job, 1, M, N, W, M, S, U, M, V, N, &lwork, params),
                   "cusolverDnSgesvdj_bufferSize", w.device);
    T* work = scratch<T>(lk, lwork, w);
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDgesvdj(h, job, 1, M, N, W, M, S, U, M, V, N, work, lwork, info, params), "cusolverDnDgesvdj",
                   w.device);
    else
      solver_check(cusolverDnSgesvdj(h, job, 1, M, N, W, M, S, U, M, V, N, work, lwork, info, params), "cusolverDnSgesvdj",
                   w.device);
    from_col_major<T>(w, m, k, U, M, o, n);
    // V (n x k column-major) is V^T (k x n) row-major: the rows below the singular values.
    copy(o + (m + 1) * n, V, sizeof(T) * static_cast<std::size_t>(n * k), w);
    if (const int i = read_info(info, w); i != 0) throw Error("svd (device): gesvdj failed (info " + std::to_string(i) + ")");
  });
  return Value(std::move(out));
}

// ---- the factorisations ---------------------------------------------------------------------

/** R = C - sum_k A_k op(B_k) over the pairs args[first..], in a fresh device block. */
Block update(std::span<const Value> args, std::size_t first, bool trans_b, const Where& w) {
  const Block& c = dev(args, first, w);
  if (c.ndim() != 2) throw ShapeError("linalg update: blocks must be 2-d");
  Block r = new_block(c.dtype(), c.shape(), w);
  copy(r.raw(), c.raw(), c.nbytes(), w);
  if ((args.size() - first - 1) % 2) throw Error("linalg update: unpaired block");
  const std::int64_t m = c.shape()[0], n = c.shape()[1];
  for (std::size_t i = first + 1; i < args.size(); i += 2) {
    const Block& a = dev(args, i, w);
    const Block& b = dev(args, i + 1, w);
    const std::int64_t k = a.shape()[1];
    if (a.shape()[0] != m || (trans_b ? b.shape()[1] != k || b.shape()[0] != n : b.shape()[0] != k || b.shape()[1] != n))
      throw ShapeError("linalg update: misaligned blocks " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
    dispatch_float(c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      gemm<T>(w, trans_b, m, n, k, T(-1), static_cast<const T*>(a.raw()), static_cast<const T*>(b.raw()),
              static_cast<T*>(r.raw()));
    });
  }
  return r;
}

Value potrf_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  Block r = update(args, 0, true, w);
  const std::int64_t n = r.shape()[0];
  if (r.shape()[1] != n) throw ShapeError("cholesky: diagonal block is not square: " + shape_to_string(r.shape()));
  if (n == 0) return Value(std::move(r));
  dispatch_float(r.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::shared_ptr<Buffer> lk, ik;
    int* info = scratch<int>(ik, 1, w);
    T* x = static_cast<T*>(r.raw());
    auto h = solver(w);
    // The symmetric block reads the same in either order; the column-major upper factor U
    // (A = U^T U) is the row-major lower L.
    const auto uplo = CUBLAS_FILL_MODE_UPPER;
    const int N = extent(n);
    int lwork = 0;
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDpotrf_bufferSize(h, uplo, N, x, N, &lwork), "cusolverDnDpotrf_bufferSize", w.device);
    else
      solver_check(cusolverDnSpotrf_bufferSize(h, uplo, N, x, N, &lwork), "cusolverDnSpotrf_bufferSize", w.device);
    T* work = scratch<T>(lk, lwork, w);
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDpotrf(h, uplo, N, x, N, work, lwork, info), "cusolverDnDpotrf", w.device);
    else
      solver_check(cusolverDnSpotrf(h, uplo, N, x, N, work, lwork, info), "cusolverDnSpotrf", w.device);
    linalg_zero_triangle(r.dtype(), n, n, x, true, false, w.device, w.stream);
    if (read_info(info, w) > 0) throw Error("cholesky: matrix is not positive definite");
  });
  return Value(std::move(r));
}

Value trsm_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const auto p = from_value<TrsmParams>(arg(args, 0));
  const Block& t = dev(args, 1, w);
  Block r = update(args, 2, p.trans_b, w);
  const std::int64_t n = t.shape()[1], m = r.shape()[0], q = r.shape()[1];
  if (t.shape()[0] < n || (p.left ? m : q) != n)
    throw ShapeError("solve_triangular: blocks " + shape_to_string(t.shape()) + " and " + shape_to_string(r.shape()) +
                     " do not align");
  if (p.pivots) {
    if (t.shape()[0] != n + 1) throw ShapeError("lu: not a factor block: " + shape_to_string(t.shape()));
    Block g = new_block(r.dtype(), r.shape(), w);
    linalg_gather_rows(r.dtype(), m, q, r.raw(), static_cast<const char*>(t.raw()) + n * n * itemsize(t.dtype()), g.raw(),
                       w.device, w.stream);
    r = std::move(g);
  }
  if (m == 0 || q == 0) return Value(std::move(r));
  dispatch_float(r.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // Row-major X (m x q) is column-major X^T: op(T) X = R becomes X^T op(T)^T = R^T, and T's
    // buffer is T^T column-major, so the side and the triangle flip and op stays.
    const auto side = p.left ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT;
    const auto uplo = p.lower ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    const auto op = p.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto diag = p.unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    const T one = 1;
    if constexpr (std::is_same_v<T, double>)
      blas_check(cublasDtrsm(blas(w), side, uplo, op, diag, extent(q), extent(m), &one, static_cast<const T*>(t.raw()),
                             extent(n), static_cast<T*>(r.raw()), extent(q)),
                 "cublasDtrsm", w.device);
    else
      blas_check(cublasStrsm(blas(w), side, uplo, op, diag, extent(q), extent(m), &one, static_cast<const T*>(t.raw()),
                             extent(n), static_cast<T*>(r.raw()), extent(q)),
                 "cublasStrsm", w.device);
  });
  return Value(std::move(r));
}

/** The permutation in row n of a getrf block, copied to the host (synchronises the stream). */
std::vector<std::int64_t> perm_of(const Block& d, const Where& w) {
  const std::int64_t n = d.shape()[1];
  if (d.ndim() != 2 || d.shape()[0] != n + 1) throw ShapeError("lu: not a factor block: " + shape_to_string(d.shape()));
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  dispatch_float(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> host(static_cast<std::size_t>(n));
    if (n)
      check(cudaMemcpyAsync(host.data(), static_cast<const T*>(d.raw()) + n * n, sizeof(T) * n, cudaMemcpyDeviceToHost,
                            w.stream),
            "cudaMemcpyAsync (pivots)", w.device);
    check(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize", w.device);
    for (std::int64_t i = 0; i < n; ++i) perm[i] = static_cast<std::int64_t>(host[i]);
  });
  return perm;
}

Value getrf_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  Block r = update(args, 0, false, w);
  const std::int64_t n = r.shape()[0];
  if (r.shape()[1] != n) throw ShapeError("lu: diagonal block is not square: " + shape_to_string(r.shape()));
  Block out = new_block(r.dtype(), {n + 1, n}, w);
  zero(out, w);
  if (n == 0) return Value(std::move(out));
  dispatch_float(r.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::shared_ptr<Buffer> wk, lk, pk, ik;
    T* W = scratch<T>(wk, n * n, w);
    int* ipiv = scratch<int>(pk, n, w);
    int* info = scratch<int>(ik, 1, w);
    to_col_major<T>(w, n, n, static_cast<const T*>(r.raw()), W);
    auto h = solver(w);
    const int N = extent(n);
    int lwork = 0;
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDgetrf_bufferSize(h, N, N, W, N, &lwork), "cusolverDnDgetrf_bufferSize", w.device);
    else
      solver_check(cusolverDnSgetrf_bufferSize(h, N, N, W, N, &lwork), "cusolverDnSgetrf_bufferSize", w.device);
    T* work = scratch<T>(lk, lwork, w);
    if constexpr (std::is_same_v<T, double>)
      solver_check(cusolverDnDgetrf(h, N, N, W, N, work, ipiv, info), "cusolverDnDgetrf", w.device);
    else
      solver_check(cusolverDnSgetrf(h, N, N, W, N, work, ipiv, info), "cusolverDnSgetrf", w.device);
    T* o = static_cast<T*>(out.raw());
    from_col_major<T>(w, n, n, W, N, o, n);
    // The pivots come to the host once to become the permutation row (as the host op stores it).
    std::vector<std::int32_t> piv(static_cast<std::size_t>(n));
    check(cudaMemcpyAsync(piv.data(), ipiv, sizeof(int) * n, cudaMemcpyDeviceToHost, w.stream), "cudaMemcpyAsync (ipiv)",
          w.device);
    if (const int i = read_info(info, w); i < 0) throw Error("lu (device): argument " + std::to_string(-i) + " is invalid");
    const auto perm = detail::pivots_to_perm(piv, n);
    std::vector<T> row(perm.begin(), perm.end());
    check(cudaMemcpyAsync(o + n * n, row.data(), sizeof(T) * n, cudaMemcpyHostToDevice, w.stream), "cudaMemcpyAsync (perm)",
          w.device);
    check(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize", w.device);  // `row` is pageable host memory
  });
  return Value(std::move(out));
}

Value lu_extract_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  const auto part = static_cast<LuPart>(from_value<std::uint8_t>(arg(args, 0)));
  const Block& d = dev(args, 1, w);
  const std::int64_t n = d.shape()[1];
  if (d.ndim() != 2 || d.shape()[0] != n + 1) throw ShapeError("lu: not a factor block: " + shape_to_string(d.shape()));
  const void* perm_row = static_cast<const char*>(d.raw()) + n * n * itemsize(d.dtype());
  if (part == LuPart::PermRows) {
    const Block& x = dev(args, 2, w);
    if (x.ndim() != 2 || x.shape()[0] != n) throw ShapeError("lu: pivots do not match the block");
    Block out = new_block(x.dtype(), x.shape(), w);
    linalg_gather_rows(x.dtype(), n, x.shape()[1], x.raw(), perm_row, out.raw(), w.device, w.stream);
    return Value(std::move(out));
  }
  Block out = new_block(d.dtype(), {n, n}, w);
  if (part == LuPart::P) {
    const auto perm = perm_of(d, w);
    dispatch_float(d.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> host(static_cast<std::size_t>(n * n), T(0));
      for (std::int64_t j = 0; j < n; ++j) host[perm[j] * n + j] = T(1);
      if (n)
        check(cudaMemcpyAsync(out.raw(), host.data(), sizeof(T) * n * n, cudaMemcpyHostToDevice, w.stream),
              "cudaMemcpyAsync (P)", w.device);
      check(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize", w.device);
    });
    return Value(std::move(out));
  }
  copy(out.raw(), d.raw(), out.nbytes(), w);
  linalg_zero_triangle(d.dtype(), n, n, out.raw(), part == LuPart::L, part == LuPart::L, w.device, w.stream);
  return Value(std::move(out));
}

const bool registered = [] {
  register_device_op(detail::kContractOp, contract_device);
  register_device_op(detail::kAddOp, add_device);
  register_device_op(detail::kZerosOp, zeros_device);
  register_device_op(detail::kQrOp, qr_device);
  register_device_op(detail::kSvdOp, svd_device);
  register_device_op(detail::kPotrfOp, potrf_device);
  register_device_op(detail::kTrsmOp, trsm_device);
  register_device_op(detail::kGetrfOp, getrf_device);
  register_device_op(detail::kLuExtractOp, lu_extract_device);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
