#pragma once
// Internal to the CUDA back end: the array chunk ops' device algorithms
// (src/array/device_algorithms.cuh) on the CUDA system (array_algorithms.cu), for the device op
// variants (array_algorithm_ops.cpp). Plain C++17: nvcc compiles array_algorithms.cu against it.
// Every pointer is device memory of call.device; work is queued on call.stream.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera::cuda::array {

using Index = std::int64_t;

/** Scratch device memory that lives until the Scratch is destroyed (freed in stream order). */
class Scratch {
 public:
  virtual ~Scratch() = default;
  virtual void* allocate(std::size_t bytes) = 0;
};

struct Call {
  Scratch* scratch;
  int device;
  cudaStream_t stream;
};

void scan(const Call& c, DType t, const void* in, void* out, Index outer, Index n, Index inner, bool product);
void sort_rows(const Call& c, DType t, const void* in, void* out, Index rows, Index n, bool arg);
void topk_rows(const Call& c, DType t, const void* values, const void* indices, DType index_t, Index offset, Index rows,
               Index n, Index k, void* out_values, Index* out_indices);
void quantile_rows(const Call& c, DType t, const void* in, Index rows, Index n, const std::vector<double>& q,
                   std::uint8_t method, bool skip_nan, DType out_t, void* out);
void searchsorted(const Call& c, DType t, const void* a, Index na, const void* v, Index nv, Index* out, bool right);
void isin(const Call& c, DType t, const void* x, Index n, const void* sorted, Index nt, bool* out, bool invert);
void histogram(const Call& c, DType t, const void* x, Index n, const double* weights, const std::vector<double>& edges,
               double norm, void* out);
bool bincount(const Call& c, DType t, const void* x, Index n, const double* weights, Index length, void* out);
/** unique's merge of n (value, count) pairs (values widened, counts int64; both modified): m. */
Index unique_counts(const Call& c, DType wide, void* values, Index* counts, Index n, void* out_values, Index* out_counts);
/** Widens n values of dtype t to int64 or float64 (unique's partial dtype). */
void widen(const Call& c, DType t, const void* in, Index n, void* out);
/** out[i] = double(in[i]) / Index(in[i]) conversions between int64 and float64. */
void index_to_double(const Call& c, const Index* in, double* out, Index n);
void double_to_index(const Call& c, const double* in, Index* out, Index n);
/** out[i] = double(in[i]) for n values of dtype t. */
void to_double(const Call& c, DType t, const void* in, double* out, Index n);
/** Fills n int64 values. */
void fill_index(const Call& c, Index* out, Index n, Index value);

}  // namespace tessera::cuda::array
