// Conformance cases of the linear algebra (tessera/array/linalg.hpp): products, norms and the
// decompositions of dask.array.linalg.
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "conformance.hpp"
#include "tessera/array/linalg.hpp"

namespace {

using namespace tessera;

std::optional<NormOrd> norm_ord(const std::string& s) {
  if (s == "none") return std::nullopt;
  if (s == "fro") return NormOrd("fro");
  if (s == "nuc") return NormOrd("nuc");
  if (s == "inf") return NormOrd(std::numeric_limits<double>::infinity());
  if (s == "-inf") return NormOrd(-std::numeric_limits<double>::infinity());
  return NormOrd(std::stod(s));
}

}  // namespace

TESSERA_CONFORMANCE_CASE(tensordot) {
  if (p.has("n")) return {tensordot(in[0], in[1], static_cast<int>(p.i("n")))};
  return {tensordot(in[0], in[1], p.axes("axes_a"), p.axes("axes_b"))};
}

TESSERA_CONFORMANCE_CASE(product_reduce) {
  const std::string& product = p.s("product");
  const Array c = product == "matmul"       ? matmul(in[0], in[1])
                  : product == "tensordot0" ? tensordot(in[0], in[1], {0}, {0})
                                            : einsum("bij,bjk->bik", in);
  ReduceOptions o;
  if (p.has("axis")) o.axes = p.axes("axis");
  o.keepdims = p.b("keepdims");
  return {p.s("reduce") == "sum" ? c.sum(o) : c.mean(o)};
}

TESSERA_CONFORMANCE_CASE(einsum) { return {einsum(p.s("subscripts"), in)}; }

TESSERA_CONFORMANCE_CASE(linalg_product) {
  const std::string& op = p.s("op");
  if (op == "dot") return {dot(in[0], in[1])};
  if (op == "outer") return {outer(in[0], in[1])};
  if (op == "inner") return {inner(in[0], in[1])};
  if (op == "vdot") return {vdot(in[0], in[1])};
  if (op == "kron") return {kron(in[0], in[1])};
  throw std::invalid_argument("linalg_product: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(trace) {
  return {trace(in[0], static_cast<int>(p.i("offset", 0)), static_cast<int>(p.i("axis1", 0)),
                static_cast<int>(p.i("axis2", 1)))};
}

TESSERA_CONFORMANCE_CASE(norm) {
  return {norm(in[0], norm_ord(p.s("ord", "none")), p.has("axis") ? p.axes("axis") : std::vector<int>{},
               p.b("keepdims"))};
}

TESSERA_CONFORMANCE_CASE(qr) {
  const std::string how = p.s("how", "qr");
  const auto f = how == "tsqr" ? linalg::tsqr(in[0]) : how == "sfqr" ? linalg::sfqr(in[0]) : linalg::qr(in[0]);
  return {f.q, f.r};
}

TESSERA_CONFORMANCE_CASE(svd) {
  const auto f = linalg::svd(in[0]);
  return {f.u, f.s, f.v};
}

TESSERA_CONFORMANCE_CASE(svd_compressed) {
  const auto f = linalg::svd_compressed(in[0], p.i("k"), static_cast<int>(p.i("n_power_iter", 0)),
                                        static_cast<std::uint64_t>(p.i("seed", 0)));
  return {f.u, f.s, f.v};
}

TESSERA_CONFORMANCE_CASE(cholesky) { return {linalg::cholesky(in[0], p.b("lower", true))}; }

TESSERA_CONFORMANCE_CASE(lu) {
  const auto f = linalg::lu(in[0]);
  return {f.p, f.l, f.u};
}

TESSERA_CONFORMANCE_CASE(solve_triangular) { return {linalg::solve_triangular(in[0], in[1], p.b("lower"))}; }

TESSERA_CONFORMANCE_CASE(solve) { return {linalg::solve(in[0], in[1])}; }

TESSERA_CONFORMANCE_CASE(inv) { return {linalg::inv(in[0])}; }

TESSERA_CONFORMANCE_CASE(lstsq) {
  const auto f = linalg::lstsq(in[0], in[1]);
  return {f.x, f.residuals, f.rank, f.s};
}
