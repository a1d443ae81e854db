// reshape_blockwise: the exact element order Dask gives (dask.array.reshape_blockwise, 2026.8,
// run on the same inputs), the round trip, and the errors.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

Array iota(Shape shape, Chunks chunks) {
  return arange(0, shape_size(shape), 1, shape_size(shape), DType::Int64).reshape(shape).rechunk(chunks);
}

std::vector<std::int64_t> values(const Array& a) {
  const Block b = a.compute(local_executor("threads"));
  const auto* p = b.data<std::int64_t>();
  return {p, p + b.size()};
}

TEST(ReshapeBlockwise, FewerDimensionsAsDask) {
  const Array x = iota({6, 4}, {{3, 3}, {2, 2}});
  const Array y = reshape_blockwise(x, {24});
  EXPECT_EQ(y.chunks(), (Chunks{{6, 6, 6, 6}}));
  EXPECT_EQ(values(y), (std::vector<std::int64_t>{0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11, 12, 13, 16, 17, 20, 21, 14, 15,
                                                  18, 19, 22, 23}));
  const Array z = iota({3, 4, 5}, {{2, 1}, {2, 2}, {3, 2}});
  const Array a = reshape_blockwise(z, {12, 5});
  EXPECT_EQ(a.chunks(), (Chunks{{4, 4, 2, 2}, {3, 2}}));
  EXPECT_EQ(values(a), (std::vector<std::int64_t>{0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  20, 21, 22, 23, 24,
                                                  25, 26, 27, 28, 29, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                                  30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
                                                  45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59}));
  const Array b = reshape_blockwise(z, {3, 20});
  EXPECT_EQ(b.chunks(), (Chunks{{2, 1}, {6, 4, 6, 4}}));
  std::vector<std::int64_t> row0{0, 1, 2, 5, 6, 7, 3, 4, 8, 9, 10, 11, 12, 15, 16, 17, 13, 14, 18, 19};
  auto got = values(b);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 20; ++c) ASSERT_EQ(got[static_cast<std::size_t>(r * 20 + c)], row0[static_cast<std::size_t>(c)] + 20 * r);
  EXPECT_EQ(reshape_blockwise(z, {-1}).chunks(), (Chunks{{12, 8, 12, 8, 6, 4, 6, 4}}));
  // Length-1 axes join a neighbour.
  EXPECT_EQ(values(reshape_blockwise(iota({3, 1, 4}, {{2, 1}, {1}, {2, 2}}), {3, 4})),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(ReshapeBlockwise, MoreDimensionsWithChunksAsDask) {
  const Array x = iota({6, 4}, {{3, 3}, {2, 2}});
  const Array y = reshape_blockwise(x, {3, 2, 4}, Chunks{{3}, {1, 1}, {2, 2}});
  EXPECT_EQ(y.shape(), (Shape{3, 2, 4}));
  EXPECT_EQ(values(y), (std::vector<std::int64_t>{0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11,
                                                  20, 21, 22, 23}));
  // Back onto the input's chunks: the input again.
  const Array z = iota({3, 4, 5}, {{2, 1}, {2, 2}, {3, 2}});
  EXPECT_EQ(values(reshape_blockwise(reshape_blockwise(z, {12, 5}), {3, 4, 5}, z.chunks())), values(z));
  // The same shape and chunks: the array itself; a reduction does not care about the order.
  EXPECT_EQ(reshape_blockwise(x, {6, 4}).expr(), x.expr());
  EXPECT_EQ(reshape_blockwise(z, {-1}).sum().compute(local_executor("threads")).to_doubles()[0], 59.0 * 60 / 2);
}

TEST(ReshapeBlockwise, Errors) {
  const Array x = iota({6, 4}, {{3, 3}, {2, 2}});
  EXPECT_THROW(reshape_blockwise(x, {24}, Chunks{{12, 12}}), Error);       // chunks while dimensions decrease
  EXPECT_THROW(reshape_blockwise(x, {4, 6}), Error);                       // as many dimensions, no chunks
  EXPECT_THROW(reshape_blockwise(x, {5, 5}), ShapeError);                  // another size
  EXPECT_THROW(reshape_blockwise(x, {-1, -1}), ShapeError);                // two inferred extents
  EXPECT_THROW(reshape_blockwise(x, {2, 3, 4}, Chunks{{2}, {3}, {4}}), ShapeError);  // 1 chunk for 4
  EXPECT_THROW(reshape_blockwise(x, {2, 3, 4}, Chunks{{1, 1}, {3}, {1, 3}}), ShapeError);  // sizes differ
  EXPECT_THROW(reshape_blockwise(iota({3, 4, 5}, {{3}, {4}, {5}}), {6, 10}), ShapeError);  // not a merge
}

}  // namespace
