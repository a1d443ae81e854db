// Shape manipulation (shape.hpp) against references written as index maps over NumPy's
// definitions, over several chunkings and both local executors; device placement with the fake
// device.
#include <algorithm>

#include "array_test_util.hpp"
#include "../support/fake_device.hpp"
#include "array/array_ops.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera_test;

namespace {

std::int64_t fmod_pos(std::int64_t a, std::int64_t n) { return ((a % n) + n) % n; }

void expect_same_on_fake_device(const Array& host, const Array& device) {
  ASSERT_EQ(device.target(), Target::Device);
  std::vector<Key> keys;
  const Graph g = device.to_graph(&keys);
  for (const auto& [k, t] : g.tasks()) {
    if (t.op == detail::kIdentityOp) continue;  // the chunks of a from_block array are literal values
    EXPECT_EQ(t.annotations.target, Target::Device) << "task " << k << " (" << t.op << ") runs on the host";
  }
  if (OpRegistry::global().get(detail::kBlockwiseOp).device) return;  // tests/cuda/ checks on a GPU
  ScopedFakeDevice gpu;
  EXPECT_EQ(device.compute().to_doubles(), host.compute().to_doubles());
}

TEST(ArrayShape, SqueezeExpandDimsAndAtLeast) {
  const Ref r = sample(DType::Float64, {1, 3, 1, 2});
  check_expr({r}, [](auto& a) { return squeeze(a[0]); },
             make_ref(DType::Float64, {3, 2}, [&](auto& i) { return r.at({0, i[0], 0, i[1]}); }));
  check_expr({r}, [](auto& a) { return squeeze(a[0], std::vector<int>{-2}); },
             make_ref(DType::Float64, {1, 3, 2}, [&](auto& i) { return r.at({0, i[1], 0, i[2]}); }));
  EXPECT_THROW(squeeze(zeros({1, 3}, {-1}), std::vector<int>{1}), ShapeError);

  const Ref v = sample(DType::Int32, {3, 2});
  check_expr({v}, [](auto& a) { return expand_dims(a[0], {0, 3}); },
             make_ref(DType::Int32, {1, 3, 2, 1}, [&](auto& i) { return v.at({i[1], i[2]}); }));
  check_expr({v}, [](auto& a) { return expand_dims(a[0], {-1}); },
             make_ref(DType::Int32, {3, 2, 1}, [&](auto& i) { return v.at({i[0], i[1]}); }));
  EXPECT_THROW(expand_dims(zeros({2}, {-1}), {3}), ShapeError);

  EXPECT_EQ(atleast_1d(scalar(2.0)).shape(), (Shape{1}));
  EXPECT_EQ(atleast_2d(scalar(2.0)).shape(), (Shape{1, 1}));
  EXPECT_EQ(atleast_2d(zeros({4}, {-1})).shape(), (Shape{1, 4}));
  EXPECT_EQ(atleast_3d(scalar(2.0)).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(atleast_3d(zeros({4}, {-1})).shape(), (Shape{1, 4, 1}));
  EXPECT_EQ(atleast_3d(zeros({4, 5}, {-1})).shape(), (Shape{4, 5, 1}));
  EXPECT_EQ(atleast_3d(zeros({4, 5, 6, 7}, {-1})).shape(), (Shape{4, 5, 6, 7}));
}

TEST(ArrayShape, RavelAndFlatten) {
  const Ref r = sample(DType::Float64, {3, 4});
  check_expr({r}, [](auto& a) { return ravel(a[0]); }, ref_of(DType::Float64, {12}, r.v));
  check_expr({r}, [](auto& a) { return flatten(a[0].T()); },
             make_ref(DType::Float64, {12}, [&](auto& i) { return r.at({i[0] % 3, i[0] / 3}); }));
  EXPECT_EQ(ravel(scalar(3.0)).shape(), (Shape{1}));
}

TEST(ArrayShape, FlipsAndRotations) {
  const Ref r = sample(DType::Int64, {3, 4, 2});
  check_expr({r}, [](auto& a) { return flip(a[0]); },
             make_ref(DType::Int64, {3, 4, 2}, [&](auto& i) { return r.at({2 - i[0], 3 - i[1], 1 - i[2]}); }));
  check_expr({r}, [](auto& a) { return flip(a[0], -2); },
             make_ref(DType::Int64, {3, 4, 2}, [&](auto& i) { return r.at({i[0], 3 - i[1], i[2]}); }));
  check_expr({r}, [](auto& a) { return fliplr(a[0]); },
             make_ref(DType::Int64, {3, 4, 2}, [&](auto& i) { return r.at({i[0], 3 - i[1], i[2]}); }));
  check_expr({r}, [](auto& a) { return flipud(a[0]); },
             make_ref(DType::Int64, {3, 4, 2}, [&](auto& i) { return r.at({2 - i[0], i[1], i[2]}); }));
  EXPECT_THROW(fliplr(zeros({3}, {-1})), ShapeError);

  // rot90 of m (3x4): k=1 gives out[i][j] = m[j][n-1-i] (NumPy, counter-clockwise).
  const Ref m = sample(DType::Float64, {3, 4});
  check_expr({m}, [](auto& a) { return rot90(a[0]); },
             make_ref(DType::Float64, {4, 3}, [&](auto& i) { return m.at({i[1], 3 - i[0]}); }));
  check_expr({m}, [](auto& a) { return rot90(a[0], 2); },
             make_ref(DType::Float64, {3, 4}, [&](auto& i) { return m.at({2 - i[0], 3 - i[1]}); }));
  check_expr({m}, [](auto& a) { return rot90(a[0], -1); },
             make_ref(DType::Float64, {4, 3}, [&](auto& i) { return m.at({2 - i[1], i[0]}); }));
  check_expr({m}, [](auto& a) { return rot90(a[0], 5, {1, 0}); },  // = k=1 the other way = k=3
             make_ref(DType::Float64, {4, 3}, [&](auto& i) { return m.at({2 - i[1], i[0]}); }));
  check_expr({m}, [](auto& a) { return rot90(a[0], 4); }, m);
  EXPECT_THROW(rot90(zeros({3, 3}, {-1}), 1, {0, 0}), ShapeError);
  EXPECT_THROW(rot90(zeros({3, 3}, {-1}), 1, {0, 2}), ShapeError);
}

TEST(ArrayShape, AxisMoves) {
  const Ref r = sample(DType::Float64, {2, 3, 4, 5});
  check_expr({r}, [](auto& a) { return swapaxes(a[0], 1, -1); },
             make_ref(DType::Float64, {2, 5, 4, 3}, [&](auto& i) { return r.at({i[0], i[3], i[2], i[1]}); }));
  check_expr({r}, [](auto& a) { return moveaxis(a[0], 0, -1); },
             make_ref(DType::Float64, {3, 4, 5, 2}, [&](auto& i) { return r.at({i[3], i[0], i[1], i[2]}); }));
  check_expr({r}, [](auto& a) { return moveaxis(a[0], std::vector<int>{0, 1}, std::vector<int>{-1, -2}); },
             make_ref(DType::Float64, {4, 5, 3, 2}, [&](auto& i) { return r.at({i[3], i[2], i[0], i[1]}); }));
  check_expr({r}, [](auto& a) { return rollaxis(a[0], 3, 1); },
             make_ref(DType::Float64, {2, 5, 3, 4}, [&](auto& i) { return r.at({i[0], i[2], i[3], i[1]}); }));
  check_expr({r}, [](auto& a) { return rollaxis(a[0], 1, 4); },
             make_ref(DType::Float64, {2, 4, 5, 3}, [&](auto& i) { return r.at({i[0], i[3], i[1], i[2]}); }));
  EXPECT_THROW(moveaxis(zeros({2, 3}, {-1}), std::vector<int>{0, 0}, std::vector<int>{0, 1}), ShapeError);
  EXPECT_THROW(rollaxis(zeros({2, 3}, {-1}), 0, 3), ShapeError);
}

TEST(ArrayShape, Roll) {
  const Ref r = sample(DType::Int32, {3, 5});
  for (std::int64_t s : {0, 1, 2, -1, 7, -13}) {
    SCOPED_TRACE("shift " + std::to_string(s));
    check_expr({r}, [&](auto& a) { return roll(a[0], s, 1); },
               make_ref(DType::Int32, {3, 5}, [&](auto& i) { return r.at({i[0], fmod_pos(i[1] - s, 5)}); }));
    check_expr({r}, [&](auto& a) { return roll(a[0], s); }, make_ref(DType::Int32, {3, 5}, [&](auto& i) {
                 const std::int64_t f = fmod_pos(i[0] * 5 + i[1] - s, 15);
                 return r.at({f / 5, f % 5});
               }));
  }
  check_expr({r}, [](auto& a) { return roll(a[0], {1, -2, 1}, {0, 1, 0}); },
             make_ref(DType::Int32, {3, 5}, [&](auto& i) { return r.at({fmod_pos(i[0] - 2, 3), fmod_pos(i[1] + 2, 5)}); }));
  check_expr({r}, [](auto& a) { return roll(a[0], {2}, {0, 1}); },
             make_ref(DType::Int32, {3, 5}, [&](auto& i) { return r.at({fmod_pos(i[0] - 2, 3), fmod_pos(i[1] - 2, 5)}); }));
}

std::int64_t pad_src(PadMode mode, std::int64_t q, std::int64_t n) {
  switch (mode) {
    case PadMode::Edge: return std::clamp<std::int64_t>(q, 0, n - 1);
    case PadMode::Wrap: return fmod_pos(q, n);
    case PadMode::Symmetric: {
      // Mirror with the edge repeated, walking out step by step (NumPy's iterative padding).
      std::int64_t x = q;
      while (x < 0 || x >= n) x = x < 0 ? -1 - x : 2 * n - 1 - x;
      return x;
    }
    case PadMode::Reflect: {
      if (n == 1) return 0;
      std::int64_t x = q;
      while (x < 0 || x >= n) x = x < 0 ? -x : 2 * n - 2 - x;
      return x;
    }
    default: return -1;
  }
}

TEST(ArrayShape, PadEveryModeAndWidth) {
  const Ref r = sample(DType::Float64, {3, 4});
  const std::vector<std::pair<std::int64_t, std::int64_t>> w{{2, 1}, {0, 9}};
  for (auto mode : {PadMode::Edge, PadMode::Reflect, PadMode::Symmetric, PadMode::Wrap}) {
    SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)));
    check_expr({r}, [&](auto& a) { return pad(a[0], w, mode); }, make_ref(DType::Float64, {6, 13}, [&](auto& i) {
                 return r.at({pad_src(mode, i[0] - 2, 3), pad_src(mode, i[1], 4)});
               }));
    // Wider than the axis: the pattern repeats.
    check_expr({r}, [&](auto& a) { return pad(a[0], 7, mode); }, make_ref(DType::Float64, {17, 18}, [&](auto& i) {
                 return r.at({pad_src(mode, i[0] - 7, 3), pad_src(mode, i[1] - 7, 4)});
               }));
  }
  check_expr({r}, [&](auto& a) { return pad(a[0], w, PadMode::Constant, 1.5); },
             make_ref(DType::Float64, {6, 13}, [&](auto& i) {
               const std::int64_t x = i[0] - 2, y = i[1];
               return x >= 0 && x < 3 && y < 4 ? r.at({x, y}) : 1.5;
             }));
  // A constant is cast to the array's dtype (NumPy); one element reflects as its edge.
  const Ref s = sample(DType::Int32, {1, 2});
  check_expr({s}, [](auto& a) { return pad(a[0], {{1, 1}}, PadMode::Constant, 2.7); },
             make_ref(DType::Int32, {3, 4}, [&](auto& i) {
               return i[0] == 1 && i[1] >= 1 && i[1] <= 2 ? s.at({0, i[1] - 1}) : 2.0;
             }));
  check_expr({s}, [](auto& a) { return pad(a[0], {{2, 1}, {0, 0}}, PadMode::Reflect); },
             make_ref(DType::Int32, {4, 2}, [&](auto& i) { return s.at({0, i[1]}); }));
  EXPECT_THROW(pad(zeros({0, 2}, {-1}), 1, PadMode::Edge), ShapeError);
  EXPECT_EQ(pad(zeros({0, 2}, {-1}), 1).shape(), (Shape{2, 4}));
  EXPECT_THROW(pad(zeros({2}, {-1}), {{-1, 0}}), ShapeError);
  EXPECT_THROW(pad(zeros({2, 2}, {-1}), {{1, 0}, {1, 1}, {0, 0}}), ShapeError);
}

