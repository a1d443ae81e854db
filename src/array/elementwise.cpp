// Element-wise operations: broadcasting, NumPy 2's dtype promotion (with C++ numbers as weak
// scalars) and the checks NumPy makes, all when the expression is built.
#include "tessera/array/elementwise.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cstdio>
#include <limits>

#include "complex_ops.hpp"
#include "element_semantics.hpp"
#include "expr.hpp"
#include "tessera/array/numpy_names.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace {

// NumPy broadcasting of shapes; throws ShapeError naming both shapes.
Shape broadcast_shapes(const std::vector<const Expr*>& in, const char* what) {
  std::size_t nd = 0;
  for (auto* e : in) nd = std::max(nd, e->shape.size());
  Shape out(nd, 1);
  for (auto* e : in) {
    const std::size_t off = nd - e->shape.size();
    for (std::size_t a = 0; a < e->shape.size(); ++a) {
      const auto n = e->shape[a];
      auto& o = out[off + a];
      if (n == o || n == 1) continue;
      if (o == 1) { o = n; continue; }
      std::string shapes;
      for (auto* x : in) shapes += (shapes.empty() ? "" : " and ") + shape_to_string(x->shape);
      throw ShapeError(std::string(what) + ": shapes " + shapes + " cannot be broadcast together");
    }
  }
  return out;
}

DType result_dtype(EwOp op, const std::vector<const Expr*>& in) {
  if (op >= EwOp::Lt && op <= EwOp::LogicalOr) return DType::Bool;
  if (op == EwOp::IsNan || op == EwOp::IsFinite || op == EwOp::LogicalNot) return DType::Bool;
  DType t = in[0]->dtype;
  if (op == EwOp::Where) t = promote_types(in[1]->dtype, in[2]->dtype);
  else
    for (std::size_t i = 1; i < in.size(); ++i) t = promote_types(t, in[i]->dtype);
  switch (op) {
    case EwOp::Div:  // true division of integers is float64 whatever their size (NumPy)
      return is_floating(t) ? t : DType::Float64;
    case EwOp::FMod: case EwOp::LeftShift: case EwOp::RightShift:
      return t == DType::Bool ? DType::Int64 : t;  // NumPy gives int8 for bools; int64 kept
    case EwOp::Exp: case EwOp::Log: case EwOp::Log1p: case EwOp::Sqrt: case EwOp::Sin: case EwOp::Cos:
    case EwOp::Tan: case EwOp::Tanh:
      return is_floating(t) ? t : DType::Float64;
    case EwOp::Add: case EwOp::Sub: case EwOp::Mul: case EwOp::FloorDiv: case EwOp::Mod: case EwOp::Pow:
    case EwOp::Neg: case EwOp::Square: case EwOp::Abs: case EwOp::Sign:
      if (t == DType::Bool && op != EwOp::Abs && op != EwOp::Add && op != EwOp::Mul && op != EwOp::Minimum &&
          op != EwOp::Maximum)
        return DType::Int64;  // arithmetic on bools (other than logical-like ops) goes to integers
      return t;
    default:
      return t;
  }
}

// Chunks of a broadcast result: for each axis, the common refinement of the chunkings of the
// operands that span it (like dask's unify_chunks).
Chunks broadcast_chunks(const Shape& out, const std::vector<const Expr*>& in) {
  Chunks c(out.size());
  for (std::size_t a = 0; a < out.size(); ++a) {
    std::vector<std::vector<std::int64_t>> options;
    for (auto* e : in) {
      const std::ptrdiff_t ax = static_cast<std::ptrdiff_t>(a) - static_cast<std::ptrdiff_t>(out.size() - e->shape.size());
      if (ax < 0 || e->shape[ax] != out[a]) continue;
      options.push_back(e->chunks[ax]);
    }
    if (out[a] == unknown_size) {
      // Chunks of unknown size cannot be refined: the operands must be chunked alike there.
      for (const auto& o : options)
        if (o != options[0])
          throw ShapeError("operands with chunks of unknown size on axis " + std::to_string(a) +
                           " must have the same chunks there; call compute_chunk_sizes() first");
      c[a] = options[0];
      continue;
    }
    c[a] = options.empty() ? std::vector<std::int64_t>{out[a]} : refine_axis_chunks(options);
  }
  return c;
}

