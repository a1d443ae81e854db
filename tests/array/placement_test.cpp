// Placement of arrays on the device (Array::to_device / to_host): which tasks lowering marks as
// device tasks, what it fuses, and what happens where no GPU is present. Runs without a GPU: the
// values of device computations are checked by tests/cuda/ on a GPU machine, and the data path
// with a fake device (host memory labelled Device) where the build has no CUDA back end.
#include <map>

#include "array_test_util.hpp"
#include "../support/fake_device.hpp"
#include "tessera/core/device.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"
#include "ops/task_serialize.hpp"

using namespace tessera_test;

namespace {

std::map<Target, std::size_t> count_targets(const Graph& g) {
  std::map<Target, std::size_t> n;
  for (const auto& [k, t] : g.tasks()) ++n[t.annotations.target];
  return n;
}

std::size_t tasks_with(const Graph& g, const std::string& op, Target target) {
  std::size_t n = 0;
  for (const auto& [k, t] : g.tasks()) n += t.op == op && t.annotations.target == target;
  return n;
}

TEST(ArrayPlacement, HostByDefaultAndDeviceAfterToDevice) {
  Array x = random::normal(1, 10.0, 1.0, {40, 40}, {10, 10});
  EXPECT_EQ(x.target(), Target::Host);
  Array xd = x.to_device();
  EXPECT_EQ(xd.target(), Target::Device);
  EXPECT_EQ(xd.to_device().name(), xd.name());  // already there: the same array
  EXPECT_NE(xd.name(), x.name());               // different keys for differently placed chunks

  std::vector<Key> keys;
  const Graph host = (x + 1)[{step(2), step(2)}].sum().to_graph(&keys);
  EXPECT_EQ(count_targets(host)[Target::Device], 0u);
  const Graph dev = (xd + 1)[{step(2), step(2)}].sum().to_graph(&keys);
  // Every task of the seed expression runs on the device, and the generator fuses into the
  // per-chunk programs as on the host: the same number of tasks.
  EXPECT_EQ(count_targets(dev)[Target::Host], 0u);
  EXPECT_EQ(dev.size(), host.size());
  EXPECT_EQ(tasks_with(dev, "tessera.array.blockwise", Target::Device), 16u);
}

TEST(ArrayPlacement, OperationsWithADeviceInputRunOnTheDevice) {
  Array h = arange(0, 100, 1, 25, DType::Float64) * 2.0;  // host
  Array d = random::uniform(3, 0.0, 1.0, {100}, {25}).to_device();
  Array z = h + d;
  EXPECT_EQ(z.target(), Target::Device);
  EXPECT_EQ((z.sum()).target(), Target::Device);
  EXPECT_EQ(z.reshape({10, 10}).target(), Target::Device);
  EXPECT_EQ(z.rechunk({50}).target(), Target::Device);
  EXPECT_EQ(concatenate({h, d}, 0).target(), Target::Device);
  EXPECT_EQ(h.target(), Target::Host);

  std::vector<Key> keys;
  const Graph g = z.to_graph(&keys);
  // The host operand is not fused into the device programs: it is computed by its own host
  // tasks, and the device tasks read it (run_op copies it over).
  EXPECT_EQ(tasks_with(g, "tessera.array.blockwise", Target::Host), 4u);
  EXPECT_EQ(tasks_with(g, "tessera.array.blockwise", Target::Device), 4u);
  for (const auto& [k, t] : g.tasks())
    if (t.annotations.target == Target::Device) { EXPECT_EQ(t.dependencies().size(), 1u) << k; }
}

TEST(ArrayPlacement, ToHostSplitsTheComputation) {
  Array d = (random::normal(5, 0.0, 1.0, {64}, {16}).to_device() * 3.0);
  Array h = d.to_host() + 1.0;
  EXPECT_EQ(h.target(), Target::Host);
  std::vector<Key> keys;
  const Graph g = h.to_graph(&keys);
  EXPECT_EQ(tasks_with(g, "tessera.array.blockwise", Target::Device), 4u);
  EXPECT_EQ(tasks_with(g, "tessera.array.blockwise", Target::Host), 4u);
  // A generator placed back on the host is simply generated there again.
  Array r = random::normal(5, 0.0, 1.0, {64}, {16});
  EXPECT_EQ(r.to_device().to_host().target(), Target::Host);
  const Graph g2 = r.to_device().to_host().to_graph(&keys);
  EXPECT_EQ(count_targets(g2)[Target::Device], 0u);
}

TEST(ArrayPlacement, DeviceTargetSurvivesTaskSerialisation) {
  Array d = full({8}, 2.0, {4}).to_device();
  std::vector<Key> keys;
  Graph g = d.to_graph(&keys);
  for (const auto& [k, t] : g.tasks()) {
    const Object o = to_object(t, "Task");
    const Task back = from_object<Task>(o);
    EXPECT_EQ(back.annotations.target, Target::Device) << k;
  }
}

TEST(ArrayPlacement, ComputingOnTheDeviceWithoutAGpuSaysSo) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  Array d = (random::normal(1, 0.0, 1.0, {100}, {50}).to_device() + 1).sum();
  try {
    d.compute();
    FAIL() << "computed a device array without a GPU";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("targets a GPU but this process has none"), std::string::npos) << what;
  }
}

