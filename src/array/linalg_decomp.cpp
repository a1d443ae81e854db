// Decompositions and solvers of tessera::linalg, as task graphs over block factorisations
// (the ops of src/array/linalg_ops.cpp): tsqr, qr, svd, svd_compressed, cholesky, lu,
// solve_triangular, solve, inv, lstsq, eye.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "array_ops.hpp"
#include "linalg_tasks.hpp"
#include "tessera/array/linalg.hpp"
#include "tessera/array.hpp"  // the operations this one is built from
#include "tessera/core/error.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace detail {
Array rechunk_exact(const Array& a, const Chunks& chunks);  // linalg.cpp
}

namespace linalg {

namespace {

Array as_float(const Array& a, DType t) { return a.dtype() == t ? a : a.astype(t); }

void check_matrix(const Array& a, const char* what) {
  if (a.ndim() != 2) throw ShapeError(std::string(what) + ": needs a 2-d array, got shape " + shape_to_string(a.shape()));
}

void check_square(const Array& a, const char* what) {
  check_matrix(a, what);
  if (a.shape()[0] != a.shape()[1]) throw ShapeError(std::string(what) + ": needs a square matrix, got shape " + shape_to_string(a.shape()));
}

/** The same chunks on both axes of a square matrix (the common refinement of the two). */
Array square_chunks(const Array& a) {
  const auto c = refine_axis_chunks({a.chunks()[0], a.chunks()[1]});
  return rechunk_exact(a, {c, c});
}

Value assemble_params(DType t, Shape shape, std::vector<AssemblePiece> pieces) {
  AssembleParams p;
  p.dtype = t;
  p.shape = std::move(shape);
  p.pieces = std::move(pieces);
  return Value(to_object(p, "AssembleParams"));
}

AssemblePiece piece(std::int32_t arg, std::vector<std::int64_t> src, std::vector<std::int64_t> dst,
                    std::vector<std::int64_t> extent) {
  AssemblePiece p;
  p.arg = arg;
  p.src_start = std::move(src);
  p.dst_start = std::move(dst);
  p.extent = std::move(extent);
  return p;
}

Value zeros_params(DType t, Shape s) { return Value(to_object(ZerosParams{t, std::move(s)}, "ZerosParams")); }

/** One task applying `op` to the single chunk of `a`: an array of one chunk of `shape`. */
Array single_block_op(const char* op, const Array& a, Shape shape) {
  Chunks chunks;
  for (auto s : shape) chunks.push_back({s});
  const Array in = rechunk_exact(a, [&] {
    Chunks c;
    for (auto s : a.shape()) c.push_back({s});
    return c;
  }());
  TasksBuilder tb(a.dtype(), shape, chunks, op + std::string("-block"));
  const int i = tb.input(in);
  const auto t = tb.add(op, std::nullopt, {tb.chunk(i, std::vector<std::int64_t>(a.ndim(), 0))});
  return tb.finish({t});
}

}  // namespace

Array eye(std::int64_t n, std::int64_t chunk, DType dtype) { return tessera::eye(n, chunk, std::nullopt, 0, dtype); }

QR tsqr(const Array& a_in) {
  check_matrix(a_in, "tsqr");
  const DType t = linalg_dtype(a_in.dtype());
  const std::int64_t m = a_in.shape()[0], n = a_in.shape()[1];
  const Array a = rechunk_exact(as_float(a_in, t), {a_in.chunks()[0], {n}});
  const auto& rows = a.chunks()[0];
  const auto nb = static_cast<std::int64_t>(rows.size());
  // 1. Each row block's QR, packed as [Q; R].
  std::vector<std::int64_t> ks, packed_rows;
  std::int64_t sum_k = 0;
  for (auto r : rows) {
    ks.push_back(std::min(r, n));
    packed_rows.push_back(r + ks.back());
    sum_k += ks.back();
  }
  TasksBuilder p1(t, {m + sum_k, n}, {packed_rows, {n}}, "tsqr-qr");
  const int ia = p1.input(a);
  std::vector<std::int64_t> outs;
  for (std::int64_t i = 0; i < nb; ++i) outs.push_back(p1.add(kQrOp, std::nullopt, {p1.chunk(ia, {i, 0})}));
  const Array packed = p1.finish(outs);
  if (nb == 1) {
    const std::int64_t k = ks[0];
    return {packed[{slice(0, m), slice(0, k)}], packed[{slice(m, m + k), all()}]};
  }
  // 2. The stacked R factors, QR'd again: [Q2; R].
  const std::int64_t k2 = std::min(sum_k, n);
  TasksBuilder p2(t, {sum_k + k2, n}, {{sum_k + k2}, {n}}, "tsqr-r");
  const int ip = p2.input(packed);
  std::vector<AssemblePiece> pieces;
  std::vector<TaskArg> args;
  std::vector<std::int64_t> offs;
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < nb; ++i) {
    pieces.push_back(piece(static_cast<std::int32_t>(i), {rows[i], 0}, {off, 0}, {ks[i], n}));
    args.push_back(p2.chunk(ip, {i, 0}));
    offs.push_back(off);
    off += ks[i];
  }
  const auto stacked = p2.add(kAssembleOp, assemble_params(t, {sum_k, n}, pieces), args);
  const Array second = p2.finish({p2.add(kQrOp, std::nullopt, {TasksBuilder::own(stacked)})});
  // 3. Q_i = Q_block_i @ Q2[rows of block i].
  TasksBuilder p3(t, {m, k2}, {rows, {k2}}, "tsqr-q");
  const int jp = p3.input(packed), js = p3.input(second);
  ContractParams cp;
  cp.free_a = cp.free_b = 1;
  std::vector<std::int64_t> qs;
  for (std::int64_t i = 0; i < nb; ++i) {
    const auto qb = p3.add(kAssembleOp, assemble_params(t, {rows[i], ks[i]}, {piece(0, {0, 0}, {0, 0}, {rows[i], ks[i]})}),
                           {p3.chunk(jp, {i, 0})});
    const auto q2 = p3.add(kAssembleOp, assemble_params(t, {ks[i], k2}, {piece(0, {offs[i], 0}, {0, 0}, {ks[i], k2})}),
                           {p3.chunk(js, {0, 0})});
    qs.push_back(p3.add(kContractOp, Value(to_object(cp, "ContractParams")), {TasksBuilder::own(qb), TasksBuilder::own(q2)}));
  }
  return {p3.finish(qs), second[{slice(sum_k, sum_k + k2), all()}]};
}

