#pragma once
// Internal to the CUDA back end: launchers for the small kernels the device variants of the
// linear algebra block ops need besides cuBLAS and cuSOLVER (cuda/linalg_ops.cpp). Plain C++17
// (nvcc compiles the .cu side as C++17): row-major blocks as pointers, sizes and dtypes. Each
// launcher queues its work on `stream` and throws DeviceError when the launch fails.
#include <cuda_runtime.h>

#include <cstdint>

#include "tessera/core/dtype.hpp"

namespace tessera::cuda {

/** @brief y[i] += x[i] for i < n (Int32, Int64, Float32, Float64; integers wrap). */
void linalg_add_into(DType dtype, std::int64_t n, const void* x, void* y, int device, cudaStream_t stream);

/**
 * @brief In a row-major rows x cols block: zeros the entries above the diagonal (j > i) when
 * `upper`, else below it (j < i); `unit_diagonal` also sets the diagonal to 1 (float dtypes).
 */
void linalg_zero_triangle(DType dtype, std::int64_t rows, std::int64_t cols, void* p, bool upper, bool unit_diagonal,
                          int device, cudaStream_t stream);

/**
 * @brief dst row i = src row perm[i] (row-major rows x cols, float dtypes), where perm holds the
 * row numbers as values of the same dtype (the pivot row of a getrf block).
 */
void linalg_gather_rows(DType dtype, std::int64_t rows, std::int64_t cols, const void* src, const void* perm, void* dst,
                        int device, cudaStream_t stream);

}  // namespace tessera::cuda
