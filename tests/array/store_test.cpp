// store(): an array written chunk by chunk into a host Block or a callback, on any executor.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "../distributed/cluster_fixture.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

std::vector<double> values_of(const Block& b) {
  const Block d = b.astype(DType::Float64);
  return std::vector<double>(d.data<double>(), d.data<double>() + d.size());
}

Block filled(Shape shape, double v) { return full(shape, v, ChunkSpec(std::vector<std::int64_t>(shape.size(), -1))).compute(); }

TEST(ArrayStore, IntoARegionOfABlockOnEachExecutor) {
  const Array x = random::normal(3, 0, 1, {70, 45}, {16, 10});
  const std::vector<double> want = values_of(x.compute());
  distributed::LocalCluster cluster(tessera_test::processes_over_tcp());
  distributed::Client client(cluster, tessera_test::client_options(cluster.token(), 10));
  ASSERT_TRUE(client.wait_for_workers(2, std::chrono::seconds(10)));
  std::vector<Executor*> executors{&local_executor("sync"), &local_executor("threads"), &client};
  for (Executor* ex : executors) {
    Block target = filled({80, 50}, -7.0);
    store(x, target, {4, 3}, *ex);
    const auto got = values_of(target);
    for (std::int64_t i = 0; i < 80; ++i)
      for (std::int64_t j = 0; j < 50; ++j) {
        const bool inside = i >= 4 && i < 74 && j >= 3 && j < 48;
        const double expect = inside ? want[static_cast<std::size_t>((i - 4) * 45 + (j - 3))] : -7.0;
        ASSERT_EQ(got[static_cast<std::size_t>(i * 50 + j)], expect) << ex->name() << " at " << i << ", " << j;
      }
  }
}

TEST(ArrayStore, ACallbackGetsEveryChunkOnceInBatchesOfTheGivenSize) {
  const Array x = arange(0, 1000, 1, 100).reshape({10, 100}).rechunk({{3, 3, 4}, {50, 50}});
  std::map<std::vector<std::int64_t>, Shape> seen;
  int calls = 0;
  // 800 bytes a batch: every chunk (at least 3 x 50 int64 = 1200 bytes) is a batch of its own.
  store(
      x,
      [&](const std::vector<std::int64_t>& offset, const Block& chunk) {
        ++calls;
        EXPECT_TRUE(seen.emplace(offset, chunk.shape()).second) << "a chunk written twice";
        const auto v = values_of(chunk);
        EXPECT_EQ(v.front(), static_cast<double>(offset[0] * 100 + offset[1]));
      },
      local_executor("threads"), 800);
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(seen.at({3, 50}), (Shape{3, 50}));
  EXPECT_EQ(seen.at({6, 0}), (Shape{4, 50}));
}

TEST(ArrayStore, ValuesAreCastToTheTargetsDtype) {
  Block target(DType::Int32, {4, 5});
  store(arange(0, 20, 1, 3).reshape({4, 5}).astype(DType::Float64) * 1.5, target);
  EXPECT_EQ(target.data<std::int32_t>()[3], 4);  // 4.5 truncated, as NumPy's assignment
  EXPECT_EQ(target.data<std::int32_t>()[19], 28);
}

TEST(ArrayStore, ASourceThatDoesNotFitRunsNothingAndSaysWhy) {
  Block target = filled({5, 5}, 0.0);
  try {
    store(ones({4, 4}, 2), target, {2, 0});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(store(ones({4, 4}, 2), target, {0}), ShapeError);
  EXPECT_THROW(store(ones({5, 5}, 2), StoreTarget{}), Error);
  for (double v : values_of(target)) EXPECT_EQ(v, 0.0);
  EXPECT_THROW(store({ones({2}, 1)}, {&target, &target}), Error);
}

}  // namespace
