// The array chunk ops' device algorithms (src/array/device_algorithms.cuh) on the CUDA system:
// the templates the host tests run with Thrust's CPP system, here on the op's stream, with
// Thrust's temporary storage and every scratch buffer taken from the device pool.
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <cstddef>

#include "array/device_algorithms.cuh"
#include "array_algorithms.hpp"
#include "check.hpp"

namespace tessera::cuda::array {
namespace {

/** Thrust's temporary storage as scratch of the call (freed with it, in stream order). */
class ThrustScratch {
 public:
  using value_type = char;
  explicit ThrustScratch(Scratch* s) : s_(s) {}
  char* allocate(std::ptrdiff_t bytes) { return static_cast<char*>(s_->allocate(static_cast<std::size_t>(bytes > 0 ? bytes : 1))); }
  void deallocate(char*, std::size_t) {}

 private:
  Scratch* s_;
};

/** The `Sys` of device_algorithms.cuh for one call. */
class CudaSystem {
 public:
  explicit CudaSystem(const Call& c) : c_(c), thrust_scratch_(c.scratch) {}
  auto policy() { return thrust::cuda::par_nosync(thrust_scratch_).on(c_.stream); }
  void* scratch(std::size_t bytes) { return c_.scratch->allocate(bytes); }
  // From pageable memory, cudaMemcpyAsync returns once the bytes are staged: `host` may go.
  void upload(void* dst, const void* host, std::size_t bytes) {
    check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, c_.stream), "cudaMemcpyAsync (array algorithms)",
          c_.device);
  }

 private:
  Call c_;
  ThrustScratch thrust_scratch_;
};

/** Runs f(sys); Thrust's CUDA failures become the back end's DeviceError naming `what`. */
template <class F>
auto run(const char* what, const Call& c, F&& f) {
  try {
    CudaSystem sys(c);
    return f(sys);
  } catch (const thrust::system_error& e) {
    const cudaError_t code = static_cast<cudaError_t>(e.code().value());
    throw_cuda_error(code == cudaSuccess ? cudaErrorUnknown : code, what, c.device);
  }
}

struct ToDouble {
  __host__ __device__ double operator()(Index x) const { return static_cast<double>(x); }
};
struct ToIndex {
  __host__ __device__ Index operator()(double x) const { return static_cast<Index>(x); }
};

}  // namespace

namespace algo = tessera::detail::array_algo;

void scan(const Call& c, DType t, const void* in, void* out, Index outer, Index n, Index inner, bool product) {
  run("thrust (scan)", c, [&](CudaSystem& sys) { algo::scan(sys, t, in, out, outer, n, inner, product); });
}
void sort_rows(const Call& c, DType t, const void* in, void* out, Index rows, Index n, bool arg) {
  run("thrust (sort)", c, [&](CudaSystem& sys) { algo::sort_rows(sys, t, in, out, rows, n, arg); });
}
void topk_rows(const Call& c, DType t, const void* values, const void* indices, DType index_t, Index offset, Index rows,
               Index n, Index k, void* out_values, Index* out_indices) {
  run("thrust (topk)", c, [&](CudaSystem& sys) {
    algo::topk_rows(sys, t, values, indices, index_t, offset, rows, n, k, out_values, out_indices);
  });
}
void quantile_rows(const Call& c, DType t, const void* in, Index rows, Index n, const std::vector<double>& q,
                   std::uint8_t method, bool skip_nan, DType out_t, void* out) {
  run("thrust (quantile)", c,
      [&](CudaSystem& sys) { algo::quantile_rows(sys, t, in, rows, n, q, method, skip_nan, out_t, out); });
}
void searchsorted(const Call& c, DType t, const void* a, Index na, const void* v, Index nv, Index* out, bool right) {
  run("thrust (searchsorted)", c, [&](CudaSystem& sys) { algo::searchsorted(sys, t, a, na, v, nv, out, right); });
}
void isin(const Call& c, DType t, const void* x, Index n, const void* sorted, Index nt, bool* out, bool invert) {
  run("thrust (isin)", c, [&](CudaSystem& sys) { algo::isin(sys, t, x, n, sorted, nt, out, invert); });
}
void histogram(const Call& c, DType t, const void* x, Index n, const double* weights, const std::vector<double>& edges,
               double norm, void* out) {
  run("thrust (histogram)", c, [&](CudaSystem& sys) { algo::histogram(sys, t, x, n, weights, edges, norm, out); });
}
bool bincount(const Call& c, DType t, const void* x, Index n, const double* weights, Index length, void* out) {
  return run("thrust (bincount)", c, [&](CudaSystem& sys) { return algo::bincount(sys, t, x, n, weights, length, out); });
}
Index unique_counts(const Call& c, DType wide, void* values, Index* counts, Index n, void* out_values, Index* out_counts) {
  return run("thrust (unique)", c,
             [&](CudaSystem& sys) { return algo::unique_counts(sys, wide, values, counts, n, out_values, out_counts); });
}
void widen(const Call& c, DType t, const void* in, Index n, void* out) {
  run("thrust (unique)", c, [&](CudaSystem& sys) { algo::widen(sys, t, in, n, out); });
}
void index_to_double(const Call& c, const Index* in, double* out, Index n) {
  if (n == 0) return;
  run("thrust (convert)", c, [&](CudaSystem& sys) { thrust::transform(sys.policy(), in, in + n, out, ToDouble{}); });
}
void double_to_index(const Call& c, const double* in, Index* out, Index n) {
  if (n == 0) return;
  run("thrust (convert)", c, [&](CudaSystem& sys) { thrust::transform(sys.policy(), in, in + n, out, ToIndex{}); });
}
void to_double(const Call& c, DType t, const void* in, double* out, Index n) {
  if (n == 0) return;
  run("thrust (convert)", c, [&](CudaSystem& sys) {
    algo::for_dtype(t, [&](auto tag) {
      using T = decltype(tag);
      thrust::transform(sys.policy(), static_cast<const T*>(in), static_cast<const T*>(in) + n, out, algo::CastTo<T, double>{});
    });
  });
}
void fill_index(const Call& c, Index* out, Index n, Index value) {
  if (n == 0) return;
  run("thrust (fill)", c, [&](CudaSystem& sys) { thrust::fill(sys.policy(), out, out + n, value); });
}

}  // namespace tessera::cuda::array
