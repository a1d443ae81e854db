// Device twins of the host random generators (src/array/kernels/random.cpp): the same Philox
// counters and the same transforms, so element i of a random array is the same on host and GPU
// (equal for integers, to about 1e-15 relative for normals: CUDA's log and cos are within an
// ulp or two of glibc's).
#include <cuda_runtime.h>

#include <cstdint>

#include "check.hpp"
#include "stream.hpp"
#include "tessera/cuda/random.hpp"

namespace tessera::cuda {
namespace {

// The per-element definitions live in tessera/cuda/random.hpp (tessera::cuda::device), shared
// with the fused program kernel (program.cu).

__global__ void normal_kernel(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta,
                              std::int64_t n, double* out) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  out[j] = device::normal_at(key, mean, stddev, static_cast<std::uint64_t>(start + delta * j));
}

__global__ void uniform_kernel(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta,
                               std::int64_t n, double* out) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  out[j] = device::uniform_at(key, low, high, static_cast<std::uint64_t>(start + delta * j));
}

__global__ void integers_kernel(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start,
                                std::int64_t delta, std::int64_t n, std::int64_t* out) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  out[j] = device::integers_at(key, low, high, static_cast<std::uint64_t>(start + delta * j));
}

constexpr int kThreads = 256;
unsigned grid(std::int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void normal_device(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta,
                   std::int64_t n, double* out, StreamView stream) {
  if (n <= 0) return;
  normal_kernel<<<grid(n), kThreads, 0, as_cuda(stream)>>>(key, mean, stddev, start, delta, n, out);
  check_launch("normal_kernel launch", -1);
}

void uniform_device(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta,
                    std::int64_t n, double* out, StreamView stream) {
  if (n <= 0) return;
  uniform_kernel<<<grid(n), kThreads, 0, as_cuda(stream)>>>(key, low, high, start, delta, n, out);
  check_launch("uniform_kernel launch", -1);
}

void integers_device(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start, std::int64_t delta,
                     std::int64_t n, std::int64_t* out, StreamView stream) {
  if (n <= 0) return;
  integers_kernel<<<grid(n), kThreads, 0, as_cuda(stream)>>>(key, low, high, start, delta, n, out);
  check_launch("integers_kernel launch", -1);
}

}  // namespace tessera::cuda
