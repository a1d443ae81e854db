// Ranges, matrices, grids, arrays like another, and chunk specifications (irregular, auto),
// against references written as plain loops over NumPy's definitions.
#include <cmath>
#include <limits>

#include "array_test_util.hpp"
#include "../support/fake_device.hpp"
#include "array/array_ops.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera_test;

namespace {

// NumPy's linspace: i * step + start, the last one exactly stop.
Ref linspace_ref(double start, double stop, std::int64_t num, bool endpoint) {
  const std::int64_t div = endpoint ? num - 1 : num;
  const double step = (stop - start) / static_cast<double>(div);
  return make_ref(DType::Float64, {num}, [&](auto& i) {
    if (endpoint && num > 1 && i[0] == num - 1) return stop;
    return div > 0 ? static_cast<double>(i[0]) * step + start : static_cast<double>(i[0]) * (stop - start) + start;
  });
}

// Device placement without a GPU: the fake device runs the host variants on "device" memory,
// so every task of the expression placed on the device must give the host's values.
void expect_same_on_fake_device(const Array& host, const Array& device) {
  ASSERT_EQ(device.target(), Target::Device);
  std::vector<Key> keys;
  const Graph g = device.to_graph(&keys);
  for (const auto& [k, t] : g.tasks())
    EXPECT_EQ(t.annotations.target, Target::Device) << "task " << k << " (" << t.op << ") runs on the host";
  if (OpRegistry::global().get(detail::kBlockwiseOp).device)
    return;  // the CUDA back end is loaded: tests/cuda/ checks device values on a GPU
  ScopedFakeDevice gpu;
  EXPECT_EQ(device.compute().to_doubles(), host.compute().to_doubles());
}

TEST(ArrayCreationMore, LinspaceIsNumPys) {
  for (auto [start, stop, num, endpoint] : std::vector<std::tuple<double, double, std::int64_t, bool>>{
           {0, 1, 5, true}, {2, 3, 4, false}, {-1, 7.5, 13, true}, {0.1, 0.7, 7, true}, {5, -5, 9, false},
           {3, 3, 4, true}, {1, 2, 1, true}, {1, 2, 1, false}, {1, 2, 0, true}}) {
    SCOPED_TRACE(std::to_string(start) + " " + std::to_string(stop) + " " + std::to_string(num));
    check_chunked([&](const ChunkSpec& c) { return linspace(start, stop, num, endpoint, c); },
                  linspace_ref(start, stop, num, endpoint), {0, 0});
  }
  auto [y, step] = linspace_with_step(0, 1, 5);
  EXPECT_EQ(step, 0.25);
  EXPECT_TRUE(std::isnan(linspace_with_step(0, 1, 1).second));
  EXPECT_EQ(linspace_with_step(0, 1, 4, false).second, 0.25);
  // An integer dtype floors (NumPy), so negative values go down.
  check_chunked([](const ChunkSpec& c) { return linspace(-2.5, 2.5, 6, true, c, DType::Int64); },
                ref_of(DType::Int64, {6}, {-3, -2, -1, 0, 1, 2}));
  check_chunked([](const ChunkSpec& c) { return linspace(0, 1, 3, true, c, DType::Float32); },
                ref_of(DType::Float32, {3}, {0, 0.5, 1}));
  EXPECT_THROW(linspace(0, 1, -1), Error);
}

TEST(ArrayCreationMore, LogspaceAndGeomspace) {
  const Ref lin = linspace_ref(0, 3, 7, true);
  Ref lg = lin;
  for (auto& v : lg.v) v = std::pow(10.0, v);
  check_chunked([](const ChunkSpec& c) { return logspace(0, 3, 7, true, 10.0, c); }, lg, {0, 0});
  Ref l2 = linspace_ref(1, 4, 3, false);
  for (auto& v : l2.v) v = std::pow(2.0, v);
  check_chunked([](const ChunkSpec& c) { return logspace(1, 4, 3, false, 2.0, c); }, l2, {0, 0});

  // geomspace: NumPy's logspace of the log10 ends, with both ends exact.
  auto geom = [](double s, double e, std::int64_t n, bool endpoint) {
    const double sign = s < 0 ? -1 : 1;
    Ref r = linspace_ref(std::log10(s / sign), std::log10(e / sign), n, endpoint);
    for (std::size_t i = 0; i < r.v.size(); ++i) {
      r.v[i] = std::pow(10.0, r.v[i]);
      if (i == 0) r.v[i] = s / sign;
      if (endpoint && n > 1 && i + 1 == r.v.size()) r.v[i] = e / sign;
      r.v[i] *= sign;
    }
    return r;
  };
  check_chunked([](const ChunkSpec& c) { return geomspace(1, 1000, 4, true, c); }, geom(1, 1000, 4, true), {0, 0});
  check_chunked([](const ChunkSpec& c) { return geomspace(3, 7, 9, true, c); }, geom(3, 7, 9, true), {0, 0});
  check_chunked([](const ChunkSpec& c) { return geomspace(-1, -1000, 5, false, c); }, geom(-1, -1000, 5, false), {0, 0});
  const Block g = geomspace(3, 7, 9).compute();
  EXPECT_EQ(g.data<double>()[0], 3.0);
  EXPECT_EQ(g.data<double>()[8], 7.0);
  EXPECT_THROW(geomspace(0, 1, 3), Error);
}

TEST(ArrayCreationMore, EyeIdentityAndTri) {
  for (auto [n, m, k] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {4, 4, 0}, {5, 3, 1}, {3, 6, -2}, {4, 5, 7}, {0, 3, 0}}) {
    SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(m) + " k=" + std::to_string(k));
    check_chunked([&](const ChunkSpec& c) { return eye(n, c, m, k); },
                  make_ref(DType::Float64, {n, m}, [&](auto& i) { return i[1] - i[0] == k ? 1.0 : 0.0; }));
    check_chunked([&](const ChunkSpec& c) { return tri(n, m, k, DType::Int32, c); },
                  make_ref(DType::Int32, {n, m}, [&](auto& i) { return i[1] - i[0] <= k ? 1.0 : 0.0; }));
  }
  check_chunked([](const ChunkSpec& c) { return identity(3, c, DType::Bool); },
                make_ref(DType::Bool, {3, 3}, [](auto& i) { return i[0] == i[1] ? 1.0 : 0.0; }));
  EXPECT_EQ(eye(5).chunks(), (Chunks{{5}, {5}}));  // auto: a small matrix is one chunk
  EXPECT_EQ(eye(10, 4).chunks(), (Chunks{{4, 4, 2}, {4, 4, 2}}));
  EXPECT_EQ(tri(3, 4, 0, DType::Bool).dtype(), DType::Bool);
  EXPECT_THROW(eye(-1), ShapeError);
}

