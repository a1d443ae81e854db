// cumsum/cumprod (and the NaN variants) along every axis and flattened, over chunkings that
// split the scanned axis (the carry chain) or not; diff and ediff1d.
#include <cmath>
#include <limits>

#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

/** Reference scan along `axis` (-1 for the flattened array). */
Ref scan_ref(const Ref& a, int axis, bool product, DType out, bool skip_nan = false) {
  if (axis < 0) {
    Ref flat{a.dtype, {a.size()}, a.v};
    return scan_ref(flat, 0, product, out, skip_nan);
  }
  Ref r{out, a.shape, a.v};
  const auto n = a.shape[static_cast<std::size_t>(axis)];
  for (std::int64_t f = 0; f < a.size(); ++f) {
    auto idx = unravel(f, a.shape);
    if (idx[static_cast<std::size_t>(axis)] != 0) continue;
    double acc = product ? 1 : 0;
    for (std::int64_t j = 0; j < n; ++j) {
      idx[static_cast<std::size_t>(axis)] = j;
      std::int64_t g = 0;
      for (std::size_t k = 0; k < idx.size(); ++k) g = g * a.shape[k] + idx[k];
      double v = a.v[static_cast<std::size_t>(g)];
      if (skip_nan && v != v) v = product ? 1 : 0;
      acc = product ? acc * v : acc + v;
      if (out == DType::Float32) acc = static_cast<float>(acc);
      r.v[static_cast<std::size_t>(g)] = acc;
    }
  }
  return r;
}

}  // namespace

TEST(ArrayScan, CumsumAlongEveryAxisAndFlattened) {
  for (DType t : {DType::Float64, DType::Int32, DType::Bool}) {
    const Ref a = sample(t, {5, 4, 3});
    const DType out = t == DType::Float64 ? t : DType::Int64;
    for (int axis : {0, 1, 2}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(t) << " axis " << axis);
      check_expr({a}, [&](auto& x) { return cumsum(x[0], axis); }, scan_ref(a, axis, false, out), {1e-12, 1e-12});
    }
    check_expr({a}, [&](auto& x) { return cumsum(x[0]); }, scan_ref(a, -1, false, out), {1e-12, 1e-12});
  }
}

TEST(ArrayScan, CumprodCarriesProductsAcrossChunks) {
  Ref a = sample(DType::Float64, {7, 3});
  for (double& v : a.v) v = 1.0 + v / 50.0;
  for (int axis : {0, 1}) check_expr({a}, [&](auto& x) { return cumprod(x[0], axis); }, scan_ref(a, axis, true, DType::Float64));
  const Ref i = make_ref(DType::Int64, {9}, [](auto& idx) { return static_cast<double>(idx[0] % 3 + 1); });
  check_expr({i}, [](auto& x) { return cumprod(x[0]); }, scan_ref(i, 0, true, DType::Int64));
}

TEST(ArrayScan, IntegerCumsumWrapsAndIsExactBeyondFloatPrecision) {
  const std::int64_t big = std::int64_t{1} << 53;
  const std::vector<std::int64_t> v = {big, 1, 1, 1, std::numeric_limits<std::int64_t>::max(), 1};
  const Array x = from_vector(v, {6}, {2});
  const Block b = cumsum(x).compute();
  ASSERT_EQ(b.dtype(), DType::Int64);
  EXPECT_EQ(b.data<std::int64_t>()[3], big + 3);
  // The wrap-around sum, computed with unsigned arithmetic.
  std::uint64_t acc = 0;
  for (std::size_t k = 0; k < v.size(); ++k) {
    acc += static_cast<std::uint64_t>(v[k]);
    EXPECT_EQ(b.data<std::int64_t>()[k], static_cast<std::int64_t>(acc)) << k;
  }
}

TEST(ArrayScan, NanCumsumAndNanCumprodSkipNaN) {
  Ref a = sample(DType::Float64, {6, 4});
  for (std::size_t k = 0; k < a.v.size(); k += 5) a.v[k] = std::numeric_limits<double>::quiet_NaN();
  for (int axis : {0, 1}) {
    check_expr({a}, [&](auto& x) { return nancumsum(x[0], axis); }, scan_ref(a, axis, false, DType::Float64, true),
               {1e-12, 1e-12});
    check_expr({a}, [&](auto& x) { return nancumprod(x[0] / 40.0 + 1.0, axis); },
               [&] {
                 Ref s = a;
                 for (double& v : s.v) v = v / 40.0 + 1.0;
                 return scan_ref(s, axis, true, DType::Float64, true);
               }(),
               {1e-12, 1e-12});
  }
}

