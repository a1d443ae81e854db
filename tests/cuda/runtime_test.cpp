// The CUDA DeviceRuntime (cuda/runtime.cpp): pool allocation and accounting, the memory limit
// and its DeviceMemoryError, the pressure handler, device information, copies, to_host /
// to_device and per-thread streams. GPU tests skip without a visible device; the CudaNoGpu
// tests check what a process without a GPU sees.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "array/array_ops.hpp"
#include "gpu_test_util.hpp"
#include "tessera/core/device.hpp"
#include "tessera/cuda/random.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace {

using namespace tessera;

constexpr std::size_t MiB = std::size_t{1} << 20;

DeviceRuntime& rt() { return tessera_cuda_test::cuda_runtime(); }

// What was installed when the program started: libtessera_cuda.so's static initialiser runs
// before this binary's, and tests may swap in a fake runtime later.
DeviceRuntime* const g_installed_at_start = device_runtime();

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using tessera_cuda_test::PoolSettingsGuard;

// ---- without a GPU (these run everywhere) -----------------------------------------------------

TEST(CudaRuntime, BackEndIsInstalledWhenTheLibraryIsLoaded) {
  // The test binary links libtessera_cuda.so, whose static initialiser installs the runtime.
  EXPECT_EQ(g_installed_at_start, &cuda::runtime());
  ASSERT_EQ(&rt(), device_runtime());
  EXPECT_EQ(device_runtime_status(), "loaded");
  const int n = rt().device_count();
  EXPECT_GE(n, 0);
  EXPECT_EQ(visible_gpu_count(), n);
  EXPECT_EQ(cuda::visible_device_count(), n);
  EXPECT_EQ(rt().device_count(), n);  // cached, stable
}

TEST(CudaRuntime, DeviceVariantsAreRegistered) {
  for (const char* name : {detail::kCombineOp, detail::kAssembleOp, detail::kMatmulOp, detail::kReshapeOp}) {
    const OpInfo& op = OpRegistry::global().get(name);
    EXPECT_TRUE(op.host) << name;
    EXPECT_TRUE(op.device) << name;
  }
}

TEST(CudaNoGpu, DeviceOpsThrowAClearDeviceError) {
  ASSERT_EQ(&rt(), device_runtime());
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible: this test covers processes without one";
  EXPECT_EQ(rt().device_count(), 0);

  detail::CombineParams p;
  p.kind = static_cast<std::uint8_t>(detail::ReduceKind::Sum);
  p.finalize = true;
  p.reduced = {1};
  const std::vector<Value> args{Value(to_object(p, "CombineParams")),
                                Value(Block::from_values<double>({1.0}, {1, 1})),
                                Value(Block::from_values<double>({3.0}, {1, 1}))};
  const Key key = "sum-combine-0";
  try {
    run_op(detail::kCombineOp, OpContext{&key, Target::Device, 0}, std::span<const Value>(args));
    FAIL() << "a device task ran without a GPU";
  } catch (const DeviceError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, detail::kCombineOp)) << m;
    EXPECT_TRUE(contains(m, key)) << m;
    EXPECT_TRUE(contains(m, "targets a GPU but this process has none")) << m;
    EXPECT_TRUE(contains(m, "no CUDA device visible")) << m;
  }
  // The host variant of the same op still runs.
  const Value host = run_op(detail::kCombineOp, OpContext{&key, Target::Host, -1}, std::span<const Value>(args));
  EXPECT_EQ(host.block().item(), 4.0);

  // Runtime calls that need a device say that there is none.
  for (auto call : std::vector<std::function<void()>>{[] { rt().allocate(16, 0); },
                                                      [] { rt().info(0); },
                                                      [] { rt().thread_stream(0); },
                                                      [] { rt().set_device(0); },
                                                      [] { rt().allocate_pinned(16); },
                                                      [] { to_device(Block::scalar(1.0), 0); }}) {
    try {
      call();
      ADD_FAILURE() << "no DeviceError without a GPU";
    } catch (const DeviceError& e) {
      EXPECT_TRUE(contains(e.what(), "no CUDA device visible")) << e.what();
    }
  }
}

// ---- with a GPU -------------------------------------------------------------------------------

