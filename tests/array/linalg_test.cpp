// Linear algebra: products (tensordot, einsum, outer, inner, vdot, kron, trace, dot), norms,
// and the decompositions, checked against looped references and by their defining
// properties (Q orthonormal, Q R = A, U S V^T = A, L L^T = A, P L U = A, A x = b) for several
// chunkings, float32 and float64, on both local executors.
#include <algorithm>
#include <cmath>
#include <limits>

#include "array/linalg_tasks.hpp"
#include "array_test_util.hpp"
#include "tessera/array/linalg.hpp"

using namespace tessera_test;

namespace {

// ---- references ------------------------------------------------------------------------------

/** Looped tensordot of two references over the paired axes. */
Ref tensordot_ref(const Ref& a, const Ref& b, const std::vector<int>& ax, const std::vector<int>& bx, DType t) {
  std::vector<int> fa, fb;
  for (int k = 0; k < static_cast<int>(a.shape.size()); ++k)
    if (std::find(ax.begin(), ax.end(), k) == ax.end()) fa.push_back(k);
  for (int k = 0; k < static_cast<int>(b.shape.size()); ++k)
    if (std::find(bx.begin(), bx.end(), k) == bx.end()) fb.push_back(k);
  Shape out, con;
  for (int k : fa) out.push_back(a.shape[k]);
  for (int k : fb) out.push_back(b.shape[k]);
  for (int k : ax) con.push_back(a.shape[k]);
  return make_ref(t, out, [&](const std::vector<std::int64_t>& o) {
    double acc = 0;
    const auto n = shape_size(con);
    for (std::int64_t f = 0; f < n; ++f) {
      const auto c = unravel(f, con);
      std::vector<std::int64_t> ia(a.shape.size()), ib(b.shape.size());
      for (std::size_t i = 0; i < fa.size(); ++i) ia[fa[i]] = o[i];
      for (std::size_t i = 0; i < fb.size(); ++i) ib[fb[i]] = o[fa.size() + i];
      for (std::size_t i = 0; i < ax.size(); ++i) {
        ia[ax[i]] = c[i];
        ib[bx[i]] = c[i];
      }
      acc += a.at(ia) * b.at(ib);
    }
    return t == DType::Float32 ? static_cast<double>(static_cast<float>(acc)) : acc;
  });
}

/** A dense matrix of doubles read from a computed 2-d block. */
struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double operator()(std::int64_t i, std::int64_t j) const { return v[static_cast<std::size_t>(i * cols + j)]; }
};

Mat mat(const Block& b) {
  EXPECT_EQ(b.ndim(), 2);
  return Mat{b.shape()[0], b.shape()[1], b.to_doubles()};
}
Mat mat(const Ref& r) { return Mat{r.shape[0], r.shape[1], r.v}; }

Mat mul(const Mat& a, const Mat& b, bool ta = false) {
  const std::int64_t m = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  EXPECT_EQ(k, b.rows);
  Mat c{m, b.cols, std::vector<double>(static_cast<std::size_t>(m * b.cols), 0.0)};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const double x = ta ? a(p, i) : a(i, p);
      for (std::int64_t j = 0; j < b.cols; ++j) c.v[i * b.cols + j] += x * b(p, j);
    }
  return c;
}

::testing::AssertionResult near(const Mat& got, const Mat& want, double tol) {
  if (got.rows != want.rows || got.cols != want.cols)
    return ::testing::AssertionFailure() << "shape " << got.rows << "x" << got.cols << ", expected " << want.rows << "x"
                                         << want.cols;
  for (std::int64_t i = 0; i < got.rows; ++i)
    for (std::int64_t j = 0; j < got.cols; ++j)
      if (!(std::fabs(got(i, j) - want(i, j)) <= tol * (1 + std::fabs(want(i, j)))))
        return ::testing::AssertionFailure() << "(" << i << ", " << j << ") is " << got(i, j) << ", expected " << want(i, j);
  return ::testing::AssertionSuccess();
}

Mat identity(std::int64_t n) {
  Mat m{n, n, std::vector<double>(static_cast<std::size_t>(n * n), 0.0)};
  for (std::int64_t i = 0; i < n; ++i) m.v[i * n + i] = 1;
  return m;
}

::testing::AssertionResult triangular(const Mat& m, bool lower, double tol = 0) {
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = 0; j < m.cols; ++j)
      if ((lower ? j > i : j < i) && std::fabs(m(i, j)) > tol)
        return ::testing::AssertionFailure() << "(" << i << ", " << j << ") is " << m(i, j) << " outside the triangle";
  return ::testing::AssertionSuccess();
}

/** Symmetric positive definite: M M^T + n I. */
Ref spd(DType t, std::int64_t n, int salt) {
  const Ref m = sample(DType::Float64, {n, n}, salt);
  return make_ref(t, {n, n}, [&](auto& i) {
    double acc = i[0] == i[1] ? static_cast<double>(n) : 0.0;
    for (std::int64_t k = 0; k < n; ++k) acc += m.at({i[0], k}) * m.at({i[1], k}) * 0.01;
    return t == DType::Float32 ? static_cast<double>(static_cast<float>(acc)) : acc;
  });
}

