// The linear algebra on a GPU (cuda/linalg_ops.cpp): every block op's device variant through
// the Array functions, against the host results (unique answers) or the defining properties
// (factors defined up to signs). Skipped without a GPU.
#include <cmath>
#include <vector>

#include "gpu_test_util.hpp"
#include "tessera/array.hpp"

namespace {

using namespace tessera;

Block values(DType t, Shape s, int salt, double diagonal = 0) {
  Block b(DType::Float64, s);
  double* p = b.data<double>();
  for (std::int64_t i = 0; i < b.size(); ++i) p[i] = std::sin(0.7 * static_cast<double>(i) + salt) * 2;
  if (diagonal != 0)
    for (std::int64_t i = 0; i < s[0] && i < s[1]; ++i) p[i * s[1] + i] += diagonal;
  return t == DType::Float64 ? b : from_block(b, {-1}).astype(t).compute();
}

Array on_device(const Block& b, ChunkSpec c) { return from_block(b, c).to_device(); }

::testing::AssertionResult near(const Block& got, const Block& want, double tol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "got " << dtype_name(got.dtype()) << " " << shape_to_string(got.shape())
                                         << ", expected " << dtype_name(want.dtype()) << " " << shape_to_string(want.shape());
  const auto g = got.to_doubles(), w = want.to_doubles();
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i]))))
      return ::testing::AssertionFailure() << "element " << i << " is " << g[i] << ", expected " << w[i];
  return ::testing::AssertionSuccess();
}

double tol_of(DType t) { return t == DType::Float32 ? 1e-3 : 1e-9; }

TEST(CudaLinalg, ProductsMatchTheHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Float64, DType::Float32, DType::Int64}) {
    SCOPED_TRACE(dtype_name(t));
    const Block a = values(t, {6, 7}, 1), b = values(t, {7, 5}, 2);
    const double tol = t == DType::Int64 ? 0 : tol_of(t);
    EXPECT_TRUE(near(tensordot(on_device(a, {2, 3}), on_device(b, {3, 2}), 1).compute(),
                     tensordot(from_block(a, {-1}), from_block(b, {-1}), 1).compute(), tol));
    const Block x = values(t, {3, 4, 5}, 3), y = values(t, {3, 5, 2}, 4);
    EXPECT_TRUE(near(einsum("bij,bjk->bik", {on_device(x, {2}), on_device(y, {2})}).compute(),
                     einsum("bij,bjk->bik", {from_block(x, {-1}), from_block(y, {-1})}).compute(), tol));
  }
}

TEST(CudaLinalg, FactorisationsMatchTheHost) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const double tol = tol_of(t);
    const Block m = values(t, {9, 9}, 5, 20);
    const Array host = from_block(m, {-1});
    const Array spd = matmul(host, host.T());
    const Block s = spd.compute();
    EXPECT_TRUE(near(linalg::cholesky(on_device(s, {4})).compute(), linalg::cholesky(from_block(s, {4})).compute(), tol));
    const Block rhs = values(t, {9, 2}, 6);
    EXPECT_TRUE(near(linalg::solve(on_device(m, {4}), on_device(rhs, {4, 2})).compute(),
                     linalg::solve(host, from_block(rhs, {-1})).compute(), tol));
    EXPECT_TRUE(near(linalg::inv(on_device(m, {3})).compute(), linalg::inv(host).compute(), tol));
    const auto f = linalg::lu(on_device(m, {4}));
    EXPECT_TRUE(near(matmul(f.p, matmul(f.l, f.u)).compute(), m, tol));
  }
}

TEST(CudaLinalg, QrAndSvdHaveTheirProperties) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const double tol = tol_of(t);
    const Block a = values(t, {20, 4}, 7);
    const auto q = linalg::qr(on_device(a, {6, 4}));
    EXPECT_TRUE(near(matmul(q.q, q.r).compute(), a, tol));
    EXPECT_TRUE(near(matmul(q.q.T(), q.q).compute(), linalg::eye(4, -1, t).compute(), tol));
    const auto s = linalg::svd(on_device(a, {6, 4}));
    EXPECT_TRUE(near(s.s.compute(), linalg::svd(from_block(a, {-1})).s.compute(), tol));
    EXPECT_TRUE(near(matmul(s.u * s.s, s.v).compute(), a, tol));
  }
}

}  // namespace
