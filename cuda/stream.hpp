#pragma once
// Internal to the CUDA back end: a tessera::StreamView (tessera/core/stream.hpp) as the
// cudaStream_t it holds, and back. Plain C++17, so that .cu files (nvcc, C++17) can use it.
#include <cuda_runtime.h>

#include "tessera/core/stream.hpp"

namespace tessera::cuda {

/** @brief The cudaStream_t a view holds (nullptr, CUDA's default stream, for the default view). */
inline cudaStream_t as_cuda(StreamView stream) noexcept { return static_cast<cudaStream_t>(stream.native()); }

/** @brief A view of a CUDA stream (the default view for nullptr). */
inline StreamView as_view(cudaStream_t stream) noexcept { return StreamView(static_cast<void*>(stream)); }

}  // namespace tessera::cuda