double tol_of(DType t) { return t == DType::Float32 ? 2e-4 : 1e-10; }

struct Case {
  const char* name;
  ChunkSpec chunks;
};

// ---- products --------------------------------------------------------------------------------

TEST(ArrayLinalg, TensordotOverPairsOfAxes) {
  const Ref a = sample(DType::Float64, {3, 4, 5}, 1), b = sample(DType::Float64, {4, 3, 2}, 2);
  check_expr({a, b}, [](auto& x) { return tensordot(x[0], x[1], {1, 0}, {0, 1}); },
             tensordot_ref(a, b, {1, 0}, {0, 1}, DType::Float64));
  check_expr({a, b}, [](auto& x) { return tensordot(x[0], x[1], {1}, {0}); },
             tensordot_ref(a, b, {1}, {0}, DType::Float64));
  // Negative axes, and axes as a count (the last n of a with the first n of b).
  const Ref c = sample(DType::Float64, {4, 5, 3}, 3);
  check_expr({a, c}, [](auto& x) { return tensordot(x[0], x[1], 2); }, tensordot_ref(a, c, {1, 2}, {0, 1}, DType::Float64));
  check_expr({a, c}, [](auto& x) { return tensordot(x[0], x[1], {-1}, {-2}); },
             tensordot_ref(a, c, {2}, {1}, DType::Float64));
  // No contracted axis: an outer product.
  const Ref v = sample(DType::Float64, {3}, 4);
  check_expr({v, v}, [](auto& x) { return tensordot(x[0], x[1], 0); }, tensordot_ref(v, v, {}, {}, DType::Float64));
  EXPECT_THROW(tensordot(to_array(a, {2}), to_array(b, {2}), {0}, {0}), ShapeError);
  EXPECT_THROW(tensordot(to_array(a, {2}), to_array(b, {2}), {0, 1}, {1}), ShapeError);
}

TEST(ArrayLinalg, TensordotDTypes) {
  const Ref a = sample(DType::Float32, {4, 6}, 1), b = sample(DType::Float32, {6, 3}, 2);
  check_expr({a, b}, [](auto& x) { return tensordot(x[0], x[1], 1); }, tensordot_ref(a, b, {1}, {0}, DType::Float32),
             {1e-5, 1e-5});
  const Ref i = sample(DType::Int32, {4, 6}, 3), j = sample(DType::Int64, {6, 3}, 4);
  check_expr({i, j}, [](auto& x) { return tensordot(x[0], x[1], 1); }, tensordot_ref(i, j, {1}, {0}, DType::Int64));
  const Ref f = sample(DType::Float64, {6, 3}, 5);
  check_expr({i, f}, [](auto& x) { return tensordot(x[0], x[1], 1); }, tensordot_ref(i, f, {1}, {0}, DType::Float64));
}

TEST(ArrayLinalg, ContractionSumsManyChunksInATree) {
  // 40 contracted chunks: contract tasks take at most 8 pairs and adds at most 8 partials.
  const Ref a = sample(DType::Float64, {2, 40}, 1), b = sample(DType::Float64, {40, 3}, 2);
  Array c = tensordot(to_array(a, {2, 1}), to_array(b, {1, 3}), 1);
  std::vector<Key> keys;
  const Graph g = c.to_graph(&keys);
  int contracts = 0, adds = 0;
  for (const auto& [k, t] : g.tasks()) {
    if (t.op == detail::kContractOp) {
      ++contracts;
      EXPECT_LE(t.args.size(), 1u + 2 * 8);
    }
    if (t.op == detail::kAddOp) {
      ++adds;
      EXPECT_LE(t.args.size(), 8u);
    }
  }
  EXPECT_EQ(contracts, 5);
  EXPECT_EQ(adds, 1);
  for (const auto& e : executors()) EXPECT_TRUE(block_matches(c.compute(*e.ex), tensordot_ref(a, b, {1}, {0}, DType::Float64)));
}

TEST(ArrayLinalg, DotOfStacksIsTensordotOverTheLastAndSecondToLastAxes) {
  const Ref a = sample(DType::Float64, {2, 3, 4}, 1), b = sample(DType::Float64, {5, 4, 2}, 2);
  check_expr({a, b}, [](auto& x) { return dot(x[0], x[1]); }, tensordot_ref(a, b, {2}, {1}, DType::Float64));
  const Ref v = sample(DType::Float64, {4}, 3);
  check_expr({a, v}, [](auto& x) { return dot(x[0], x[1]); }, tensordot_ref(a, v, {2}, {0}, DType::Float64));
  // Vectors and matrices are matmul's.
  const Ref m = sample(DType::Float64, {3, 4}, 4);
  check_expr({m, v}, [](auto& x) { return dot(x[0], x[1]); }, tensordot_ref(m, v, {1}, {0}, DType::Float64));
}

