#include "core/blas_threads.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace tessera::detail {

void single_thread_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
    // Looked up, not linked: another BLAS (reference, BLIS) has no such function.
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
  });
}

}  // namespace tessera::detail
