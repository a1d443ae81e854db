// Small kernels of the linear algebra's device block ops (cuda/linalg_kernels.hpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "check.hpp"
#include "linalg_kernels.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

template <typename T, typename U>
__global__ void add_into_kernel(std::int64_t n, const T* x, T* y) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Integers add as unsigned: wrapping, as the host does, without signed overflow.
  if (i < n) y[i] = static_cast<T>(static_cast<U>(y[i]) + static_cast<U>(x[i]));
}

template <typename T>
__global__ void zero_triangle_kernel(std::int64_t rows, std::int64_t cols, T* p, bool upper, bool unit) {
  const std::int64_t f = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= rows * cols) return;
  const std::int64_t i = f / cols, j = f % cols;
  if (upper ? j > i : j < i) p[f] = T(0);
  else if (unit && i == j) p[f] = T(1);
}

template <typename T>
__global__ void gather_rows_kernel(std::int64_t rows, std::int64_t cols, const T* src, const T* perm, T* dst) {
  const std::int64_t f = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= rows * cols) return;
  const std::int64_t i = f / cols, j = f % cols;
  dst[f] = src[static_cast<std::int64_t>(perm[i]) * cols + j];
}

[[noreturn]] void unsupported(const char* what, DType dtype) {
  throw DTypeError(std::string(what) + " (device): unsupported dtype " + std::string(dtype_name(dtype)));
}

}  // namespace

void linalg_add_into(DType dtype, std::int64_t n, const void* x, void* y, int device, cudaStream_t stream) {
  if (n <= 0) return;
  switch (dtype) {
    case DType::Float64:
      add_into_kernel<double, double><<<blocks_for(n), kThreads, 0, stream>>>(n, static_cast<const double*>(x), static_cast<double*>(y));
      break;
    case DType::Float32:
      add_into_kernel<float, float><<<blocks_for(n), kThreads, 0, stream>>>(n, static_cast<const float*>(x), static_cast<float*>(y));
      break;
    case DType::Int64:
      add_into_kernel<std::int64_t, std::uint64_t><<<blocks_for(n), kThreads, 0, stream>>>(
          n, static_cast<const std::int64_t*>(x), static_cast<std::int64_t*>(y));
      break;
    case DType::Int32:
      add_into_kernel<std::int32_t, std::uint32_t><<<blocks_for(n), kThreads, 0, stream>>>(
          n, static_cast<const std::int32_t*>(x), static_cast<std::int32_t*>(y));
      break;
    default: unsupported("linalg add", dtype);
  }
  check_launch("linalg add kernel launch", device);
}

void linalg_zero_triangle(DType dtype, std::int64_t rows, std::int64_t cols, void* p, bool upper, bool unit_diagonal,
                          int device, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  switch (dtype) {
    case DType::Float64:
      zero_triangle_kernel<double><<<blocks_for(rows * cols), kThreads, 0, stream>>>(rows, cols, static_cast<double*>(p), upper, unit_diagonal);
      break;
    case DType::Float32:
      zero_triangle_kernel<float><<<blocks_for(rows * cols), kThreads, 0, stream>>>(rows, cols, static_cast<float*>(p), upper, unit_diagonal);
      break;
    default: unsupported("linalg triangle", dtype);
  }
  check_launch("linalg triangle kernel launch", device);
}

void linalg_gather_rows(DType dtype, std::int64_t rows, std::int64_t cols, const void* src, const void* perm, void* dst,
                        int device, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  switch (dtype) {
    case DType::Float64:
      gather_rows_kernel<double><<<blocks_for(rows * cols), kThreads, 0, stream>>>(
          rows, cols, static_cast<const double*>(src), static_cast<const double*>(perm), static_cast<double*>(dst));
      break;
    case DType::Float32:
      gather_rows_kernel<float><<<blocks_for(rows * cols), kThreads, 0, stream>>>(
          rows, cols, static_cast<const float*>(src), static_cast<const float*>(perm), static_cast<float*>(dst));
      break;
    default: unsupported("linalg gather rows", dtype);
  }
  check_launch("linalg gather rows kernel launch", device);
}

}  // namespace tessera::cuda
