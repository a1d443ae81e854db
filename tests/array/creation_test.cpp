// Array creation: zeros/ones/full/arange/scalar/from_block/from_vector, chunk grids, 0-d
// results, persist.
#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

const DType kAllDTypes[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};

TEST(ArrayCreation, ZerosOnesFullEveryDTypeAndChunking) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Shape s{5, 7};
    check_chunked([&](const ChunkSpec& c) { return zeros(s, c, t); }, make_ref(t, s, [](auto&) { return 0.0; }));
    check_chunked([&](const ChunkSpec& c) { return ones(s, c, t); }, make_ref(t, s, [](auto&) { return 1.0; }));
  }
  check_chunked([](const ChunkSpec& c) { return full({4, 3, 5}, 2.5, c); },
                make_ref(DType::Float64, {4, 3, 5}, [](auto&) { return 2.5; }));
  check_chunked([](const ChunkSpec& c) { return full({10}, -7, c, DType::Int32); },
                make_ref(DType::Int32, {10}, [](auto&) { return -7.0; }));
  // A value that float32 cannot hold exactly is stored rounded to float32.
  check_chunked([](const ChunkSpec& c) { return full({6}, 0.1, c, DType::Float32); },
                make_ref(DType::Float32, {6}, [](auto&) { return static_cast<double>(0.1f); }), {0, 0});
}

TEST(ArrayCreation, DefaultDTypeIsFloat64AndChunksAreRegular) {
  Array z = zeros({10, 4}, {3, 2});
  EXPECT_EQ(z.dtype(), DType::Float64);
  EXPECT_EQ(z.shape(), (Shape{10, 4}));
  EXPECT_EQ(z.chunks(), (Chunks{{3, 3, 3, 1}, {2, 2}}));
  EXPECT_EQ(z.num_chunks(), 8);
  EXPECT_EQ(z.ndim(), 2);
  EXPECT_EQ(z.size(), 40);
  EXPECT_EQ(z.nbytes(), 320u);
  // One size given for a 2-d array applies to every axis; -1 means the whole axis.
  EXPECT_EQ(ones({5, 5}, {2}).chunks(), (Chunks{{2, 2, 1}, {2, 2, 1}}));
  EXPECT_EQ(ones({5, 6}, {-1, 4}).chunks(), (Chunks{{5}, {4, 2}}));
}

TEST(ArrayCreation, ArangeIntegerDefault) {
  for (std::int64_t chunk : {-1, 1, 3, 4, 10, 25}) {
    SCOPED_TRACE(chunk);
    Array a = arange(10, chunk);
    EXPECT_EQ(a.dtype(), DType::Int64);
    EXPECT_EQ(a.shape(), Shape{10});
    for (const auto& e : executors())
      EXPECT_TRUE(block_matches(a.compute(*e.ex), make_ref(DType::Int64, {10}, [](auto& i) { return double(i[0]); })));
  }
}

TEST(ArrayCreation, ArangeStartStopStepAndDTypes) {
  // Float step: ceil((stop - start) / step) elements.
  check_chunked([](const ChunkSpec& c) { return arange(0.5, 3.0, 0.5, c[0], DType::Float64); },
                ref_of(DType::Float64, {5}, {0.5, 1.0, 1.5, 2.0, 2.5}));
  // Negative step counts down.
  check_chunked([](const ChunkSpec& c) { return arange(10, 0, -3, c[0], DType::Int64); },
                ref_of(DType::Int64, {4}, {10, 7, 4, 1}));
  check_chunked([](const ChunkSpec& c) { return arange(-4, 5, 2, c[0], DType::Int32); },
                ref_of(DType::Int32, {5}, {-4, -2, 0, 2, 4}));
  // Empty range.
  Array e = arange(5, 5, 1, 2);
  EXPECT_EQ(e.shape(), Shape{0});
  EXPECT_EQ(compute_sync(e).size(), 0);
  EXPECT_THROW(arange(0, 5, 0, 2), Error);
}

TEST(ArrayCreation, FromVectorRoundTripsEveryDTypeAndChunking) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    for (const Shape& s : {Shape{10}, Shape{4, 7}, Shape{3, 4, 5}}) {
      const Ref r = sample(t, s);
      check_chunked([&](const ChunkSpec& c) { return to_array(r, c); }, r, {0, 0});
    }
  }
}