QR sfqr(const Array& a_in) {
  check_matrix(a_in, "sfqr");
  const std::int64_t m = a_in.shape()[0], n = a_in.shape()[1];
  if (m > n) throw ShapeError("sfqr: needs a short-and-fat matrix (rows <= columns), got " + shape_to_string(a_in.shape()));
  const DType t = linalg_dtype(a_in.dtype());
  const Array a = as_float(a_in, t);
  // Q and R's leading block from the leading m x m block; the rest of R is Q^T times the other
  // columns (Dask's sfqr).
  const QR lead = tsqr(rechunk_exact(a[{all(), slice(0, m)}], {{m}, {m}}));
  if (m == n) return lead;
  return {lead.q, concatenate({lead.r, matmul(lead.q.T(), a[{all(), slice(m, n)}])}, 1)};
}

QR qr(const Array& a) {
  check_matrix(a, "qr");
  return a.shape()[0] >= a.shape()[1] ? tsqr(a) : sfqr(a);
}

SVD svd(const Array& a_in) {
  check_matrix(a_in, "svd");
  const std::int64_t m = a_in.shape()[0], n = a_in.shape()[1];
  if (m < n) {
    const SVD t = svd(a_in.T());
    return {t.v.T(), t.s, t.u.T()};
  }
  const QR f = tsqr(a_in);
  const std::int64_t k = f.r.shape()[0], kk = std::min(k, n);
  const Array packed = single_block_op(kSvdOp, f.r, {k + 1 + kk, n});
  const Array ur = packed[{slice(0, k), slice(0, kk)}];
  return {matmul(f.q, ur), packed[{k, slice(0, kk)}], packed[{slice(k + 1, k + 1 + kk), all()}]};
}

