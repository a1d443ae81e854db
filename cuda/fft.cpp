// The device variant of "tessera.array.fft" (src/array/fft.cpp): cuFFT, one batched plan per
// 1-d step (the batch walks the axes after the transformed one; the axes before it are a loop
// of plan executions). Padding and truncation along an axis are one strided copy
// (cudaMemcpy2DAsync), the norm's scaling one cuBLAS scal, so no kernel of our own is needed.
// The lazy layer hands this op complex input, or real input of the result's precision.
// cuFFT's complex-to-real transform (irfft) may use the imaginary parts of the zero and
// Nyquist terms that pocketfft (NumPy) ignores: spectra of real signals have none.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "array/fft_params.hpp"
#include "check.hpp"
#include "runtime.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda {
namespace {

using detail::FftParams;
using detail::FftStep;

void cufft_check(cufftResult r, const char* call, int device) {
  if (r != CUFFT_SUCCESS)
    throw DeviceError(std::string(call) + " failed on device " + std::to_string(device) + " (cufftResult " +
                      std::to_string(static_cast<int>(r)) + ")");
}

void scal_check(cublasStatus_t s, const char* call, int device) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(call) + " failed on device " + std::to_string(device) + " (cublasStatus " +
                      std::to_string(static_cast<int>(s)) + ")");
}

/** This thread's cuBLAS handle for the norm's scaling (created on first use, kept until exit). */
cublasHandle_t scal_handle(int device) {
  thread_local cublasHandle_t handles[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) throw DeviceError("fft (device): no device " + std::to_string(device));
  if (handles[device]) return handles[device];
  int current = -1;
  check(cudaGetDevice(&current), "cudaGetDevice", device);
  if (current != device) check(cudaSetDevice(device), "cudaSetDevice", device);  // a handle binds the current device
  scal_check(cublasCreate(&handles[device]), "cublasCreate", device);
  return handles[device];
}

/** A cuFFT plan destroyed with its scope. */
struct Plan {
  cufftHandle h = 0;
  bool made = false;
  ~Plan() {
    if (made) cufftDestroy(h);
  }
};

int as_int(std::int64_t v, const char* what) {
  if (v > 0x7fffffff) throw ShapeError(std::string("fft (device): ") + what + " of " + std::to_string(v) + " is too large for cuFFT");
  return static_cast<int>(v);
}

/**
 * Copies [outer, len, inner] elements of `size` bytes into a zeroed [outer, n, inner] buffer
 * whose outer slabs start `pitch` elements apart (pitch >= n * inner).
 */
