// Placeholder-free minimal unit of the CUDA back end: reports the devices this process can see.
// The GPU issue adds kernels, the pool and streams beside it.
#include <cuda_runtime.h>

#include <string>

namespace tessera::cuda {

/** Number of CUDA devices visible to this process (0 when there is no driver or GPU). */
int visible_device_count() noexcept {  // declared in tessera/cuda/random.hpp
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

}  // namespace tessera::cuda