TEST(CudaRuntime, AllocateCountsBytesInUse) {
  TESSERA_SKIP_WITHOUT_GPU();
  const std::size_t before = rt().memory_in_use(0);
  {
    auto b = rt().allocate(MiB + 3, 0);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(b->data(), nullptr);
    EXPECT_EQ(b->size(), MiB + 3);
    EXPECT_EQ(b->kind(), MemoryKind::Device);
    EXPECT_EQ(b->device(), 0);
    EXPECT_EQ(rt().memory_in_use(0), before + MiB + 3);
  }
  EXPECT_EQ(rt().memory_in_use(0), before);

  auto empty = rt().allocate(0, 0);
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(empty->kind(), MemoryKind::Device);
  EXPECT_EQ(rt().memory_in_use(0), before);
}

TEST(CudaRuntime, UnknownDeviceIsADeviceError) {
  TESSERA_SKIP_WITHOUT_GPU();
  const int n = rt().device_count();
  for (int bad : {-1, n, n + 7}) {
    EXPECT_THROW(rt().allocate(16, bad), DeviceError) << bad;
    EXPECT_THROW(rt().thread_stream(bad), DeviceError) << bad;
    EXPECT_THROW(rt().set_device(bad), DeviceError) << bad;
    EXPECT_THROW(rt().info(bad), DeviceError) << bad;
  }
  try {
    rt().allocate(16, n);
  } catch (const DeviceError& e) {
    EXPECT_TRUE(contains(e.what(), "device " + std::to_string(n) + " is not visible")) << e.what();
  }
}

TEST(CudaRuntime, CudaFailuresNameTheCallAndTheDevice) {
  TESSERA_SKIP_WITHOUT_GPU();
  rt().set_device(0);
  const std::string name = rt().info(0).name;
  try {
    rt().allocate_pinned(std::size_t{1} << 60);  // 1 EiB of page-locked memory
    FAIL() << "cudaHostAlloc of 1 EiB succeeded";
  } catch (const DeviceError& e) {  // DeviceMemoryError when CUDA reports it as out of memory
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "cudaHostAlloc")) << m;
    EXPECT_TRUE(contains(m, "failed on device 0 (" + name + "): ")) << m;
  }
  // The failure is cleared: the next CUDA calls work.
  auto b = rt().allocate(256, 0);
  rt().synchronize(rt().thread_stream(0));
}

TEST(CudaRuntime, LimitGivesDeviceMemoryErrorWithDetails) {
  TESSERA_SKIP_WITHOUT_GPU();
  ASSERT_EQ(rt().memory_in_use(0), 0u) << "device buffers of an earlier test are still alive";
  PoolSettingsGuard guard;
  rt().set_memory_limit(0, 64 * MiB);
  EXPECT_EQ(rt().memory_limit(0), 64 * MiB);
  const std::string name = rt().info(0).name;

  auto held = rt().allocate(48 * MiB, 0);
  EXPECT_EQ(rt().memory_in_use(0), 48 * MiB);
  try {
    rt().allocate(32 * MiB, 0);
    FAIL() << "allocated past the limit";
  } catch (const DeviceMemoryError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "device 0 (" + name + ")")) << m;
    EXPECT_TRUE(contains(m, std::to_string(32 * MiB))) << m;  // asked
    EXPECT_TRUE(contains(m, std::to_string(48 * MiB))) << m;  // in use
    EXPECT_TRUE(contains(m, std::to_string(64 * MiB))) << m;  // limit
  }
  EXPECT_EQ(rt().memory_in_use(0), 48 * MiB);  // the failed request is not counted
  EXPECT_THROW(rt().allocate(65 * MiB, 0), DeviceMemoryError);  // more than the whole limit
  auto small = rt().allocate(8 * MiB, 0);  // what fits still works
  EXPECT_EQ(rt().memory_in_use(0), 56 * MiB);

  // The limit is fixed once the pool holds live buffers.
  try {
    rt().set_memory_limit(0, 128 * MiB);
    FAIL() << "changed the limit of a pool in use";
  } catch (const DeviceError& e) {
    EXPECT_TRUE(contains(e.what(), "before the first allocation")) << e.what();
  }
  small.reset();
  held.reset();
  EXPECT_EQ(rt().memory_in_use(0), 0u);
}

