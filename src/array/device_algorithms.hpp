#pragma once
// Internal: the array device algorithms (device_algorithms.cuh) instantiated on Thrust's host
// system (device_algorithms_host.cpp, the static library tessera_array_algorithms), so that the
// tests run the very templates the CUDA back end runs (cuda/array_algorithms.cu), on host memory.
// Pointers are host memory; the signatures are those of device_algorithms.cuh without the Sys.
#include <cstdint>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera::detail::thrust_host {

using Index = std::int64_t;

void scan(DType t, const void* in, void* out, Index outer, Index n, Index inner, bool product);
void sort_rows(DType t, const void* in, void* out, Index rows, Index n, bool arg);
void topk_rows(DType t, const void* values, const void* indices, DType index_t, Index offset, Index rows, Index n, Index k,
               void* out_values, Index* out_indices);
void quantile_rows(DType t, const void* in, Index rows, Index n, const std::vector<double>& q, std::uint8_t method,
                   bool skip_nan, DType out_t, void* out);
void searchsorted(DType t, const void* a, Index na, const void* v, Index nv, Index* out, bool right);
void isin(DType t, const void* x, Index n, const void* sorted, Index nt, bool* out, bool invert);
void histogram(DType t, const void* x, Index n, const double* weights, const std::vector<double>& edges,
               double norm, void* out);
bool bincount(DType t, const void* x, Index n, const double* weights, Index length, void* out);
/** unique of n values of dtype t: the distinct values (widened) and counts; returns m. */
Index unique(DType t, const void* x, Index n, void* out_values, Index* out_counts);

}  // namespace tessera::detail::thrust_host