// Bitwise operations and shifts: NumPy has no loops for floats.
bool integer_only(EwOp op) { return op == EwOp::Invert || (op >= EwOp::BitAnd && op <= EwOp::RightShift); }

Array elementwise(EwOp op, const std::vector<Array>& args, std::optional<DType> dtype = std::nullopt) {
  std::vector<const Expr*> in;
  for (auto& a : args) in.push_back(&expr_of(a));
  if ((dtype && is_complex(*dtype)) || std::any_of(in.begin(), in.end(), [](auto* e) { return is_complex(e->dtype); }))
    return complex_elementwise(op, args, dtype);
  if (op == EwOp::Where && in[0]->dtype != DType::Bool)  // truthiness, as NumPy
    return elementwise(op, {args[0].astype(DType::Bool), args[1], args[2]}, dtype);
  if (op == EwOp::Sub && in[0]->dtype == DType::Bool && in[1]->dtype == DType::Bool)
    throw DTypeError("subtract: bool - bool is not supported (NumPy's TypeError); use logical_xor, or astype first");
  if (op == EwOp::Neg && in[0]->dtype == DType::Bool)
    throw DTypeError("negative: -x of a bool array is not supported (NumPy's TypeError); use ! (logical_not)");
  if ((op == EwOp::LogicalAnd || op == EwOp::LogicalOr || op == EwOp::LogicalNot) &&
      std::any_of(in.begin(), in.end(), [](auto* e) { return is_floating(e->dtype); })) {
    std::vector<Array> truth;  // NumPy's logical ops take the truth of floats (NaN is true)
    for (const auto& a : args) truth.push_back(is_floating(expr_of(a).dtype) ? a.astype(DType::Bool) : a);
    return elementwise(op, truth, dtype);
  }
  if (integer_only(op) && std::any_of(in.begin(), in.end(), [](auto* e) { return is_floating(e->dtype); })) {
    std::string types;
    for (auto* e : in) types += (types.empty() ? "" : ", ") + std::string(dtype_name(e->dtype));
    throw DTypeError(std::string(ew_name(op)) + ": not supported for " + types +
                     " (NumPy's TypeError): integers and bools only");
  }
  Shape shape = broadcast_shapes(in, ew_name(op));
  Chunks chunks = broadcast_chunks(shape, in);
  DType t = dtype ? *dtype : result_dtype(op, in);
  if (op == EwOp::Pow && !is_floating(t) && in[1]->kind == ExprKind::Generator) {
    // A constant exponent is known now: NumPy raises for a negative integer one.
    const auto& g = static_cast<const GeneratorExpr&>(*in[1]);
    if (g.gen == GenKind::Full && !is_floating(g.dtype) && g.i0 < 0) throw DTypeError(std::string("power: ") + elem::kNegativePowerMessage);
  }
  if (op == EwOp::Pow && in[1]->kind == ExprKind::Generator && in[1]->shape.empty() && shape == in[0]->shape) {
    // Strength reduction: x ** 2 is x * x (libm's pow is correctly rounded there, so the values
    // are the same; pow per element was a third of ((sin(x)**2 + cos(x)**2) * 3 - 2).max()).
    const auto& g = static_cast<const GeneratorExpr&>(*in[1]);
    const bool two = g.gen == GenKind::Full && (is_floating(g.dtype) ? g.p0 == 2.0 : g.i0 == 2);
    if (two) return elementwise(EwOp::Square, {in[0]->dtype == t ? args[0] : args[0].astype(t)});
  }
  auto e = make_expr<ElementwiseExpr>(ExprKind::Elementwise, t, shape, std::move(chunks), ew_name(op));
  e->op = op;
  for (auto& a : args) e->inputs.push_back(a.expr());
  e->target = joint_target_of(e->inputs);
  return Array(e);
}

