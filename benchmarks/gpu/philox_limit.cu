// benchmarks/philox_limit: what one GPU can do at best for the seed workload, measured by bare
// kernels that write nothing but their sums (the "limit" beside seed_array --device gpu).
//
//   philox_limit [--calls 2^33] [--n 100000] [--repeat 3]
//
// Two JSON lines:
//   kernel "philox_bits": Philox4x32-10 calls per second (each call is four 32-bit draws),
//     xor-folded so that the compiler keeps every call;
//   kernel "seed_kept": the seed's own per-element work, (normal_at(i) + 1) summed over the kept
//     elements of (x + 1)[::2, ::2] for an n x n array, with the same device function the
//     program kernel calls (include/tessera/cuda/random.hpp), and the time that rate gives for
//     the seed headline's 500,000 x 500,000.
// Times are the median of --repeat runs after one warm-up, by CUDA events.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/cuda/random.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "philox_limit: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__global__ void philox_bits_kernel(std::uint64_t key, std::uint64_t calls, unsigned long long* out) {
  std::uint64_t acc = 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t c = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; c < calls; c += stride) {
    std::uint64_t lo, hi;
    tessera::cuda::device::philox_bits(key, 1u, c, lo, hi);
    acc ^= lo ^ (hi << 1);
  }
  // One word per block: the xor of its threads' words (the value only keeps the work alive).
  __shared__ unsigned long long part[32];
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long x = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) x ^= part[w];
    out[blockIdx.x] = x;
  }
}

// Sum of normal(10, 1)[r, c] + 1 over even r and even c of an n x n array (row-major element
// index r * n + c), as the seed computes it.
__global__ void seed_kept_kernel(std::uint64_t key, std::int64_t n, double* out) {
  const std::int64_t half = (n + 1) / 2;
  const std::int64_t kept = half * half;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  double acc = 0;
  for (std::int64_t k = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; k < kept; k += stride) {
    const std::int64_t r = 2 * (k / half), c = 2 * (k % half);
    acc += tessera::cuda::device::normal_at(key, 10.0, 1.0, static_cast<std::uint64_t>(r * n + c)) + 1.0;
  }
  __shared__ double part[32];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double x = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) x += part[w];
    out[blockIdx.x] = x;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class Launch>
double time_ms(int repeat, Launch launch) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  launch();  // warm-up: module load
  check(cudaGetLastError(), "warm-up launch");
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    check(cudaEventRecord(a), "cudaEventRecord");
    launch();
    check(cudaGetLastError(), "launch");
    check(cudaEventRecord(b), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, a, b), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t calls = 1ULL << 33;
  std::int64_t n = 100000;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--calls") calls = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--n") n = std::strtoll(argv[i + 1], nullptr, 10);
    else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: philox_limit [--calls N] [--n N] [--repeat R]\n");
      return 2;
    }
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int threads = 256;
  const int blocks = prop.multiProcessorCount * 8;
  unsigned long long* bits = nullptr;
  double* sums = nullptr;
  check(cudaMalloc(&bits, blocks * sizeof *bits), "cudaMalloc");
  check(cudaMalloc(&sums, blocks * sizeof *sums), "cudaMalloc");
  const std::uint64_t key = 0x5eed5eed12345678ULL;

  const double bits_ms = time_ms(repeat, [&] { philox_bits_kernel<<<blocks, threads>>>(key, calls, bits); });
  std::printf(
      "{\"benchmark\": \"philox_limit\", \"kernel\": \"philox_bits\", \"device\": \"%s\", \"calls\": %llu, "
      "\"seconds\": %.6f, \"calls_per_s\": %.4e, \"words32_per_s\": %.4e}\n",
      prop.name, static_cast<unsigned long long>(calls), bits_ms / 1e3, calls / (bits_ms / 1e3),
      4.0 * calls / (bits_ms / 1e3));

  const double seed_ms = time_ms(repeat, [&] { seed_kept_kernel<<<blocks, threads>>>(key, n, sums); });
  std::vector<double> host(blocks);
  check(cudaMemcpy(host.data(), sums, blocks * sizeof *sums, cudaMemcpyDeviceToHost), "cudaMemcpy");
  double total = 0;
  for (double v : host) total += v;
  const double half = static_cast<double>((n + 1) / 2), kept = half * half;
  const double rate = kept / (seed_ms / 1e3);
  const double headline_kept = 250000.0 * 250000.0;
  std::printf(
      "{\"benchmark\": \"philox_limit\", \"kernel\": \"seed_kept\", \"device\": \"%s\", \"n\": %lld, "
      "\"seconds\": %.6f, \"elements_per_s\": %.4e, \"mean\": %.6f, \"projected_seconds_n500000\": %.3f}\n",
      prop.name, static_cast<long long>(n), seed_ms / 1e3, rate, total / kept, headline_kept / rate);
  cudaFree(bits);
  cudaFree(sums);
  return 0;
}