TEST(ArrayLinalg, MatmulOfStacksIsOneBatchedProductPerChunk) {
  // 50 matrices in one chunk: one contract task, not 50 products stacked back together.
  const Ref a = sample(DType::Float64, {50, 3, 4}, 1), b = sample(DType::Float64, {50, 4, 2}, 2);
  const Ref want = make_ref(DType::Float64, {50, 3, 2}, [&](auto& i) {
    double acc = 0;
    for (std::int64_t k = 0; k < 4; ++k) acc += a.at({i[0], i[1], k}) * b.at({i[0], k, i[2]});
    return acc;
  });
  const Array c = matmul(to_array(a, {-1}), to_array(b, {-1}));
  std::vector<Key> keys;
  const Graph g = c.to_graph(&keys);
  int products = 0;
  for (const auto& [k, t] : g.tasks()) products += t.op == detail::kContractOp || t.op == "tessera.array.matmul";
  EXPECT_EQ(products, 1);
  EXPECT_EQ(keys.size(), 1u);
  for (const auto& e : executors()) EXPECT_TRUE(block_matches(c.compute(*e.ex), want));
  // Chunked batch axes, and a broadcast batch axis.
  check_expr({a, b}, [](auto& x) { return matmul(x[0], x[1]); }, want);
  const Ref b1 = sample(DType::Float32, {1, 4, 2}, 3), a32 = sample(DType::Float32, {6, 3, 4}, 4);
  check_expr({a32, b1}, [](auto& x) { return matmul(x[0], x[1]); }, make_ref(DType::Float32, {6, 3, 2}, [&](auto& i) {
               double acc = 0;
               for (std::int64_t k = 0; k < 4; ++k) acc += a32.at({i[0], i[1], k}) * b1.at({0, k, i[2]});
               return acc;
             }),
             {1e-5, 1e-5});
}

TEST(ArrayLinalg, EinsumCommonForms) {
  const Ref m = sample(DType::Float64, {4, 5}, 1), n = sample(DType::Float64, {5, 3}, 2), s = sample(DType::Float64, {4, 4}, 3);
  const Ref v = sample(DType::Float64, {5}, 4), w = sample(DType::Float64, {3}, 5), m2 = sample(DType::Float64, {4, 5}, 6);
  check_expr({m, n}, [](auto& x) { return einsum("ij,jk->ik", {x[0], x[1]}); }, tensordot_ref(m, n, {1}, {0}, DType::Float64));
  check_expr({m, n}, [](auto& x) { return einsum("ij,jk", {x[0], x[1]}); }, tensordot_ref(m, n, {1}, {0}, DType::Float64));
  check_expr({m}, [](auto& x) { return einsum("ij->ji", {x[0]}); },
             make_ref(DType::Float64, {5, 4}, [&](auto& i) { return m.at({i[1], i[0]}); }));
  check_expr({s}, [](auto& x) { return einsum("ii->i", {x[0]}); },
             make_ref(DType::Float64, {4}, [&](auto& i) { return s.at({i[0], i[0]}); }));
  double total = 0, tr = 0, dotvv = 0;
  for (double x : m.v) total += x;
  for (std::int64_t i = 0; i < 4; ++i) tr += s.at({i, i});
  for (double x : v.v) dotvv += x * x;
  check_expr({m}, [](auto& x) { return einsum("ij->", {x[0]}); }, ref_of(DType::Float64, {}, {total}));
  check_expr({s}, [](auto& x) { return einsum("ii", {x[0]}); }, ref_of(DType::Float64, {}, {tr}));
  check_expr({v, v}, [](auto& x) { return einsum("i,i->", {x[0], x[1]}); }, ref_of(DType::Float64, {}, {dotvv}));
  check_expr({m, m2}, [](auto& x) { return einsum("ij,ij->ij", {x[0], x[1]}); },
             make_ref(DType::Float64, {4, 5}, [&](auto& i) { return m.at(i) * m2.at(i); }));
  check_expr({v, w}, [](auto& x) { return einsum("i,j->ij", {x[0], x[1]}); },
             make_ref(DType::Float64, {5, 3}, [&](auto& i) { return v.v[i[0]] * w.v[i[1]]; }));
  check_expr({m, v}, [](auto& x) { return einsum("ij,j->i", {x[0], x[1]}); }, tensordot_ref(m, v, {1}, {0}, DType::Float64));
  check_expr({m, m2}, [](auto& x) { return einsum("ij,ij->i", {x[0], x[1]}); }, make_ref(DType::Float64, {4}, [&](auto& i) {
               double acc = 0;
               for (std::int64_t j = 0; j < 5; ++j) acc += m.at({i[0], j}) * m2.at({i[0], j});
               return acc;
             }));
  // Batched products, and the batch axis moved in the output.
  const Ref ba = sample(DType::Float64, {3, 4, 5}, 7), bb = sample(DType::Float64, {3, 5, 2}, 8);
  const Ref bwant = make_ref(DType::Float64, {3, 4, 2}, [&](auto& i) {
    double acc = 0;
    for (std::int64_t k = 0; k < 5; ++k) acc += ba.at({i[0], i[1], k}) * bb.at({i[0], k, i[2]});
    return acc;
  });
  check_expr({ba, bb}, [](auto& x) { return einsum("bij,bjk->bik", {x[0], x[1]}); }, bwant);
  check_expr({ba, bb}, [](auto& x) { return einsum("bij,bjk->ikb", {x[0], x[1]}); },
             make_ref(DType::Float64, {4, 2, 3}, [&](auto& i) { return bwant.at({i[2], i[0], i[1]}); }));
  // Three operands.
  const Ref c = sample(DType::Float64, {3, 2}, 9);
  const Ref mnc = tensordot_ref(tensordot_ref(m, n, {1}, {0}, DType::Float64), c, {1}, {0}, DType::Float64);
  check_expr({m, n, c}, [](auto& x) { return einsum("ij,jk,kl->il", {x[0], x[1], x[2]}); }, mnc, {1e-11, 1e-11});
  EXPECT_THROW(einsum("ij,jk->ik", {to_array(m, {2})}), Error);
  EXPECT_THROW(einsum("ij,jk->ik", {to_array(m, {2}), to_array(m, {2})}), ShapeError);
  EXPECT_THROW(einsum("ij->q", {to_array(m, {2})}), Error);
}

