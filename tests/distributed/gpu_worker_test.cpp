// GPU workers without a GPU: a Scheduler, a worker that takes the fake device (GpuPolicy::Auto
// with tests/support/fake_device installed) and a host-only worker (GpuPolicy::Off), threads of
// this process over TCP. Device tasks and GPU-resource tasks go only to the GPU worker, plain
// ones anywhere; scheduler_info shows the GPU; device values reach the client and the other
// worker as host blocks; a computation twice the device memory limit completes by spilling.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "../support/fake_device.hpp"
#include "cluster_fixture.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::FakeDeviceOptions;
using tessera_test::ScopedFakeDevice;
using tessera_test::find_worker;
using tessera_test::wait_until;

// ---- test ops ------------------------------------------------------------------------------------
// gpu_test.where(id): where it ran. The host variant returns ctx.device (0 on the GPU worker,
// -1 on the host-only one); the device variant returns 1000 + ctx.device.
// gpu_test.fill(n, base): n doubles base, base+1, ...; the device variant allocates them from the
// device runtime (fake device memory is host memory, so it writes them directly).
// gpu_test.sum(block): the sum; the device variant insists on a device argument.
// gpu_test.kind(block): memory_kind of its argument as an int (host variant only).

std::int64_t int_arg(std::span<const Value> args, std::size_t i) { return from_value<std::int64_t>(args[i]); }

Value fill_into(Block b, double base) {
  auto* p = static_cast<double*>(b.raw());
  for (std::int64_t i = 0; i < b.size(); ++i) p[i] = base + static_cast<double>(i);
  return Value(std::move(b));
}

std::vector<double> expected_fill(std::int64_t n, double base) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), base);
  return v;
}

double sum_of(const Block& b) {
  const double* p = static_cast<const double*>(b.raw());
  double s = 0;
  for (std::int64_t i = 0; i < b.size(); ++i) s += p[i];
  return s;
}

const bool g_registered = [] {
  register_op("gpu_test.where", [](const OpContext& ctx, std::span<const Value>) {
    std::this_thread::sleep_for(2ms);  // long enough for plain tasks to spread over both workers
    return Value(to_object<std::int64_t>(ctx.device));
  });
  register_device_op("gpu_test.where", [](const OpContext& ctx, std::span<const Value>) {
    return Value(to_object<std::int64_t>(1000 + ctx.device));
  });
  register_op("gpu_test.fill", [](const OpContext&, std::span<const Value> args) {
    return fill_into(Block(DType::Float64, {int_arg(args, 0)}), static_cast<double>(int_arg(args, 1)));
  });
  register_device_op("gpu_test.fill", [](const OpContext& ctx, std::span<const Value> args) {
    const std::int64_t n = int_arg(args, 0);
    auto buffer = device_runtime()->allocate(static_cast<std::size_t>(n) * sizeof(double), ctx.device, ctx.stream);
    return fill_into(Block(DType::Float64, {n}, std::move(buffer)), static_cast<double>(int_arg(args, 1)));
  });
  register_op("gpu_test.sum", [](const OpContext&, std::span<const Value> args) {
    if (args[0].block().memory_kind() == MemoryKind::Device) throw Error("gpu_test.sum: host variant got a device block");
    return Value(to_object<double>(sum_of(args[0].block())));
  });
  register_device_op("gpu_test.sum", [](const OpContext&, std::span<const Value> args) {
    if (args[0].block().memory_kind() != MemoryKind::Device) throw Error("gpu_test.sum: device variant got a host block");
    return Value(to_object<double>(sum_of(args[0].block())));
  });
  register_op("gpu_test.kind", [](const OpContext&, std::span<const Value> args) {
    return Value(to_object<std::int64_t>(static_cast<std::int64_t>(args[0].block().memory_kind())));
  });
  return true;
}();

SubmitOptions on_device() {
  SubmitOptions o;
  o.annotations = Annotations{.target = Target::Device};
  return o;
}

/** The in-process cluster of these tests (cluster_fixture.hpp) with their two kinds of worker. */
struct Cluster : tessera_test::InProcessCluster {
  using InProcessCluster::InProcessCluster;
  WorkerOptions gpu_worker(std::size_t device_memory_limit = 0) const {
    return worker("gpu-worker", GpuPolicy::Auto, device_memory_limit);
  }
  WorkerOptions cpu_worker() const { return worker("cpu-worker", GpuPolicy::Off); }
};

