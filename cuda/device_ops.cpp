// Device variants of the simple array ops, registered under the host ops' names when the CUDA
// back end loads: reduce_combine, assemble and matmul (reshape's host code serves as its device
// variant too: src/array/structural.cpp). Each returns exactly what its
// host twin (src/array/array_ops.cpp, src/array/structural.cpp) returns: the same dtype, the
// same shape, the same values (bit for bit, except cuBLAS sums in its own order), in device
// memory of ctx.device. run_op has already moved the block arguments there and synchronises
// ctx.stream after the variant returns; everything here is queued on ctx.stream.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "array/array_ops.hpp"
#include "array_kernels.hpp"
#include "check.hpp"
#include "runtime.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda {
namespace {

using detail::ReduceKind;

static_assert(static_cast<int>(ReduceKind::Sum) == reduce::Sum && static_cast<int>(ReduceKind::Prod) == reduce::Prod &&
              static_cast<int>(ReduceKind::Min) == reduce::Min && static_cast<int>(ReduceKind::Max) == reduce::Max &&
              static_cast<int>(ReduceKind::Mean) == reduce::Mean && static_cast<int>(ReduceKind::Var) == reduce::Var &&
              static_cast<int>(ReduceKind::Std) == reduce::Std && static_cast<int>(ReduceKind::Any) == reduce::Any &&
              static_cast<int>(ReduceKind::All) == reduce::All &&
              static_cast<int>(ReduceKind::ArgMin) == reduce::ArgMin &&
              static_cast<int>(ReduceKind::ArgMax) == reduce::ArgMax,
              "cuda/array_kernels.hpp's reduce::Kind must number the kinds as detail::ReduceKind");

/** Where this call runs: ctx.device (0 when unset) and ctx.stream (this thread's when unset). */
struct Where {
  int device;
  cudaStream_t stream;
};

Where where(const OpContext& ctx) {
  const int device = ctx.device < 0 ? 0 : ctx.device;
  return {device, stream_or_default(ctx.stream, device)};
}

/** Block argument i, which must be in device memory of `device` (run_op moves it there). */
const Block& device_block(std::span<const Value> args, std::size_t i, const char* op, int device) {
  if (i >= args.size())
    throw Error(std::string(op) + ": missing block argument " + std::to_string(i) + " (got " +
                std::to_string(args.size()) + " arguments)");
  const Block& b = args[i].block();
  if (b.empty() || b.size() == 0) return b;
  if (b.memory_kind() != MemoryKind::Device || b.buffer()->device() != device)
    throw DeviceError(std::string(op) + " (device): argument " + std::to_string(i) + " is in " +
                      memory_kind_name(b.memory_kind()) + " memory" +
                      (b.memory_kind() == MemoryKind::Device ? " of device " + std::to_string(b.buffer()->device()) : "") +
                      ", not on device " + std::to_string(device) + " (run device ops through run_op)");
  return b;
}

// ---- reduce_combine -----------------------------------------------------------------------------

Value reduce_combine_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  if (args.empty()) throw Error("reduce_combine: missing parameters");
  const auto p = from_value<detail::CombineParams>(args[0]);
  if (args.size() < 2) throw Error("reduce_combine: no partials");
  if (p.kind > static_cast<std::uint8_t>(ReduceKind::ArgMax))
    throw Error("reduce_combine: unknown reduction kind " + std::to_string(p.kind));
  const int comps = detail::partial_components(p.kind);
  const Block& first = device_block(args, 1, "reduce_combine", w.device);
  if (first.dtype() != DType::Float64 && first.dtype() != DType::Int64)
    throw DTypeError("reduce_combine: partials are float64 or int64, got " + std::string(dtype_name(first.dtype())));
  for (std::size_t i = 2; i < args.size(); ++i) {
    const Block& b = device_block(args, i, "reduce_combine", w.device);
    if (b.shape() != first.shape() || b.dtype() != first.dtype())
      throw ShapeError("reduce_combine: partials of different shapes " + shape_to_string(first.shape()) + " and " +
                       shape_to_string(b.shape()));
  }
  if (first.size() % comps != 0)
    throw ShapeError("reduce_combine: a partial of shape " + shape_to_string(first.shape()) + " does not hold " +
                     std::to_string(comps) + " components per slot");
  const std::int64_t slots = first.size() / comps;
  const bool f64 = first.dtype() == DType::Float64;