TEST(ArrayLinalg, OuterInnerVdotKronTrace) {
  const Ref a = sample(DType::Float64, {2, 3}, 1), v = sample(DType::Float64, {4}, 2);
  check_expr({a, v}, [](auto& x) { return outer(x[0], x[1]); },
             make_ref(DType::Float64, {6, 4}, [&](auto& i) { return a.v[i[0]] * v.v[i[1]]; }));
  const Ref b = sample(DType::Float64, {4, 3}, 3);
  check_expr({a, b}, [](auto& x) { return inner(x[0], x[1]); }, tensordot_ref(a, b, {1}, {1}, DType::Float64));
  const Ref c = sample(DType::Float64, {3, 2}, 4);
  double vd = 0;
  for (std::size_t i = 0; i < a.v.size(); ++i) vd += a.v[i] * c.v[i];
  check_expr({a, c}, [](auto& x) { return vdot(x[0], x[1]); }, ref_of(DType::Float64, {}, {vd}));
  const Ref k = sample(DType::Float64, {2, 2}, 5);
  check_expr({a, k}, [](auto& x) { return kron(x[0], x[1]); }, make_ref(DType::Float64, {4, 6}, [&](auto& i) {
               return a.at({i[0] / 2, i[1] / 2}) * k.at({i[0] % 2, i[1] % 2});
             }));
  const Ref s = sample(DType::Float64, {5, 6}, 6);
  for (int off : {0, 2, -3}) {
    SCOPED_TRACE(off);
    double tr = 0;
    for (std::int64_t i = 0; i < 5; ++i)
      if (i + off >= 0 && i + off < 6) tr += s.at({i, i + off});
    check_expr({s}, [&](auto& x) { return trace(x[0], off); }, ref_of(DType::Float64, {}, {tr}));
  }
  const Ref t3 = sample(DType::Int64, {3, 4, 3}, 7);
  check_expr({t3}, [](auto& x) { return tessera::diagonal(x[0], 0, 0, 2); },
             make_ref(DType::Int64, {4, 3}, [&](auto& i) { return t3.at({i[1], i[0], i[1]}); }));
  check_expr({t3}, [](auto& x) { return trace(x[0], 0, 0, 2); },
             make_ref(DType::Int64, {4}, [&](auto& i) { return t3.at({0, i[0], 0}) + t3.at({1, i[0], 1}) + t3.at({2, i[0], 2}); }));
}

// ---- norms -----------------------------------------------------------------------------------