static_assert(static_cast<int>(Scalar::Kind::Bool) == static_cast<int>(elem::ScalarKind::Bool) &&
              static_cast<int>(Scalar::Kind::Int) == static_cast<int>(elem::ScalarKind::Int) &&
              static_cast<int>(Scalar::Kind::Float) == static_cast<int>(elem::ScalarKind::Float));

// The 0-d operand a C++ number becomes beside `other`: NumPy 2's weak Python scalars (NEP 50).
Array weak_scalar(const Scalar& v, const Array& other, EwOp op) {
  const DType t = elem::weak_scalar_dtype(static_cast<elem::ScalarKind>(v.kind()), expr_of(other).dtype);
  if (v.kind() == Scalar::Kind::Int && is_integer(t) && (v.above_int64() || !elem::int_fits(v.as_int(), t)))
    throw DTypeError(std::string(ew_name(op)) + ": the integer " + v.to_string() + " is out of bounds for " +
                     std::string(dtype_name(t)) + " (NumPy's OverflowError)");
  return scalar(v, t);
}

Array with_scalar(EwOp op, const Array& a, const Scalar& v) { return elementwise(op, {a, weak_scalar(v, a, op)}); }
Array with_scalar(EwOp op, const Scalar& v, const Array& b) { return elementwise(op, {weak_scalar(v, b, op), b}); }

// NumPy 2 compares an integer with an integer or bool array exactly, even where the value is
// out of the array's range (int32 x < 2**40 is all true), so the value is not cast down.
Array compare_scalar(EwOp op, const Array& a, const Scalar& v) {
  if (v.kind() != Scalar::Kind::Int || is_floating(expr_of(a).dtype) || is_complex(expr_of(a).dtype))
    return with_scalar(op, a, v);
  if (v.above_int64()) {  // beyond every int64: x < v, x <= v, x != v hold everywhere, the rest nowhere
    const bool below = op == EwOp::Lt || op == EwOp::Le || op == EwOp::Ne;
    return elementwise(below ? EwOp::Le : EwOp::Gt, {a, scalar(std::numeric_limits<std::int64_t>::max())});
  }
  return elementwise(op, {a, scalar(v.as_int())});
}
EwOp mirrored(EwOp op) {  // v < x is x > v
  switch (op) {
    case EwOp::Lt: return EwOp::Gt;
    case EwOp::Le: return EwOp::Ge;
    case EwOp::Gt: return EwOp::Lt;
    case EwOp::Ge: return EwOp::Le;
    default: return op;
  }
}

}  // namespace

#define TESSERA_BINARY(opname, code)                                                              \
  Array opname(const Array& a, const Array& b) { return elementwise(EwOp::code, {a, b}); }        \
  Array opname(const Array& a, Scalar b) { return with_scalar(EwOp::code, a, b); }
#define TESSERA_BINARY_R(opname, code) \
  Array opname(Scalar a, const Array& b) { return with_scalar(EwOp::code, a, b); }
#define TESSERA_COMPARE(opname, code)                                                             \
  Array opname(const Array& a, const Array& b) { return elementwise(EwOp::code, {a, b}); }        \
  Array opname(const Array& a, Scalar b) { return compare_scalar(EwOp::code, a, b); }             \
  Array opname(Scalar a, const Array& b) { return compare_scalar(mirrored(EwOp::code), b, a); }
