// Host and device random generators agree element by element (issue 4's contract: normals to
// 1e-12 relative, integers exactly). Skips without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "array/expr.hpp"
#include "gpu_test_util.hpp"
#include "tessera/cuda/random.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

#define SKIP_WITHOUT_GPU() TESSERA_SKIP_WITHOUT_GPU()

std::uint64_t key_of(const Array& a) {
  return static_cast<const detail::GeneratorExpr&>(*a.expr()).key;
}

template <typename T, typename F>
std::vector<T> on_device(std::int64_t n, F&& fill) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, n * sizeof(T)), cudaSuccess);
  fill(d);
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  return h;
}

TEST(CudaRandom, NormalMatchesHost) {
  SKIP_WITHOUT_GPU();
  auto x = random::normal(5, 10.0, 1.0, {300, 301}, {128, 100});
  const auto host = x.compute().to_doubles();
  const std::int64_t n = static_cast<std::int64_t>(host.size());
  const auto dev = on_device<double>(n, [&](double* d) { cuda::normal_device(key_of(x), 10.0, 1.0, 0, 1, n, d); });
  for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(dev[i], host[i], 1e-12 * std::fabs(host[i])) << i;
}

TEST(CudaRandom, StridedNormalMatchesHostSlice) {
  SKIP_WITHOUT_GPU();
  auto x = random::normal(9, 0.0, 1.0, {1000}, {1000});
  const auto host = x[{step(3)}].compute().to_doubles();
  const std::int64_t n = static_cast<std::int64_t>(host.size());
  const auto dev = on_device<double>(n, [&](double* d) { cuda::normal_device(key_of(x), 0.0, 1.0, 0, 3, n, d); });
  for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(dev[i], host[i], 1e-12 * std::fabs(host[i]) + 1e-15) << i;
}

TEST(CudaRandom, UniformAndIntegersMatchHost) {
  SKIP_WITHOUT_GPU();
  auto u = random::uniform(2, -1.0, 3.0, {5000}, {777});
  const auto hu = u.compute().to_doubles();
  const auto du = on_device<double>(5000, [&](double* d) { cuda::uniform_device(key_of(u), -1.0, 3.0, 0, 1, 5000, d); });
  for (int i = 0; i < 5000; ++i) ASSERT_NEAR(du[i], hu[i], 1e-15 * (1 + std::fabs(hu[i]))) << i;

  auto k = random::integers(4, -50, 1000, {5000}, {999});
  const auto hk = k.compute();
  const auto dk = on_device<std::int64_t>(5000, [&](std::int64_t* d) { cuda::integers_device(key_of(k), -50, 1000, 0, 1, 5000, d); });
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(dk[i], hk.data<std::int64_t>()[i]) << i;
}

}  // namespace