TEST(ArrayLinalg, VectorNorms) {
  const Ref v = sample(DType::Float64, {7}, 1);
  const double inf = std::numeric_limits<double>::infinity();
  auto want = [&](double p) {
    double acc = 0, mx = 0, mn = inf;
    for (double x : v.v) {
      mx = std::max(mx, std::fabs(x));
      mn = std::min(mn, std::fabs(x));
      acc += p == 0 ? (x != 0) : std::pow(std::fabs(x), p);
    }
    if (p == inf) return mx;
    if (p == -inf) return mn;
    return p == 0 ? acc : std::pow(acc, 1 / p);
  };
  check_expr({v}, [](auto& x) { return norm(x[0]); }, ref_of(DType::Float64, {}, {want(2)}));
  for (double p : {1.0, 2.0, 3.0, 0.5, 0.0, inf, -inf}) {
    SCOPED_TRACE(p);
    check_expr({v}, [&](auto& x) { return norm(x[0], p); }, ref_of(DType::Float64, {}, {want(p)}));
  }
  check_expr({v}, [](auto& x) { return norm(x[0], 2, {0}, true); }, ref_of(DType::Float64, {1}, {want(2)}));
  // Along one axis of a matrix; float32 stays float32, integers become float64.
  const Ref m = sample(DType::Float32, {4, 5}, 2);
  check_expr({m}, [](auto& x) { return norm(x[0], 1, {1}); }, make_ref(DType::Float32, {4}, [&](auto& i) {
               double acc = 0;
               for (std::int64_t j = 0; j < 5; ++j) acc += std::fabs(m.at({i[0], j}));
               return static_cast<double>(static_cast<float>(acc));
             }),
             {1e-6, 1e-6});
  EXPECT_EQ(norm(to_array(sample(DType::Int64, {3}), {2})).dtype(), DType::Float64);
  EXPECT_THROW(norm(to_array(v, {2}), "fro", {0}), Error);
}

TEST(ArrayLinalg, MatrixNorms) {
  const Ref m = sample(DType::Float64, {5, 4}, 3);
  const double inf = std::numeric_limits<double>::infinity();
  double fro = 0;
  for (double x : m.v) fro += x * x;
  fro = std::sqrt(fro);
  std::vector<double> rows(5, 0), cols(4, 0);
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      rows[i] += std::fabs(m.at({i, j}));
      cols[j] += std::fabs(m.at({i, j}));
    }
  check_expr({m}, [](auto& x) { return norm(x[0]); }, ref_of(DType::Float64, {}, {fro}));
  check_expr({m}, [](auto& x) { return norm(x[0], "fro"); }, ref_of(DType::Float64, {}, {fro}));
  check_expr({m}, [](auto& x) { return norm(x[0], 1); }, ref_of(DType::Float64, {}, {*std::max_element(cols.begin(), cols.end())}));
  check_expr({m}, [](auto& x) { return norm(x[0], -1); }, ref_of(DType::Float64, {}, {*std::min_element(cols.begin(), cols.end())}));
  check_expr({m}, [&](auto& x) { return norm(x[0], inf); }, ref_of(DType::Float64, {}, {*std::max_element(rows.begin(), rows.end())}));
  check_expr({m}, [&](auto& x) { return norm(x[0], -inf); }, ref_of(DType::Float64, {}, {*std::min_element(rows.begin(), rows.end())}));
  check_expr({m}, [](auto& x) { return norm(x[0], "fro", {0, 1}, true); }, ref_of(DType::Float64, {1, 1}, {fro}));
  // 2, -2 and nuc from the singular values: sum of squares of all singular values is fro^2.
  const Block s = compute_sync(linalg::svd(to_array(m, {2})).s);
  const auto sv = s.to_doubles();
  double nuc = 0;
  for (double x : sv) nuc += x;
  check_expr({m}, [](auto& x) { return norm(x[0], 2); }, ref_of(DType::Float64, {}, {sv.front()}), {1e-10, 1e-10});
  check_expr({m}, [](auto& x) { return norm(x[0], -2); }, ref_of(DType::Float64, {}, {sv.back()}), {1e-10, 1e-10});
  check_expr({m}, [](auto& x) { return norm(x[0], "nuc"); }, ref_of(DType::Float64, {}, {nuc}), {1e-10, 1e-10});
  // A stack of matrices, normed over its last two axes.
  const Ref st = sample(DType::Float64, {2, 3, 3}, 4);
  check_expr({st}, [](auto& x) { return norm(x[0], "fro", {1, 2}); }, make_ref(DType::Float64, {2}, [&](auto& i) {
               double acc = 0;
               for (std::int64_t a = 0; a < 3; ++a)
                 for (std::int64_t b = 0; b < 3; ++b) acc += st.at({i[0], a, b}) * st.at({i[0], a, b});
               return std::sqrt(acc);
             }));
  EXPECT_THROW(norm(to_array(st, {2}), 1), ShapeError);
}

// ---- QR and SVD ------------------------------------------------------------------------------

void check_qr(const Ref& a, const linalg::QR& f, double tol) {
  const Mat q = mat(compute_sync(f.q)), r = mat(compute_sync(f.r));
  const Mat am = mat(a);
  const std::int64_t k = std::min(am.rows, am.cols);
  EXPECT_EQ(f.q.shape(), (Shape{am.rows, k}));
  EXPECT_EQ(f.r.shape(), (Shape{k, am.cols}));
  EXPECT_TRUE(near(mul(q, q, true), identity(k), tol)) << "Q^T Q = I";
  EXPECT_TRUE(near(mul(q, r), am, tol)) << "Q R = A";
  EXPECT_TRUE(triangular(r, false)) << "R upper triangular";
}

