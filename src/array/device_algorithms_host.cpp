// The array device algorithms (device_algorithms.cuh) on Thrust's host system: the templates the
// CUDA back end instantiates (cuda/array_algorithms.cu), run sequentially on host memory, so
// machines without a GPU test the algorithms themselves.
#ifndef THRUST_DEVICE_SYSTEM
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP
#endif
#include <thrust/system/cpp/execution_policy.h>

#include <cstring>
#include <memory>

#include "array/device_algorithms.cuh"
#include "array/device_algorithms.hpp"

namespace tessera::detail::thrust_host {
namespace {

/** The `Sys` of device_algorithms.cuh for host memory. */
class HostSystem {
 public:
  auto policy() const { return thrust::cpp::par; }
  void* scratch(std::size_t bytes) {
    blocks_.push_back(std::make_unique<std::max_align_t[]>(bytes / sizeof(std::max_align_t) + 1));
    return blocks_.back().get();
  }
  void upload(void* dst, const void* host, std::size_t bytes) const { std::memcpy(dst, host, bytes); }

 private:
  std::vector<std::unique_ptr<std::max_align_t[]>> blocks_;
};

}  // namespace

namespace algo = tessera::detail::array_algo;

void scan(DType t, const void* in, void* out, Index outer, Index n, Index inner, bool product) {
  HostSystem sys;
  algo::scan(sys, t, in, out, outer, n, inner, product);
}
void sort_rows(DType t, const void* in, void* out, Index rows, Index n, bool arg) {
  HostSystem sys;
  algo::sort_rows(sys, t, in, out, rows, n, arg);
}
void topk_rows(DType t, const void* values, const void* indices, DType index_t, Index offset, Index rows, Index n, Index k,
               void* out_values, Index* out_indices) {
  HostSystem sys;
  algo::topk_rows(sys, t, values, indices, index_t, offset, rows, n, k, out_values, out_indices);
}
void quantile_rows(DType t, const void* in, Index rows, Index n, const std::vector<double>& q, std::uint8_t method,
                   bool skip_nan, DType out_t, void* out) {
  HostSystem sys;
  algo::quantile_rows(sys, t, in, rows, n, q, method, skip_nan, out_t, out);
}
void searchsorted(DType t, const void* a, Index na, const void* v, Index nv, Index* out, bool right) {
  HostSystem sys;
  algo::searchsorted(sys, t, a, na, v, nv, out, right);
}
void isin(DType t, const void* x, Index n, const void* sorted, Index nt, bool* out, bool invert) {
  HostSystem sys;
  algo::isin(sys, t, x, n, sorted, nt, out, invert);
}
void histogram(DType t, const void* x, Index n, const double* weights, const std::vector<double>& edges,
               double norm, void* out) {
  HostSystem sys;
  algo::histogram(sys, t, x, n, weights, edges, norm, out);
}
bool bincount(DType t, const void* x, Index n, const double* weights, Index length, void* out) {
  HostSystem sys;
  return algo::bincount(sys, t, x, n, weights, length, out);
}
Index unique(DType t, const void* x, Index n, void* out_values, Index* out_counts) {
  HostSystem sys;
  const DType wide = is_floating(t) ? DType::Float64 : DType::Int64;
  void* values = sys.scratch(8 * static_cast<std::size_t>(n > 0 ? n : 1));
  auto* counts = static_cast<Index*>(sys.scratch(8 * static_cast<std::size_t>(n > 0 ? n : 1)));
  algo::widen(sys, t, x, n, values);
  for (Index i = 0; i < n; ++i) counts[i] = 1;
  return algo::unique_counts(sys, wide, values, counts, n, out_values, out_counts);
}

}  // namespace tessera::detail::thrust_host
