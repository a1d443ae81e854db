// Conformance cases of the operations the array layer had before the harness: element-wise
// arithmetic and functions, reductions, views, rechunk, concatenate, reshape, matmul.
#include "conformance.hpp"

namespace {

using namespace tessera;

ReduceOptions reduce_options(const tessera_conformance::Params& p) {
  ReduceOptions o;
  if (p.has("axis")) o.axes = p.axes("axis");
  o.keepdims = p.b("keepdims");
  o.ddof = static_cast<int>(p.i("ddof", 0));
  o.split_every = static_cast<int>(p.i("split_every", 0));
  return o;
}

}  // namespace

TESSERA_CONFORMANCE_CASE(binary) {
  const std::string& op = p.s("op");
  const Array &a = in[0], &b = in[1];
  if (op == "add") return {a + b};
  if (op == "sub") return {a - b};
  if (op == "mul") return {a * b};
  if (op == "div") return {a / b};
  if (op == "floor_divide") return {floor_divide(a, b)};
  if (op == "mod") return {mod(a, b)};
  if (op == "power") return {power(a, b)};
  if (op == "minimum") return {minimum(a, b)};
  if (op == "maximum") return {maximum(a, b)};
  if (op == "lt") return {a < b};
  if (op == "eq") return {a == b};
  throw std::invalid_argument("binary: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(unary) {
  const std::string& op = p.s("op");
  const Array& x = in[0];
  if (op == "negative") return {-x};
  if (op == "abs") return {abs(x)};
  if (op == "exp") return {exp(x)};
  if (op == "log") return {log(x)};
  if (op == "log1p") return {log1p(x)};
  if (op == "sqrt") return {sqrt(x)};
  if (op == "square") return {square(x)};
  if (op == "sin") return {sin(x)};
  if (op == "cos") return {cos(x)};
  if (op == "tan") return {tan(x)};
  if (op == "tanh") return {tanh(x)};
  if (op == "floor") return {floor(x)};
  if (op == "ceil") return {ceil(x)};
  if (op == "sign") return {sign(x)};
  if (op == "isnan") return {isnan(x)};
  throw std::invalid_argument("unary: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(where3) { return {where(in[0], in[1], in[2])}; }

TESSERA_CONFORMANCE_CASE(reduce) {
  const std::string& op = p.s("op");
  const Array& x = in[0];
  const ReduceOptions o = reduce_options(p);
  if (op == "sum") return {x.sum(o)};
  if (op == "prod") return {x.prod(o)};
  if (op == "min") return {x.min(o)};
  if (op == "max") return {x.max(o)};
  if (op == "mean") return {x.mean(o)};
  if (op == "var") return {x.var(o)};
  if (op == "std") return {x.std(o)};
  if (op == "any") return {x.any(o)};
  if (op == "all") return {x.all(o)};
  if (op == "argmin") return {x.argmin(o)};
  if (op == "argmax") return {x.argmax(o)};
  throw std::invalid_argument("reduce: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(transpose) {
  if (!p.has("axes")) return {in[0].T()};
  return {in[0].transpose(p.axes("axes"))};
}

TESSERA_CONFORMANCE_CASE(slice2d) {
  // x[start0:stop0:step0, start1:stop1:step1]; a missing start/stop is None.
  auto opt = [&](const std::string& k) -> std::optional<std::int64_t> {
    if (!p.has(k)) return std::nullopt;
    return p.i(k);
  };
  return {in[0][{slice(opt("start0"), opt("stop0"), p.i("step0", 1)), slice(opt("start1"), opt("stop1"), p.i("step1", 1))}]};
}

TESSERA_CONFORMANCE_CASE(rechunk_sum) { return {in[0].rechunk(p.ints("chunks")), in[0].rechunk(p.ints("chunks")).sum()}; }

TESSERA_CONFORMANCE_CASE(concatenate) { return {concatenate(in, static_cast<int>(p.i("axis", 0)))}; }
TESSERA_CONFORMANCE_CASE(stack) { return {stack(in, static_cast<int>(p.i("axis", 0)))}; }
TESSERA_CONFORMANCE_CASE(reshape) { return {in[0].reshape(p.ints("shape"))}; }
TESSERA_CONFORMANCE_CASE(matmul) { return {matmul(in[0], in[1])}; }
TESSERA_CONFORMANCE_CASE(astype) { return {in[0].astype(dtype_from_name(p.s("dtype")))}; }
TESSERA_CONFORMANCE_CASE(transpose_sum) { return {(in[0] + in[0].T()).sum()}; }