TEST(ArrayLinalg, TsqrPropertiesForSeveralChunkings) {
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const Ref a = sample(t, {23, 5}, 1);
    // Row blocks larger, equal to and smaller than the column count, ragged, and one block.
    for (const Case& c : {Case{"whole", {-1, -1}}, Case{"by7", {7, 5}}, Case{"by5", {5, 5}}, Case{"by3", {3, 2}},
                          Case{"by1", {1, 1}}}) {
      SCOPED_TRACE(c.name);
      const auto f = linalg::tsqr(to_array(a, c.chunks));
      EXPECT_EQ(f.q.dtype(), t);
      check_qr(a, f, tol_of(t));
      EXPECT_EQ(f.q.chunks()[0], regular_chunks({23, 5}, {c.chunks[0] == -1 ? 23 : c.chunks[0], 5})[0]);
    }
  }
  // Integer input is factored in float64; both executors agree.
  const Ref ai = sample(DType::Int64, {12, 3}, 2);
  const auto fi = linalg::qr(to_array(ai, {4, 3}));
  EXPECT_EQ(fi.q.dtype(), DType::Float64);
  for (const auto& e : executors()) {
    const Mat q = mat(fi.q.compute(*e.ex)), r = mat(fi.r.compute(*e.ex));
    EXPECT_TRUE(near(mul(q, r), mat(ai), 1e-10));
  }
}

TEST(ArrayLinalg, QrShortAndFat) {
  const Ref a = sample(DType::Float64, {4, 11}, 3);
  for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{4, 3}, ChunkSpec{2, 5}}) {
    SCOPED_TRACE(shape_to_string(c));
    check_qr(a, linalg::qr(to_array(a, c)), 1e-10);
    check_qr(a, linalg::sfqr(to_array(a, c)), 1e-10);
  }
  EXPECT_THROW(linalg::sfqr(to_array(a, {2}).T()), ShapeError);
}

void check_svd(const Ref& a, const linalg::SVD& f, double tol) {
  const Mat am = mat(a);
  const std::int64_t k = std::min(am.rows, am.cols);
  ASSERT_EQ(f.u.shape(), (Shape{am.rows, k}));
  ASSERT_EQ(f.s.shape(), (Shape{k}));
  ASSERT_EQ(f.v.shape(), (Shape{k, am.cols}));
  const Mat u = mat(compute_sync(f.u)), v = mat(compute_sync(f.v));
  const auto s = compute_sync(f.s).to_doubles();
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_GE(s[i - 1], s[i]) << "singular values descend";
  EXPECT_TRUE(near(mul(u, u, true), identity(k), tol)) << "U^T U = I";
  Mat vt{v.cols, v.rows, {}};
  for (std::int64_t j = 0; j < v.cols; ++j)
    for (std::int64_t i = 0; i < v.rows; ++i) vt.v.push_back(v(i, j));
  EXPECT_TRUE(near(mul(vt, vt, true), identity(k), tol)) << "V V^T = I";
  Mat us = u;
  for (std::int64_t i = 0; i < us.rows; ++i)
    for (std::int64_t j = 0; j < us.cols; ++j) us.v[i * us.cols + j] *= s[j];
  EXPECT_TRUE(near(mul(us, v), am, tol)) << "U S V^T = A";
}

TEST(ArrayLinalg, SvdTallAndWide) {
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const Ref a = sample(t, {19, 4}, 4);
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{5, 4}, ChunkSpec{3, 2}}) {
      SCOPED_TRACE(shape_to_string(c));
      check_svd(a, linalg::svd(to_array(a, c)), tol_of(t));
    }
    const Ref w = sample(t, {3, 17}, 5);
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{3, 4}}) {
      SCOPED_TRACE(shape_to_string(c));
      check_svd(w, linalg::svd(to_array(w, c)), tol_of(t));
    }
  }
  // The singular values do not depend on the chunking.
  const Ref a = sample(DType::Float64, {30, 6}, 6);
  const auto s1 = compute_sync(linalg::svd(to_array(a, {-1})).s).to_doubles();
  const auto s2 = compute_sync(linalg::svd(to_array(a, {4, 6})).s).to_doubles();
  for (std::size_t i = 0; i < s1.size(); ++i) EXPECT_NEAR(s1[i], s2[i], 1e-10 * s1[0]);
}