TEST(ArrayCreationMore, TrilAndTriu) {
  const Ref m = sample(DType::Int64, {4, 5});
  for (std::int64_t k : {-2, -1, 0, 1, 3}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    check_expr({m}, [&](auto& a) { return tril(a[0], k); },
               make_ref(DType::Int64, {4, 5}, [&](auto& i) { return i[1] - i[0] <= k ? m.at(i) : 0.0; }));
    check_expr({m}, [&](auto& a) { return triu(a[0], k); },
               make_ref(DType::Int64, {4, 5}, [&](auto& i) { return i[1] - i[0] >= k ? m.at(i) : 0.0; }));
  }
  // A stack of matrices: the last two axes.
  const Ref s = sample(DType::Float32, {2, 3, 3});
  check_expr({s}, [](auto& a) { return triu(a[0], 1); },
             make_ref(DType::Float32, {2, 3, 3}, [&](auto& i) { return i[2] - i[1] >= 1 ? s.at(i) : 0.0; }));
  // A 1-d input counts as the rows of a square matrix (NumPy).
  const Ref v = sample(DType::Float64, {3});
  check_expr({v}, [](auto& a) { return tril(a[0]); },
             make_ref(DType::Float64, {3, 3}, [&](auto& i) { return i[1] <= i[0] ? v.at({i[1]}) : 0.0; }));
}