  Shape shape = first.shape();
  DType dtype = first.dtype();
  if (p.finalize) {
    // Final shape: drop the components axis, and the reduced axes unless keepdims (as the host).
    if (p.reduced.size() > first.shape().size())
      throw ShapeError("reduce_combine: " + std::to_string(p.reduced.size()) + " axes for partials of shape " +
                       shape_to_string(first.shape()));
    shape.clear();
    for (std::size_t a = 0; a < p.reduced.size(); ++a)
      if (!p.reduced[a]) shape.push_back(first.shape()[a]);
      else if (p.keepdims) shape.push_back(1);
    if (shape_size(shape) != slots)
      throw ShapeError("reduce_combine: finalised shape " + shape_to_string(shape) + " does not match " +
                       std::to_string(slots) + " partial slots");
    dtype = p.out_dtype;
  }
  Block out = tessera::device_block(dtype, shape, w.device, as_view(w.stream));

  // Up to kCombineMaxInputs partials per launch, in argument order; between launches the
  // accumulator lives in `out` (not finalising) or in scratch memory (finalising).
  std::shared_ptr<Buffer> scratch;
  const void* acc = nullptr;
  std::size_t next = 1;
  for (;;) {
    CombineInputs in{};
    in.count = 0;
    while (in.count < kCombineMaxInputs && next < args.size()) in.data[in.count++] = args[next++].block().raw();
    const bool last = next == args.size();
    if (last && p.finalize) {
      combine_finalize(f64, p.kind, comps, slots, acc, in, p.ddof, dtype, out.raw(), w.device, w.stream);
      break;
    }
    void* dst = out.raw();
    if (p.finalize) {
      if (!scratch) scratch = allocate_scratch(first.nbytes(), w.device, w.stream);
      dst = scratch->data();
    }
    combine_partials(f64, p.kind, comps, slots, acc, in, dst, w.device, w.stream);
    acc = dst;
    if (last) break;
  }
  return Value(std::move(out));
}

// ---- assemble -----------------------------------------------------------------------------------

/** copy_box (src/array/array_ops.cpp) between device blocks, in order on w.stream. */
void copy_box_device(const Block& src, const std::vector<std::int64_t>& src_start, Block& dst,
                     const std::vector<std::int64_t>& dst_start, const std::vector<std::int64_t>& extent,
                     const Where& w) {
  if (src.dtype() != dst.dtype()) throw DTypeError("copy_box: dtype mismatch");
  const std::size_t d = extent.size();
  if (src_start.size() != d || dst_start.size() != d || static_cast<std::size_t>(src.ndim()) != d ||
      static_cast<std::size_t>(dst.ndim()) != d)
    throw ShapeError("assemble: a piece of " + std::to_string(d) + " axes between blocks of shapes " +
                     shape_to_string(src.shape()) + " and " + shape_to_string(dst.shape()));
  for (auto e : extent)
    if (e <= 0) return;
  for (std::size_t a = 0; a < d; ++a)
    if (src_start[a] < 0 || src_start[a] + extent[a] > src.shape()[a] || dst_start[a] < 0 ||
        dst_start[a] + extent[a] > dst.shape()[a])
      throw ShapeError("assemble: a piece's box on axis " + std::to_string(a) + " (source from " +
                       std::to_string(src_start[a]) + ", destination from " + std::to_string(dst_start[a]) +
                       ", extent " + std::to_string(extent[a]) + ") leaves the blocks of shapes " +
                       shape_to_string(src.shape()) + " and " + shape_to_string(dst.shape()));

  // Merge axis a into axis a-1 where the box spans axis a entirely in both blocks: the same
  // bytes then form a box with one axis fewer (and a fully contiguous box becomes one copy).
  std::vector<std::int64_t> ext = extent, ss = src_start, ds = dst_start;
  std::vector<std::int64_t> sshape(src.shape().begin(), src.shape().end());
  std::vector<std::int64_t> dshape(dst.shape().begin(), dst.shape().end());
  for (std::size_t a = d; a-- > 1;) {
    if (ext[a] != sshape[a] || ext[a] != dshape[a]) continue;  // then ss[a] == ds[a] == 0
    ss[a - 1] = ss[a - 1] * sshape[a] + ss[a];
    ds[a - 1] = ds[a - 1] * dshape[a] + ds[a];
    ext[a - 1] *= ext[a];
    sshape[a - 1] *= sshape[a];
    dshape[a - 1] *= dshape[a];
    for (auto* v : {&ext, &ss, &ds, &sshape, &dshape}) v->erase(v->begin() + static_cast<std::ptrdiff_t>(a));
  }

  const std::size_t isz = itemsize(src.dtype());
  const char* sp = static_cast<const char*>(src.raw());
  char* dp = static_cast<char*>(dst.raw());
  const std::size_t n = ext.size();
  if (n == 0) {  // a 0-d block: one element
    check(cudaMemcpyAsync(dp, sp, isz, cudaMemcpyDefault, w.stream), "cudaMemcpyAsync (assemble)", w.device);
    return;
  }
  if (n == 1) {
    check(cudaMemcpyAsync(dp + ds[0] * isz, sp + ss[0] * isz, static_cast<std::size_t>(ext[0]) * isz,
                          cudaMemcpyDefault, w.stream),
          "cudaMemcpyAsync (assemble)", w.device);
    return;
  }
  // Two or more axes: one 2-d copy (the last two axes) per index of the axes before them.
  const auto sst = row_major_strides(sshape), dst_strides = row_major_strides(dshape);
  const std::size_t width = static_cast<std::size_t>(ext[n - 1]) * isz;
  const std::size_t height = static_cast<std::size_t>(ext[n - 2]);
  const std::size_t spitch = static_cast<std::size_t>(sst[n - 2]) * isz;
  const std::size_t dpitch = static_cast<std::size_t>(dst_strides[n - 2]) * isz;
  // cudaMemcpy2D's pitches are capped (cudaDevAttrMaxPitch, 2^31-1 on current GPUs): copy
  // row by row beyond that.
  const bool rows = spitch > static_cast<std::size_t>(INT_MAX) || dpitch > static_cast<std::size_t>(INT_MAX);
  std::vector<std::int64_t> c(n - 2, 0);
  while (true) {
    std::int64_t so = 0, dof = 0;
    for (std::size_t a = 0; a < n; ++a) {
      const std::int64_t x = a + 2 < n ? c[a] : 0;
      so += (ss[a] + x) * sst[a];
      dof += (ds[a] + x) * dst_strides[a];
    }
    if (!rows) {
      check(cudaMemcpy2DAsync(dp + dof * isz, dpitch, sp + so * isz, spitch, width, height, cudaMemcpyDefault,
                              w.stream),
            "cudaMemcpy2DAsync (assemble)", w.device);
    } else {
      for (std::size_t r = 0; r < height; ++r)
        check(cudaMemcpyAsync(dp + dof * isz + r * dpitch, sp + so * isz + r * spitch, width, cudaMemcpyDefault,
                              w.stream),
              "cudaMemcpyAsync (assemble)", w.device);
    }
    std::size_t a = n - 2;
    for (; a-- > 0;) {
      if (++c[a] < ext[a]) break;
      c[a] = 0;
    }
    if (a == static_cast<std::size_t>(-1)) break;
  }
}

