// A --preload plugin for tests of the GPU examples on machines without a GPU: loading it installs
// the fake device runtime of tests/support/fake_device.hpp (host memory labelled Device, a "Fake
// GPU" in scheduler_info), so a worker started with it registers as a GPU worker, receives device
// tasks and runs device arrays through the same lowering, routing and data moves as on a GPU.
// It checks the plumbing of the examples, not CUDA: no kernel runs.
//
//   tessera-worker ADDRESS --resources GPU=1 --preload libtessera_fake_gpu.so --preload ...
#include "fake_device.hpp"

namespace {

struct Install {
  Install() {
    static tessera_test::FakeDeviceRuntime runtime({.name = "Fake GPU (examples/testing/fake_gpu)"});
    tessera::set_device_runtime(&runtime);
  }
} install;

}  // namespace