TESSERA_BINARY(operator+, Add)
TESSERA_BINARY(operator-, Sub)
TESSERA_BINARY(operator*, Mul)
TESSERA_BINARY(operator/, Div)
TESSERA_BINARY_R(operator+, Add)
TESSERA_BINARY_R(operator-, Sub)
TESSERA_BINARY_R(operator*, Mul)
TESSERA_BINARY_R(operator/, Div)
TESSERA_COMPARE(operator<, Lt)
TESSERA_COMPARE(operator<=, Le)
TESSERA_COMPARE(operator>, Gt)
TESSERA_COMPARE(operator>=, Ge)
TESSERA_COMPARE(operator==, Eq)
TESSERA_COMPARE(operator!=, Ne)
TESSERA_BINARY(power, Pow)
TESSERA_BINARY_R(power, Pow)
TESSERA_BINARY(floor_divide, FloorDiv)
TESSERA_BINARY(mod, Mod)
#undef TESSERA_BINARY
#undef TESSERA_COMPARE
#undef TESSERA_BINARY_R
Array operator-(const Array& a) { return elementwise(EwOp::Neg, {a}); }
Array operator&&(const Array& a, const Array& b) { return elementwise(EwOp::LogicalAnd, {a, b}); }
Array operator||(const Array& a, const Array& b) { return elementwise(EwOp::LogicalOr, {a, b}); }
Array operator!(const Array& a) { return elementwise(EwOp::LogicalNot, {a}); }
Array minimum(const Array& a, const Array& b) { return elementwise(EwOp::Minimum, {a, b}); }
Array maximum(const Array& a, const Array& b) { return elementwise(EwOp::Maximum, {a, b}); }
Array where(const Array& c, const Array& a, const Array& b) { return elementwise(EwOp::Where, {c, a, b}); }

namespace {
// The float type NumPy's transcendental loops pick for an integer dtype: the smallest float that
// holds it (int8/uint8 float16, int16/uint16 float32, wider float64). Bools compute in float64
// here (NumPy would use float16).
DType float_for_unary(DType t) {
  if (is_floating(t) || is_complex(t)) return t;
  if (is_integer(t) && itemsize(t) == 1) return DType::Float16;
  if (is_integer(t) && itemsize(t) == 2) return DType::Float32;
  return DType::Float64;
}
Array float_unary(EwOp op, const Array& a) {
  const DType t = expr_of(a).dtype;
  const DType f = float_for_unary(t);
  return elementwise(op, {f == t ? a : a.astype(f)});
}
}  // namespace
Array abs(const Array& a) { return elementwise(EwOp::Abs, {a}); }
Array square(const Array& a) { return elementwise(EwOp::Square, {a}); }
Array sign(const Array& a) { return elementwise(EwOp::Sign, {a}); }
Array floor(const Array& a) { return elementwise(EwOp::Floor, {a}); }
Array ceil(const Array& a) { return elementwise(EwOp::Ceil, {a}); }
Array isnan(const Array& a) { return elementwise(EwOp::IsNan, {a}); }
Array isfinite(const Array& a) { return elementwise(EwOp::IsFinite, {a}); }
Array exp(const Array& a) { return float_unary(EwOp::Exp, a); }
Array log(const Array& a) { return float_unary(EwOp::Log, a); }
Array log1p(const Array& a) { return float_unary(EwOp::Log1p, a); }
Array sqrt(const Array& a) { return float_unary(EwOp::Sqrt, a); }
Array sin(const Array& a) { return float_unary(EwOp::Sin, a); }
Array cos(const Array& a) { return float_unary(EwOp::Cos, a); }
Array tan(const Array& a) { return float_unary(EwOp::Tan, a); }
Array tanh(const Array& a) { return float_unary(EwOp::Tanh, a); }

// ---- more of NumPy's element-wise functions ---------------------------------------------------------

namespace {

DType array_dtype(const Array& a) { return expr_of(a).dtype; }
Array as_float(const Array& a) { return is_floating(array_dtype(a)) ? a : a.astype(DType::Float64); }

// A function NumPy defines for floats only: integers and bools compute in float64.
Array float_binary(EwOp op, const Array& a, const Array& b) {
  if (is_floating(promote_types(array_dtype(a), array_dtype(b)))) return elementwise(op, {a, b});
  return elementwise(op, {a.astype(DType::Float64), b.astype(DType::Float64)});
}
Array float_binary(EwOp op, const Array& a, const Scalar& b) { return float_binary(op, a, weak_scalar(b, a, op)); }
Array float_binary(EwOp op, const Scalar& a, const Array& b) { return float_binary(op, weak_scalar(a, b, op), b); }

// fmin/fmax: the NaN-ignoring ops for floats; integers have no NaN, so minimum/maximum.
Array nan_ignoring(EwOp op, const Array& a, const Array& b) {
  if (is_floating(promote_types(array_dtype(a), array_dtype(b)))) return elementwise(op, {a, b});
  return elementwise(op == EwOp::FMin ? EwOp::Minimum : EwOp::Maximum, {a, b});
}

// 10**n for n >= 0 by repeated multiplication, as NumPy's round computes its factor (exact to
// 1e22); inf from n = 309 on.
double power_of_ten(std::int64_t n) {
  double f = 1;
  for (std::int64_t i = 0; i < n && f != std::numeric_limits<double>::infinity(); ++i) f *= 10;
  return f;
}

}  // namespace

