// Conformance cases of the dtypes beyond bool/int32/int64/float32/float64 (int8, int16, uint8,
// uint16, uint32, uint64, float16, complex64, complex128): the complex functions and complex
// operations. Arithmetic, comparisons, reductions and astype of these dtypes reuse the
// "binary", "unary", "reduce" and "astype" cases (cases_basic.cpp) with inputs of these dtypes.
#include "conformance.hpp"
#include "tessera/array/complex.hpp"

namespace {
using namespace tessera;
}  // namespace

TESSERA_CONFORMANCE_CASE(complex_fn) {
  const std::string& op = p.s("op");
  const Array& x = in[0];
  if (op == "real") return {real(x)};
  if (op == "imag") return {imag(x)};
  if (op == "conj") return {conj(x)};
  if (op == "angle") return {angle(x)};
  if (op == "make_complex") return {make_complex(in[0], in[1])};
  throw std::invalid_argument("complex_fn: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(complex_ops) {
  // Arithmetic with a C++ number (a weak scalar), negation, matmul, slices of complex arrays.
  const std::string& op = p.s("op");
  const Array& x = in[0];
  if (op == "mul_scalar") return {x * 2.5};
  if (op == "add_scalar") return {x + std::int64_t{3}};
  if (op == "slice") return {x[{slice(1, std::nullopt), step(-1)}]};
  if (op == "transpose") return {x.T()};
  if (op == "matmul") return {matmul(in[0], in[1])};
  if (op == "ne") return {in[0] != in[1]};
  throw std::invalid_argument("complex_ops: unknown op " + op);
}