TEST(ArrayLinalg, SvdCompressedRecoversALowRankMatrix) {
  // A rank-3 matrix: the randomised SVD of rank 3 reproduces it and its singular values.
  const Ref x = sample(DType::Float64, {40, 3}, 7), y = sample(DType::Float64, {3, 12}, 8);
  const Ref a = tensordot_ref(x, y, {1}, {0}, DType::Float64);
  const auto exact = compute_sync(linalg::svd(to_array(a, {-1})).s).to_doubles();
  for (int iters : {0, 2}) {
    for (const ChunkSpec& c : {ChunkSpec{10, 12}, ChunkSpec{7, 5}}) {
      SCOPED_TRACE(std::to_string(iters) + " " + shape_to_string(c));
      const auto f = linalg::svd_compressed(to_array(a, c), 3, iters, 42);
      ASSERT_EQ(f.u.shape(), (Shape{40, 3}));
      ASSERT_EQ(f.v.shape(), (Shape{3, 12}));
      const auto s = compute_sync(f.s).to_doubles();
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(s[i], exact[i], 1e-8 * exact[0]);
      Mat us = mat(compute_sync(f.u));
      for (std::int64_t i = 0; i < us.rows; ++i)
        for (std::int64_t j = 0; j < 3; ++j) us.v[i * 3 + j] *= s[j];
      EXPECT_TRUE(near(mul(us, mat(compute_sync(f.v))), mat(a), 1e-8));
    }
  }
  EXPECT_THROW(linalg::svd_compressed(to_array(a, {10}), 13), ShapeError);
}

// ---- Cholesky, LU, solvers -------------------------------------------------------------------

TEST(ArrayLinalg, CholeskyBlocked) {
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const Ref a = spd(t, 10, 1);
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{5}, ChunkSpec{3}, ChunkSpec{1}, ChunkSpec{4, 3}}) {
      SCOPED_TRACE(shape_to_string(c));
      const Array l = linalg::cholesky(to_array(a, c));
      EXPECT_EQ(l.dtype(), t);
      for (const auto& e : executors()) {
        const Mat lm = mat(l.compute(*e.ex));
        EXPECT_TRUE(triangular(lm, true));
        Mat lt{lm.cols, lm.rows, {}};
        for (std::int64_t j = 0; j < lm.cols; ++j)
          for (std::int64_t i = 0; i < lm.rows; ++i) lt.v.push_back(lm(i, j));
        EXPECT_TRUE(near(mul(lm, lt), mat(a), tol_of(t))) << "L L^T = A";
      }
      const Mat u = mat(compute_sync(linalg::cholesky(to_array(a, c), false)));
      EXPECT_TRUE(triangular(u, false));
      EXPECT_TRUE(near(mul(u, u, true), mat(a), tol_of(t))) << "U^T U = A";
    }
  }
  // Not positive definite: the task fails with NumPy's message.
  const Ref bad = make_ref(DType::Float64, {4, 4}, [](auto& i) { return i[0] == i[1] ? -1.0 : 0.0; });
  EXPECT_THROW(compute_sync(linalg::cholesky(to_array(bad, {2}))), Error);
  EXPECT_THROW(linalg::cholesky(to_array(sample(DType::Float64, {3, 4}), {2})), ShapeError);
}

TEST(ArrayLinalg, LuBlockedWithPivotsInsideDiagonalBlocks) {
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    // Diagonally heavy so pivoting inside the diagonal blocks is enough (as Dask's lu).
    const Ref base = sample(t, {9, 9}, 2);
    const Ref a = make_ref(t, {9, 9}, [&](auto& i) { return base.at(i) + (i[0] == i[1] ? 30.0 : 0.0); });
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{3}, ChunkSpec{4}, ChunkSpec{2, 5}}) {
      SCOPED_TRACE(shape_to_string(c));
      const auto f = linalg::lu(to_array(a, c));
      const Mat p = mat(compute_sync(f.p)), l = mat(compute_sync(f.l)), u = mat(compute_sync(f.u));
      EXPECT_TRUE(triangular(l, true));
      EXPECT_TRUE(triangular(u, false));
      for (std::int64_t i = 0; i < 9; ++i) EXPECT_EQ(l(i, i), 1.0);
      EXPECT_TRUE(near(mul(p, p, true), identity(9), 0)) << "P is a permutation";
      EXPECT_TRUE(near(mul(p, mul(l, u)), mat(a), tol_of(t))) << "P L U = A";
    }
  }
  // A single block that needs pivoting (a zero in the corner).
  const Ref z = ref_of(DType::Float64, {2, 2}, {0, 1, 1, 0});
  const auto f = linalg::lu(to_array(z, {-1}));
  EXPECT_TRUE(near(mul(mat(compute_sync(f.p)), mul(mat(compute_sync(f.l)), mat(compute_sync(f.u)))), mat(z), 0));
}

