// The gathers behind fancy indexing, masks and halos on a GPU: device results against the host's,
// both through the per-run copies (few runs) and through the element-gather kernel (many short
// runs: indices along the last axis, random masks, halos of thin rows). Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "array/gather.hpp"
#include "gpu_test_util.hpp"
#include "tessera/array.hpp"
#include "tessera/ops/registry.hpp"

namespace {

using namespace tessera;

Array random_array(DType dtype, Shape shape, ChunkSpec chunks, std::uint64_t seed) {
  Block b(dtype, shape);
  std::mt19937_64 gen(seed);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t i = 0; i < b.size(); ++i)
      static_cast<T*>(b.raw())[i] = static_cast<T>(static_cast<double>(gen() % 1000) - static_cast<double>(gen() % 3));
  });
  return from_block(b, chunks);
}

void expect_same(const Array& host, const Array& device, const char* what) {
  ASSERT_EQ(device.target(), Target::Device) << what;
  const Block h = host.compute(), d = device.compute();
  ASSERT_EQ(h.shape(), d.shape()) << what;
  EXPECT_EQ(h.to_doubles(), d.to_doubles()) << what;
}

TEST(GatherDevice, TakeMasksAndHalosMatchTheHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  EXPECT_TRUE(OpRegistry::global().get(detail::kGatherElementsOp).device);
  for (DType t : {DType::Float64, DType::Float32, DType::Int32, DType::Int64, DType::Bool}) {
    SCOPED_TRACE(dtype_name(t));
    const Array x = random_array(t, {300, 200}, {128, 64}, 7);
    const Array xd = x.to_device();
    std::vector<std::int64_t> rows{5, 299, 0, 0, 130, -1}, cols;
    std::mt19937_64 gen(3);
    for (int i = 0; i < 500; ++i) cols.push_back(static_cast<std::int64_t>(gen() % 200));
    expect_same(take(x, rows, 0), take(xd, rows, 0), "take rows (copies)");
    expect_same(take(x, cols, 1), take(xd, cols, 1), "take columns (kernel)");
    const Array mask = random_array(DType::Int64, {300, 200}, {128, 64}, 9) > 500;
    expect_same(x[mask], xd[mask.to_device()], "mask (kernel)");
    expect_same(compress(mask[{all(), 3}], x, 0), compress(mask[{all(), 3}].to_device(), xd, 0), "compress rows");
    expect_same(argwhere(x), argwhere(xd), "argwhere");
    for (const Boundary b : {Boundary("periodic"), Boundary("reflect"), Boundary("nearest"), Boundary(7)}) {
      expect_same(overlap(x, {3, 2}, {b}), overlap(xd, {3, 2}, {b}), "overlap");
      expect_same(trim_internal(overlap(x, {3}, {b}), {3}, {b}), trim_internal(overlap(xd, {3}, {b}), {3}, {b}), "trim");
    }
    expect_same(x[mask].sum(), xd[mask.to_device()].sum(), "sum of a mask's selection");
  }
}

}  // namespace