TEST(ArrayCreation, FromVectorTemplatesAndChunkGrid) {
  std::vector<std::int32_t> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i * i - 20;
  Array a = from_vector(v, {3, 4}, {2, 3});
  EXPECT_EQ(a.dtype(), DType::Int32);
  EXPECT_EQ(a.chunks(), (Chunks{{2, 1}, {3, 1}}));
  Block b = compute_sync(a);
  ASSERT_EQ(b.dtype(), DType::Int32);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(b.data<std::int32_t>()[i], v[i]);

  std::vector<bool> bv{true, false, true, true, false};
  Array bb = from_vector(bv, {5}, {2});
  EXPECT_EQ(bb.dtype(), DType::Bool);
  EXPECT_TRUE(block_matches(compute_sync(bb), ref_of(DType::Bool, {5}, {1, 0, 1, 1, 0})));

  EXPECT_THROW(from_vector(std::vector<double>(5), {2, 3}, {1}), ShapeError);
}

TEST(ArrayCreation, FromBlockZeroD) {
  Array a = from_block(Block::scalar<double>(4.25), {});
  EXPECT_EQ(a.ndim(), 0);
  EXPECT_EQ(a.num_chunks(), 1);
  EXPECT_EQ(compute_sync(a).item(), 4.25);
  EXPECT_EQ(compute_sync(a * 2.0).item(), 8.5);
}

TEST(ArrayCreation, ScalarIsZeroDimensional) {
  Array s = scalar(3.5);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.dtype(), DType::Float64);
  EXPECT_EQ(s.size(), 1);
  for (const auto& e : executors()) EXPECT_EQ(s.compute(*e.ex).item(), 3.5);
  Array i = scalar(7, DType::Int32);
  EXPECT_EQ(i.dtype(), DType::Int32);
  Block b = compute_sync(i);
  EXPECT_EQ(b.dtype(), DType::Int32);
  EXPECT_EQ(b.shape(), Shape{});
  EXPECT_EQ(b.item(), 7);
}

TEST(ArrayCreation, ZeroDResultOfAReductionHasItem) {
  const Ref r = sample(DType::Float64, {6, 5});
  double want = 0;
  for (double x : r.v) want += x;
  for (const auto& c : chunkings())
    for (const auto& e : executors()) {
      Block b = to_array(r, c.spec).sum().compute(*e.ex);
      EXPECT_EQ(b.shape(), Shape{});
      EXPECT_NEAR(b.item(), want, 1e-12 * std::fabs(want) + 1e-12) << c.name << " " << e.name;
    }
}

TEST(ArrayCreation, PersistThenFurtherOps) {
  const Ref r = sample(DType::Float64, {7, 6});
  for (const auto& c : chunkings())
    for (const auto& e : executors()) {
      SCOPED_TRACE(std::string(c.name) + " " + e.name);
      Array x = (to_array(r, c.spec) * 2.0 + 1.0);
      Array p = x.persist(*e.ex);
      EXPECT_EQ(p.shape(), x.shape());
      EXPECT_EQ(p.chunks(), x.chunks());
      EXPECT_EQ(p.dtype(), x.dtype());
      // The persisted array is a source: its graph has no blockwise work left.
      std::vector<Key> keys;
      Graph g = p.to_graph(&keys);
      EXPECT_EQ(keys.size(), static_cast<std::size_t>(p.num_chunks()));
      for (const auto& [k, t] : g.tasks()) EXPECT_NE(t.op, "tessera.array.blockwise");
      Array y = (p - 1.0)[{step(2), slice(1, std::nullopt)}].sum({.axes = {0}});
      const Ref want = make_ref(DType::Float64, {5}, [&](auto& i) {
        double s = 0;
        for (int row = 0; row < 7; row += 2) s += r.at({row, i[0] + 1}) * 2.0;
        return s;
      });
      EXPECT_TRUE(block_matches(y.compute(*e.ex), want));
      // Persisting a random array freezes its values.
      Array rnd = random::uniform(5, 0, 1, {4, 4}, c.spec).persist(*e.ex);
      EXPECT_TRUE(block_matches(rnd.compute(*e.ex), ref_from_block(compute_sync(rnd)), 0, 0));
    }
}

TEST(ArrayCreation, DefaultConstructedArrayThrows) {
  Array a;
  EXPECT_FALSE(a.valid());
  EXPECT_THROW(a.shape(), Error);
  EXPECT_THROW((void)(a + 1.0), Error);
}

TEST(ArrayCreation, NegativeExtentIsAShapeError) {
  EXPECT_THROW(zeros({-1, 3}, {1}), ShapeError);
  EXPECT_THROW(random::normal(1, 0, 1, {3, -2}, {1}), ShapeError);
}

}  // namespace
