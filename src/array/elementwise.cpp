// Element-wise operations: broadcasting, NumPy 2's dtype promotion (with C++ numbers as weak
// scalars) and the checks NumPy makes, all when the expression is built.
#include "tessera/array/elementwise.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "complex_ops.hpp"
#include "element_semantics.hpp"
#include "expr.hpp"
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
