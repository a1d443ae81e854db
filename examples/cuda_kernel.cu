// The kernel side of examples/cuda_kernel.cpp (seed 003's Numba @cuda.jit add_kernel):
//
//   @cuda.jit
//   def add_kernel(x, y, out):
//       index = cuda.grid(1)
//       out[index] = x[index] + y[index]
//
// nvcc compiles this file as C++17, and Tessera's public headers need C++20, so it holds only
// the kernel and a plain launcher; cuda_kernel.cpp (C++20) registers the launcher as a Tessera
// device function and drives the example. tessera/core/stream.hpp is the exception: plain C++17
// with no includes, so the launcher takes the task's stream as a tessera::StreamView and turns it
// into a cudaStream_t only here, at the launch.
#include <cuda_runtime.h>
#include <tessera/core/stream.hpp>

#include <stdexcept>
#include <string>

namespace {

// Grid-stride: any grid covers any n (the seed's 32 x 128 = 4096 threads cover n = 4096 exactly;
// the loop makes a larger n work with the same grid).
__global__ void add_kernel(const int* x, const int* y, int* out, long n) {
  const long stride = static_cast<long>(blockDim.x) * gridDim.x;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = x[i] + y[i];
}

}  // namespace

/** Queues add_kernel<<<blocks_per_grid, threads_per_block, 0, stream>>> over n int32 values. */
void launch_add(const int* x, const int* y, int* out, long n, tessera::StreamView stream, int blocks_per_grid,
                int threads_per_block) {
  if (n <= 0) return;
  add_kernel<<<blocks_per_grid, threads_per_block, 0, static_cast<cudaStream_t>(stream.native())>>>(x, y, out, n);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("add_kernel launch: ") + cudaGetErrorString(e));
}