Value assemble_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  if (args.empty()) throw Error("assemble: missing parameters");
  const auto p = from_value<detail::AssembleParams>(args[0]);
  Block out = tessera::device_block(p.dtype, p.shape, w.device, as_view(w.stream));
  for (const auto& piece : p.pieces) {
    const std::size_t i = static_cast<std::size_t>(piece.arg) + 1;
    if (piece.arg < 0 || i >= args.size()) throw Error("assemble: piece reads a missing argument");
    copy_box_device(device_block(args, i, "assemble", w.device), piece.src_start, out, piece.dst_start, piece.extent,
                    w);
  }
  return Value(std::move(out));
}

// ---- matmul -------------------------------------------------------------------------------------

void cublas_check(cublasStatus_t status, const char* call, int device) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_device_error(call, device, cublasGetStatusString(status));
}

/** This thread's cuBLAS handle for `device` (created on first use, kept until exit). */
cublasHandle_t cublas_handle(int device) {
  thread_local cublasHandle_t handles[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) throw DeviceError("matmul (device): no device " + std::to_string(device));
  if (handles[device]) return handles[device];
  int current = -1;
  check(cudaGetDevice(&current), "cudaGetDevice", device);
  if (current != device) check(cudaSetDevice(device), "cudaSetDevice", device);  // a handle binds the current device
  cublasHandle_t h = nullptr;
  cublas_check(cublasCreate(&h), "cublasCreate", device);
  handles[device] = h;
  return h;
}

int gemm_extent(std::int64_t v) {
  if (v > INT_MAX) throw ShapeError("matmul (device): extent " + std::to_string(v) + " is too large for cuBLAS");
  return static_cast<int>(std::max<std::int64_t>(v, 1));
}