TEST(ArrayShape, TileAndRepeat) {
  const Ref r = sample(DType::Float64, {2, 3});
  check_expr({r}, [](auto& a) { return tile(a[0], 2); },
             make_ref(DType::Float64, {2, 6}, [&](auto& i) { return r.at({i[0], i[1] % 3}); }));
  check_expr({r}, [](auto& a) { return tile(a[0], {2, 1, 3}); },
             make_ref(DType::Float64, {2, 2, 9}, [&](auto& i) { return r.at({i[1], i[2] % 3}); }));
  check_expr({r}, [](auto& a) { return tile(a[0], {3, 0}); }, make_ref(DType::Float64, {6, 0}, [](auto&) { return 0.0; }));
  EXPECT_THROW(tile(zeros({2}, {-1}), -1), ShapeError);

  for (std::int64_t k : {1, 2, 3}) {
    SCOPED_TRACE("repeats " + std::to_string(k));
    check_expr({r}, [&](auto& a) { return repeat(a[0], k, 0); },
               make_ref(DType::Float64, {2 * k, 3}, [&](auto& i) { return r.at({i[0] / k, i[1]}); }));
    check_expr({r}, [&](auto& a) { return repeat(a[0], k, -1); },
               make_ref(DType::Float64, {2, 3 * k}, [&](auto& i) { return r.at({i[0], i[1] / k}); }));
    check_expr({r}, [&](auto& a) { return repeat(a[0], k); },
               make_ref(DType::Float64, {6 * k}, [&](auto& i) { return r.v[i[0] / k]; }));
  }
  check_expr({r}, [](auto& a) { return repeat(a[0], 0, 1); }, make_ref(DType::Float64, {2, 0}, [](auto&) { return 0.0; }));
  // Each chunk grows `repeats` times, as in Dask.
  EXPECT_EQ(repeat(arange(0, 5, 1, 2), 3).chunks(), (Chunks{{6, 6, 3}}));
  EXPECT_THROW(repeat(zeros({2}, {-1}), -1), ShapeError);
}

