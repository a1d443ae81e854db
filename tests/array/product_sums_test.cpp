// Sums of products pushed into the operands (src/array/product_sums.cpp): the results equal
// the sums of the whole products, for matmul, tensordot, einsum and batched matmul, over every
// axis set, with keepdims and means, for several chunkings on both local executors; the
// graphs no longer hold the full products; narrow integer products are left alone because
// they wrap before they are summed.
#include <cstdint>
#include <cstring>

#include "array/array_ops.hpp"
#include "array/linalg_tasks.hpp"
#include "array_test_util.hpp"
#include "tessera/array/linalg.hpp"

using namespace tessera_test;

namespace {

/** a (m, k) times b (k, n), looped, summed over `axes` of the (m, n) product. */
Ref matmul_sum_ref(const Ref& a, const Ref& b, const std::vector<int>& axes, bool keepdims, bool mean = false) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  const bool s0 = std::find(axes.begin(), axes.end(), 0) != axes.end();
  const bool s1 = std::find(axes.begin(), axes.end(), 1) != axes.end();
  Shape out;
  if (!s0) out.push_back(m);
  else if (keepdims) out.push_back(1);
  if (!s1) out.push_back(n);
  else if (keepdims) out.push_back(1);
  const double count = static_cast<double>((s0 ? m : 1) * (s1 ? n : 1));
  return make_ref(a.dtype, out, [&](const std::vector<std::int64_t>& o) {
    std::size_t at = 0;
    const std::int64_t i0 = s0 ? 0 : o[at++];
    if (s0 && keepdims) ++at;
    const std::int64_t j0 = s1 ? 0 : o[at];
    double acc = 0;
    for (std::int64_t i = s0 ? 0 : i0; i < (s0 ? m : i0 + 1); ++i)
      for (std::int64_t j = s1 ? 0 : j0; j < (s1 ? n : j0 + 1); ++j)
        for (std::int64_t q = 0; q < k; ++q) acc += a.at({i, q}) * b.at({q, j});
    return mean ? acc / count : acc;
  });
}

/** Tasks of a graph that multiply blocks. */
int product_tasks(const Graph& g) {
  int n = 0;
  for (const auto& [key, t] : g.tasks()) n += t.op == detail::kContractOp || t.op == detail::kMatmulOp;
  return n;
}

Array sum_over(const Array& x, std::vector<int> axes, bool keepdims = false) {
  ReduceOptions o;
  o.axes = std::move(axes);
  o.keepdims = keepdims;
  return x.sum(o);
}

}  // namespace

TEST(ProductSums, SumsOfAMatrixProductOverEveryAxisSet) {
  const Ref a = sample(DType::Float64, {7, 5}, 1), b = sample(DType::Float64, {5, 6}, 2);
  const Tol tol{1e-12, 1e-10};
  for (const std::vector<int>& axes : {std::vector<int>{0, 1}, {0}, {1}}) {
    SCOPED_TRACE("axes of " + std::to_string(axes.size()));
    for (bool keepdims : {false, true}) {
      check_expr({a, b}, [&](auto& x) { return sum_over(matmul(x[0], x[1]), axes, keepdims); },
                 matmul_sum_ref(a, b, axes, keepdims), tol);
      ReduceOptions o;
      o.axes = axes;
      o.keepdims = keepdims;
      check_expr({a, b}, [&](auto& x) { return matmul(x[0], x[1]).mean(o); },
                 matmul_sum_ref(a, b, axes, keepdims, true), tol);
    }
  }
}

TEST(ProductSums, Float32StaysFloat32) {
  const Ref a = sample(DType::Float32, {6, 4}, 3), b = sample(DType::Float32, {4, 5}, 4);
  const Tol tol{1e-5, 1e-4};
  check_expr({a, b}, [](auto& x) { return matmul(x[0], x[1]).sum(); }, matmul_sum_ref(a, b, {0, 1}, false), tol);
  check_expr({a, b}, [](auto& x) { return matmul(x[0], x[1]).mean(); }, matmul_sum_ref(a, b, {0, 1}, false, true),
             tol);
}

TEST(ProductSums, TheGraphHoldsOneSmallProductInsteadOfTheWholeOne) {
  const Ref a = sample(DType::Float64, {8, 8}, 5), b = sample(DType::Float64, {8, 8}, 6);
  const Array x = to_array(a, {2}), y = to_array(b, {2});
  // The product alone: 4 x 4 output chunks, one matmul task each.
  EXPECT_EQ(product_tasks(matmul(x, y).to_graph(nullptr)), 16);
  // Its sum: one product of a (1, 8) row of column sums with an (8, 1) column of row sums.
  const Array total = matmul(x, y).sum();
  EXPECT_EQ(product_tasks(total.to_graph(nullptr)), 1);
  EXPECT_TRUE(block_matches(compute_sync(total), matmul_sum_ref(a, b, {0, 1}, false), 1e-12, 1e-10));
  // Summed over the rows only: (1, 8) times the 4 column chunks of y.
  EXPECT_EQ(product_tasks(sum_over(matmul(x, y), {0}).to_graph(nullptr)), 4);
}