/** c += a * b (row-major) on the device, for one pair of chunks. */
void gemm_accumulate(const Block& a, const Block& b, Block& c, const Where& w) {
  const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  if (m == 0 || n == 0 || k == 0) return;  // adds nothing (c is zeroed)
  const DType t = c.dtype();
  if (t == DType::Bool) return;  // as the host: bool products are not computed (c stays zero)
  if (t != DType::Int32 && t != DType::Int64 && t != DType::Float32 && t != DType::Float64 && !is_complex(t))
    throw DTypeError("matmul (device): " + std::string(dtype_name(t)) + " has no device kernel; compute it on the host");
  if (t == DType::Int32 || t == DType::Int64) {
    matmul_accumulate_int(t, m, n, k, a.raw(), b.raw(), c.raw(), w.device, w.stream);
    return;
  }
  // Row-major C (m x n) = A (m x k) B (k x n) is column-major C^T (n x m) = B^T (n x k) A^T (k x m),
  // and the row-major buffers of B and A are B^T and A^T in column-major order: no copies.
  cublasHandle_t h = cublas_handle(w.device);
  cublas_check(cublasSetStream(h, w.stream), "cublasSetStream", w.device);
  const int M = gemm_extent(n), N = gemm_extent(m), K = gemm_extent(k);
  if (t == DType::Complex128) {
    const cuDoubleComplex one{1.0, 0.0};
    cublas_check(cublasZgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, static_cast<const cuDoubleComplex*>(b.raw()), M,
                             static_cast<const cuDoubleComplex*>(a.raw()), K, &one, static_cast<cuDoubleComplex*>(c.raw()), M),
                 "cublasZgemm", w.device);
  } else if (t == DType::Complex64) {
    const cuComplex one{1.0f, 0.0f};
    cublas_check(cublasCgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, static_cast<const cuComplex*>(b.raw()), M,
                             static_cast<const cuComplex*>(a.raw()), K, &one, static_cast<cuComplex*>(c.raw()), M),
                 "cublasCgemm", w.device);
  } else if (t == DType::Float64) {
    const double one = 1.0;
    cublas_check(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, static_cast<const double*>(b.raw()), M,
                             static_cast<const double*>(a.raw()), K, &one, static_cast<double*>(c.raw()), M),
                 "cublasDgemm", w.device);
  } else {
    const float one = 1.0f;
    cublas_check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, static_cast<const float*>(b.raw()), M,
                             static_cast<const float*>(a.raw()), K, &one, static_cast<float*>(c.raw()), M),
                 "cublasSgemm", w.device);
  }
}

Value matmul_device(const OpContext& ctx, std::span<const Value> args) {
  const Where w = where(ctx);
  if (args.empty()) throw Error("matmul: missing parameters");
  const auto nk = from_value<std::int64_t>(args[0]);
  if (nk < 1 || static_cast<std::int64_t>(args.size()) != 1 + 2 * nk) throw Error("matmul: wrong number of blocks");
  const Block& a0 = device_block(args, 1, "matmul", w.device);
  const Block& b0 = device_block(args, static_cast<std::size_t>(1 + nk), "matmul", w.device);
  if (a0.ndim() != 2 || b0.ndim() != 2)
    throw ShapeError("matmul: chunks must be 2-d, got " + shape_to_string(a0.shape()) + " and " +
                     shape_to_string(b0.shape()));
  const std::int64_t m = a0.shape()[0], n = b0.shape()[1];
  Block c = tessera::device_block(a0.dtype(), {m, n}, w.device, as_view(w.stream));
  if (c.nbytes()) check(cudaMemsetAsync(c.raw(), 0, c.nbytes(), w.stream), "cudaMemsetAsync (matmul)", w.device);
  for (std::int64_t k = 0; k < nk; ++k) {
    const Block& a = device_block(args, static_cast<std::size_t>(1 + k), "matmul", w.device);
    const Block& b = device_block(args, static_cast<std::size_t>(1 + nk + k), "matmul", w.device);
    if (a.dtype() != c.dtype() || b.dtype() != c.dtype())
      throw DTypeError("matmul: chunks of different dtypes (" + std::string(dtype_name(a.dtype())) + " and " +
                       std::string(dtype_name(b.dtype())) + ", expected " + std::string(dtype_name(c.dtype())) + ")");
    if (a.ndim() != 2 || b.ndim() != 2 || a.shape()[0] != m || b.shape()[1] != n || a.shape()[1] != b.shape()[0])
      throw ShapeError("matmul: misaligned chunks " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) +
                       " for an output chunk of shape " + shape_to_string(c.shape()));
    gemm_accumulate(a, b, c, w);
  }
  return Value(std::move(c));
}

const bool registered = [] {
  register_device_op(detail::kCombineOp, reduce_combine_device);
  register_device_op(detail::kAssembleOp, assemble_device);
  register_device_op(detail::kMatmulOp, matmul_device);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