TEST(ArrayCreationMore, DiagBothWays) {
  const Ref v = sample(DType::Float64, {4});
  for (std::int64_t k : {0, 2, -1}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::int64_t n = 4 + std::abs(k);
    check_expr({v}, [&](auto& a) { return diag(a[0], k); }, make_ref(DType::Float64, {n, n}, [&](auto& i) {
                 if (i[1] - i[0] != k) return 0.0;
                 return v.at({k >= 0 ? i[0] : i[1]});
               }));
  }
  const Ref m = sample(DType::Int32, {4, 6});
  for (std::int64_t k : {0, 1, 4, -2, -3, 6}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::int64_t len = std::max<std::int64_t>(0, k >= 0 ? std::min<std::int64_t>(4, 6 - k) : std::min<std::int64_t>(4 + k, 6));
    check_expr({m}, [&](auto& a) { return diag(a[0], k); }, make_ref(DType::Int32, {len}, [&](auto& i) {
                 return k >= 0 ? m.at({i[0], i[0] + k}) : m.at({i[0] - k, i[0]});
               }));
  }
  check_chunked([](const ChunkSpec& c) { return diag(arange(0, 3, 1, c[0]) + 1); },
                ref_of(DType::Int64, {3, 3}, {1, 0, 0, 0, 2, 0, 0, 0, 3}));
  EXPECT_THROW(diag(zeros({2, 2, 2}, {-1})), ShapeError);
}

TEST(ArrayCreationMore, DiagonalOfStacksReadsOnlyTheChunksItCrosses) {
  const Ref a = sample(DType::Float64, {3, 4, 5});
  // Axis 1 and 2 (the last axis of the result is the diagonal), and axes 2 and 0 with an offset.
  check_expr({a}, [](auto& x) { return diagonal(x[0], 1, 1, 2); },
             make_ref(DType::Float64, {3, 4}, [&](auto& i) { return a.at({i[0], i[1], i[1] + 1}); }));
  check_expr({a}, [](auto& x) { return diagonal(x[0], -1, 2, 0); },
             make_ref(DType::Float64, {4, 3}, [&](auto& i) { return a.at({i[1], i[0], i[1] + 1}); }));
  // A diagonal of a chunked matrix: one task per diagonal piece, each reading one chunk (no
  // assemble task gathering a box of the matrix).
  Array x = from_block(to_block(sample(DType::Float64, {9, 9})), {3, 2});
  Array d = diagonal(x);
  EXPECT_EQ(d.chunks(), (Chunks{{2, 1, 1, 2, 2, 1}}));
  std::vector<Key> keys;
  const Graph dg = d.to_graph(&keys);
  for (const auto& [k, t] : dg.tasks()) EXPECT_NE(t.op, detail::kAssembleOp) << k;
  EXPECT_THROW(diagonal(x, 0, 1, 1), ShapeError);
  EXPECT_THROW(diagonal(arange(4)), ShapeError);
}

