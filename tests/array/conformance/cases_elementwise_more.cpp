// Conformance cases of the element-wise functions beyond arithmetic (elementwise.hpp, "more of
// NumPy's element-wise functions"): cases_elementwise_more.py holds NumPy's side.
#include <map>

#include "conformance.hpp"
#include "tessera/array/elementwise.hpp"

namespace {

using namespace tessera;

using Unary = Array (*)(const Array&);
using Binary = Array (*)(const Array&, const Array&);
using WithScalar = Array (*)(const Array&, Scalar);

const std::map<std::string, Unary>& unary_ops() {
  static const std::map<std::string, Unary> ops = {
      {"trunc", Unary(trunc)},       {"rint", Unary(rint)},         {"isinf", Unary(isinf)},
      {"isposinf", Unary(isposinf)}, {"isneginf", Unary(isneginf)}, {"signbit", Unary(signbit)},
      {"arcsin", Unary(arcsin)},     {"arccos", Unary(arccos)},     {"arctan", Unary(arctan)},
      {"arcsinh", Unary(arcsinh)},   {"arccosh", Unary(arccosh)},   {"arctanh", Unary(arctanh)},
      {"sinh", Unary(sinh)},         {"cosh", Unary(cosh)},         {"log2", Unary(log2)},
      {"log10", Unary(log10)},       {"exp2", Unary(exp2)},         {"expm1", Unary(expm1)},
      {"cbrt", Unary(cbrt)},         {"deg2rad", Unary(deg2rad)},   {"rad2deg", Unary(rad2deg)},
      {"radians", Unary(radians)},   {"degrees", Unary(degrees)},   {"sinc", Unary(sinc)},
      {"reciprocal", Unary(reciprocal)}, {"positive", Unary(positive)}, {"negative", Unary(negative)},
      {"square", Unary(square)},     {"bitwise_not", Unary(bitwise_not)}, {"invert", Unary(invert)},
      {"sin", Unary(sin)},           {"cos", Unary(cos)},           {"tan", Unary(tan)},
      {"tanh", Unary(tanh)},         {"exp", Unary(exp)},           {"log", Unary(log)},
      {"log1p", Unary(log1p)},
  };
  return ops;
}

const std::map<std::string, Binary>& binary_ops() {
  static const std::map<std::string, Binary> ops = {
      {"arctan2", Binary(arctan2)},         {"hypot", Binary(hypot)},
      {"logaddexp", Binary(logaddexp)},     {"logaddexp2", Binary(logaddexp2)},
      {"copysign", Binary(copysign)},       {"fmin", Binary(fmin)},
      {"fmax", Binary(fmax)},               {"fmod", Binary(fmod)},
      {"logical_xor", Binary(logical_xor)}, {"bitwise_and", Binary(bitwise_and)},
      {"bitwise_or", Binary(bitwise_or)},   {"bitwise_xor", Binary(bitwise_xor)},
      {"left_shift", Binary(left_shift)},   {"right_shift", Binary(right_shift)},
      {"float_power", Binary(float_power)}, {"heaviside", Binary(heaviside)},
  };
  return ops;
}

const std::map<std::string, WithScalar>& scalar_ops() {
  static const std::map<std::string, WithScalar> ops = {
      {"arctan2", WithScalar(arctan2)},       {"hypot", WithScalar(hypot)},
      {"logaddexp", WithScalar(logaddexp)},   {"copysign", WithScalar(copysign)},
      {"fmin", WithScalar(fmin)},             {"fmax", WithScalar(fmax)},
      {"fmod", WithScalar(fmod)},             {"bitwise_and", WithScalar(bitwise_and)},
      {"left_shift", WithScalar(left_shift)}, {"right_shift", WithScalar(right_shift)},
      {"float_power", WithScalar(float_power)}, {"heaviside", WithScalar(heaviside)},
  };
  return ops;
}

// A Python int or float parameter as the weak scalar NumPy 2 makes of it.
Scalar number(const tessera_conformance::Params& p, const std::string& key) {
  const double v = p.d(key);
  if (p.b(key + "_is_int")) return Scalar(static_cast<std::int64_t>(v));
  return Scalar(v);
}

}  // namespace

TESSERA_CONFORMANCE_CASE(ew_unary) { return {unary_ops().at(p.s("op"))(in[0])}; }

TESSERA_CONFORMANCE_CASE(ew_binary) { return {binary_ops().at(p.s("op"))(in[0], in[1])}; }

TESSERA_CONFORMANCE_CASE(ew_binary_scalar) { return {scalar_ops().at(p.s("op"))(in[0], number(p, "s"))}; }

TESSERA_CONFORMANCE_CASE(round_case) { return {round(in[0], static_cast<int>(p.i("decimals")))}; }

TESSERA_CONFORMANCE_CASE(around_case) { return {around(in[0], static_cast<int>(p.i("decimals")))}; }

TESSERA_CONFORMANCE_CASE(clip_scalars) { return {clip(in[0], number(p, "lo"), number(p, "hi"))}; }

TESSERA_CONFORMANCE_CASE(clip_arrays) { return {clip(in[0], in[1], in[2])}; }

TESSERA_CONFORMANCE_CASE(isclose_case) {
  return {isclose(in[0], in[1], p.d("rtol", 1e-5), p.d("atol", 1e-8), p.b("equal_nan"))};
}

TESSERA_CONFORMANCE_CASE(allclose_case) {
  return {allclose(in[0], in[1], p.d("rtol", 1e-5), p.d("atol", 1e-8), p.b("equal_nan"))};
}

TESSERA_CONFORMANCE_CASE(nan_to_num_case) {
  std::optional<double> posinf, neginf;
  if (p.has("posinf")) posinf = p.d("posinf");
  if (p.has("neginf")) neginf = p.d("neginf");
  return {nan_to_num(in[0], p.d("nan", 0.0), posinf, neginf)};
}