TEST(ArrayPlacement, FakeDeviceComputesTheSameValues) {
  // With a fake device (host memory labelled Device), ops without a device variant run their
  // host variant on copies: the data path (moves, results brought back by compute) is exercised
  // here. Where the CUDA back end is loaded its real kernels would run on fake memory: skip.
  if (OpRegistry::global().get("tessera.array.blockwise").device)
    GTEST_SKIP() << "the CUDA back end is loaded; tests/cuda/ check device values on a GPU";
  ScopedFakeDevice gpu;
  Array x = random::normal(7, 10.0, 1.0, {60, 40}, {20, 15});
  const double host = (x + 1)[{step(2), step(2)}].sum().compute().item();
  const Block dev = (x.to_device() + 1)[{step(2), step(2)}].sum().compute();
  EXPECT_EQ(dev.memory_kind(), MemoryKind::Host);
  EXPECT_DOUBLE_EQ(dev.item(), host);
  const Block on_gpu = (x.to_device() + 1).sum().compute(local_executor(), Target::Device);
  EXPECT_EQ(on_gpu.memory_kind(), MemoryKind::Device);
  EXPECT_DOUBLE_EQ(to_host(on_gpu).item(), (x + 1).sum().compute().item());
  Array p = (x.to_device() * 2).persist();
  EXPECT_EQ(p.target(), Target::Device);
  const auto back = p.compute().to_doubles();
  const auto ref = (x * 2).compute().to_doubles();
  EXPECT_EQ(back, ref);
}

// A "device function" whose kernel is a host loop: with the fake device its memory is host memory.
Block fake_kernel_add(const OpContext& ctx, Block x, Block y) {
  EXPECT_EQ(x.memory_kind(), MemoryKind::Device);
  EXPECT_EQ(y.memory_kind(), MemoryKind::Device);
  EXPECT_FALSE(ctx.stream.is_default());
  Block out = device_block(x.dtype(), x.shape(), ctx.device, ctx.stream);
  for (std::int64_t i = 0; i < x.size(); ++i) out.data<double>()[i] = x.data<double>()[i] + y.data<double>()[i];
  return out;
}
TESSERA_REGISTER_DEVICE_FUNCTION_AS("test.placement.fake_kernel_add", fake_kernel_add);

TEST(ArrayPlacement, DeviceFunctionGetsDeviceBlocksAndItsResultComesBack) {
  ScopedFakeDevice gpu;
  Graph g;
  Task t{"sum-of-two", "test.placement.fake_kernel_add",
         {Arg(Value(Block::from_values<double>({1, 2, 3}, {3}))), Arg(Value(Block::from_values<double>({10, 20, 30}, {3})))},
         {}};
  t.annotations.target = Target::Device;
  g.set(t);
  const auto out = local_executor().get(g, {"sum-of-two"});
  const Block host = to_host(out.at(0).block());
  EXPECT_EQ(host.to_doubles(), (std::vector<double>{11, 22, 33}));
  // Host target: the op has no host variant, and says so.
  g.set(Task{"host-call", "test.placement.fake_kernel_add", t.args, {}});
  EXPECT_THROW(local_executor().get(g, {"host-call"}), Error);
}

}  // namespace
