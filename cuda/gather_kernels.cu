// The element gather (gather_kernels.hpp): one thread per output element in a grid-stride loop,
// moving elements as unsigned words of their size (no arithmetic, so every dtype is exact).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "check.hpp"
#include "gather_kernels.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 20;

struct alignas(8) Word16 {
  std::uint64_t lo, hi;
};

template <typename T>
__global__ void gather_kernel(const void* const* blocks, const std::int32_t* block_of, const std::int64_t* offset,
                              T* out, std::int64_t n, T fill) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int32_t b = block_of[i];
    out[i] = b < 0 ? fill : static_cast<const T*>(blocks[b])[offset[i]];
  }
}

template <typename T>
void launch(const void* const* blocks, const std::int32_t* block_of, const std::int64_t* offset, void* out,
            std::int64_t n, const void* fill, int device, cudaStream_t stream) {
  T f;
  std::memcpy(&f, fill, sizeof(T));
  const std::int64_t want = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(want < kMaxBlocks ? want : kMaxBlocks);
  gather_kernel<T><<<grid, kThreads, 0, stream>>>(blocks, block_of, offset, static_cast<T*>(out), n, f);
  check_launch("gather_kernel", device);
}

}  // namespace

void gather_elements(std::size_t itemsize, const void* const* blocks, const std::int32_t* block_of,
                     const std::int64_t* offset, void* out, std::int64_t n, const void* fill, int device,
                     cudaStream_t stream) {
  if (n <= 0) return;
  switch (itemsize) {
    case 1: return launch<std::uint8_t>(blocks, block_of, offset, out, n, fill, device, stream);
    case 2: return launch<std::uint16_t>(blocks, block_of, offset, out, n, fill, device, stream);
    case 4: return launch<std::uint32_t>(blocks, block_of, offset, out, n, fill, device, stream);
    case 8: return launch<std::uint64_t>(blocks, block_of, offset, out, n, fill, device, stream);
    case 16: return launch<Word16>(blocks, block_of, offset, out, n, fill, device, stream);
    default: throw DTypeError("gather (device): elements of " + std::to_string(itemsize) + " bytes");
  }
}

}  // namespace tessera::cuda