Array clip(const Array& a, const Array& lo, const Array& hi) { return minimum(maximum(a, lo), hi); }
Array clip(const Array& a, Scalar lo, Scalar hi) {
  return elementwise(EwOp::Minimum, {elementwise(EwOp::Maximum, {a, weak_scalar(lo, a, EwOp::Maximum)}),
                                     weak_scalar(hi, a, EwOp::Minimum)});
}

Array round(const Array& a, int decimals) {
  const DType t = array_dtype(a);
  if (t == DType::Bool) return round(a.astype(DType::Float64), decimals);
  if (!is_floating(t)) {
    if (decimals >= 0) return a;
    // Integers round through float64 and back, as in NumPy: round(25, -1) is 20 (half to even).
    const double f = power_of_ten(-static_cast<std::int64_t>(decimals));
    return (rint(a.astype(DType::Float64) / f) * f).astype(t);
  }
  if (decimals == 0) return elementwise(EwOp::Rint, {a});
  const double f = power_of_ten(decimals < 0 ? -static_cast<std::int64_t>(decimals) : decimals);
  return decimals > 0 ? rint(a * f) / f : rint(a / f) * f;
}
Array around(const Array& a, int decimals) { return round(a, decimals); }
Array trunc(const Array& a) { return elementwise(EwOp::Trunc, {a}); }
Array rint(const Array& a) { return float_unary(EwOp::Rint, a); }

// Integers have no infinities: isnan of an integer is a constant false.
Array isinf(const Array& a) { return is_floating(array_dtype(a)) ? abs(a) == std::numeric_limits<double>::infinity() : isnan(a); }
Array isposinf(const Array& a) { return is_floating(array_dtype(a)) ? a == std::numeric_limits<double>::infinity() : isnan(a); }
Array isneginf(const Array& a) { return is_floating(array_dtype(a)) ? a == -std::numeric_limits<double>::infinity() : isnan(a); }
// copysign(1, x) is -1 exactly where x's sign bit is set, -0.0 and negative NaNs included.
Array signbit(const Array& a) { return is_floating(array_dtype(a)) ? copysign(1.0, a) < 0 : a < 0; }

namespace {
// numpy.isclose: (|x - y| <= atol + rtol * |y|) & isfinite(y) | (x == y), y as float.
Array isclose_of(const Array& x, const Array& y, double rtol, double atol, bool equal_nan) {
  Array r = ((abs(x - y) <= atol + rtol * abs(y)) && isfinite(y)) || (x == y);
  return equal_nan ? r || (isnan(x) && isnan(y)) : r;
}
}  // namespace
Array isclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan) {
  return isclose_of(a, as_float(b), rtol, atol, equal_nan);
}
Array isclose(const Array& a, Scalar b, double rtol, double atol, bool equal_nan) {
  return isclose_of(a, weak_scalar(Scalar(b.as_double()), a, EwOp::Sub), rtol, atol, equal_nan);
}
Array allclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan) {
  return isclose(a, b, rtol, atol, equal_nan).all();
}

Array nan_to_num(const Array& a, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  const DType t = array_dtype(a);
  if (!is_floating(t)) return a;
  const double big = t == DType::Float32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  // Replacements take a's dtype (weak scalars), so 1e300 for a float32 array is inf, as in NumPy.
  auto value = [&](double v) { return weak_scalar(Scalar(v), a, EwOp::Where); };
  const double inf = std::numeric_limits<double>::infinity();
  return where(isnan(a), value(nan),
               where(a == inf, value(posinf.value_or(big)), where(a == -inf, value(neginf.value_or(-big)), a)));
}

