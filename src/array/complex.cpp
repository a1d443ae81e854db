// Complex arrays: element-wise operations as one "tessera.array.complex" task per chunk
// (computed in complex128 and rounded to the result dtype on store), reductions through the real
// and imaginary parts, and the clear DTypeError for what complex values do not support.
#include "tessera/array/complex.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <cmath>
#include <complex>
#include <cstring>

#include "array_ops.hpp"
#include "complex_ops.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace detail {
namespace {

// The element-wise operation codes (EwOp's), and the complex-only ones after them.
enum class ComplexCode : std::uint8_t { Real = 200, Imag, Conj, Angle, MakeComplex };

struct ComplexParams {
  std::uint8_t code = 0;
  DType out = DType::Complex128;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(code, out);
  }
};

using C = std::complex<double>;

}  // namespace

std::vector<C> complex_values(const Block& b) {
  std::vector<C> v(static_cast<std::size_t>(b.size()));
  dispatch_any_dtype(b.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(b.raw());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, C>)
        v[i] = C(static_cast<double>(p[i].real()), static_cast<double>(p[i].imag()));
      else
        v[i] = C(static_cast<double>(p[i]), 0.0);
    }
  });
  return v;
}

namespace {

// A block of dtype `out` from real values (float64, then NumPy's astype to `out`).
Block real_block(std::vector<double>&& v, const Shape& shape, DType out) {
  Block b(DType::Float64, shape);
  std::memcpy(b.raw(), v.data(), v.size() * sizeof(double));
  return out == DType::Float64 ? b : b.astype(out);
}

}  // namespace

Block complex_block(const std::vector<C>& v, const Shape& shape, DType out) {
  Block b(out, shape);
  if (out == DType::Complex128) {
    std::memcpy(b.raw(), v.data(), v.size() * sizeof(C));
  } else {
    auto* o = b.data<std::complex<float>>();
    for (std::size_t i = 0; i < v.size(); ++i)
      o[i] = std::complex<float>(static_cast<float>(v[i].real()), static_cast<float>(v[i].imag()));
  }
  return b;
}

namespace {

bool complex_nan(const C& z) { return std::isnan(z.real()) || std::isnan(z.imag()); }

Value complex_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("complex: missing operands");
  const auto p = from_value<ComplexParams>(args[0]);
  // Operands of one chunk's shape, or one element (a 0-d operand, read by every chunk).
  const Block* big = &args[1].block();
  for (std::size_t i = 2; i < args.size(); ++i)
    if (args[i].block().size() > big->size()) big = &args[i].block();
  const Shape shape = big->shape();
  const std::size_t n = static_cast<std::size_t>(big->size());
  std::vector<std::vector<C>> in;
  for (std::size_t i = 1; i < args.size(); ++i) {
    in.push_back(complex_values(args[i].block()));
    if (in.back().size() != n && in.back().size() != 1) throw ShapeError("complex: operand chunks of different sizes");
  }
  auto at = [&](std::size_t k, std::size_t j) -> const C& { return in[k].size() == 1 ? in[k][0] : in[k][j]; };

