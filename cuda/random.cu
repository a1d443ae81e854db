// Device twins of the host random generators (src/array/kernels/random.cpp): the same Philox
// counters and the same transforms, so element i of a random array is the same on host and GPU
// (equal for integers, to about 1e-15 relative for normals: CUDA's log and cos are within an
// ulp or two of glibc's).
#include <Random123/philox.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tessera/cuda/random.hpp"

namespace tessera::cuda {
namespace {

__device__ __forceinline__ double one_to_two(std::uint64_t x) {
  return __longlong_as_double(static_cast<long long>(0x3ff0000000000000ULL | (x >> 12)));
}

__device__ __forceinline__ void philox_bits(std::uint64_t key, std::uint32_t stream, std::uint64_t counter,
                                            std::uint64_t& lo, std::uint64_t& hi) {
  const philox4x32_key_t k = {{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)}};
  const philox4x32_ctr_t c = {{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), stream, 0u}};
  const philox4x32_ctr_t x = philox4x32_R(10, c, k);
  lo = (static_cast<std::uint64_t>(x.v[1]) << 32) | x.v[0];
  hi = (static_cast<std::uint64_t>(x.v[3]) << 32) | x.v[2];
}

__global__ void normal_kernel(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta,
                              std::int64_t n, double* out) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const std::uint64_t i = static_cast<std::uint64_t>(start + delta * j);
  std::uint64_t lo, hi;
  philox_bits(key, 1u, i >> 1, lo, hi);
  const double u1 = 2.0 - one_to_two(lo);
  const double u2 = one_to_two(hi) - 1.0;
  const double r = sqrt(-2.0 * log(u1));
  const double shift = (i & 1u) ? 1.5707963267948966192313216916398 : 0.0;
  out[j] = mean + stddev * (r * cos(6.283185307179586476925286766559 * u2 - shift));
}

__global__ void uniform_kernel(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta,
                               std::int64_t n, double* out) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  std::uint64_t lo, hi;
  philox_bits(key, 2u, static_cast<std::uint64_t>(start + delta * j), lo, hi);
  out[j] = low + (high - low) * (one_to_two(lo) - 1.0);
}

__global__ void integers_kernel(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start,
                                std::int64_t delta, std::int64_t n, std::int64_t* out) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  std::uint64_t lo, hi;
  philox_bits(key, 3u, static_cast<std::uint64_t>(start + delta * j), lo, hi);
  const auto range = static_cast<std::uint64_t>(high - low);
  out[j] = low + static_cast<std::int64_t>(__umul64hi(lo, range));
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    int dev = -1;
    cudaGetDevice(&dev);
    throw std::runtime_error(std::string(what) + " failed on device " + std::to_string(dev) + ": " +
                             cudaGetErrorString(e));
  }
}

constexpr int kThreads = 256;
unsigned grid(std::int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void normal_device(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta,
                   std::int64_t n, double* out, void* stream) {
  if (n <= 0) return;
  normal_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(key, mean, stddev, start, delta, n, out);
  check(cudaGetLastError(), "normal_kernel launch");
}

void uniform_device(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta,
                    std::int64_t n, double* out, void* stream) {
  if (n <= 0) return;
  uniform_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(key, low, high, start, delta, n, out);
  check(cudaGetLastError(), "uniform_kernel launch");
}

void integers_device(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start, std::int64_t delta,
                     std::int64_t n, std::int64_t* out, void* stream) {
  if (n <= 0) return;
  integers_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(key, low, high, start, delta, n, out);
  check(cudaGetLastError(), "integers_kernel launch");
}

}  // namespace tessera::cuda
