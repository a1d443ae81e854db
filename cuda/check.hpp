#pragma once
// Internal to the CUDA back end: the one error helper. Every failing CUDA call becomes a
// tessera::DeviceError (DeviceMemoryError for cudaErrorMemoryAllocation) whose text reads
//   "<call> failed on device N (<name>): <cudaGetErrorString>".
// This header is plain C++17 so that .cu files (compiled by nvcc as C++17) can use it; the
// throwing function is defined in runtime.cpp.
#include <cuda_runtime.h>

namespace tessera::cuda {

/**
 * @brief Throws DeviceError (or DeviceMemoryError) for `error`, naming `call` and `device`
 * (device < 0: the calling thread's current device). Clears CUDA's last-error slot first so a
 * later cudaGetLastError() does not report this failure again.
 */
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, int device);

/** @brief Throws through throw_cuda_error when `error` is not cudaSuccess. */
inline void check(cudaError_t error, const char* call, int device) {
  if (error != cudaSuccess) throw_cuda_error(error, call, device);
}

/** @brief After a kernel launch: throws when the launch failed (bad configuration, no device). */
inline void check_launch(const char* kernel, int device) { check(cudaGetLastError(), kernel, device); }

}  // namespace tessera::cuda
