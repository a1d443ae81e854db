// The array device algorithms (src/array/device_algorithms.cuh) on Thrust's host system, against
// the host variants of the same chunk ops: what the CUDA back end computes must be what the
// host computes, value for value (the same templates run on the GPU, cuda/array_algorithms.cu).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "array/algorithm_params.hpp"
#include "array/device_algorithms.hpp"
#include "array/sort_semantics.hpp"
#include "array_test_util.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

using namespace tessera_test;
namespace th = tessera::detail::thrust_host;
namespace td = tessera::detail;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class P>
Block host_op(const char* op, const P& params, const std::vector<Block>& blocks) {
  std::vector<Value> args{Value(to_object(params, "params"))};
  for (const auto& b : blocks) args.emplace_back(b);
  return OpRegistry::global().get(op).host(OpContext{}, args).block();
}

/** Same dtype, shape and values (NaN equal to NaN). */
::testing::AssertionResult same(const Block& got, const Block& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << dtype_name(got.dtype()) << shape_to_string(got.shape()) << " vs "
                                         << dtype_name(want.dtype()) << shape_to_string(want.shape());
  const auto g = got.to_doubles(), w = want.to_doubles();
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs " << w[i];
  return ::testing::AssertionSuccess();
}

Block with_nans(DType t, Shape s, int salt) {
  Ref r = sample(t, std::move(s), salt);
  if (is_floating(t))
    for (std::size_t i = 3; i < r.v.size(); i += 7) r.v[i] = kNaN;
  return to_block(r);
}

}  // namespace

TEST(ArrayDeviceAlgorithms, ScanMatchesTheHostOpAlongEveryAxis) {
  for (DType t : {DType::Float64, DType::Float32, DType::Int64}) {
    const Block x = to_block(sample(t, {3, 5, 4}, 1));
    for (int axis : {0, 1, 2})
      for (std::uint8_t kind : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(t) << " axis " << axis << " kind " << int(kind));
        td::ScanParams p;
        p.kind = kind;
        p.axis = axis;
        const Block want = host_op(td::kScanOp, p, {x});
        Block got(t, x.shape());
        std::int64_t outer = 1, inner = 1;
        for (int a = 0; a < axis; ++a) outer *= x.shape()[a];
        for (int a = axis + 1; a < 3; ++a) inner *= x.shape()[a];
        th::scan(t, x.raw(), got.raw(), outer, x.shape()[axis], inner, kind == 1);
        EXPECT_TRUE(same(got, want));
      }
  }
}

TEST(ArrayDeviceAlgorithms, SortAndArgsortRowsNaNLast) {
  for (DType t : {DType::Float64, DType::Float32, DType::Int32, DType::Bool}) {
    const Block x = with_nans(t, {4, 9}, 2);
    for (bool arg : {false, true}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(t) << " arg " << arg);
      td::SortParams p;
      p.arg = arg;
      const Block want = host_op(td::kSortOp, p, {x});
      Block got(want.dtype(), want.shape());
      th::sort_rows(t, x.raw(), got.raw(), 4, 9, arg);
      EXPECT_TRUE(same(got, want));
    }
  }
}

TEST(ArrayDeviceAlgorithms, TopkRowsFromAChunkAndFromPackedPartials) {
  const Block x = with_nans(DType::Float64, {3, 10}, 3);
  for (std::int64_t k : {3, -4, 10}) {
    SCOPED_TRACE(::testing::Message() << "k " << k);
    td::TopkParams p;
    p.k = k;
    p.final = true;
    p.offset = 20;
    const Block values = host_op(td::kTopkOp, p, {x});
    p.arg = true;
    const Block indices = host_op(td::kTopkOp, p, {x});
    Block got_v(DType::Float64, values.shape()), got_i(DType::Int64, indices.shape());
    th::topk_rows(DType::Float64, x.raw(), nullptr, DType::Int64, 20, 3, 10, k, got_v.raw(), got_i.data<std::int64_t>());
    EXPECT_TRUE(same(got_v, values));
    EXPECT_TRUE(same(got_i, indices));
    // A packed argtopk partial: (rows, 2m) values then indices; merging it gives the same.
    p.final = false;
    const Block packed = host_op(td::kTopkOp, p, {x});
    const std::int64_t m = packed.shape()[1] / 2;
    std::vector<double> vals, idx;
    for (std::int64_t r = 0; r < 3; ++r)
      for (std::int64_t j = 0; j < m; ++j) {
        vals.push_back(packed.data<double>()[r * 2 * m + j]);
        idx.push_back(packed.data<double>()[r * 2 * m + m + j]);
      }
    Block merged(DType::Int64, indices.shape());
    th::topk_rows(DType::Float64, vals.data(), idx.data(), DType::Float64, 0, 3, m, k, nullptr, merged.data<std::int64_t>());
    EXPECT_TRUE(same(merged, indices));
  }
}

TEST(ArrayDeviceAlgorithms, QuantileRowsEveryMethod) {
  for (DType t : {DType::Float64, DType::Int64}) {
    const Block x = with_nans(t, {5, 8}, 4);
    for (std::uint8_t method : {td::sorting::Linear, td::sorting::Lower, td::sorting::Higher, td::sorting::Nearest,
                                td::sorting::Midpoint, td::sorting::Median})
      for (bool skip_nan : {false, true}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(t) << " method " << int(method) << " skip_nan " << skip_nan);
        td::QuantileParams p;
        p.q = {0, 0.2, 0.5, 0.85, 1};
        p.method = method;
        p.skip_nan = skip_nan;
        p.reduced = 1;
        p.out_dtype = DType::Float64;
        const Block want = host_op(td::kQuantileOp, p, {x});
        Block got(DType::Float64, want.shape());
        th::quantile_rows(t, x.raw(), 5, 8, p.q, method, skip_nan, DType::Float64, got.raw());
        EXPECT_TRUE(same(got, want));
      }
  }
}