TEST(ArrayCreationMore, MeshgridAndIndices) {
  const Ref x = sample(DType::Float64, {3}), y = sample(DType::Int32, {4}, 1), z = sample(DType::Float64, {2}, 2);
  // xy: outputs are (len(y), len(x), len(z)); ij: (len(x), len(y), len(z)).
  for (auto ix : {MeshIndexing::XY, MeshIndexing::IJ}) {
    const bool xy = ix == MeshIndexing::XY;
    const Shape s = xy ? Shape{4, 3, 2} : Shape{3, 4, 2};
    auto xi = [&](auto& i) { return xy ? i[1] : i[0]; };
    auto yi = [&](auto& i) { return xy ? i[0] : i[1]; };
    check_expr({x, y, z}, [&](auto& a) { return meshgrid({a[0], a[1], a[2]}, ix)[0]; },
               make_ref(DType::Float64, s, [&](auto& i) { return x.at({xi(i)}); }));
    check_expr({x, y, z}, [&](auto& a) { return meshgrid({a[0], a[1], a[2]}, ix)[1]; },
               make_ref(DType::Int32, s, [&](auto& i) { return y.at({yi(i)}); }));
    check_expr({x, y, z}, [&](auto& a) { return meshgrid({a[0], a[1], a[2]}, ix)[2]; },
               make_ref(DType::Float64, s, [&](auto& i) { return z.at({i[2]}); }));
  }
  // Each output axis is chunked like the input spanning it (as Dask's broadcast_arrays).
  auto g = meshgrid({arange(0, 5, 1, 2), arange(0, 3, 1, 1)});
  EXPECT_EQ(g[0].chunks(), (Chunks{{1, 1, 1}, {2, 2, 1}}));

  check_chunked([](const ChunkSpec& c) { return indices({2, 3}, DType::Int32, c); },
                make_ref(DType::Int32, {2, 2, 3}, [](auto& i) { return static_cast<double>(i[0] == 0 ? i[1] : i[2]); }));
  EXPECT_EQ(indices({4, 2}, DType::Int64, 3).chunks(), (Chunks{{1, 1}, {3, 1}, {2}}));
}

TEST(ArrayCreationMore, LikeFunctionsKeepShapeChunksAndDtype) {
  Array a = random::uniform(1, 0, 1, {5, 4}, {2, 3});
  Array z = zeros_like(a);
  EXPECT_EQ(z.chunks(), a.chunks());
  EXPECT_EQ(z.dtype(), DType::Float64);
  EXPECT_TRUE(block_matches(z.compute(), make_ref(DType::Float64, {5, 4}, [](auto&) { return 0.0; })));
  EXPECT_TRUE(block_matches(ones_like(a, DType::Int32).compute(), make_ref(DType::Int32, {5, 4}, [](auto&) { return 1.0; })));
  Array f = full_like(a, 2.5, std::nullopt, ChunkSpec{-1});
  EXPECT_EQ(f.chunks(), (Chunks{{5}, {4}}));
  EXPECT_TRUE(block_matches(f.compute(), make_ref(DType::Float64, {5, 4}, [](auto&) { return 2.5; })));
  EXPECT_TRUE(block_matches(empty_like(a, DType::Bool).compute(), make_ref(DType::Bool, {5, 4}, [](auto&) { return 0.0; })));
  EXPECT_EQ(empty({3, 2}).shape(), (Shape{3, 2}));
  EXPECT_EQ(zeros_like(a.to_device()).target(), Target::Device);
}

TEST(ArrayCreationMore, CreationRunsOnTheDeviceInOneFusedProgram) {
  // A tree of generators placed on the device is re-made there: every task runs on the device.
  expect_same_on_fake_device(eye(7, 3, 9, 1), eye(7, 3, 9, 1).to_device());
  expect_same_on_fake_device(linspace(0, 1, 11, true, 4), linspace(0, 1, 11, true, 4).to_device());
  expect_same_on_fake_device(tri(6, 5, -1, DType::Int32, 4), tri(6, 5, -1, DType::Int32, 4).to_device());
  Array x = random::normal(4, 0, 1, {6, 6}, {4, 4});
  expect_same_on_fake_device(tril(x, 1), tril(x.to_device(), 1));
  expect_same_on_fake_device(diagonal(x, 1), diagonal(x.to_device(), 1));
  expect_same_on_fake_device(diag(x[0]), diag(x.to_device()[0]));
  // eye on the device: one blockwise task per chunk, nothing on the host.
  std::vector<Key> keys;
  const Graph g = eye(8, 4).to_device().to_graph(&keys);
  EXPECT_EQ(g.size(), 4u);
}

