#pragma once
// Internal to the CUDA back end: the element gather behind the array layer's gathers (fancy
// indexing, masks, halos; src/array/gather.hpp) when their copy plans have many short runs.
// Plain C++17 for nvcc: pointers and sizes only.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tessera::cuda {

/**
 * @brief out[i] = blocks[block_of[i]][offset[i]] for i < n, or the `itemsize` bytes at `fill`
 * (host memory) where block_of[i] < 0. blocks, block_of and offset are device arrays; elements
 * are `itemsize` bytes (1, 2, 4, 8 or 16). Queued on `stream`.
 */
void gather_elements(std::size_t itemsize, const void* const* blocks, const std::int32_t* block_of,
                     const std::int64_t* offset, void* out, std::int64_t n, const void* fill, int device,
                     cudaStream_t stream);

}  // namespace tessera::cuda