void pad_axis(const void* src, void* dst, std::int64_t outer, std::int64_t len, std::int64_t n, std::int64_t inner,
              std::int64_t pitch, std::size_t size, int device, cudaStream_t stream) {
  const std::size_t row_out = static_cast<std::size_t>(pitch) * size;
  check(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(outer) * row_out, stream), "cudaMemsetAsync (fft)", device);
  const std::int64_t keep = std::min(len, n);
  if (outer == 0 || keep == 0 || inner == 0) return;
  check(cudaMemcpy2DAsync(dst, row_out, src, static_cast<std::size_t>(len * inner) * size,
                          static_cast<std::size_t>(keep * inner) * size, static_cast<std::size_t>(outer),
                          cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpy2DAsync (fft)", device);
}

/**
 * Slab pitch in elements: cuFFT rejects (CUFFT_INVALID_VALUE, seen on an H200 with cuFFT 12.0)
 * real data that does not start on a complex element's alignment, so every outer slab starts
 * on an even element.
 */
std::int64_t slab_pitch(std::int64_t elements) { return (elements + 1) / 2 * 2; }

Value fft_device(const OpContext& ctx, std::span<const Value> args) {
  const int device = ctx.device < 0 ? 0 : ctx.device;
  const cudaStream_t stream = stream_or_default(ctx.stream, device);
  if (args.size() != 2) throw Error("fft: expects parameters and one chunk");
  const auto p = from_value<FftParams>(args[0]);
  const Block& in = args[1].block();
  if (in.size() > 0 && in.memory_kind() != MemoryKind::Device)
    throw DeviceError("fft (device): the chunk is not in device memory (run device ops through run_op)");
  const bool single = p.out == DType::Complex64 || p.out == DType::Float32;
  const DType cplx = single ? DType::Complex64 : DType::Complex128;
  const DType real = single ? DType::Float32 : DType::Float64;
  if (in.dtype() != cplx && in.dtype() != real)
    throw DTypeError("fft (device): a " + std::string(dtype_name(in.dtype())) + " chunk for a " +
                     std::string(dtype_name(p.out)) + " result (the lazy layer casts it first)");
  const std::vector<FftStep> steps = detail::fft_steps(p);
  Shape shape = in.shape();
  Block cur = in;
  // Real input to a complex step: interleave it with zero imaginary parts.
  if (in.dtype() == real && !(steps.size() && steps.front().to_half)) {
    Block c = device_block(cplx, shape, device, as_view(stream));
    if (c.nbytes()) {
      check(cudaMemsetAsync(c.raw(), 0, c.nbytes(), stream), "cudaMemsetAsync (fft)", device);
      const std::size_t es = itemsize(real);
      check(cudaMemcpy2DAsync(c.raw(), 2 * es, in.raw(), es, es, static_cast<std::size_t>(in.size()),
                              cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync (fft)", device);
    }
    cur = c;
  }
  for (const FftStep& s : steps) {
    const auto ax = static_cast<std::size_t>(s.axis);
    if (ax >= shape.size()) throw Error("fft: axis out of range");
    std::int64_t outer = 1, inner = 1;
    for (std::size_t a = 0; a < ax; ++a) outer *= shape[a];
    for (std::size_t a = ax + 1; a < shape.size(); ++a) inner *= shape[a];
    const std::int64_t len = shape[ax], n = s.n, half = n / 2 + 1;
    // The step's input: padded or truncated to n (a half spectrum: to n/2 + 1).
    const std::int64_t in_len = s.from_half ? half : n;
    Shape in_shape = shape, out_shape = shape;
    in_shape[ax] = in_len;
    out_shape[ax] = s.to_half ? half : n;
    const std::int64_t in_row = in_len * inner, out_row = out_shape[ax] * inner;
    const bool in_place = !(s.to_half || s.from_half);
    const std::int64_t in_pitch = slab_pitch(in_row), out_pitch = in_place ? in_pitch : slab_pitch(out_row);
    Block src = device_block(cur.dtype(), {outer * in_pitch}, device, as_view(stream));
    pad_axis(cur.raw(), src.raw(), outer, len, in_len, inner, in_pitch, itemsize(cur.dtype()), device, stream);
    const DType out_t = s.from_half ? real : cplx;
    Block dst = in_place ? src : device_block(out_t, {outer * out_pitch}, device, as_view(stream));
    const std::int64_t count = shape_size(out_shape);
    if (count > 0) {
      int nn = as_int(n, "a transform length");
      int in_embed = as_int(in_len, "a transform length"), out_embed = as_int(out_shape[ax], "a transform length");
      const int stride = as_int(inner, "a stride");
      cufftType type;
      if (s.to_half) type = single ? CUFFT_R2C : CUFFT_D2Z;
      else if (s.from_half) type = single ? CUFFT_C2R : CUFFT_Z2D;
      else type = single ? CUFFT_C2C : CUFFT_Z2Z;
      // Along the last axis (inner 1) one plan executes every outer slab: batches a pitch
      // apart. Otherwise the batch walks the `inner` positions after the axis, interleaved
      // (distance 1, the axis strided by inner), and each outer slab is one execution.
      const bool one_exec = inner == 1;
      const int batch = one_exec ? as_int(outer, "a batch") : stride;
      const int in_dist = one_exec ? as_int(in_pitch, "a slab") : 1, out_dist = one_exec ? as_int(out_pitch, "a slab") : 1;
      const std::int64_t execs = one_exec ? 1 : outer;
      const std::string layout = " (n " + std::to_string(nn) + ", embed " + std::to_string(in_embed) + "/" +
                                 std::to_string(out_embed) + ", stride " + std::to_string(stride) + ", distance " +
                                 std::to_string(in_dist) + "/" + std::to_string(out_dist) + ", batch " +
                                 std::to_string(batch) + ", type " + std::to_string(static_cast<int>(type)) + ")";
      Plan plan;
      cufft_check(cufftPlanMany(&plan.h, 1, &nn, &in_embed, stride, in_dist, &out_embed, stride, out_dist, type, batch),
                  ("cufftPlanMany" + layout).c_str(), device);
      plan.made = true;
      cufft_check(cufftSetStream(plan.h, stream), "cufftSetStream", device);
      const int dir = s.inverse ? CUFFT_INVERSE : CUFFT_FORWARD;
      const std::size_t in_es = itemsize(src.dtype()), out_es = itemsize(dst.dtype());
      for (std::int64_t o = 0; o < execs; ++o) {
        char* ip = static_cast<char*>(src.raw()) + static_cast<std::size_t>(o * in_pitch) * in_es;
        char* op = static_cast<char*>(dst.raw()) + static_cast<std::size_t>(o * out_pitch) * out_es;
        cufftResult r;
        switch (type) {
          case CUFFT_Z2Z: r = cufftExecZ2Z(plan.h, reinterpret_cast<cufftDoubleComplex*>(ip), reinterpret_cast<cufftDoubleComplex*>(op), dir); break;
          case CUFFT_C2C: r = cufftExecC2C(plan.h, reinterpret_cast<cufftComplex*>(ip), reinterpret_cast<cufftComplex*>(op), dir); break;
          case CUFFT_D2Z: r = cufftExecD2Z(plan.h, reinterpret_cast<cufftDoubleReal*>(ip), reinterpret_cast<cufftDoubleComplex*>(op)); break;
          case CUFFT_R2C: r = cufftExecR2C(plan.h, reinterpret_cast<cufftReal*>(ip), reinterpret_cast<cufftComplex*>(op)); break;
          case CUFFT_Z2D: r = cufftExecZ2D(plan.h, reinterpret_cast<cufftDoubleComplex*>(ip), reinterpret_cast<cufftDoubleReal*>(op)); break;
          default: r = cufftExecC2R(plan.h, reinterpret_cast<cufftComplex*>(ip), reinterpret_cast<cufftReal*>(op)); break;
        }
        cufft_check(r, ("cufftExec" + layout).c_str(), device);
      }
      if (s.scale != 1.0) {
        cublasHandle_t h = scal_handle(device);
        scal_check(cublasSetStream(h, stream), "cublasSetStream", device);
        const int m = as_int(outer * out_pitch, "a chunk");  // the pitch's padding is scaled too: unused
        if (dst.dtype() == DType::Complex128) scal_check(cublasZdscal(h, m, &s.scale, static_cast<cuDoubleComplex*>(dst.raw()), 1), "cublasZdscal", device);
        else if (dst.dtype() == DType::Float64) scal_check(cublasDscal(h, m, &s.scale, static_cast<double*>(dst.raw()), 1), "cublasDscal", device);
        else {
          const float f = static_cast<float>(s.scale);
          if (dst.dtype() == DType::Complex64) scal_check(cublasCsscal(h, m, &f, static_cast<cuComplex*>(dst.raw()), 1), "cublasCsscal", device);
          else scal_check(cublasSscal(h, m, &f, static_cast<float*>(dst.raw()), 1), "cublasSscal", device);
        }
      }
    }
    // The result without the pitch's padding.
    if (out_pitch != out_row && count > 0) {
      Block packed = device_block(dst.dtype(), out_shape, device, as_view(stream));
      const std::size_t es = itemsize(dst.dtype());
      check(cudaMemcpy2DAsync(packed.raw(), static_cast<std::size_t>(out_row) * es, dst.raw(),
                              static_cast<std::size_t>(out_pitch) * es, static_cast<std::size_t>(out_row) * es,
                              static_cast<std::size_t>(outer), cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync (fft)", device);
      dst = packed;
    } else {
      dst = dst.reshaped(out_shape);
    }
    cur = dst;
    shape = out_shape;
  }
  if (cur.dtype() != p.out) throw DTypeError("fft (device): result dtype mismatch");
  return Value(cur.reshaped(shape));
}

const bool registered = [] {
  register_device_op(detail::kFftOp, fft_device);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