TEST(ArrayScan, Float32AccumulatesInFloat32) {
  const Ref a = sample(DType::Float32, {10});
  check_expr({a}, [](auto& x) { return cumsum(x[0]); }, scan_ref(a, 0, false, DType::Float32), {1e-6, 1e-5});
}

TEST(ArrayScan, ScannedChunksRunInParallelAndTheCarryIsOneSlicePerChunk) {
  // Ten chunks along the axis: ten scan tasks, each reading one input chunk.
  const Array x = arange(0, 100, 1, 10).astype(DType::Float64);
  std::vector<Key> keys;
  const Graph g = cumsum(x).to_graph(&keys);
  int scans = 0;
  for (const auto& [k, t] : g.tasks())
    if (t.op == "tessera.array.scan") {
      ++scans;
      EXPECT_EQ(t.args.size(), 2u);
    }
  EXPECT_EQ(scans, 10);
  const Block b = cumsum(x).compute();
  EXPECT_DOUBLE_EQ(b.data<double>()[99], 4950.0);
}

TEST(ArrayScan, DiffAndEdiff1d) {
  const Ref a = sample(DType::Float64, {5, 6});
  auto diff_ref = [&](const Ref& r, int axis) {
    Shape s = r.shape;
    s[static_cast<std::size_t>(axis)] -= 1;
    return make_ref(r.dtype, s, [&](const std::vector<std::int64_t>& i) {
      auto j = i;
      ++j[static_cast<std::size_t>(axis)];
      return r.at(j) - r.at(i);
    });
  };
  check_expr({a}, [](auto& x) { return diff(x[0]); }, diff_ref(a, 1));
  check_expr({a}, [](auto& x) { return diff(x[0], 1, 0); }, diff_ref(a, 0));
  check_expr({a}, [](auto& x) { return diff(x[0], 2, 0); }, diff_ref(diff_ref(a, 0), 0));
  const Ref flat{a.dtype, {a.size()}, a.v};
  check_expr({a}, [](auto& x) { return ediff1d(x[0]); }, diff_ref(flat, 0));
  // bool: "not equal", as NumPy's diff.
  const Ref b = ref_of(DType::Bool, {4}, {1, 1, 0, 1});
  check_expr({b}, [](auto& x) { return diff(x[0]); }, ref_of(DType::Bool, {3}, {0, 1, 1}));
}

TEST(ArrayScan, AGeneratedArrayIsDrawnByTheScanItself) {
  // cumsum / cumprod of random arrays along each axis of a 3-d one: drawn and scanned in one task
  // per chunk (no task makes the chunk first), with exactly the values of scanning the array made
  // whole (the same steps in the same order).
  const std::vector<Array> arrays{random::normal(3, 0.0, 1.0, {7, 9, 5}, {3, 4, 2}),
                                  random::uniform(4, 0.9, 1.1, {7, 9, 5}, {7, 2, 5}),
                                  random::integers(5, -1000, 1000, {7, 9, 5}, {2, 9, 3})};
  for (const Array& x : arrays) {
    const Array made = x.persist(local_executor("sync"));  // data: the block path
    for (int axis : {0, 1, 2})
      for (bool product : {false, true}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(x.dtype()) << " axis " << axis << (product ? " cumprod" : " cumsum"));
        const Array drawn = product ? cumprod(x, axis) : cumsum(x, axis);
        const Graph g = drawn.to_graph(nullptr);
        std::size_t scans = 0, programs_reading_nothing = 0;
        for (const auto& [k, task] : g.tasks()) {
          scans += task.op == "tessera.array.scan_generated";
          programs_reading_nothing += task.op == "tessera.array.blockwise" && task.dependencies().empty();
        }
        EXPECT_EQ(scans, static_cast<std::size_t>(shape_size(chunk_counts(x.chunks()))));
        EXPECT_EQ(programs_reading_nothing, 0u);  // x's chunks are never made on their own
        const auto want = (product ? cumprod(made, axis) : cumsum(made, axis)).compute(local_executor("sync")).to_doubles();
        EXPECT_EQ(drawn.compute(local_executor("threads")).to_doubles(), want);
      }
  }
}
