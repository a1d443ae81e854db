// Halos: overlap with every boundary kind, trim_internal, and map_overlap with a registered
// stencil, against references built from the boundary rules over several chunkings; the device
// path with a fake device.
#include "array_test_util.hpp"
#include "../support/fake_device.hpp"
#include "tessera/core/device.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera_test;

namespace {

// Five-point sum over the interior of a 2-d block; the block's edge elements are left as they
// are (a halo of 1 is trimmed away from them, except at "none" edges).
Block five_point(Block b) {
  Block out(DType::Float64, b.shape());
  const auto v = b.to_doubles();
  const auto n = b.shape()[0], m = b.shape()[1];
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double s = v[i * m + j];
      if (i > 0 && i + 1 < n && j > 0 && j + 1 < m)
        s += v[(i - 1) * m + j] + v[(i + 1) * m + j] + v[i * m + j - 1] + v[i * m + j + 1];
      out.data<double>()[i * m + j] = s;
    }
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.overlap.five_point", five_point);

Block copy_block(Block b) { return b; }
TESSERA_REGISTER_FUNCTION_AS("tessera_test.overlap.copy", copy_block);

Block add_blocks(Block a, Block b) {
  Block out(DType::Float64, a.shape());
  const auto x = a.to_doubles(), y = b.to_doubles();
  for (std::size_t i = 0; i < x.size(); ++i) out.data<double>()[i] = x[i] + y[i];
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.overlap.add", add_blocks);

/** Where coordinate g of an axis of n elements reads from under a boundary (-1: constant). */
std::int64_t source(std::int64_t g, std::int64_t n, const std::string& boundary) {
  if (g >= 0 && g < n) return g;
  if (boundary == "periodic") return (g + n) % n;
  if (boundary == "reflect") return g < 0 ? -1 - g : 2 * n - 1 - g;
  if (boundary == "nearest") return g < 0 ? 0 : n - 1;
  return -1;
}

TEST(Overlap, OneDimensionalHalosForEveryBoundary) {
  Array x = arange(0, 6, 1, 3, DType::Int64);
  auto values = [](const Array& a) { return a.compute().to_doubles(); };
  EXPECT_EQ(overlap(x, {2}, {"reflect"}).chunks(), (Chunks{{7, 7}}));
  EXPECT_EQ(values(overlap(x, {2}, {"reflect"})), (std::vector<double>{1, 0, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5, 5, 4}));
  EXPECT_EQ(values(overlap(x, {2}, {"nearest"})), (std::vector<double>{0, 0, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5, 5, 5}));
  EXPECT_EQ(values(overlap(x, {2}, {"periodic"})), (std::vector<double>{4, 5, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(values(overlap(x, {2}, {-1})), (std::vector<double>{-1, -1, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5, -1, -1}));
  EXPECT_EQ(overlap(x, {2}, {"none"}).chunks(), (Chunks{{5, 5}}));
  EXPECT_EQ(values(overlap(x, {2}, {"none"})), (std::vector<double>{0, 1, 2, 3, 4, 1, 2, 3, 4, 5}));
  // A depth larger than a chunk reads from chunks further away.
  Array y = arange(0, 6, 1, 2, DType::Int64);
  EXPECT_EQ(values(overlap(y, {3}, {"periodic"})),
            (std::vector<double>{3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2}));
  // trim_internal undoes overlap.
  for (const char* b : {"reflect", "periodic", "nearest", "none"}) {
    SCOPED_TRACE(b);
    EXPECT_EQ(values(trim_internal(overlap(x, {2}, {b}), {2}, {b})), values(x));
    EXPECT_EQ(trim_internal(overlap(x, {2}, {b}), {2}, {b}).chunks(), x.chunks());
  }
}

TEST(Overlap, MapOverlapStencilMatchesTheBoundaryRules) {
  const Ref x = sample(DType::Float64, {7, 6}, 1);
  for (const std::string b : {"reflect", "periodic", "nearest", "none", "constant"}) {
    SCOPED_TRACE(b);
    const Boundary boundary = b == "constant" ? Boundary(2.5) : Boundary(b);
    const Ref want = make_ref(DType::Float64, {7, 6}, [&](const std::vector<std::int64_t>& i) {
      auto at = [&](std::int64_t r, std::int64_t c) {
        const auto sr = source(r, 7, b), sc = source(c, 6, b);
        return sr < 0 || sc < 0 ? 2.5 : x.at({sr, sc});
      };
      if (b == "none" && (i[0] == 0 || i[0] == 6 || i[1] == 0 || i[1] == 5)) return x.at(i);
      return at(i[0], i[1]) + at(i[0] - 1, i[1]) + at(i[0] + 1, i[1]) + at(i[0], i[1] - 1) + at(i[0], i[1] + 1);
    });
    check_expr({x}, [&](auto& a) { return map_overlap("tessera_test.overlap.five_point", a[0], {1}, {boundary}); },
               want);
  }
}

TEST(Overlap, PerAxisDepthsAndBoundariesAndUntrimmedResults) {
  const Ref x = sample(DType::Int32, {5, 4}, 2);
  Array a = to_array(x, {2});
  Array o = overlap(a, {1, 0}, {"periodic", "none"});
  EXPECT_EQ(o.chunks(), (Chunks{{4, 4, 3}, {2, 2}}));
  EXPECT_EQ(o.dtype(), DType::Int32);
  Array m = map_overlap("tessera_test.overlap.copy", a, {1, 0}, {"periodic", "none"}, false);
  EXPECT_EQ(m.chunks(), o.chunks());
  EXPECT_EQ(m.compute().to_doubles(), o.compute().to_doubles());
  EXPECT_EQ(map_overlap("tessera_test.overlap.copy", a, {1, 2}, {"nearest", "reflect"}).compute().to_doubles(), x.v);
  // Two inputs chunked differently are rechunked alike first.
  Array two = map_overlap("tessera_test.overlap.add", {a, to_array(x, {3})}, {1}, {"reflect"}, true, DType::Float64);
  std::vector<double> twice = x.v;
  for (auto& v : twice) v *= 2;
  EXPECT_EQ(two.compute().to_doubles(), twice);
}

TEST(Overlap, RefusesWhatItCannotDo) {
  Array x = arange(0, 6, 1, 3, DType::Float64);
  EXPECT_THROW(overlap(x, {1, 1}, {"reflect"}), ShapeError);
  EXPECT_THROW(overlap(x, {-1}, {"reflect"}), ShapeError);
  EXPECT_THROW(overlap(x, {7}, {"reflect"}), ShapeError);
  EXPECT_THROW(Boundary("wrap"), Error);
  EXPECT_THROW(trim_internal(x, {2}, {"reflect"}), ShapeError);  // chunks of 3 cannot lose 4
  EXPECT_THROW(map_overlap("tessera_test.overlap.no_such_op", x, {1}), UnknownOperationError);
  EXPECT_THROW(overlap(x[x > 2.0], {1}, {"reflect"}), ShapeError);
}

TEST(Overlap, DevicePathWithAFakeDevice) {
  if (OpRegistry::global().get("tessera.array.blockwise").device)
    GTEST_SKIP() << "the CUDA back end is loaded; tests/cuda/ check device values on a GPU";
  ScopedFakeDevice gpu;
  const Ref x = sample(DType::Float64, {6, 5}, 3);
  for (const Boundary b : {Boundary("periodic"), Boundary(-3.0)}) {
    Array host = map_overlap("tessera_test.overlap.five_point", to_array(x, {4}), {1}, {b});
    Array dev = map_overlap("tessera_test.overlap.five_point", to_array(x, {4}).to_device(), {1}, {b});
    EXPECT_EQ(dev.target(), Target::Device);
    EXPECT_EQ(dev.compute().to_doubles(), host.compute().to_doubles());
  }
}

}  // namespace
