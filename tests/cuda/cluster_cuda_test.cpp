// GPU workers on a real GPU (skipped without one): a Scheduler, a worker that takes GPU 0 through
// the CUDA back end and a host-only worker, threads of this process over TCP. The fake-device
// versions of these checks (tests/distributed/gpu_worker_test.cpp) cover the logic everywhere;
// these add CUDA itself: scheduler_info shows the real GPU, device arrays computed by the
// cluster match the host, and a computation twice the device memory limit completes through
// the real stream-ordered pool (its allocations fail at the cap and the worker spills).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>

#include "../distributed/cluster_fixture.hpp"
#include "gpu_test_util.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_cuda_test::PoolSettingsGuard;
using tessera_test::find_worker;

constexpr std::size_t MiB = std::size_t{1} << 20;

/** An in-process cluster (cluster_fixture.hpp) whose workers run one task at a time. */
struct Cluster : tessera_test::InProcessCluster {
  using InProcessCluster::InProcessCluster;
  WorkerOptions worker(const std::string& name, GpuPolicy gpu, std::size_t device_memory_limit = 0) const {
    WorkerOptions o = InProcessCluster::worker(name, gpu, device_memory_limit);
    o.nthreads = 1;  // tessera-cuda-worker's default
    return o;
  }
  ClientOptions client() const { return InProcessCluster::client(30); }
};

TEST(CudaCluster, DeviceArraysOnAGpuWorkerMatchTheHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  DeviceRuntime& rt = tessera_cuda_test::cuda_runtime();
  ASSERT_EQ(rt.memory_in_use(0), 0u) << "device buffers of an earlier test are still alive";
  const GpuInfo local = rt.info(0);
  PoolSettingsGuard reset;  // after the workers are gone
  Cluster c("cuda-cluster-1");
  Worker gpu(c.worker("gpu", GpuPolicy::Auto));
  Worker cpu(c.worker("cpu", GpuPolicy::Off));
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  ASSERT_EQ(gpu.stats().device, 0) << "the GPU worker did not take GPU 0 (see the log)";

  // scheduler_info shows the GPU the worker holds, as CUDA describes it.
  const auto info = client.scheduler_info();
  const WorkerInfo* g = find_worker(info, "gpu");
  const WorkerInfo* h = find_worker(info, "cpu");
  ASSERT_TRUE(g && h);
  ASSERT_EQ(g->gpus.size(), 1u);
  EXPECT_EQ(g->gpus[0].name, local.name);
  EXPECT_EQ(g->gpus[0].uuid, local.uuid);
  EXPECT_EQ(g->gpus[0].uuid.rfind("GPU-", 0), 0u) << g->gpus[0].uuid;
  EXPECT_EQ(g->gpus[0].total_memory, local.total_memory);
  EXPECT_GE(g->gpus[0].cc_major, 7);
  EXPECT_TRUE(h->gpus.empty());

  // The seed expression on device arrays: every task runs on the GPU worker.
  auto x = random::normal(0, 10.0, 1.0, {2000, 2000}, {500, 500});
  const double host = (x + 1)[{step(2), step(2)}].sum().compute().item();
  const std::size_t cpu_before = cpu.stats().executed, gpu_before = gpu.stats().executed;
  const double device = (x.to_device() + 1)[{step(2), step(2)}].sum().compute(client).item();
  EXPECT_NEAR(device, host, 1e-12 * std::fabs(host));
  EXPECT_NEAR(host / 1e6, 11.0, 0.01);
  EXPECT_EQ(cpu.stats().executed, cpu_before) << "a device task ran on the host-only worker";
  EXPECT_GT(gpu.stats().executed, gpu_before);

  // A matmul (cuBLAS) and a reduction along one axis, against the host.
  auto a = random::uniform(1, -1.0, 1.0, {600, 400}, {200, 200});
  auto b = random::uniform(2, -1.0, 1.0, {400, 300}, {200, 150});
  const Block hm = matmul(a, b).compute();
  const Block dm = matmul(a.to_device(), b.to_device()).compute(client);
  ASSERT_EQ(dm.shape(), hm.shape());
  EXPECT_EQ(dm.memory_kind(), MemoryKind::Host) << "a client gets host data";
  const auto hv = hm.to_doubles(), dv = dm.to_doubles();
  for (std::size_t i = 0; i < hv.size(); ++i) ASSERT_NEAR(dv[i], hv[i], 1e-10) << "matmul element " << i;
  const auto hmean = x.mean({.axes = {0}}).compute().to_doubles();
  const auto dmean = x.to_device().mean({.axes = {0}}).compute(client).to_doubles();
  ASSERT_EQ(dmean.size(), hmean.size());
  for (std::size_t i = 0; i < hmean.size(); ++i) ASSERT_NEAR(dmean[i], hmean[i], 1e-12 * 10.0) << "mean element " << i;
  EXPECT_EQ(cpu.stats().executed, cpu_before) << "a device task ran on the host-only worker";
  EXPECT_EQ(gpu.stats().failed, 0u);
}

TEST(CudaCluster, TwiceTheDeviceMemoryLimitCompletesThroughTheRealPool) {
  TESSERA_SKIP_WITHOUT_GPU();
  DeviceRuntime& rt = tessera_cuda_test::cuda_runtime();
  ASSERT_EQ(rt.memory_in_use(0), 0u) << "device buffers of an earlier test are still alive";
  const std::size_t limit = 32 * MiB;
  PoolSettingsGuard reset;  // after the workers are gone
  Cluster c("cuda-cluster-2");
  Worker gpu(c.worker("gpu", GpuPolicy::Auto, limit));
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(1, 10s));
  ASSERT_EQ(gpu.stats().device, 0) << "the GPU worker did not take GPU 0 (see the log)";
  EXPECT_EQ(rt.memory_limit(0), limit) << "the worker caps the pool at its device memory limit";

  // 64 MiB of device chunks (8 x 8 MiB), all kept, then a device computation over every chunk
  // (spilled ones come back to the device, others spill to make room), then all of them back.
  const auto host_x = random::normal(3, 0.0, 1.0, {4096, 2048}, {1024, 1024});
  Array x = host_x.to_device().persist(client);
  const double twice = (x * 2.0).sum().compute(client).item();
  const Block back = x.compute(client);
  const Block expected = host_x.compute();

  const WorkerStats st = gpu.stats();
  EXPECT_GE(st.device_spilled_bytes, limit) << "64 MiB of results under a 32 MiB device limit must spill";
  EXPECT_LE(st.device_bytes, limit);
  EXPECT_LE(rt.memory_in_use(0), limit) << "the pool went past its cap";
  EXPECT_EQ(st.failed, 0u);

  // Nothing lost.
  ASSERT_EQ(back.shape(), expected.shape());
  const auto bv = back.to_doubles(), ev = expected.to_doubles();
  double sum = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    ASSERT_NEAR(bv[i], ev[i], 1e-12 * std::fabs(ev[i]) + 1e-13) << "element " << i;
    sum += ev[i];
  }
  EXPECT_NEAR(twice, 2 * sum, 1e-9 * ev.size());
}

}  // namespace
