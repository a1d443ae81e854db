#pragma once
/**
 * @file Device random generators (tessera::cuda, built when CUDA is found).
 *
 * Each fills out[j], j < n, in device memory with the value of element start + j * delta of the
 * random array, exactly as the host kernels define it (src/array/kernels/random.cpp), on the
 * given cudaStream_t (nullptr: the default stream). Launch errors throw std::runtime_error
 * naming the kernel and device.
 */
#include <cstdint>

namespace tessera::cuda {

/** @brief Number of CUDA devices this process can see (0 without a driver or GPU). */
int visible_device_count() noexcept;

void normal_device(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta,
                   std::int64_t n, double* out, void* stream = nullptr);
void uniform_device(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta,
                    std::int64_t n, double* out, void* stream = nullptr);
void integers_device(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start,
                     std::int64_t delta, std::int64_t n, std::int64_t* out, void* stream = nullptr);

}  // namespace tessera::cuda
