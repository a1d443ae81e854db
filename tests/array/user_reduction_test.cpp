// reduction(): user-registered chunk / combine / aggregate ops in a tree over one or several
// axes, with split_every and keepdims, checked against the built-in sum and max.
#include <algorithm>
#include <atomic>
#include <limits>

#include "array_test_util.hpp"
#include "tessera/ops/function.hpp"

using namespace tessera_test;

namespace {

std::atomic<int> combine_calls{0};

/** Folds a float64 block over `axes` with f (init v0), keeping them as length-1 axes or not. */
template <class F>
Block fold_axes(const Block& b, const std::vector<int>& axes, bool keepdims, double v0, F f) {
  const Shape& s = b.shape();
  Shape kept = s;
  for (int a : axes) kept[static_cast<std::size_t>(a)] = 1;
  std::vector<double> out(static_cast<std::size_t>(shape_size(kept)), v0);
  const auto in = b.to_doubles();
  for (std::int64_t g = 0; g < b.size(); ++g) {
    auto idx = unravel(g, s);
    for (int a : axes) idx[static_cast<std::size_t>(a)] = 0;
    std::int64_t o = 0;
    for (std::size_t k = 0; k < idx.size(); ++k) o = o * kept[k] + idx[k];
    out[static_cast<std::size_t>(o)] = f(out[static_cast<std::size_t>(o)], in[static_cast<std::size_t>(g)]);
  }
  Shape shape;
  for (std::size_t k = 0; k < s.size(); ++k)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(k)) == axes.end()) shape.push_back(s[k]);
    else if (keepdims) shape.push_back(1);
  return Block::from_values(out, shape);
}

Block user_sum(Block b, std::vector<int> axes, bool keepdims) {
  return fold_axes(b, axes, keepdims, 0.0, [](double a, double x) { return a + x; });
}
Block user_sum_combine(Block b, std::vector<int> axes, bool keepdims) {
  ++combine_calls;
  return user_sum(std::move(b), std::move(axes), keepdims);
}
Block user_max(Block b, std::vector<int> axes, bool keepdims) {
  return fold_axes(b, axes, keepdims, -std::numeric_limits<double>::infinity(),
                   [](double a, double x) { return std::max(a, x); });
}

TESSERA_REGISTER_FUNCTION_AS("test.user_sum", user_sum);
TESSERA_REGISTER_FUNCTION_AS("test.user_sum_combine", user_sum_combine);
TESSERA_REGISTER_FUNCTION_AS("test.user_max", user_max);

}  // namespace

TEST(ArrayUserReduction, SumAndMaxOverAxesWithSplitEvery) {
  const Ref a = sample(DType::Float64, {7, 6, 5});
  for (const auto& axes : std::vector<std::vector<int>>{{}, {0}, {1}, {2}, {0, 2}})
    for (bool keepdims : {false, true})
      for (int split : {0, 2, 3}) {
        SCOPED_TRACE(::testing::Message() << "axes " << ::testing::PrintToString(axes) << " keepdims " << keepdims
                                          << " split_every " << split);
        const ReduceOptions ro{.axes = axes, .keepdims = keepdims};
        check_configs(
            [&](std::size_t k) {
              const Array x = to_array(a, chunkings()[k].spec);
              return reduction(x, "test.user_sum", "test.user_sum",
                               {.axes = axes, .keepdims = keepdims, .split_every = split, .combine_op = "test.user_sum_combine"});
            },
            ref_from_block(to_array(a, {-1}).sum(ro).compute()), {1e-12, 1e-12});
        check_configs(
            [&](std::size_t k) {
              const Array x = to_array(a, chunkings()[k].spec);
              return reduction(x, "test.user_max", "test.user_max", {.axes = axes, .keepdims = keepdims, .split_every = split});
            },
            ref_from_block(to_array(a, {-1}).max(ro).compute()));
      }
}

TEST(ArrayUserReduction, CombineRunsOnlyWhenTheTreeHasLevels) {
  const Ref a = sample(DType::Float64, {16});
  combine_calls = 0;
  reduction(to_array(a, {1}), "test.user_sum", "test.user_sum", {.split_every = 4, .combine_op = "test.user_sum_combine"})
      .compute(local_executor("sync"));
  EXPECT_EQ(combine_calls.load(), 4);  // 16 partials: 4 combines of 4, then the aggregate of 4
  combine_calls = 0;
  reduction(to_array(a, {4}), "test.user_sum", "test.user_sum", {.split_every = 4, .combine_op = "test.user_sum_combine"})
      .compute(local_executor("sync"));
  EXPECT_EQ(combine_calls.load(), 0);
}

TEST(ArrayUserReduction, UnknownOpsAreRejectedWhenBuilt) {
  const Array x = to_array(sample(DType::Float64, {4}), {2});
  EXPECT_THROW(reduction(x, "test.no_such_op", "test.user_sum"), UnknownOperationError);
  EXPECT_THROW(reduction(x, "test.user_sum", "test.user_sum", {.split_every = 1}), Error);
}
