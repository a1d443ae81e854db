// The rows of multinomial and multivariate_hypergeometric on a GPU (random_rows.hpp): a thread per
// row, in a grid-stride loop. A row's draws loop over its k outcomes (and, for the "count" method,
// over its nsample items), so threads of a warp take different paths; rows are independent, so
// no thread waits for another.
#include <cuda_runtime.h>

#include <cstdint>

#include "check.hpp"
#include "random_rows.hpp"
#include "stream.hpp"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 128;
constexpr std::int64_t kMaxBlocks = 1 << 20;

__global__ void rows_kernel(detail::rng::RowsArgs args, std::int64_t n, std::int64_t* out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < n; r += stride)
    detail::rng::draw_row(args, r, out + r * args.k);
}

}  // namespace

void random_rows_kernel(const detail::rng::RowsArgs& args, std::int64_t n, std::int64_t* out, int device,
                        StreamView stream) {
  if (n <= 0) return;
  const std::int64_t want = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(want < kMaxBlocks ? want : kMaxBlocks);
  rows_kernel<<<grid, kThreads, 0, as_cuda(stream)>>>(args, n, out);
  check_launch("random rows kernel", device);
}

}  // namespace tessera::cuda
