// Edge cases: rows longer than the kernels' 1024-element tile, empty arrays and slices,
// 0-d persisted results, generator views, bool fills.
#include <limits>

#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

TEST(ArrayEdgeCases, RowsLongerThanOneTile) {
  // 2500 elements per row: the kernels work in tiles of 1024 along the last axis.
  const Ref a = make_ref(DType::Float64, {3, 2500}, [](auto& i) { return std::sin(double(i[0] * 2500 + i[1])) * 10; });
  for (ChunkSpec c : {ChunkSpec{-1}, ChunkSpec{2, 1200}, ChunkSpec{3, 2048}}) {
    Array x = to_array(a, c);
    for (const auto& e : executors()) {
      SCOPED_TRACE(shape_to_string(c) + " " + e.name);
      // Element-wise, with a strided (negative) view.
      const Ref want = make_ref(DType::Float64, {3, 1250}, [&](auto& i) { return a.at({i[0], 2499 - 2 * i[1]}) * 2 + 1; });
      EXPECT_TRUE(block_matches((x[{all(), step(-2)}] * 2.0 + 1.0).compute(*e.ex), want));
      // Reductions across tiles.
      double s = 0, mn = 1e300;
      std::int64_t arg = 0;
      for (std::int64_t k = 0; k < a.size(); ++k) {
        s += a.v[k];
        if (a.v[k] < mn) { mn = a.v[k]; arg = k; }
      }
      EXPECT_NEAR(x.sum().compute(*e.ex).item(), s, 1e-9);
      EXPECT_EQ(x.min().compute(*e.ex).item(), mn);
      EXPECT_EQ(x.argmin().compute(*e.ex).item(), double(arg));
      const Ref rowmax = make_ref(DType::Int64, {3}, [&](auto& i) {
        std::int64_t best = 0;
        for (std::int64_t k = 1; k < 2500; ++k) if (a.at({i[0], k}) > a.at({i[0], best})) best = k;
        return double(best);
      });
      EXPECT_TRUE(block_matches(x.argmax(1).compute(*e.ex), rowmax));
      double mean = s / a.size(), m2 = 0;
      for (double v : a.v) m2 += (v - mean) * (v - mean);
      EXPECT_NEAR(x.var().compute(*e.ex).item(), m2 / a.size(), 1e-10);
    }
  }
  // Random rows longer than a tile, sliced: same elements as the full computation.
  const Ref r = ref_from_block(compute_sync(random::normal(4, 0, 1, {2, 3000}, {-1})));
  check_chunked([](const ChunkSpec& c) { return random::normal(4, 0, 1, {2, 3000}, c)[{all(), slice(5, std::nullopt, 3)}]; },
                make_ref(DType::Float64, {2, 999}, [&](auto& i) { return r.at({i[0], 5 + 3 * i[1]}); }), kRandomTol);
}

TEST(ArrayEdgeCases, EmptySlicesAndArrays) {
  const Ref a = sample(DType::Float64, {6, 5});
  for (const auto& c : chunkings())
    for (const auto& e : executors()) {
      SCOPED_TRACE(std::string(c.name) + " " + e.name);
      Array x = to_array(a, c.spec);
      Array empty = x[{slice(4, 1)}];
      EXPECT_EQ(empty.shape(), (Shape{0, 5}));
      Block b = (empty * 2.0).compute(*e.ex);
      EXPECT_EQ(b.shape(), (Shape{0, 5}));
      EXPECT_EQ(empty.sum().compute(*e.ex).item(), 0.0);
      EXPECT_TRUE(block_matches(empty.sum({.axes = {0}}).compute(*e.ex), make_ref(DType::Float64, {5}, [](auto&) { return 0.0; })));
      EXPECT_TRUE(std::isnan(empty.mean().compute(*e.ex).item()));
      EXPECT_EQ((x[{all(), slice(5, std::nullopt)}].compute(*e.ex).shape()), (Shape{6, 0}));
      EXPECT_EQ((x[{slice(10, 20), step(-1)}].compute(*e.ex).shape()), (Shape{0, 5}));
      EXPECT_EQ(x[{slice(-1, -7, 1)}].compute(*e.ex).shape(), (Shape{0, 5}));
    }
  Array z = zeros({0, 3}, {2});
  EXPECT_EQ(compute_sync(z + 1.0).shape(), (Shape{0, 3}));
  EXPECT_EQ(compute_sync(z.sum()).item(), 0.0);
  EXPECT_EQ(compute_sync(z[{slice(0, 0)}]).shape(), (Shape{0, 3}));
}

TEST(ArrayEdgeCases, PersistedZeroDResultInFurtherOps) {
  const Ref a = sample(DType::Float64, {4, 6});
  double s = 0;
  for (double v : a.v) s += v;
  for (const auto& e : executors()) {
    Array x = to_array(a, {3});
    Array total = x.sum().persist(*e.ex);
    EXPECT_EQ(total.ndim(), 0);
    EXPECT_NEAR(total.compute(*e.ex).item(), s, 1e-12);
    EXPECT_TRUE(block_matches((x / total).compute(*e.ex), make_ref(DType::Float64, {4, 6}, [&](auto& i) { return a.at(i) / s; })));
  }
}

TEST(ArrayEdgeCases, GeneratorViews) {
  // arange reversed, strided and transposed through reshape-free views.
  check_chunked([](const ChunkSpec& c) { return arange(10, c[0])[{step(-1)}]; },
                make_ref(DType::Int64, {10}, [](auto& i) { return double(9 - i[0]); }));
  check_chunked([](const ChunkSpec& c) { return arange(2, 30, 3, c[0], DType::Float64)[{slice(-2, 0, -3)}]; },
                make_ref(DType::Float64, {3}, [](auto& i) { return 2 + 3 * double(8 - 3 * i[0]); }));  // 26, 17, 8
  check_chunked([](const ChunkSpec& c) { return arange(5, c[0])[{newaxis}] * arange(4, c[0])[{all(), newaxis}]; },
                make_ref(DType::Int64, {4, 5}, [](auto& i) { return double(i[0] * i[1]); }));
  check_chunked([](const ChunkSpec& c) { return full({3, 4}, 2.0, c)[{1}] + ones({4}, c); },
                make_ref(DType::Float64, {4}, [](auto&) { return 3.0; }));
}

TEST(ArrayEdgeCases, FullOfBoolAndInt32Values) {
  // NumPy: bool(0.5) is True; int32 fills combine as int32.
  check_chunked([](const ChunkSpec& c) { return full({5}, 0.5, c, DType::Bool) && ones({5}, c, DType::Bool); },
                make_ref(DType::Bool, {5}, [](auto&) { return 1.0; }));
  check_chunked([](const ChunkSpec& c) { return full({5}, 0.5, c, DType::Bool).astype(DType::Int64) + 1; },
                make_ref(DType::Int64, {5}, [](auto&) { return 2.0; }));
  check_chunked([](const ChunkSpec& c) { return full({4}, 7, c, DType::Int32) * full({4}, -3, c, DType::Int32); },
                make_ref(DType::Int32, {4}, [](auto&) { return -21.0; }));
  check_chunked([](const ChunkSpec& c) { return full({4}, 0.1, c, DType::Float32) + full({4}, 0.2, c, DType::Float32); },
                make_ref(DType::Float32, {4}, [](auto&) { return double(0.1f + 0.2f); }), {0, 0});
}

}  // namespace