Array arcsin(const Array& a) { return float_unary(EwOp::Arcsin, a); }
Array arccos(const Array& a) { return float_unary(EwOp::Arccos, a); }
Array arctan(const Array& a) { return float_unary(EwOp::Arctan, a); }
Array arcsinh(const Array& a) { return float_unary(EwOp::Arcsinh, a); }
Array arccosh(const Array& a) { return float_unary(EwOp::Arccosh, a); }
Array arctanh(const Array& a) { return float_unary(EwOp::Arctanh, a); }
Array sinh(const Array& a) { return float_unary(EwOp::Sinh, a); }
Array cosh(const Array& a) { return float_unary(EwOp::Cosh, a); }
Array log2(const Array& a) { return float_unary(EwOp::Log2, a); }
Array log10(const Array& a) { return float_unary(EwOp::Log10, a); }
Array exp2(const Array& a) { return float_unary(EwOp::Exp2, a); }
Array expm1(const Array& a) { return float_unary(EwOp::Expm1, a); }
Array cbrt(const Array& a) { return float_unary(EwOp::Cbrt, a); }
Array i0(const Array& a) {
  // numpy.i0 is not a ufunc: it keeps a float dtype and takes anything else to float64.
  const DType t = expr_of(a).dtype;
  if (is_complex(t)) throw DTypeError("i0: not supported for complex values");
  return elementwise(EwOp::I0, {is_floating(t) ? a : a.astype(DType::Float64)});
}
Array spacing(const Array& a) { return float_unary(EwOp::Spacing, a); }
std::pair<Array, Array> frexp(const Array& x) {  // numpy_names.hpp
  if (is_complex(expr_of(x).dtype)) throw DTypeError("frexp: not supported for complex values");
  // The exponent is computed as a float holding an integer (|e| <= 1074 is exact in every
  // float dtype, float16 included), then stored as int32.
  return {float_unary(EwOp::FrexpMantissa, x), float_unary(EwOp::FrexpExponent, x).astype(DType::Int32)};
}

// NumPy multiplies by pi/180 (180/pi), the factor computed in the array's precision: for float32
// 180.0f / (float)pi is not (float)(180 / pi).
Array deg2rad(const Array& a) {
  const Array x = as_float(a);
  constexpr double kPi = 3.141592653589793238462643383279502884;
  return array_dtype(x) == DType::Float32 ? x * static_cast<double>(static_cast<float>(kPi) / 180.0f) : x * (kPi / 180.0);
}
Array rad2deg(const Array& a) {
  const Array x = as_float(a);
  constexpr double kPi = 3.141592653589793238462643383279502884;
  return array_dtype(x) == DType::Float32 ? x * static_cast<double>(180.0f / static_cast<float>(kPi)) : x * (180.0 / kPi);
}
Array radians(const Array& a) { return deg2rad(a); }
Array degrees(const Array& a) { return rad2deg(a); }
// numpy.sinc: y = pi * where(x == 0, 1e-20, x); sin(y) / y.
Array sinc(const Array& a) {
  const Array x = as_float(a);
  const Array y = 3.141592653589793238462643383279502884 * where(x == 0, weak_scalar(Scalar(1.0e-20), x, EwOp::Where), x);
  return sin(y) / y;
}

Array reciprocal(const Array& a) {
  const DType t = array_dtype(a);
  if (is_floating(t)) return 1.0 / a;
  if (t == DType::Bool) return a.astype(DType::Int64);  // 1 / True is 1; NumPy's int8 1 / False is 0 too
  // Integers: 1.0 / x converted back (NumPy's loop), so 1 / 0 is the "integer indefinite" minimum.
  return (1.0 / a.astype(DType::Float64)).astype(t);
}
Array positive(const Array& a) {
  if (array_dtype(a) == DType::Bool)
    throw DTypeError("positive: +x of a bool array is not supported (NumPy's TypeError)");
  return a;
}
Array negative(const Array& a) { return -a; }

