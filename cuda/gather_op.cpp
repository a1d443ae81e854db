// The device variant behind src/array/gather.cpp's plans of many short runs
// (detail::kGatherElementsOp): the per-element sources go to the device once and one kernel
// gathers every element (cuda/gather_kernels.cu).
#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "array/gather.hpp"
#include "check.hpp"
#include "gather_kernels.hpp"
#include "runtime.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda {
namespace {

Value gather_elements_device(const OpContext& ctx, std::span<const Value> args) {
  const int device = ctx.device < 0 ? 0 : ctx.device;
  const cudaStream_t stream = stream_or_default(ctx.stream, device);
  if (args.size() < 3) throw Error("gather_elements: expected parameters, block and offset indices, then blocks");
  const auto p = from_value<detail::GatherElementsParams>(args[0]);
  const Block& block_of = args[1].block();
  const Block& offset = args[2].block();
  const std::int64_t n = shape_size(p.shape);
  const std::size_t isz = itemsize(p.dtype);
  if (block_of.dtype() != DType::Int32 || offset.dtype() != DType::Int64 || block_of.size() != n || offset.size() != n ||
      block_of.memory_kind() == MemoryKind::Device || offset.memory_kind() == MemoryKind::Device || p.fill.size() != isz)
    throw Error("gather_elements: " + std::to_string(n) + " host int32 block and int64 offset indices and one fill "
                "element expected");
  std::vector<const void*> blocks;
  for (std::size_t i = 3; i < args.size(); ++i) {
    const Block& b = args[i].block();
    if (b.dtype() != p.dtype) throw DTypeError("gather_elements: blocks of different dtypes");
    if (b.size() > 0 && (b.memory_kind() != MemoryKind::Device || b.buffer()->device() != device))
      throw DeviceError("gather_elements: block " + std::to_string(i - 3) + " is not in memory of device " +
                        std::to_string(device));
    blocks.push_back(b.raw());
  }
  Block out = tessera::device_block(p.dtype, p.shape, device, as_view(stream));
  if (n == 0) return Value(std::move(out));
  // One scratch buffer: the block pointers, then the offsets (8-byte aligned), then the blocks.
  const std::size_t ptr_bytes = blocks.size() * sizeof(void*);
  const std::size_t off_bytes = static_cast<std::size_t>(n) * sizeof(std::int64_t);
  const std::size_t of_bytes = static_cast<std::size_t>(n) * sizeof(std::int32_t);
  auto scratch = allocate_scratch(ptr_bytes + off_bytes + of_bytes + 8, device, stream);
  auto* base = static_cast<unsigned char*>(scratch->data());
  auto* d_ptrs = reinterpret_cast<const void**>(base);
  auto* d_offset = reinterpret_cast<std::int64_t*>(base + ((ptr_bytes + 7) / 8) * 8);
  auto* d_block_of = reinterpret_cast<std::int32_t*>(reinterpret_cast<unsigned char*>(d_offset) + off_bytes);
  if (ptr_bytes)
    check(cudaMemcpyAsync(d_ptrs, blocks.data(), ptr_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (gather)", device);
  check(cudaMemcpyAsync(d_offset, offset.raw(), off_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (gather)", device);
  check(cudaMemcpyAsync(d_block_of, block_of.raw(), of_bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (gather)",
        device);
  gather_elements(isz, d_ptrs, d_block_of, d_offset, out.raw(), n, p.fill.data(), device, stream);
  // The sources of the copies are host memory this call's caller frees when it returns.
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (gather)", device);
  return Value(std::move(out));
}

const bool registered = [] {
  register_device_op(detail::kGatherElementsOp, gather_elements_device);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