// ---- tests -----------------------------------------------------------------------------------------

TEST(ClusterGpu, DeviceTasksRunOnlyOnTheGpuWorkerAndSchedulerInfoShowsIt) {
  ScopedFakeDevice fake({.total_memory = std::size_t{64} << 20});  // outlives the workers
  Cluster c("gpu-token");
  Worker gpu(c.gpu_worker(std::size_t{8} << 20));
  Worker cpu(c.cpu_worker());
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(2, 5s));
  EXPECT_EQ(gpu.stats().device, 0);
  EXPECT_EQ(cpu.stats().device, -1);
  EXPECT_EQ(fake->memory_limit(0), std::size_t{8} << 20) << "the worker caps the pool at its device memory limit";
  EXPECT_TRUE(fake->has_pressure_handler());

  auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 2u);
  const WorkerInfo* g = find_worker(info, "gpu-worker");
  const WorkerInfo* h = find_worker(info, "cpu-worker");
  ASSERT_TRUE(g && h);
  ASSERT_EQ(g->gpus.size(), 1u);
  EXPECT_EQ(g->gpus[0].name, "Fake GPU");
  EXPECT_EQ(g->gpus[0].uuid.rfind("GPU-00000000-", 0), 0u) << g->gpus[0].uuid;
  EXPECT_EQ(g->gpus[0].total_memory, std::size_t{64} << 20);
  EXPECT_EQ(g->gpus[0].ordinal, 0);
  EXPECT_FALSE(g->gpus[0].pci_bus_id.empty());
  EXPECT_EQ(g->device_memory_limit, std::size_t{8} << 20);
  EXPECT_TRUE(h->gpus.empty());
  EXPECT_EQ(h->device_memory_limit, 0u);

  // Device tasks: only the GPU worker, with the op's device variant.
  const std::size_t gpu0 = gpu.stats().executed, cpu0 = cpu.stats().executed;
  std::vector<Future> device_futures;
  for (int i = 0; i < 20; ++i) device_futures.push_back(client.submit_with(on_device(), "gpu_test.where", i));
  for (auto& f : device_futures) EXPECT_EQ(f.result_as<std::int64_t>(), 1000);
  EXPECT_EQ(gpu.stats().executed - gpu0, 20u);
  EXPECT_EQ(cpu.stats().executed, cpu0) << "a device task ran on the worker without a GPU";

  // Tasks needing the GPU resource: only the worker that has it (host variant there: device 0).
  std::vector<std::int64_t> ids(10);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<Future> resource_futures;
  {
    Annotate scope(Annotations{.resources = {{"GPU", 1}}});
    resource_futures = client.map("gpu_test.where", ids);
  }
  for (auto& f : resource_futures) EXPECT_EQ(f.result_as<std::int64_t>(), 0);
  EXPECT_EQ(cpu.stats().executed, cpu0) << "a GPU-resource task ran on the worker without a GPU";

  // Plain tasks run anywhere: both workers take some.
  std::vector<std::int64_t> many(60);
  std::iota(many.begin(), many.end(), 100);
  std::set<std::int64_t> where;
  for (auto& f : client.map("gpu_test.where", many)) where.insert(f.result_as<std::int64_t>());
  EXPECT_EQ(where, (std::set<std::int64_t>{-1, 0})) << "plain tasks should use both workers";

  // Heartbeats carry the device bytes held (the device tasks above returned small objects: make
  // a device value and keep it).
  Future held = client.submit_with(on_device(), "gpu_test.fill", std::int64_t{1000}, std::int64_t{1});
  ASSERT_TRUE(held.wait(5s));
  EXPECT_EQ(gpu.stats().device_bytes, 8000u);
  EXPECT_TRUE(wait_until(
      [&] {
        auto i = client.scheduler_info();
        const WorkerInfo* w = find_worker(i, "gpu-worker");
        return w && w->device_memory == 8000u;
      },
      5))
      << "scheduler_info never showed the GPU worker's device bytes";
}

