// tessera-cuda-worker: a thin main over the library (see tessera::distributed::cuda_worker_main).
// It starts one worker per GPU, each this same program in worker mode (--tessera-worker, which
// tessera::init turns into tessera-worker) with its own CUDA_VISIBLE_DEVICES.
#include "tessera/init.hpp"

int main(int argc, char** argv) {
  tessera::init(argc, argv);  // a child: runs the worker and exits
  return tessera::distributed::cuda_worker_main(argc, argv);
}