// ---- chunk specifications ------------------------------------------------------------------

TEST(ArrayChunkSpec, IrregularChunksPerAxis) {
  const Ref r = sample(DType::Float64, {6, 4});
  Array x = from_block(to_block(r), Chunks{{2, 3, 1}, {4}});
  EXPECT_EQ(x.chunks(), (Chunks{{2, 3, 1}, {4}}));
  EXPECT_TRUE(block_matches(x.compute(), r));
  Array y = from_block(to_block(r), {{1, 5}, {1, 1, 2}});
  EXPECT_EQ(y.chunks(), (Chunks{{1, 5}, {1, 1, 2}}));
  EXPECT_TRUE(block_matches((x + y).compute(), make_ref(DType::Float64, {6, 4}, [&](auto& i) { return 2 * r.at(i); })));
  Array z = x.rechunk(Chunks{{4, 2}, {3, 1}});
  EXPECT_EQ(z.chunks(), (Chunks{{4, 2}, {3, 1}}));
  EXPECT_TRUE(block_matches(z.compute(), r));
  // A 1-d array: several sizes are its chunks (Dask).
  EXPECT_EQ(arange(6).rechunk({2, 3, 1}).chunks(), (Chunks{{2, 3, 1}}));
  EXPECT_EQ(zeros({6}, {2, 3, 1}).chunks(), (Chunks{{2, 3, 1}}));
  EXPECT_THROW(from_block(to_block(r), Chunks{{2, 3}, {4}}), ShapeError);      // 5 != 6
  EXPECT_THROW(from_block(to_block(r), Chunks{{6}}), ShapeError);              // one axis of two
  EXPECT_THROW(zeros({6}, {2, 3}), ShapeError);
  EXPECT_THROW(zeros({6, 2}, Chunks{{6}, {}}), ShapeError);
}

TEST(ArrayChunkSpec, NormalizeChunksMatchesDask) {
  // Values from dask.array.core.normalize_chunks.
  EXPECT_EQ(normalize_chunks({3, 2}, {10, 5}), (Chunks{{3, 3, 3, 1}, {2, 2, 1}}));
  EXPECT_EQ(normalize_chunks(5, {10, 0}), (Chunks{{5, 5}, {0}}));
  EXPECT_EQ(normalize_chunks({-1, 20}, {10, 5}), (Chunks{{10}, {5}}));
  EXPECT_EQ(normalize_chunks(ChunkSpec{}, {}), Chunks{});
  auto sizes = [](const Chunks& c) {
    std::vector<std::pair<std::int64_t, std::int64_t>> s;  // (first chunk, count) per axis
    for (const auto& a : c) s.emplace_back(a[0], static_cast<std::int64_t>(a.size()));
    return s;
  };
  using P = std::vector<std::pair<std::int64_t, std::int64_t>>;
  EXPECT_EQ(sizes(normalize_chunks(auto_chunk, {20000, 20000})), (P{{4096, 5}, {4096, 5}}));
  EXPECT_EQ(normalize_chunks(auto_chunk, {20000, 20000})[0].back(), 3616);
  EXPECT_EQ(sizes(normalize_chunks(auto_chunk, {1000, 1000}, DType::Float64, 100000)), (P{{111, 10}, {111, 10}}));
  EXPECT_EQ(sizes(normalize_chunks({auto_chunk, -1}, {10000, 1000}, DType::Float32, 1 << 20)), (P{{262, 39}, {1000, 1}}));
  EXPECT_EQ(sizes(normalize_chunks(auto_chunk, {10, 100000000}, DType::Float64, 1 << 20)), (P{{10, 1}, {13107, 7630}}));
  EXPECT_EQ(sizes(normalize_chunks(auto_chunk, {7, 5, 100000}, DType::Int32, 8000)), (P{{7, 1}, {5, 1}, {57, 1755}}));
  EXPECT_EQ(sizes(normalize_chunks({5, auto_chunk}, {100, 1000}, DType::Float64, 4000)), (P{{5, 20}, {100, 10}}));
  EXPECT_EQ(sizes(normalize_chunks(ChunkSpec::automatic(100000), {1000, 1000})), (P{{111, 10}, {111, 10}}));
}