TEST(ClusterGpu, DeviceValuesReachClientsAndHostWorkersAsHostBlocks) {
  ScopedFakeDevice fake;
  Cluster c("gpu-token-2");
  Worker gpu(c.gpu_worker());
  Worker cpu(c.cpu_worker());
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(2, 5s));

  const std::int64_t n = 5000;
  Future x = client.submit_with(on_device(), "gpu_test.fill", n, std::int64_t{7});
  Value v = x.result();
  ASSERT_TRUE(v.is_block());
  EXPECT_EQ(v.block().memory_kind(), MemoryKind::Host) << "the client has no GPU: it must get host blocks";
  EXPECT_EQ(v.block().to_doubles(), expected_fill(n, 7));
  EXPECT_EQ(gpu.stats().device_bytes, static_cast<std::size_t>(n) * 8) << "the worker keeps its device copy";

  // A device task downstream reads it on the device; a host task on the other worker gets a host copy.
  SubmitOptions dev = on_device();
  EXPECT_DOUBLE_EQ(client.submit_with(dev, "gpu_test.sum", x).result_as<double>(), n * 7.0 + n * (n - 1) / 2.0);
  SubmitOptions there;
  there.annotations = Annotations{.workers = {"cpu-worker"}};
  EXPECT_EQ(client.submit_with(there, "gpu_test.kind", x).result_as<std::int64_t>(),
            static_cast<std::int64_t>(MemoryKind::Host));
  EXPECT_DOUBLE_EQ(client.submit_with(there, "gpu_test.sum", x).result_as<double>(), n * 7.0 + n * (n - 1) / 2.0);
  EXPECT_GE(cpu.stats().fetched_keys, 1u);

  // Gather of many device values.
  std::vector<Future> fs;
  for (int i = 0; i < 6; ++i) fs.push_back(client.submit_with(on_device(), "gpu_test.fill", std::int64_t{100 + i}, std::int64_t{i}));
  auto values = client.gather(fs);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(values[i].block().memory_kind(), MemoryKind::Host);
    EXPECT_EQ(values[i].block().to_doubles(), expected_fill(100 + i, i));
  }
}

TEST(ClusterGpu, DeviceTaskWithoutAGpuWorkerFailsAtSubmit) {
  ScopedFakeDevice fake;  // the process has a GPU, but its only worker is told not to use it
  Cluster c("gpu-token-3");
  Worker cpu(c.cpu_worker());
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(1, 5s));
  EXPECT_TRUE(client.scheduler_info().workers.at(0).gpus.empty());
  Future f = client.submit_with(on_device(), "gpu_test.where", 1);
  ASSERT_TRUE(f.wait(5s));
  EXPECT_EQ(f.status(), FutureStatus::Error);
  try {
    f.result();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no worker with a GPU"), std::string::npos) << e.what();
  }
  // Host tasks of the same op still run.
  EXPECT_EQ(client.submit("gpu_test.where", 2).result_as<std::int64_t>(), -1);
}

TEST(ClusterGpu, TwiceTheDeviceMemoryLimitCompletesBySpillingToHost) {
  const std::size_t limit = std::size_t{1} << 20;  // 1 MiB of device memory for results
  ScopedFakeDevice fake({.total_memory = std::size_t{64} << 20});
  Cluster c("gpu-token-4");
  Worker gpu(c.gpu_worker(limit));
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(1, 5s));

  // 16 device blocks of 128 KiB: 2 MiB, all kept (the futures hold them), then a device sum of
  // each (moving the spilled ones back to the device, spilling others to make room).
  const std::int64_t n = 16384;
  std::vector<Future> blocks, sums;
  for (int i = 0; i < 16; ++i) blocks.push_back(client.submit_with(on_device(), "gpu_test.fill", n, std::int64_t{i}));
  for (auto& b : blocks) sums.push_back(client.submit_with(on_device(), "gpu_test.sum", b));
  for (int i = 0; i < 16; ++i)
    EXPECT_DOUBLE_EQ(sums[i].result_as<double>(), n * static_cast<double>(i) + n * (n - 1) / 2.0) << i;

  const WorkerStats st = gpu.stats();
  EXPECT_GE(st.device_spilled, 8u) << "2 MiB of results under a 1 MiB device limit must spill";
  EXPECT_GE(st.device_spilled_bytes, limit);
  EXPECT_LE(st.device_bytes, limit);
  EXPECT_LE(fake->peak_in_use(0), limit) << "the pool never went past its cap";
  EXPECT_EQ(fake->failed_allocations(), 0u);
  EXPECT_EQ(st.failed, 0u);

  // Nothing lost: every block comes back whole, as host data.
  auto values = client.gather(blocks);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(values[i].block().memory_kind(), MemoryKind::Host);
    EXPECT_EQ(values[i].block().to_doubles(), expected_fill(n, i)) << i;
  }
}