TEST(ArrayLinalg, SolveTriangular) {
  const Ref base = sample(DType::Float64, {8, 8}, 3);
  const Ref lo = make_ref(DType::Float64, {8, 8}, [&](auto& i) { return i[1] > i[0] ? 0.0 : base.at(i) + (i[0] == i[1] ? 20.0 : 0.0); });
  const Ref up = make_ref(DType::Float64, {8, 8}, [&](auto& i) { return i[1] < i[0] ? 0.0 : base.at(i) + (i[0] == i[1] ? 20.0 : 0.0); });
  const Ref b = sample(DType::Float64, {8, 3}, 4), bv = sample(DType::Float64, {8}, 5);
  for (bool lower : {true, false}) {
    SCOPED_TRACE(lower ? "lower" : "upper");
    const Ref& a = lower ? lo : up;
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{3}, ChunkSpec{2, 1}}) {
      SCOPED_TRACE(shape_to_string(c));
      const Mat x = mat(compute_sync(linalg::solve_triangular(to_array(a, c), to_array(b, c), lower)));
      EXPECT_TRUE(near(mul(mat(a), x), mat(b), 1e-12));
      const auto xv = compute_sync(linalg::solve_triangular(to_array(a, c), to_array(bv, {3}), lower));
      ASSERT_EQ(xv.shape(), Shape{8});
      EXPECT_TRUE(near(mul(mat(a), Mat{8, 1, xv.to_doubles()}), Mat{8, 1, bv.v}, 1e-12));
    }
  }
  EXPECT_THROW(linalg::solve_triangular(to_array(lo, {2}), to_array(sample(DType::Float64, {7}), {2}), true), ShapeError);
}

TEST(ArrayLinalg, SolveAndInverse) {
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const Ref base = sample(t, {10, 10}, 6);
    const Ref a = make_ref(t, {10, 10}, [&](auto& i) { return base.at(i) + (i[0] == i[1] ? 25.0 : 0.0); });
    const Ref b = sample(t, {10, 2}, 7), bv = sample(t, {10}, 8);
    for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{4}, ChunkSpec{3, 5}}) {
      SCOPED_TRACE(shape_to_string(c));
      const Array x = linalg::solve(to_array(a, c), to_array(b, {4, 1}));
      EXPECT_EQ(x.dtype(), t);
      for (const auto& e : executors()) EXPECT_TRUE(near(mul(mat(a), mat(x.compute(*e.ex))), mat(b), tol_of(t)));
      const Block xv = compute_sync(linalg::solve(to_array(a, c), to_array(bv, {3})));
      EXPECT_TRUE(near(mul(mat(a), Mat{10, 1, xv.to_doubles()}), Mat{10, 1, bv.v}, tol_of(t)));
      const Mat ai = mat(compute_sync(linalg::inv(to_array(a, c))));
      EXPECT_TRUE(near(mul(mat(a), ai), identity(10), tol_of(t))) << "A inv(A) = I";
    }
  }
  const Block i3 = compute_sync(linalg::eye(3, 2));
  EXPECT_TRUE(near(mat(i3), identity(3), 0));
  EXPECT_THROW(linalg::solve(to_array(sample(DType::Float64, {3, 4}), {2}), to_array(sample(DType::Float64, {3}), {2})),
               ShapeError);
}

TEST(ArrayLinalg, LstsqThroughTsqr) {
  const Ref a = sample(DType::Float64, {20, 4}, 9), b = sample(DType::Float64, {20}, 10);
  // The normal equations A^T A x = A^T b, solved by elimination, are the reference.
  Mat ata = mul(mat(a), mat(a), true);
  Mat atb = mul(mat(a), Mat{20, 1, b.v}, true);
  for (int k = 0; k < 4; ++k)
    for (int i = k + 1; i < 4; ++i) {
      const double f = ata(i, k) / ata(k, k);
      for (int j = 0; j < 4; ++j) ata.v[i * 4 + j] -= f * ata(k, j);
      atb.v[i] -= f * atb.v[k];
    }
  std::vector<double> want(4);
  for (int i = 3; i >= 0; --i) {
    double acc = atb.v[i];
    for (int j = i + 1; j < 4; ++j) acc -= ata(i, j) * want[j];
    want[i] = acc / ata(i, i);
  }
  double rss = 0;
  for (std::int64_t i = 0; i < 20; ++i) {
    double r = b.v[i];
    for (std::int64_t j = 0; j < 4; ++j) r -= a.at({i, j}) * want[j];
    rss += r * r;
  }
  for (const ChunkSpec& c : {ChunkSpec{-1}, ChunkSpec{6, 4}, ChunkSpec{3, 2}}) {
    SCOPED_TRACE(shape_to_string(c));
    const auto f = linalg::lstsq(to_array(a, c), to_array(b, {c[0]}));
    EXPECT_TRUE(block_matches(compute_sync(f.x), ref_of(DType::Float64, {4}, want), 1e-9, 1e-9));
    EXPECT_TRUE(block_matches(compute_sync(f.residuals), ref_of(DType::Float64, {1}, {rss}), 1e-9, 1e-9));
    EXPECT_EQ(compute_sync(f.rank).item(), 4);
    EXPECT_EQ(f.s.shape(), Shape{4});
  }
  // A rank-deficient matrix (two equal columns) has rank 3.
  const Ref d = make_ref(DType::Float64, {12, 4}, [&](auto& i) { return a.at({i[0], i[1] == 3 ? 0 : i[1]}); });
  EXPECT_EQ(compute_sync(linalg::lstsq(to_array(d, {4, 4}), to_array(sample(DType::Float64, {12, 2}), {4, 2})).rank).item(), 3);
}

}  // namespace