  std::vector<C> z;
  std::vector<double> r;
  const bool complex_out = is_complex(p.out);
  if (complex_out) z.resize(n);
  else r.resize(n);
  if (p.code >= static_cast<std::uint8_t>(ComplexCode::Real)) {
    for (std::size_t j = 0; j < n; ++j) {
      switch (static_cast<ComplexCode>(p.code)) {
        case ComplexCode::Real: r[j] = at(0, j).real(); break;
        case ComplexCode::Imag: r[j] = at(0, j).imag(); break;
        case ComplexCode::Conj: z[j] = std::conj(at(0, j)); break;
        case ComplexCode::Angle: r[j] = std::arg(at(0, j)); break;
        case ComplexCode::MakeComplex: z[j] = C(at(0, j).real(), at(1, j).real()); break;
      }
    }
  } else {
    const auto op = static_cast<EwOp>(p.code);
    for (std::size_t j = 0; j < n; ++j) {
      const C& a = at(0, j);
      switch (op) {
        case EwOp::Cast:
          if (complex_out) z[j] = a;
          else r[j] = a.real();  // NumPy's astype of complex to real keeps the real part
          break;
        case EwOp::Neg: z[j] = -a; break;
        case EwOp::Abs: r[j] = std::abs(a); break;
        case EwOp::Exp: z[j] = std::exp(a); break;
        case EwOp::Log: z[j] = std::log(a); break;
        case EwOp::Sqrt: z[j] = std::sqrt(a); break;
        case EwOp::Square: z[j] = a * a; break;
        case EwOp::Sin: z[j] = std::sin(a); break;
        case EwOp::Cos: z[j] = std::cos(a); break;
        case EwOp::Tan: z[j] = std::tan(a); break;
        case EwOp::Tanh: z[j] = std::tanh(a); break;
        case EwOp::IsNan: r[j] = complex_nan(a); break;
        case EwOp::IsFinite: r[j] = std::isfinite(a.real()) && std::isfinite(a.imag()); break;
        case EwOp::Add: z[j] = a + at(1, j); break;
        case EwOp::Sub: z[j] = a - at(1, j); break;
        case EwOp::Mul: z[j] = a * at(1, j); break;
        case EwOp::Div: z[j] = a / at(1, j); break;
        case EwOp::Pow: z[j] = std::pow(a, at(1, j)); break;
        case EwOp::Eq: r[j] = a == at(1, j); break;
        case EwOp::Ne: r[j] = a != at(1, j); break;
        default: throw DTypeError(std::string(ew_name(op)) + ": not supported for complex values");
      }
    }
  }
  return Value(complex_out ? complex_block(z, shape, p.out) : real_block(std::move(r), shape, p.out));
}

const bool complex_registered = [] {
  register_op(kComplexOp, complex_op);
  return true;
}();

Shape broadcast_shape(const std::vector<Array>& args, const char* what) {
  std::size_t nd = 0;
  for (const auto& a : args) nd = std::max(nd, static_cast<std::size_t>(a.ndim()));
  Shape out(nd, 1);
  for (const auto& a : args) {
    const std::size_t off = nd - a.ndim();
    for (std::size_t k = 0; k < static_cast<std::size_t>(a.ndim()); ++k) {
      const auto s = a.shape()[k];
      auto& o = out[off + k];
      if (s == o || s == 1) continue;
      if (o != 1) throw ShapeError(std::string(what) + ": shapes cannot be broadcast together");
      o = s;
    }
  }
  return out;
}

Array complex_map(std::uint8_t code, const std::vector<Array>& args, DType out, const char* name) {
  const Shape shape = broadcast_shape(args, name);
  // Full-shape operands share the first one's chunks; one-element operands stay one chunk (the
  // op reads their element everywhere); the rest are broadcast first.
  std::vector<Array> ins;
  std::optional<Chunks> chunks;
  for (const auto& a : args) {
    if (a.size() == 1 && a.num_chunks() == 1 && a.shape() != shape) {
      ins.push_back(a);
      continue;
    }
    Array b = a.shape() == shape ? a : a.broadcast_to(shape);
    if (!chunks) chunks = b.chunks();
    ins.push_back(rechunked_to(b, *chunks));
  }
  if (!chunks) {  // every operand is one element: the result is one chunk
    chunks = Chunks();
    for (auto s : shape) chunks->push_back({s});
    for (auto& a : ins)
      if (a.shape() != shape) a = a.broadcast_to(shape);
  }
  ComplexParams p{code, out};
  return map_blocks_with(kComplexOp, Value(to_object(p, "ComplexParams")), ins, out, *chunks, name);
}

}  // namespace

Array rechunked_to(const Array& a, const Chunks& chunks) {
  if (a.chunks() == chunks) return a;
  auto e = make_expr<RechunkExpr>(ExprKind::Rechunk, a.dtype(), a.shape(), chunks, "rechunk");
  e->input = a.expr();
  e->target = a.expr()->target;
  return Array(e);
}