TEST(ArrayShape, BlockAndStacks) {
  const Ref a = sample(DType::Float64, {2, 2}), b = sample(DType::Float64, {2, 3}, 1), c = sample(DType::Int32, {1, 5}, 2);
  // [[a, b], [c]] -> rows of (2, 5) then (1, 5); int32 promotes to float64.
  check_expr({a, b, c}, [](auto& x) { return block({{x[0], x[1]}, {x[2]}}); },
             make_ref(DType::Float64, {3, 5}, [&](auto& i) {
               if (i[0] == 2) return c.at({0, i[1]});
               return i[1] < 2 ? a.at({i[0], i[1]}) : b.at({i[0], i[1] - 2});
             }));
  const Ref v = sample(DType::Float64, {3}), u = sample(DType::Float64, {2}, 3);
  check_expr({v, u}, [](auto& x) { return block({x[0], x[1]}); },
             make_ref(DType::Float64, {5}, [&](auto& i) { return i[0] < 3 ? v.at({i[0]}) : u.at({i[0] - 3}); }));
  // Depth 2 with 1-d blocks: each becomes a row (1, n).
  check_expr({v, u}, [](auto& x) { return block({{x[0]}, {x[0]}}); },
             make_ref(DType::Float64, {2, 3}, [&](auto& i) { return v.at({i[1]}); }));
  EXPECT_THROW(block({{zeros({2}, {-1})}, zeros({2}, {-1})}), ShapeError);  // mismatched depths
  EXPECT_THROW(block(BlockList(std::vector<BlockList>{})), ShapeError);

  check_expr({v, u}, [](auto& x) { return hstack({x[0], x[1]}); },
             make_ref(DType::Float64, {5}, [&](auto& i) { return i[0] < 3 ? v.at({i[0]}) : u.at({i[0] - 3}); }));
  check_expr({a, b}, [](auto& x) { return hstack({x[0], x[1]}); },
             make_ref(DType::Float64, {2, 5}, [&](auto& i) { return i[1] < 2 ? a.at(i) : b.at({i[0], i[1] - 2}); }));
  check_expr({v, v}, [](auto& x) { return vstack({x[0], x[1]}); },
             make_ref(DType::Float64, {2, 3}, [&](auto& i) { return v.at({i[1]}); }));
  check_expr({a, a}, [](auto& x) { return dstack({x[0], x[1]}); },
             make_ref(DType::Float64, {2, 2, 2}, [&](auto& i) { return a.at({i[0], i[1]}); }));
  check_expr({u, a}, [](auto& x) { return column_stack({x[0], x[1]}); },
             make_ref(DType::Float64, {2, 3}, [&](auto& i) { return i[1] == 0 ? u.at({i[0]}) : a.at({i[0], i[1] - 1}); }));
}