TEST(CudaRuntime, PressureHandlerFreesAndTheAllocationIsRetried) {
  TESSERA_SKIP_WITHOUT_GPU();
  ASSERT_EQ(rt().memory_in_use(0), 0u) << "device buffers of an earlier test are still alive";
  PoolSettingsGuard guard;
  rt().set_memory_limit(0, 64 * MiB);
  std::shared_ptr<Buffer> spillable = rt().allocate(48 * MiB, 0);
  int calls = 0;
  int seen_device = -1;
  std::size_t seen_bytes = 0;
  rt().set_pressure_handler([&](int device, std::size_t bytes) -> std::size_t {
    ++calls;
    seen_device = device;
    seen_bytes = bytes;
    if (!spillable) return 0;
    const std::size_t n = spillable->size();
    spillable.reset();  // "spill": the deleter gives the memory back to the pool
    return n;
  });

  auto b = rt().allocate(32 * MiB, 0);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen_device, 0);
  EXPECT_EQ(seen_bytes, 32 * MiB);
  EXPECT_FALSE(spillable);
  EXPECT_EQ(rt().memory_in_use(0), 32 * MiB);

  // Nothing left to spill: the handler frees nothing and the allocation fails after one call.
  calls = 0;
  EXPECT_THROW(rt().allocate(40 * MiB, 0), DeviceMemoryError);
  EXPECT_EQ(calls, 1);
  rt().set_pressure_handler({});
  b.reset();
  EXPECT_EQ(rt().memory_in_use(0), 0u);
}

TEST(CudaRuntime, FreedBlocksOfOtherSizesDoNotBlockAnAllocationUnderTheLimit) {
  // The pool's reservations are capped near the limit and kept after frees: four freed 2 MiB
  // blocks may hold the reservations in pieces too small for one 8 MiB block. The allocation is
  // under the limit, so the runtime must place it (trimming the pool if it must) without spilling.
  TESSERA_SKIP_WITHOUT_GPU();
  ASSERT_EQ(rt().memory_in_use(0), 0u) << "device buffers of an earlier test are still alive";
  PoolSettingsGuard guard;
  rt().set_memory_limit(0, 8 * MiB);
  int calls = 0;
  rt().set_pressure_handler([&](int, std::size_t) -> std::size_t {
    ++calls;
    return 0;
  });
  {
    std::vector<std::shared_ptr<Buffer>> pieces;
    for (int i = 0; i < 4; ++i) pieces.push_back(rt().allocate(2 * MiB, 0));
    EXPECT_EQ(rt().memory_in_use(0), 8 * MiB);
  }
  EXPECT_EQ(rt().memory_in_use(0), 0u);
  std::shared_ptr<Buffer> whole;
  ASSERT_NO_THROW(whole = rt().allocate(8 * MiB, 0));
  EXPECT_EQ(calls, 0) << "nothing needed spilling: the bytes were under the limit";
  EXPECT_EQ(rt().memory_in_use(0), 8 * MiB);
  ASSERT_EQ(cudaMemsetAsync(whole->data(), 0, 8 * MiB, static_cast<cudaStream_t>(rt().thread_stream(0).native())),
            cudaSuccess);
  rt().synchronize(rt().thread_stream(0));
  whole.reset();
  EXPECT_EQ(rt().memory_in_use(0), 0u);
}

TEST(CudaRuntime, InfoDescribesTheDevice) {
  TESSERA_SKIP_WITHOUT_GPU();
  const GpuInfo g = rt().info(0);
  EXPECT_EQ(g.ordinal, 0);
  EXPECT_FALSE(g.name.empty());
  // nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  ASSERT_EQ(g.uuid.size(), 40u) << g.uuid;
  EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u) << g.uuid;
  for (std::size_t i = 4; i < g.uuid.size(); ++i) {
    if (i == 12 || i == 17 || i == 22 || i == 27) EXPECT_EQ(g.uuid[i], '-') << g.uuid;
    else EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(g.uuid[i]))) << g.uuid;
  }
  EXPECT_FALSE(g.pci_bus_id.empty());
  EXPECT_TRUE(contains(g.pci_bus_id, ":")) << g.pci_bus_id;
  EXPECT_GT(g.total_memory, 0u);
  EXPECT_GE(g.cc_major, 1);
  EXPECT_EQ(rt().memory_limit(0), g.total_memory);  // no limit set: the device's size
  EXPECT_EQ(rt().info(0).uuid, g.uuid);             // stable
}