Array map_blocks_with(const std::string& op, Value params, const std::vector<Array>& inputs, DType out_dtype,
                      Chunks out_chunks, const char* name) {
  Shape shape = chunks_shape(out_chunks);  // before out_chunks moves into the node
  auto e = make_expr<MapBlocksExpr>(ExprKind::MapBlocks, out_dtype, std::move(shape), std::move(out_chunks), name);
  e->op = op;
  e->params = std::move(params);
  for (const auto& a : inputs) e->inputs.push_back(a.expr());
  e->target = joint_target_of(e->inputs);
  return Array(e);
}

Array complex_elementwise(EwOp op, const std::vector<Array>& args, std::optional<DType> dtype) {
  const char* name = ew_name(op);
  DType t = args[0].dtype();
  for (std::size_t i = 1; i < args.size(); ++i) t = promote_types(t, args[i].dtype());
  DType out = t;
  switch (op) {
    case EwOp::Cast: out = *dtype; break;
    case EwOp::Neg: case EwOp::Exp: case EwOp::Log: case EwOp::Sqrt: case EwOp::Square: case EwOp::Sin:
    case EwOp::Cos: case EwOp::Tan: case EwOp::Tanh: case EwOp::Add: case EwOp::Sub: case EwOp::Mul:
    case EwOp::Div: case EwOp::Pow:
      break;
    case EwOp::Abs: out = real_dtype(t); break;
    case EwOp::IsNan: case EwOp::IsFinite: case EwOp::Eq: case EwOp::Ne: out = DType::Bool; break;
    default:
      throw DTypeError(std::string(name) + ": not supported for complex arrays (dtype " + std::string(dtype_name(t)) +
                       "); NumPy defines no ordering, rounding or truth of complex values here");
  }
  if (dtype && op != EwOp::Cast) out = *dtype;
  return complex_map(static_cast<std::uint8_t>(op), args, out, name);
}

Array complex_reduce(const Array& a, ReduceKind kind, const ReduceOptions& o, const char* name) {
  switch (kind) {
    case ReduceKind::Sum: return make_complex(real(a).sum(o), imag(a).sum(o)).astype(a.dtype());
    case ReduceKind::Mean: return make_complex(real(a).mean(o), imag(a).mean(o)).astype(a.dtype());
    case ReduceKind::Prod: {
      // In polar form: the product of the moduli, and the sum of the angles (to rounding, the
      // value of NumPy's running product; a zero factor gives a zero product).
      const Array r = abs(a).prod(o), t = angle(a).sum(o);
      return make_complex(r * cos(t), r * sin(t)).astype(a.dtype());
    }
    default:
      throw DTypeError(std::string(name) + ": not supported for complex arrays (dtype " + std::string(dtype_name(a.dtype())) +
                       "); sum, prod and mean are");
  }
}

}  // namespace detail

Array real(const Array& a) {
  if (!is_complex(a.dtype())) return a;
  return complex_map(static_cast<std::uint8_t>(ComplexCode::Real), {a}, real_dtype(a.dtype()), "real");
}

Array imag(const Array& a) {
  if (!is_complex(a.dtype())) return rechunked_to(zeros(a.shape(), ChunkSpec(std::vector<std::int64_t>(a.ndim(), -1)), a.dtype()), a.chunks());
  return complex_map(static_cast<std::uint8_t>(ComplexCode::Imag), {a}, real_dtype(a.dtype()), "imag");
}

Array conj(const Array& a) {
  if (!is_complex(a.dtype())) return a;
  return complex_map(static_cast<std::uint8_t>(ComplexCode::Conj), {a}, a.dtype(), "conj");
}

Array angle(const Array& a) {
  const DType t = a.dtype();
  const DType out = (t == DType::Complex64 || t == DType::Float32 || t == DType::Float16) ? DType::Float32 : DType::Float64;
  return complex_map(static_cast<std::uint8_t>(ComplexCode::Angle), {a}, t == DType::Float16 ? DType::Float16 : out, "angle");
}

Array make_complex(const Array& re, const Array& im) {
  if (is_complex(re.dtype()) || is_complex(im.dtype())) throw DTypeError("make_complex: the parts must be real arrays");
  const DType out = complex_dtype_for(promote_types(re.dtype(), im.dtype()));
  return complex_map(static_cast<std::uint8_t>(ComplexCode::MakeComplex), {re, im}, out, "make_complex");
}

}  // namespace tessera
