#pragma once
// Internal to the CUDA back end: launchers for the kernels behind the device variants of the
// array ops (array_ops.cpp). Plain C++17 (nvcc compiles the .cu side as C++17), so no Block or
// Value here: pointers, sizes and dtypes only. Every launcher queues its work on `stream` and
// throws DeviceError (cuda/check.hpp) when the launch fails.
#include <cuda_runtime.h>

#include <cstdint>

#include "tessera/core/dtype.hpp"

namespace tessera::cuda {

/** The reduction kinds, numbered as tessera::detail::ReduceKind (array_ops.cpp checks it). */
namespace reduce {
enum Kind : std::uint8_t { Sum, Prod, Min, Max, Mean, Var, Std, Any, All, ArgMin, ArgMax };
}

/** Partials combined by one launch; larger combines are split into several launches. */
inline constexpr int kCombineMaxInputs = 32;

/** Device pointers to partial blocks (float64 or int64, `comps` values per slot). */
struct CombineInputs {
  const void* data[kCombineMaxInputs];
  int count;
};

/**
 * @brief acc_out[s] = combine(acc_in[s], inputs[0][s], inputs[1][s], ...) for every slot s, in
 * input order, exactly as the host reduce_combine does. acc_in == nullptr: the first input is
 * the starting accumulator. acc_out may equal acc_in (each thread reads its slot, then writes it).
 */
void combine_partials(bool float64, std::uint8_t kind, int comps, std::int64_t slots, const void* acc_in,
                      const CombineInputs& inputs, void* acc_out, int device, cudaStream_t stream);

/**
 * @brief Like combine_partials, then finalises each slot into out[s] of `out_dtype` (mean,
 * var/std with `ddof`, arg index, or the value itself), exactly as the host does.
 */
void combine_finalize(bool float64, std::uint8_t kind, int comps, std::int64_t slots, const void* acc_in,
                      const CombineInputs& inputs, int ddof, DType out_dtype, void* out, int device,
                      cudaStream_t stream);

/**
 * @brief C (m x n) += A (m x k) * B (k x n), all row-major, for Int32 / Int64 (integer
 * arithmetic wraps modulo 2^bits). Float dtypes go through cuBLAS instead; Bool is not accepted.
 */
void matmul_accumulate_int(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                           const void* b, void* c, int device, cudaStream_t stream);

}  // namespace tessera::cuda
