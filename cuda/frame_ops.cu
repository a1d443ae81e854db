// The dataframe algorithms (src/dataframe/device_algorithms.cuh) on the CUDA system: the
// templates the host tests run with Thrust's CPP system, here on the op's stream, with Thrust's
// temporary storage and every result taken from the device pool (through the caller's Allocator).
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <cstddef>
#include <unordered_map>
#include <utility>

#include "check.hpp"
#include "dataframe/device_algorithms.cuh"
#include "frame_ops_raw.hpp"

namespace tessera::cuda::frame {
namespace {

using dataframe::detail::Memory;

/** Thrust's temporary storage (sort, reduce_by_key, copy_if) as scratch memory of the pool. */
class ScratchAllocator {
 public:
  using value_type = char;
  ScratchAllocator(Allocator* alloc, std::unordered_map<char*, Memory>* live) : alloc_(alloc), live_(live) {}
  char* allocate(std::ptrdiff_t bytes) {
    Memory m = alloc_->allocate(static_cast<std::size_t>(bytes > 0 ? bytes : 1), false);
    char* p = static_cast<char*>(m.data);
    (*live_)[p] = std::move(m);
    return p;
  }
  // Scratch is freed in stream order (cudaFreeAsync on the stream), so Thrust may drop it
  // while its kernels are still queued.
  void deallocate(char* p, std::size_t) { live_->erase(p); }

 private:
  Allocator* alloc_;
  std::unordered_map<char*, Memory>* live_;
};

/** The `Sys` of device_algorithms.cuh for one call on (device, stream). */
class CudaSystem {
 public:
  CudaSystem(Allocator& alloc, int device, cudaStream_t stream)
      : alloc_(&alloc), device_(device), stream_(stream), scratch_(&alloc, &live_) {}
  CudaSystem(const CudaSystem&) = delete;
  CudaSystem& operator=(const CudaSystem&) = delete;

  auto policy() { return thrust::cuda::par_nosync(scratch_).on(stream_); }
  Allocator& allocator() { return *alloc_; }
  // From pageable memory, cudaMemcpyAsync returns once the bytes are staged: `host` may go.
  void upload(void* dst, const void* host, std::size_t bytes) {
    check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (frame ops)", device_);
  }

 private:
  Allocator* alloc_;
  int device_;
  cudaStream_t stream_;
  std::unordered_map<char*, Memory> live_;
  ScratchAllocator scratch_;
};

/** Runs f(sys); Thrust's CUDA failures become the back end's DeviceError naming `what`. */
template <class F>
auto run(const char* what, Allocator& alloc, int device, cudaStream_t stream, F&& f) {
  try {
    CudaSystem sys(alloc, device, stream);
    return f(sys);
  } catch (const thrust::system_error& e) {
    const cudaError_t code = static_cast<cudaError_t>(e.code().value());
    throw_cuda_error(code == cudaSuccess ? cudaErrorUnknown : code, what, device);
  }
}

}  // namespace

namespace algo = dataframe::detail::algo;

RawFrame filter(const RawFrame& frame, const RawColumn& mask, Allocator& alloc, int device, cudaStream_t stream) {
  return run("thrust (filter)", alloc, device, stream, [&](CudaSystem& sys) { return algo::filter(sys, frame, mask); });
}

RawColumn binary(std::int64_t rows, const RawColumn* a, const dataframe::ScalarOperand* sa, const RawColumn* b,
                 const dataframe::ScalarOperand* sb, dataframe::BinaryOp op, Allocator& alloc, int device,
                 cudaStream_t stream) {
  return run("thrust (binary)", alloc, device, stream,
             [&](CudaSystem& sys) { return algo::binary(sys, rows, a, sa, b, sb, op); });
}

RawFrame groupby_partial(const RawFrame& frame, const dataframe::GroupbySpec& spec, Allocator& alloc, int device,
                         cudaStream_t stream) {
  return run("thrust (groupby_partial)", alloc, device, stream,
             [&](CudaSystem& sys) { return algo::groupby_partial(sys, frame, spec); });
}

RawFrame groupby_combine(const std::vector<RawFrame>& partials, const dataframe::GroupbySpec& spec, Allocator& alloc,
                         int device, cudaStream_t stream) {
  return run("thrust (groupby_combine)", alloc, device, stream,
             [&](CudaSystem& sys) { return algo::groupby_combine(sys, partials, spec); });
}

}  // namespace tessera::cuda::frame