TEST(ProductSums, TensordotEinsumAndBatchedProducts) {
  const Tol tol{1e-12, 1e-10};
  // tensordot over the long axis, as tensordot_sum in benchmarks/array_workloads.cpp.
  const Ref x = sample(DType::Float64, {9, 4}, 7), y = sample(DType::Float64, {9, 3}, 8);
  Ref xt = make_ref(DType::Float64, {4, 9}, [&](auto& i) { return x.at({i[1], i[0]}); });
  check_expr({x, y}, [](auto& v) { return tensordot(v[0], v[1], {0}, {0}).sum(); },
             matmul_sum_ref(xt, y, {0, 1}, false), tol);
  check_expr({x, y}, [](auto& v) { return sum_over(tensordot(v[0], v[1], {0}, {0}), {1}); },
             matmul_sum_ref(xt, y, {1}, false), tol);
  // A batch of products: sums over the free axes move into the operands, a sum over the batch
  // axis is taken of the (smaller) products.
  const Ref p = sample(DType::Float64, {3, 4, 5}, 9), q = sample(DType::Float64, {3, 5, 2}, 10);
  auto batched = [&](const std::vector<int>& axes) {
    Shape out;
    for (int d = 0; d < 3; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(d == 0 ? 3 : d == 1 ? 4 : 2);
    return make_ref(DType::Float64, out, [&](const std::vector<std::int64_t>& o) {
      double acc = 0;
      std::int64_t lo[3] = {0, 0, 0}, hi[3] = {3, 4, 2};
      std::size_t at = 0;
      for (int d = 0; d < 3; ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
          lo[d] = o[at++];
          hi[d] = lo[d] + 1;
        }
      for (std::int64_t bb = lo[0]; bb < hi[0]; ++bb)
        for (std::int64_t i = lo[1]; i < hi[1]; ++i)
          for (std::int64_t j = lo[2]; j < hi[2]; ++j)
            for (std::int64_t k = 0; k < 5; ++k) acc += p.at({bb, i, k}) * q.at({bb, k, j});
      return acc;
    });
  };
  for (const std::vector<int>& axes : {std::vector<int>{0, 1, 2}, {1, 2}, {1}, {2}, {0}, {0, 2}}) {
    SCOPED_TRACE("batched, axes of " + std::to_string(axes.size()));
    check_expr({p, q}, [&](auto& v) { return sum_over(einsum("bij,bjk->bik", {v[0], v[1]}), axes); }, batched(axes),
               tol);
    check_expr({p, q}, [&](auto& v) { return sum_over(matmul(v[0], v[1]), axes); }, batched(axes), tol);
  }
}

TEST(ProductSums, Int64ProductsThatWrapSumExactly) {
  // Products past 2**63 wrap modulo 2**64 element by element; the sums' product wraps the same.
  const Ref a = make_ref(DType::Int64, {5, 4}, [](auto& i) { return static_cast<double>((i[0] * 4 + i[1]) * 1000003 - 7); });
  const Ref b = make_ref(DType::Int64, {4, 3}, [](auto& i) { return static_cast<double>(((i[0] * 3 + i[1]) % 5) * 294589048403LL); });
  const Array x = to_array(a, {2}), y = to_array(b, {3});
  const Block product = compute_sync(matmul(x, y));
  std::uint64_t want = 0;
  for (std::int64_t i = 0; i < product.size(); ++i) want += static_cast<std::uint64_t>(product.data<std::int64_t>()[i]);
  for (const auto& e : executors()) {
    const Block got = matmul(x, y).sum().compute(*e.ex);
    ASSERT_EQ(got.dtype(), DType::Int64);
    EXPECT_EQ(static_cast<std::uint64_t>(got.data<std::int64_t>()[0]), want) << e.name;
  }
  EXPECT_EQ(product_tasks(matmul(x, y).sum().to_graph(nullptr)), 1);
}

TEST(ProductSums, NarrowIntegerProductsAreSummedAfterTheyWrap) {
  // int32 products wrap at 32 bits before the int64 sum: summing the operands first would give
  // another number, so the whole product is computed.
  const Ref a = make_ref(DType::Int32, {4, 3}, [](auto& i) { return static_cast<double>(60000 + i[0] + i[1]); });
  const Ref b = make_ref(DType::Int32, {3, 4}, [](auto& i) { return static_cast<double>(70000 - i[0] * i[1]); });
  const Array x = to_array(a, {2}), y = to_array(b, {2});
  const Block product = compute_sync(matmul(x, y));
  ASSERT_EQ(product.dtype(), DType::Int32);
  std::int64_t want = 0;
  for (std::int64_t i = 0; i < product.size(); ++i) want += product.data<std::int32_t>()[i];
  const Block got = compute_sync(matmul(x, y).sum());
  ASSERT_EQ(got.dtype(), DType::Int64);
  EXPECT_EQ(got.data<std::int64_t>()[0], want);
  EXPECT_EQ(product_tasks(matmul(x, y).sum().to_graph(nullptr)), 4);
}

TEST(ProductSums, OtherReductionsOfAProductComputeIt) {
  const Ref a = sample(DType::Float64, {6, 4}, 11), b = sample(DType::Float64, {4, 6}, 12);
  const Array x = to_array(a, {3}), y = to_array(b, {3});
  EXPECT_EQ(product_tasks(matmul(x, y).max().to_graph(nullptr)), 4);
  EXPECT_EQ(product_tasks(matmul(x, y).std().to_graph(nullptr)), 4);
}