TEST(ArrayShape, SplitAndArraySplit) {
  const Ref r = sample(DType::Float64, {7, 3});
  auto part = [&](std::int64_t lo, std::int64_t hi) {
    return make_ref(DType::Float64, {hi - lo, 3}, [&](auto& i) { return r.at({i[0] + lo, i[1]}); });
  };
  const std::vector<std::pair<std::int64_t, std::int64_t>> want{{0, 3}, {3, 5}, {5, 7}};
  for (std::size_t p = 0; p < want.size(); ++p)
    check_expr({r}, [&](auto& a) { return array_split(a[0], 3)[p]; }, part(want[p].first, want[p].second));
  auto parts = split(zeros({7, 3}, {-1}), std::vector<std::int64_t>{2, 1, -2});
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(parts[1].shape(), (Shape{0, 3}));
  EXPECT_EQ(parts[2].shape(), (Shape{4, 3}));  // a[1:5]
  EXPECT_EQ(parts[3].shape(), (Shape{2, 3}));
  check_expr({r}, [](auto& a) { return split(a[0], std::vector<std::int64_t>{2, 1, -2})[2]; }, part(1, 5));
  EXPECT_EQ(split(zeros({6, 4}, {-1}), 2, 1)[1].shape(), (Shape{6, 2}));
  EXPECT_THROW(split(zeros({7}, {-1}), 2), ShapeError);
  EXPECT_THROW(array_split(zeros({7}, {-1}), 0), ShapeError);
}