TEST(ClusterGpu, DeviceValuesBetweenGpuWorkersOverUcxGoAsDeviceFrames) {
  // A GPU worker fetching from another over ucx:// asks for device blocks; the server frames its
  // device memory as it is and the comm stages it through pinned 8 MiB chunks (Debian's UCX has
  // no CUDA), instead of the server copying the whole block to host first. A host-only worker
  // does not ask, and gets a host copy made by the server.
  const auto ucx = comm::ucx_status();
  if (!ucx.available) GTEST_SKIP() << "UCX is not available here: " << ucx.reason;
  if (ucx.cuda) GTEST_SKIP() << "this UCX has CUDA: device frames would go directly, not staged";
  ScopedFakeDevice fake;
  Cluster c("gpu-token-ucx");
  auto over_ucx = [](WorkerOptions o, const std::string& name) {
    o.name = name;
    o.listen_address = "ucx://127.0.0.1:0";
    return o;
  };
  Worker a(over_ucx(c.gpu_worker(), "gpu-a"));
  Worker b(over_ucx(c.gpu_worker(), "gpu-b"));
  Worker cpu(over_ucx(c.cpu_worker(), "cpu-worker"));
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(3, 5s));

  constexpr std::size_t kChunk = std::size_t{8} << 20;  // the comm's staging chunk (docs/ucx.md)
  const std::int64_t n = static_cast<std::int64_t>((std::size_t{20} << 20) / sizeof(double)) + 1000;
  const std::size_t nbytes = static_cast<std::size_t>(n) * sizeof(double);
  const double expected = n * 3.0 + static_cast<double>(n) * (n - 1) / 2.0;
  auto on = [](const std::string& worker) {
    SubmitOptions o = on_device();
    o.annotations->workers = {worker};
    return o;
  };
  Future x = client.submit_with(on("gpu-a"), "gpu_test.fill", n, std::int64_t{3});
  ASSERT_TRUE(x.wait(10s));
  auto copies_since = [&](std::size_t from, std::size_t size) {
    const auto sizes = fake->copy_sizes();
    return std::count(sizes.begin() + static_cast<std::ptrdiff_t>(from), sizes.end(), size);
  };

  std::size_t before = fake->copy_sizes().size();
  EXPECT_DOUBLE_EQ(client.submit_with(on("gpu-b"), "gpu_test.sum", x).result_as<double>(), expected);
  EXPECT_EQ(b.stats().fetched_keys, 1u);
  EXPECT_EQ(copies_since(before, kChunk), 2) << "the 20 MiB block was not staged in 8 MiB chunks";
  EXPECT_EQ(copies_since(before, nbytes), 1) << "only gpu-b's move of the host frame to its device copies it whole";

  SubmitOptions there;
  there.annotations = Annotations{.workers = {"cpu-worker"}};
  before = fake->copy_sizes().size();
  EXPECT_EQ(client.submit_with(there, "gpu_test.kind", x).result_as<std::int64_t>(),
            static_cast<std::int64_t>(MemoryKind::Host));
  EXPECT_EQ(copies_since(before, kChunk), 0) << "a host-only worker should get the server's host copy";
  EXPECT_EQ(copies_since(before, nbytes), 1);
}

TEST(ClusterGpu, WorkerWithoutADeviceRuntimeHasNoGpu) {
  // No fake installed (and no CUDA back end in a build without CUDA): Auto means no GPU.
  if (visible_gpu_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  Cluster c("gpu-token-5");
  Worker w(c.gpu_worker());
  Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(1, 5s));
  EXPECT_EQ(w.stats().device, -1);
  EXPECT_TRUE(client.scheduler_info().workers.at(0).gpus.empty());
}

}  // namespace
