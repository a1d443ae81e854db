#pragma once
/**
 * @file
 * Device random generators (tessera::cuda, built when CUDA is found).
 *
 * Each fills out[j], j < n, in device memory with the value of element start + j * delta of the
 * random array, exactly as the host kernels define it (src/array/kernels/random.cpp), on the
 * given stream (the default StreamView: CUDA's default stream). Launch errors throw tessera::DeviceError
 * (a std::runtime_error) naming the kernel and the current device.
 *
 * Compiled by nvcc, this header also gives the per-element device functions behind them
 * (tessera::cuda::device::normal_at, ...), which the fused program kernel (cuda/program.cu)
 * calls too, so there is one device definition of each generator. That part needs Random123.
 * A host translation unit that defines TESSERA_CUDA_HOST_EMULATION gets the same functions as
 * host code (tests run the program kernel's body on the CPU with them).
 */
#include <cstdint>

#include "tessera/core/stream.hpp"

namespace tessera::cuda {

/** @brief Number of CUDA devices this process can see (0 without a driver or GPU). */
int visible_device_count() noexcept;

void normal_device(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta,
                   std::int64_t n, double* out, StreamView stream = {});
void uniform_device(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta,
                    std::int64_t n, double* out, StreamView stream = {});
void integers_device(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start,
                     std::int64_t delta, std::int64_t n, std::int64_t* out, StreamView stream = {});

}  // namespace tessera::cuda

// The per-element generators: device functions under nvcc; plain host functions when a host
// translation unit defines TESSERA_CUDA_HOST_EMULATION (tests emulating the device kernels).
#if defined(__CUDACC__) || defined(TESSERA_CUDA_HOST_EMULATION)
#include <Random123/philox.h>

#include <cstring>

#if defined(__CUDACC__)
#define TESSERA_CUDA_RANDOM_FN __device__ __forceinline__
#else
#include <math.h>
#define TESSERA_CUDA_RANDOM_FN inline
#endif

namespace tessera::cuda::device {

/** A double in [1, 2) whose 52 mantissa bits are the top bits of x. */
TESSERA_CUDA_RANDOM_FN double one_to_two(std::uint64_t x) {
  const std::uint64_t bits = 0x3ff0000000000000ULL | (x >> 12);
#if defined(__CUDACC__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
#endif
}

/** High 64 bits of the 128-bit product a * b. */
TESSERA_CUDA_RANDOM_FN std::uint64_t mul_hi(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDACC__)
  return __umul64hi(a, b);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

/** Philox4x32-10 of counter {counter.lo, counter.hi, stream, 0} under key, as two 64-bit words. */
TESSERA_CUDA_RANDOM_FN void philox_bits(std::uint64_t key, std::uint32_t stream, std::uint64_t counter,
                                        std::uint64_t& lo, std::uint64_t& hi) {
  const philox4x32_key_t k = {{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)}};
  const philox4x32_ctr_t c = {{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), stream, 0u}};
  const philox4x32_ctr_t x = philox4x32_R(10, c, k);
  lo = (static_cast<std::uint64_t>(x.v[1]) << 32) | x.v[0];
  hi = (static_cast<std::uint64_t>(x.v[3]) << 32) | x.v[2];
}

/** Element i of normal(mean, stddev): the cosine (even i) or sine (odd i) of Box-Muller pair i >> 1. */
TESSERA_CUDA_RANDOM_FN double normal_at(std::uint64_t key, double mean, double stddev, std::uint64_t i) {
  std::uint64_t lo, hi;
  philox_bits(key, 1u, i >> 1, lo, hi);
  const double u1 = 2.0 - one_to_two(lo);  // (0, 1]
  const double u2 = one_to_two(hi) - 1.0;  // [0, 1)
  const double r = sqrt(-2.0 * log(u1));
  const double shift = (i & 1u) ? 1.5707963267948966192313216916398 : 0.0;
  return mean + stddev * (r * cos(6.283185307179586476925286766559 * u2 - shift));
}

/** Element i of uniform(low, high): the low (even i) or high (odd i) word of Philox call i >> 1. */
TESSERA_CUDA_RANDOM_FN double uniform_at(std::uint64_t key, double low, double high, std::uint64_t i) {
  std::uint64_t lo, hi;
  philox_bits(key, 2u, i >> 1, lo, hi);
  return low + (high - low) * (one_to_two((i & 1u) ? hi : lo) - 1.0);
}

/** Element i of integers(low, high): low + (w * (high - low)) >> 64, w the low (even i) or high
 *  (odd i) word of Philox call i >> 1 (as uniforms: one call per pair of elements). */
TESSERA_CUDA_RANDOM_FN std::int64_t integers_at(std::uint64_t key, std::int64_t low, std::int64_t high,
                                                std::uint64_t i) {
  std::uint64_t lo, hi;
  philox_bits(key, 3u, i >> 1, lo, hi);
  const auto range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + mul_hi((i & 1u) ? hi : lo, range));
}

}  // namespace tessera::cuda::device

#undef TESSERA_CUDA_RANDOM_FN
#endif