#define TESSERA_FLOAT_BINARY(opname, code)                                                                \
  Array opname(const Array& a, const Array& b) { return float_binary(EwOp::code, a, b); }                 \
  Array opname(const Array& a, Scalar b) { return float_binary(EwOp::code, a, b); }                       \
  Array opname(Scalar a, const Array& b) { return float_binary(EwOp::code, a, b); }
TESSERA_FLOAT_BINARY(arctan2, Arctan2)
TESSERA_FLOAT_BINARY(hypot, Hypot)
TESSERA_FLOAT_BINARY(logaddexp, LogAddExp)
TESSERA_FLOAT_BINARY(logaddexp2, LogAddExp2)
TESSERA_FLOAT_BINARY(copysign, CopySign)
TESSERA_FLOAT_BINARY(nextafter, NextAfter)
#undef TESSERA_FLOAT_BINARY

Array float_power(const Array& a, const Array& b) {
  return power(a.astype(DType::Float64), b.astype(DType::Float64));
}
Array float_power(const Array& a, Scalar b) { return power(a.astype(DType::Float64), b.as_double()); }
Array float_power(Scalar a, const Array& b) { return power(a.as_double(), b.astype(DType::Float64)); }

// npy_heaviside: 0 below zero, h at zero, 1 above, and NaN (x itself) where x is NaN.
Array heaviside(const Array& x, const Array& h) {
  DType t = promote_types(array_dtype(x), array_dtype(h));
  if (!is_floating(t)) t = DType::Float64;
  const Array xf = x.astype(t);
  const Array zero = scalar(0.0, t), one = scalar(1.0, t);
  return where(xf < 0, zero, where(xf > 0, one, where(xf == 0, h.astype(t), xf)));
}
Array heaviside(const Array& x, Scalar h) { return heaviside(x, weak_scalar(h, x, EwOp::Where)); }

Array fmin(const Array& a, const Array& b) { return nan_ignoring(EwOp::FMin, a, b); }
Array fmin(const Array& a, Scalar b) { return nan_ignoring(EwOp::FMin, a, weak_scalar(b, a, EwOp::FMin)); }
Array fmin(Scalar a, const Array& b) { return nan_ignoring(EwOp::FMin, weak_scalar(a, b, EwOp::FMin), b); }
Array fmax(const Array& a, const Array& b) { return nan_ignoring(EwOp::FMax, a, b); }
Array fmax(const Array& a, Scalar b) { return nan_ignoring(EwOp::FMax, a, weak_scalar(b, a, EwOp::FMax)); }
Array fmax(Scalar a, const Array& b) { return nan_ignoring(EwOp::FMax, weak_scalar(a, b, EwOp::FMax), b); }

Array logical_xor(const Array& a, const Array& b) { return a.astype(DType::Bool) != b.astype(DType::Bool); }
Array logical_xor(const Array& a, Scalar b) { return logical_xor(a, weak_scalar(b, a, EwOp::Ne)); }

#define TESSERA_BINARY(opname, code)                                                              \
  Array opname(const Array& a, const Array& b) { return elementwise(EwOp::code, {a, b}); }        \
  Array opname(const Array& a, Scalar b) { return with_scalar(EwOp::code, a, b); }                \
  Array opname(Scalar a, const Array& b) { return with_scalar(EwOp::code, a, b); }
TESSERA_BINARY(fmod, FMod)
TESSERA_BINARY(bitwise_and, BitAnd)
TESSERA_BINARY(bitwise_or, BitOr)
TESSERA_BINARY(bitwise_xor, BitXor)
TESSERA_BINARY(left_shift, LeftShift)
TESSERA_BINARY(right_shift, RightShift)
#undef TESSERA_BINARY
Array bitwise_not(const Array& a) {
  return elementwise(array_dtype(a) == DType::Bool ? EwOp::LogicalNot : EwOp::Invert, {a});
}
Array invert(const Array& a) { return bitwise_not(a); }

Array Array::astype(DType t) const {
  if (t == dtype()) return *this;
  return elementwise(EwOp::Cast, {*this}, t);
}

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return above_int64_ ? std::to_string(static_cast<std::uint64_t>(i_)) : std::to_string(i_);
    case Kind::Float: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", f_);
  return buf;
}

}  // namespace tessera