SVD svd_compressed(const Array& a_in, std::int64_t k, int n_power_iter, std::uint64_t seed, std::int64_t oversampling) {
  check_matrix(a_in, "svd_compressed");
  const DType t = linalg_dtype(a_in.dtype());
  const Array a = as_float(a_in, t);
  const std::int64_t m = a.shape()[0], n = a.shape()[1];
  if (k < 1 || k > std::min(m, n)) throw ShapeError("svd_compressed: k must be in [1, min(m, n)]");
  const std::int64_t l = std::min(k + std::max<std::int64_t>(oversampling, 0), std::min(m, n));
  // The test matrix is a pure function of (seed, index), so any chunking of a gives the same one.
  const Array omega = as_float(random::normal(seed, 0.0, 1.0, {n, l}, {a.chunks()[1][0], l}), t);
  Array y = matmul(a, omega);
  for (int i = 0; i < n_power_iter; ++i) {
    const Array q = tsqr(y).q;
    const Array z = tsqr(matmul(a.T(), q)).q;
    y = matmul(a, z);
  }
  const Array q = tsqr(y).q;
  const Array b = matmul(q.T(), a);  // l x n
  const SVD small = svd(b);
  return {matmul(q, small.u)[{all(), slice(0, k)}], small.s[{slice(0, k)}], small.v[{slice(0, k), all()}]};
}

Array cholesky(const Array& a_in, bool lower) {
  check_square(a_in, "cholesky");
  const DType t = linalg_dtype(a_in.dtype());
  const Array a = square_chunks(as_float(a_in, t));
  const auto& c = a.chunks()[0];
  const auto nb = static_cast<std::int64_t>(c.size());
  TasksBuilder tb(t, a.shape(), a.chunks(), "cholesky");
  const int ia = tb.input(a);
  std::vector<std::vector<std::int64_t>> L(nb, std::vector<std::int64_t>(nb, -1));
  TrsmParams off;
  off.left = false;
  off.lower = true;
  off.trans = true;
  off.trans_b = true;
  const Value off_params(to_object(off, "TrsmParams"));
  for (std::int64_t i = 0; i < nb; ++i) {
    std::vector<TaskArg> args{tb.chunk(ia, {i, i})};
    for (std::int64_t k = 0; k < i; ++k) {
      args.push_back(TasksBuilder::own(L[i][k]));
      args.push_back(TasksBuilder::own(L[i][k]));
    }
    L[i][i] = tb.add(kPotrfOp, std::nullopt, std::move(args));
    for (std::int64_t j = i + 1; j < nb; ++j) {
      std::vector<TaskArg> targs{TasksBuilder::own(L[i][i]), tb.chunk(ia, {j, i})};
      for (std::int64_t k = 0; k < i; ++k) {
        targs.push_back(TasksBuilder::own(L[j][k]));
        targs.push_back(TasksBuilder::own(L[i][k]));
      }
      L[j][i] = tb.add(kTrsmOp, off_params, std::move(targs));
    }
  }
  std::vector<std::int64_t> outs;
  for (std::int64_t i = 0; i < nb; ++i)
    for (std::int64_t j = 0; j < nb; ++j)
      outs.push_back(j <= i ? L[i][j] : tb.add(kZerosOp, zeros_params(t, {c[i], c[j]}), {}));
  const Array l = tb.finish(std::move(outs));
  return lower ? l : l.T();
}