TEST(ArrayDeviceAlgorithms, SearchsortedAndIsin) {
  const std::vector<double> a = {-1, 0, 0, 2.5, 3, 7, kNaN};
  const Block sorted = Block::from_values(a, {7});
  const Block v = with_nans(DType::Float64, {4, 6}, 5);
  for (bool right : {false, true}) {
    td::SearchParams p;
    p.right = right;
    const Block want = host_op(td::kSearchsortedOp, p, {sorted, v});
    Block got(DType::Int64, v.shape());
    th::searchsorted(DType::Float64, sorted.raw(), 7, v.raw(), v.size(), got.data<std::int64_t>(), right);
    EXPECT_TRUE(same(got, want)) << "right " << right;
  }
  const Block ints = to_block(sample(DType::Int64, {30}, 6));
  const Block test = Block::from_values(std::vector<std::int64_t>{-11, -3, 0, 4, 4, 9}, {6});
  for (bool invert : {false, true}) {
    td::IsinParams p;
    p.invert = invert;
    const Block want = host_op(td::kIsinOp, p, {ints, test});
    Block got(DType::Bool, ints.shape());
    th::isin(DType::Int64, ints.raw(), 30, test.raw(), 6, got.data<bool>(), invert);
    EXPECT_TRUE(same(got, want)) << "invert " << invert;
  }
}

TEST(ArrayDeviceAlgorithms, HistogramAndBincount) {
  const Block x = with_nans(DType::Float64, {40}, 7);
  const Block w = to_block(sample(DType::Float64, {40}, 8));
  const std::vector<double> edges = {-10, -3, 0, 0.5, 4, 10};
  for (bool weighted : {false, true}) {
    td::HistogramParams p;
    p.edges = edges;
    p.weighted = weighted;
    const Block want = weighted ? host_op(td::kHistogramOp, p, {x, w}) : host_op(td::kHistogramOp, p, {x});
    Block got(want.dtype(), {static_cast<std::int64_t>(edges.size()) - 1});
    th::histogram(DType::Float64, x.raw(), 40, weighted ? w.data<double>() : nullptr, edges, 0, got.raw());
    EXPECT_TRUE(same(got.reshaped(want.shape()), want)) << "weighted " << weighted;
  }
  // Equal bins: the bin is computed (NumPy's way), not searched, and is the same bin.
  std::vector<double> uniform(11);
  for (int i = 0; i <= 10; ++i) uniform[static_cast<std::size_t>(i)] = i * 0.5 - 2.0;
  const double norm = 10 / 5.0;
  for (double v = -2.5; v <= 3.5; v += 0.03125)
    for (double x : {v, uniform[static_cast<std::size_t>(std::clamp(static_cast<int>((v + 2) * 2), 0, 10))]})
      ASSERT_EQ(td::sorting::histogram_bin_uniform(uniform.data(), 11, norm, x), td::sorting::histogram_bin(uniform.data(), 11, x))
          << x;
  td::HistogramParams up;
  up.edges = uniform;
  up.norm = norm;
  const Block uwant = host_op(td::kHistogramOp, up, {x});
  Block ugot(DType::Int64, {10});
  th::histogram(DType::Float64, x.raw(), 40, nullptr, uniform, norm, ugot.raw());
  EXPECT_TRUE(same(ugot.reshaped(uwant.shape()), uwant));

  const Block counts_in = Block::from_values(std::vector<std::int32_t>{3, 0, 1, 3, 3, 7, 0}, {7});
  td::BincountParams bp;
  bp.length = 9;
  const Block want = host_op(td::kBincountOp, bp, {counts_in});
  Block got(DType::Int64, {9});
  ASSERT_TRUE(th::bincount(DType::Int32, counts_in.raw(), 7, nullptr, 9, got.raw()));
  EXPECT_TRUE(same(got.reshaped(want.shape()), want));
  const Block negative = Block::from_values(std::vector<std::int64_t>{1, -1}, {2});
  EXPECT_FALSE(th::bincount(DType::Int64, negative.raw(), 2, nullptr, 9, got.raw()));
}

TEST(ArrayDeviceAlgorithms, UniqueValuesAndCounts) {
  for (DType t : {DType::Float64, DType::Int32, DType::Bool}) {
    SCOPED_TRACE(dtype_name(t));
    const Block x = with_nans(t, {5, 7}, 9);
    td::UniqueParams p;
    const Block want = host_op(td::kUniqueOp, p, {x});
    const DType wide = td::unique_partial_dtype(t);
    std::vector<std::int64_t> values(35), counts(35);  // 8 bytes per value either way
    const std::int64_t m = th::unique(t, x.raw(), 35, values.data(), counts.data());
    Block got(wide, {2, m});
    std::memcpy(got.raw(), values.data(), 8 * static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i)
      if (wide == DType::Float64) got.data<double>()[m + i] = static_cast<double>(counts[static_cast<std::size_t>(i)]);
      else got.data<std::int64_t>()[m + i] = counts[static_cast<std::size_t>(i)];
    EXPECT_TRUE(same(got, want));
  }
}