TEST(ArrayShape, BroadcastArrays) {
  const Ref x = sample(DType::Float64, {3, 1}), y = sample(DType::Int32, {4}, 1);
  check_expr({x, y}, [](auto& a) { return broadcast_arrays({a[0], a[1]})[0]; },
             make_ref(DType::Float64, {3, 4}, [&](auto& i) { return x.at({i[0], 0}); }));
  check_expr({x, y}, [](auto& a) { return broadcast_arrays({a[0], a[1]})[1]; },
             make_ref(DType::Int32, {3, 4}, [&](auto& i) { return y.at({i[1]}); }));
  auto g = broadcast_arrays({arange(0, 3, 1, 2)[{all(), newaxis}], arange(0, 4, 1, 3)});
  EXPECT_EQ(g[0].chunks(), (Chunks{{2, 1}, {3, 1}}));
  EXPECT_EQ(g[1].chunks(), (Chunks{{2, 1}, {3, 1}}));
  EXPECT_THROW(broadcast_arrays({zeros({3}, {-1}), zeros({4}, {-1})}), ShapeError);
}

TEST(ArrayShape, ViewsFuseIntoOneProgramPerChunk) {
  // flip, swapaxes, moveaxis and diagonal of a generator are index maps of the generator: one
  // blockwise task per chunk, nothing materialised.
  Array x = random::normal(2, 0, 1, {6, 8, 4}, {3, 4, 2});
  for (const Array& y : {flip(x), swapaxes(x, 0, 2), moveaxis(x, 0, -1), rot90(x), diagonal(x, 1, 0, 1) * 2.0}) {
    std::vector<Key> keys;
    const Graph g = y.to_graph(&keys);
    EXPECT_EQ(static_cast<std::int64_t>(g.size()), y.num_chunks());
    for (const auto& [k, t] : g.tasks()) EXPECT_EQ(t.op, detail::kBlockwiseOp);
  }
}

TEST(ArrayShape, DevicePlacement) {
  const Ref r = sample(DType::Float64, {5, 6});
  Array h = from_block(to_block(r), {2, 4});
  Array d = h.to_device();
  expect_same_on_fake_device(pad(h, 2, PadMode::Reflect), pad(d, 2, PadMode::Reflect));
  expect_same_on_fake_device(pad(h, 1, PadMode::Constant, 3), pad(d, 1, PadMode::Constant, 3));
  expect_same_on_fake_device(roll(h, 2, 1), roll(d, 2, 1));
  expect_same_on_fake_device(repeat(h, 2, 0), repeat(d, 2, 0));
  expect_same_on_fake_device(tile(h, {2, 2}), tile(d, {2, 2}));
  expect_same_on_fake_device(rot90(h), rot90(d));
  expect_same_on_fake_device(block({{h, h}, {h, h}}), block({{d, d}, {d, d}}));
}

}  // namespace