LU lu(const Array& a_in) {
  check_square(a_in, "lu");
  const DType t = linalg_dtype(a_in.dtype());
  const Array a = square_chunks(as_float(a_in, t));
  const auto& c = a.chunks()[0];
  const auto nb = static_cast<std::int64_t>(c.size());
  // Dask's blocked LU with pivoting inside the diagonal blocks: with L' = P L (block rows
  // permuted by their diagonal block's pivots), A_ij = sum_k L'_ik U_kj, so
  //   P_i L_ii U_ii = A_ii - sum_{k<i} L'_ik U_ki          (getrf)
  //   U_ij = L_ii^-1 P_i^T (A_ij - sum_{k<i} L'_ik U_kj)    (i < j)
  //   L'_ij = (A_ij - sum_{k<j} L'_ik U_kj) U_jj^-1         (i > j)
  // and the true L_ij = P_i^T L'_ij.
  TasksBuilder fu(t, a.shape(), a.chunks(), "lu-u");
  const int ia = fu.input(a);
  std::vector<std::int64_t> D(nb);
  std::vector<std::vector<std::int64_t>> F(nb, std::vector<std::int64_t>(nb, -1));  // U above, L' below
  TrsmParams up;
  up.left = true;
  up.lower = true;
  up.unit = true;
  up.pivots = true;
  TrsmParams low;
  low.left = false;
  low.lower = false;
  const Value up_params(to_object(up, "TrsmParams")), low_params(to_object(low, "TrsmParams"));
  auto sum_args = [&](std::vector<TaskArg>& args, std::int64_t i, std::int64_t j, std::int64_t upto) {
    for (std::int64_t k = 0; k < upto; ++k) {
      args.push_back(TasksBuilder::own(F[i][k]));
      args.push_back(TasksBuilder::own(F[k][j]));
    }
  };
  for (std::int64_t i = 0; i < nb; ++i) {
    std::vector<TaskArg> args{fu.chunk(ia, {i, i})};
    sum_args(args, i, i, i);
    D[i] = fu.add(kGetrfOp, std::nullopt, std::move(args));
    for (std::int64_t j = i + 1; j < nb; ++j) {
      std::vector<TaskArg> ua{TasksBuilder::own(D[i]), fu.chunk(ia, {i, j})};
      sum_args(ua, i, j, i);
      F[i][j] = fu.add(kTrsmOp, up_params, std::move(ua));
      std::vector<TaskArg> la{TasksBuilder::own(D[i]), fu.chunk(ia, {j, i})};
      sum_args(la, j, i, i);
      F[j][i] = fu.add(kTrsmOp, low_params, std::move(la));
    }
  }
  auto part = [](LuPart p) { return Value(to_object(static_cast<std::uint8_t>(p), "uint8")); };
  std::vector<std::int64_t> uo;
  for (std::int64_t i = 0; i < nb; ++i)
    for (std::int64_t j = 0; j < nb; ++j)
      uo.push_back(i < j ? F[i][j]
                         : i == j ? fu.add(kLuExtractOp, part(LuPart::U), {TasksBuilder::own(D[i])})
                                  : fu.add(kZerosOp, zeros_params(t, {c[i], c[j]}), {}));
  const Array u = fu.finish(std::move(uo));
  TasksBuilder fl(t, a.shape(), a.chunks(), "lu-l"), fp(t, a.shape(), a.chunks(), "lu-p");
  const int il = fl.input(u), ip = fp.input(u);
  std::vector<std::int64_t> lo, po;
  for (std::int64_t i = 0; i < nb; ++i)
    for (std::int64_t j = 0; j < nb; ++j) {
      const Value z = zeros_params(t, {c[i], c[j]});
      if (i == j) {
        lo.push_back(fl.add(kLuExtractOp, part(LuPart::L), {TasksBuilder::input_task(il, D[i])}));
        po.push_back(fp.add(kLuExtractOp, part(LuPart::P), {TasksBuilder::input_task(ip, D[i])}));
        continue;
      }
      po.push_back(fp.add(kZerosOp, z, {}));
      lo.push_back(i > j ? fl.add(kLuExtractOp, part(LuPart::PermRows),
                                  {TasksBuilder::input_task(il, D[i]), TasksBuilder::input_task(il, F[i][j])})
                         : fl.add(kZerosOp, z, {}));
    }
  return {fp.finish(std::move(po)), fl.finish(std::move(lo)), u};
}