TEST(CudaRuntime, CopiesRoundTripThroughDeviceAndPinnedMemory) {
  TESSERA_SKIP_WITHOUT_GPU();
  rt().set_device(0);
  const StreamView s = rt().thread_stream(0);
  std::vector<double> host(100'003);
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal;
  for (auto& v : host) v = normal(gen);
  const std::size_t bytes = host.size() * sizeof(double);

  auto d1 = rt().allocate(bytes, 0, s);
  auto d2 = rt().allocate(bytes, 0, s);
  auto pinned = rt().allocate_pinned(bytes);
  EXPECT_EQ(pinned->kind(), MemoryKind::PinnedHost);
  EXPECT_EQ(pinned->size(), bytes);
  std::memset(pinned->data(), 0, bytes);  // readable and writable from the host
  rt().copy_async(d1->data(), host.data(), bytes, s);          // host -> device
  rt().copy_async(d2->data(), d1->data(), bytes, s);           // device -> device
  rt().copy_async(pinned->data(), d2->data(), bytes, s);       // device -> pinned
  std::vector<double> back(host.size());
  rt().copy_async(back.data(), pinned->data(), bytes, s);      // pinned -> host
  rt().synchronize(s);
  EXPECT_EQ(std::memcmp(pinned->data(), host.data(), bytes), 0);
  EXPECT_EQ(back, host);
  rt().copy_async(nullptr, nullptr, 0, s);  // nothing to copy: no call

  // Freed pinned buffers are reused; a fresh one of the same size is usable again.
  pinned.reset();
  auto again = rt().allocate_pinned(bytes);
  EXPECT_EQ(again->kind(), MemoryKind::PinnedHost);
  std::memset(again->data(), 1, bytes);
}

TEST(CudaRuntime, ToDeviceAndToHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::vector<std::int32_t> values(12);
  std::iota(values.begin(), values.end(), -5);
  const Block h = Block::from_values<std::int32_t>(values, {3, 4});
  const Block d = to_device(h, 0);
  EXPECT_EQ(d.memory_kind(), MemoryKind::Device);
  EXPECT_EQ(d.buffer()->device(), 0);
  EXPECT_EQ(d.dtype(), DType::Int32);
  EXPECT_EQ(d.shape(), h.shape());
  EXPECT_EQ(to_device(d, 0).buffer(), d.buffer());  // already there: no copy
  const Block back = to_host(d);
  EXPECT_EQ(back.memory_kind(), MemoryKind::Host);
  EXPECT_EQ(back.shape(), h.shape());
  EXPECT_EQ(std::memcmp(back.raw(), h.raw(), h.nbytes()), 0);
  EXPECT_EQ(to_host(h).buffer(), h.buffer());  // a host block is returned as is
  tessera_cuda_test::expect_same_block(h, d, "to_device");
}

TEST(CudaRuntime, EachThreadHasItsOwnStream) {
  TESSERA_SKIP_WITHOUT_GPU();
  const StreamView mine = rt().thread_stream(0);
  ASSERT_FALSE(mine.is_default());
  EXPECT_EQ(rt().thread_stream(0), mine);
  StreamView other;
  StreamView other_again;
  std::thread t([&] {
    other = rt().thread_stream(0);
    other_again = rt().thread_stream(0);
  });
  t.join();
  EXPECT_FALSE(other.is_default());
  EXPECT_NE(other, mine);
  EXPECT_EQ(other, other_again);
}

TEST(CudaRuntime, BuffersMayBeFreedOnAnyThread) {
  TESSERA_SKIP_WITHOUT_GPU();
  const std::size_t before = rt().memory_in_use(0);
  auto b = rt().allocate(4096, 0);
  rt().synchronize(rt().thread_stream(0));
  EXPECT_EQ(rt().memory_in_use(0), before + 4096);
  std::thread([b = std::move(b)]() mutable { b.reset(); }).join();
  EXPECT_EQ(rt().memory_in_use(0), before);
}

TEST(CudaRuntime, ConcurrentAllocationsFromSeveralThreads) {
  TESSERA_SKIP_WITHOUT_GPU();
  const std::size_t before = rt().memory_in_use(0);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        rt().set_device(0);
        const StreamView s = rt().thread_stream(0);
        std::mt19937 gen(static_cast<unsigned>(t));
        std::vector<std::shared_ptr<Buffer>> live;
        for (int i = 0; i < 200; ++i) {
          const std::size_t n = 1 + gen() % (256 * 1024);
          auto b = rt().allocate(n, 0, s);
          if (cudaMemsetAsync(b->data(), t, n, static_cast<cudaStream_t>(s.native())) != cudaSuccess) ++failures;
          live.push_back(std::move(b));
          if (live.size() > 8) live.erase(live.begin());
        }
        rt().synchronize(s);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(rt().memory_in_use(0), before);
}

}  // namespace
