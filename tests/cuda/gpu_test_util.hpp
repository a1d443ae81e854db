#pragma once
// Shared by the tests under tests/cuda/: the one "no GPU" skip, and comparisons of device
// results with host ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "tessera/core/block.hpp"
#include "tessera/core/device.hpp"

namespace tessera::cuda {
/** The CUDA back end's runtime (defined in cuda/runtime.cpp, exported by libtessera_cuda). */
DeviceRuntime& runtime();
}  // namespace tessera::cuda

namespace tessera_cuda_test {

/**
 * The CUDA runtime, installed again as the process's device runtime if a test before this one
 * left another one (a fake) or none installed.
 */
inline tessera::DeviceRuntime& cuda_runtime() {
  tessera::DeviceRuntime& r = tessera::cuda::runtime();
  if (tessera::device_runtime() != &r) tessera::set_device_runtime(&r);
  return r;
}

/**
 * Puts device 0's pool back to no limit and no pressure handler when a test ends, so later tests
 * in this process see the runtime as they expect (declare it before the test's workers).
 */
struct PoolSettingsGuard {
  ~PoolSettingsGuard() {
    tessera::DeviceRuntime& rt = cuda_runtime();
    rt.set_pressure_handler({});
    try {
      rt.set_memory_limit(0, 0);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "could not reset the memory limit: " << e.what();
    }
  }
};

}  // namespace tessera_cuda_test

/** Skips the current test (with the reason) when this process sees no CUDA device. */
#define TESSERA_SKIP_WITHOUT_GPU()                                                                    \
  do {                                                                                                \
    ::tessera_cuda_test::cuda_runtime();                                                              \
    if (::tessera::visible_gpu_count() == 0)                                                          \
      GTEST_SKIP() << "no CUDA device visible to this process (device runtime: "                     \
                   << ::tessera::device_runtime_status() << ")";                                     \
  } while (0)

namespace tessera_cuda_test {

/**
 * Checks that `device_result` lives in device memory and holds exactly `host_result`: the same
 * dtype and shape, and equal elements (NaN equals NaN; no tolerance).
 */
inline void expect_same_block(const tessera::Block& host_result, const tessera::Block& device_result,
                              const std::string& what) {
  using namespace tessera;
  ASSERT_EQ(device_result.memory_kind(), MemoryKind::Device) << what;
  const Block d = to_host(device_result);
  ASSERT_EQ(d.dtype(), host_result.dtype()) << what;
  ASSERT_EQ(d.shape(), host_result.shape()) << what;
  const std::int64_t n = host_result.size();
  dispatch_dtype(host_result.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* h = static_cast<const T*>(host_result.raw());
    const T* g = static_cast<const T*>(d.raw());
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, float16>) {  // the same bits
        ASSERT_EQ(h[i].bits, g[i].bits) << what << ": element " << i;
      } else {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(h[i]) && std::isnan(g[i])) continue;
        }
        ASSERT_EQ(h[i], g[i]) << what << ": element " << i;
      }
    }
  });
}

}  // namespace tessera_cuda_test