Array solve_triangular(const Array& a_in, const Array& b_in, bool lower) {
  check_square(a_in, "solve_triangular");
  if (b_in.ndim() < 1 || b_in.ndim() > 2 || b_in.shape()[0] != a_in.shape()[0])
    throw ShapeError("solve_triangular: shapes " + shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()) +
                     " are not aligned");
  const DType t = linalg_dtype(promote_types(a_in.dtype(), b_in.dtype()));
  const Array a = square_chunks(as_float(a_in, t));
  const bool vec = b_in.ndim() == 1;
  Array b = as_float(vec ? b_in[{all(), newaxis}] : b_in, t);
  b = rechunk_exact(b, {a.chunks()[0], b.chunks()[1]});
  const auto nb = static_cast<std::int64_t>(a.chunks()[0].size());
  const auto nc = static_cast<std::int64_t>(b.chunks()[1].size());
  TasksBuilder tb(t, b.shape(), b.chunks(), "solve_triangular");
  const int ia = tb.input(a), ib = tb.input(b);
  TrsmParams p;
  p.left = true;
  p.lower = lower;
  const Value params(to_object(p, "TrsmParams"));
  std::vector<std::vector<std::int64_t>> X(nb, std::vector<std::int64_t>(nc, -1));
  for (std::int64_t s = 0; s < nb; ++s) {
    const std::int64_t i = lower ? s : nb - 1 - s;  // forward or back substitution
    for (std::int64_t j = 0; j < nc; ++j) {
      std::vector<TaskArg> args{tb.chunk(ia, {i, i}), tb.chunk(ib, {i, j})};
      for (std::int64_t k = lower ? 0 : i + 1; k < (lower ? i : nb); ++k) {
        args.push_back(tb.chunk(ia, {i, k}));
        args.push_back(TasksBuilder::own(X[k][j]));
      }
      X[i][j] = tb.add(kTrsmOp, params, std::move(args));
    }
  }
  std::vector<std::int64_t> outs;
  for (std::int64_t i = 0; i < nb; ++i)
    for (std::int64_t j = 0; j < nc; ++j) outs.push_back(X[i][j]);
  const Array x = tb.finish(std::move(outs));
  return vec ? x[{all(), 0}] : x;
}

Array solve(const Array& a, const Array& b) {
  check_square(a, "solve");
  const LU f = lu(a);
  const DType t = linalg_dtype(promote_types(a.dtype(), b.dtype()));
  const Array y = solve_triangular(f.l, matmul(f.p.T(), as_float(b, t)), true);
  return solve_triangular(f.u, y, false);
}

Array inv(const Array& a) {
  check_square(a, "inv");
  const Array sq = square_chunks(a);
  const Array id = rechunk_exact(eye(a.shape()[0], -1, linalg_dtype(a.dtype())), sq.chunks());
  return solve(sq, id);
}

Lstsq lstsq(const Array& a_in, const Array& b_in) {
  check_matrix(a_in, "lstsq");
  if (b_in.ndim() < 1 || b_in.ndim() > 2 || b_in.shape()[0] != a_in.shape()[0])
    throw ShapeError("lstsq: shapes " + shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()) +
                     " are not aligned");
  const std::int64_t m = a_in.shape()[0], n = a_in.shape()[1];
  if (m < n) throw ShapeError("lstsq: needs a tall matrix (rows >= columns), as Dask's tsqr");
  const DType t = linalg_dtype(promote_types(a_in.dtype(), b_in.dtype()));
  const Array a = as_float(a_in, t), b = as_float(b_in, t);
  const QR f = tsqr(a);
  const Array x = solve_triangular(f.r, matmul(f.q.T(), b), false);
  const Array res = b - matmul(a, x);
  ReduceOptions o;
  o.axes = {0};
  o.keepdims = b.ndim() == 1;
  const Array residuals = (res * res).sum(o);
  const Array s = svd(f.r).s;
  const double eps = t == DType::Float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  // int32, as NumPy's (LAPACK's integer).
  const Array rank = (s > s.max() * (static_cast<double>(std::max(m, n)) * eps)).sum().astype(DType::Int32);
  return {x, residuals, rank, s};
}

}  // namespace linalg
}  // namespace tessera