TEST(ArrayChunkSpec, AutoChunksEverywhereAChunkSpecIsTaken) {
  const std::int64_t before = auto_chunk_bytes();
  EXPECT_EQ(before, std::int64_t{128} << 20);
  set_auto_chunk_bytes(100000);
  EXPECT_EQ(zeros({1000, 1000}, auto_chunk).chunks()[0][0], 111);
  EXPECT_EQ(random::normal(1, 0, 1, {1000, 1000}, auto_chunk).chunks()[1][0], 111);
  EXPECT_EQ(arange(0, 100000, 1, auto_chunk).chunks()[0][0], 12500);  // int64: 100000 / 8
  EXPECT_EQ(zeros({1000, 1000}, auto_chunk, DType::Int32).chunks()[0][0], 158);
  EXPECT_EQ(eye(1000).chunks()[0][0], 111);
  Array x = from_block(to_block(sample(DType::Float64, {300, 300})), auto_chunk);
  EXPECT_EQ(x.chunks()[0][0], 111);
  EXPECT_EQ(x.rechunk(auto_chunk).chunks()[0][0], 111);
  EXPECT_TRUE(block_matches(x.rechunk(auto_chunk).compute(), sample(DType::Float64, {300, 300})));
  set_auto_chunk_bytes(0);  // back to the default
  EXPECT_EQ(auto_chunk_bytes(), std::int64_t{128} << 20);
  EXPECT_EQ(zeros({1000, 1000}, auto_chunk).chunks(), (Chunks{{1000}, {1000}}));
}

}  // namespace

namespace {

// (first chunk, number of chunks, last chunk) per axis.
std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> summary(const Chunks& c) {
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> s;
  for (const auto& a : c) s.emplace_back(a.front(), static_cast<std::int64_t>(a.size()), a.back());
  return s;
}

TEST(ArrayChunkSpec, RechunkToAutoScalesTheCurrentChunksAsDaskDoes) {
  // Values from dask's x.rechunk("auto", block_size_limit=...): growing merges whole current
  // chunks (4 x 1000, not 4096); shrinking rounds to a multiple of the common chunk.
  using S = std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>;
  EXPECT_EQ(summary(zeros({20000, 20000}, {1000, 1000}).rechunk(auto_chunk).chunks()), (S{{4000, 5, 4000}, {4000, 5, 4000}}));
  EXPECT_EQ(summary(zeros({20000, 20000}, {10000, 10000}).rechunk(auto_chunk).chunks()),
            (S{{4096, 5, 3616}, {4096, 5, 3616}}));
  set_auto_chunk_bytes(200 * 8);
  EXPECT_EQ(ones({20, 20, 20}, {2, 2, 2}).rechunk({auto_chunk, auto_chunk, 2}).chunks(),
            (Chunks{{10, 10}, {10, 10}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}));
  set_auto_chunk_bytes(100000);
  EXPECT_EQ(summary(ones({1000, 300}, {7, 300}).rechunk({auto_chunk, -1}).chunks()), (S{{35, 29, 20}, {300, 1, 300}}));
  EXPECT_EQ(ones({300, 300}, Chunks{{100, 50, 150}, {300}}).rechunk(auto_chunk).chunks(),
            (Chunks{{64, 64, 64, 64, 44}, {194, 106}}));
  set_auto_chunk_bytes(10000);
  EXPECT_EQ(summary(ones({100000}, {1000}, DType::Int32).rechunk(auto_chunk).chunks()), (S{{2000, 50, 2000}}));
  set_auto_chunk_bytes(0);
}

}  // namespace
