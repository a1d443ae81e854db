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
#include "dataframe/device_relational.cuh"
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
  // Waits for the stream: the bytes are needed on the host now (a split's offsets).
  void download(void* host, const void* src, std::size_t bytes) {
    check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (frame ops)", device_);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (frame ops)", device_);
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

RawFrame hash_split(const RawFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                    std::vector<std::int64_t>& offsets, Allocator& alloc, int device, cudaStream_t stream) {
  return run("thrust (hash_split)", alloc, device, stream,
             [&](CudaSystem& sys) { return algo::hash_split(sys, frame, on, parts, offsets); });
}

RawFrame range_split(const RawFrame& frame, const std::string& column, const std::vector<double>& bounds,
                     std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets,
                     Allocator& alloc, int device, cudaStream_t stream) {
  return run("thrust (range_split)", alloc, device, stream, [&](CudaSystem& sys) {
    return algo::range_split(sys, frame, column, bounds, parts, ascending, nulls_first, offsets);
  });
}

RawFrame sort(const RawFrame& frame, const std::vector<dataframe::detail::SortKeySpec>& keys, bool nulls_first,
              Allocator& alloc, int device, cudaStream_t stream) {
  return run("thrust (sort)", alloc, device, stream,
             [&](CudaSystem& sys) { return algo::sort_frame(sys, frame, keys, nulls_first); });
}

RawFrame concat(const std::vector<RawFrame>& frames, Allocator& alloc, int device, cudaStream_t stream) {
  return run("thrust (concat)", alloc, device, stream, [&](CudaSystem& sys) { return algo::concat_frames(sys, frames); });
}

RawFrame join(const RawFrame& left, const RawFrame& right, const dataframe::detail::JoinPlan& plan, Allocator& alloc,
              int device, cudaStream_t stream) {
  return run("thrust (join)", alloc, device, stream,
             [&](CudaSystem& sys) { return algo::join_frames(sys, left, right, plan); });
}

}  // namespace tessera::cuda::frame
