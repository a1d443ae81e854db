#pragma once
// Internal to the CUDA back end (C++20, host code only): what the device op variants need from
// the runtime besides the public DeviceRuntime interface.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "stream.hpp"
#include "tessera/core/device.hpp"

namespace tessera::cuda {

/** @brief Device ordinals the back end handles per process (per-thread tables are this long). */
inline constexpr int kMaxDevices = 64;

/** @brief The process's CUDA runtime (the one installed with set_device_runtime at load). */
DeviceRuntime& runtime();

/**
 * @brief Device memory from the pool of `device` for use inside one op, in order on `stream`.
 *
 * Unlike DeviceRuntime::allocate, the buffer is freed on `stream` itself (not on the freeing
 * thread's stream), so an op may drop it as soon as its last kernel is queued on `stream`, even
 * when `stream` is not the thread's stream. The buffer must not outlive `stream`.
 */
std::shared_ptr<Buffer> allocate_scratch(std::size_t bytes, int device, cudaStream_t stream);

/** @brief The device's name for messages ("NVIDIA H100 80GB HBM3"), cached; never throws. */
std::string device_name(int device) noexcept;

/**
 * @brief Throws DeviceError "<call> failed on device N (<name>): <reason>" (device < 0: the
 * current device). throw_cuda_error (check.hpp) and the cuBLAS checks use it.
 */
[[noreturn]] void throw_device_error(const std::string& call, int device, const std::string& reason);

/** @brief `stream` when set, else this thread's stream on `device`. */
cudaStream_t stream_or_default(StreamView stream, int device);

}  // namespace tessera::cuda
