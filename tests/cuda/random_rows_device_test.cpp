// multinomial's and multivariate_hypergeometric's rows on a GPU (cuda/random_rows.cu, registered by
// cuda/random_rows_op.cpp): arrays placed with to_device() run the device variant, one thread per
// row, and give the host's counts for several chunkings and both methods. Counts are compared
// exactly, as the blockwise tests compare the integer distributions: CUDA's log and lgamma could
// move a rejection decision only within an ulp of its threshold (docs/array-random-io.md).
// Skips without a GPU; tests/array/random_vector_test.cpp runs the same host half with a stand-in
// kernel on any machine.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "array/random_vector.hpp"
#include "gpu_test_util.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

TEST(RandomRowsDevice, DeviceRowsMatchTheHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(OpRegistry::global().get(detail::kRandomRowsOp).device) << "no device variant registered";
  using Make = std::function<Array(const ChunkSpec&)>;
  const std::vector<std::pair<std::string, Make>> makers{
      {"multinomial", [](const ChunkSpec& c) {
         return random::Generator(11).multinomial(1000, {0.05, 0.3, 0.0, 0.15, 0.5}, {301, 17}, c);
       }},
      {"marginals", [](const ChunkSpec& c) {
         return random::Generator(11).multivariate_hypergeometric({40, 0, 700, 55, 9}, 500, {301, 17}, c, "marginals");
       }},
      {"count", [](const ChunkSpec& c) {
         return random::Generator(11).multivariate_hypergeometric({40, 0, 700, 55, 9}, 500, {301, 17}, c, "count");
       }},
  };
  for (const auto& [what, make] : makers) {
    const Block want = make(ChunkSpec{-1}).compute();
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{64, 5}, ChunkSpec{1, 17}, ChunkSpec{300, 1}}) {
      SCOPED_TRACE(what + " chunks " + std::to_string(c[0]));
      const Array dev = make(c).to_device();
      ASSERT_EQ(dev.target(), Target::Device);
      const Block on_gpu = dev.compute(local_executor(), Target::Device);
      EXPECT_EQ(on_gpu.memory_kind(), MemoryKind::Device);
      const Block got = to_host(on_gpu);
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(got.to_doubles(), want.to_doubles());
    }
  }
}

}  // namespace
