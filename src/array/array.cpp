// Building Array expressions: every check on shapes, dtypes and bounds happens here, when the
// expression is built, so that nothing invalid ever reaches a task.
#include "tessera/array/array.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

#include "element_semantics.hpp"
#include "expr.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace {

Chunks normalize_chunks(const Shape& shape, const ChunkSpec& spec) {
  if (spec.empty() && shape.empty()) return {};
  ChunkSpec c = spec;
  if (c.size() == 1 && shape.size() > 1) c.assign(shape.size(), spec[0]);  // one size for every axis
  return regular_chunks(shape, c);
}

std::uint64_t mix_key(std::uint64_t seed, std::uint64_t stream) {
  // SplitMix64 finaliser: distinct, well-spread Philox keys for (seed, RandomState call).
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Array make_generator(GenKind gen, DType dtype, Shape shape, const ChunkSpec& chunks, double p0, double p1,
                     std::int64_t i0, std::int64_t i1, std::uint64_t key, const char* prefix) {
  for (auto n : shape)
    if (n < 0) throw ShapeError(std::string(prefix) + ": negative extent in shape " + shape_to_string(shape));
  auto c = normalize_chunks(shape, chunks);
  auto e = make_expr<GeneratorExpr>(ExprKind::Generator, dtype, shape, std::move(c), prefix);
  e->gen = gen;
  e->p0 = p0;
  e->p1 = p1;
  e->i0 = i0;
  e->i1 = i1;
  e->key = key;
  // A constant of an integer dtype keeps its exact value in i0 (lowering reads it there).
  if (gen == GenKind::Full && !is_floating(dtype) && i0 == 0 && p0 != 0) e->i0 = elem::float_to_int(p0, dtype);
  return Array(e);
}

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
    case EwOp::Div:
      return t == DType::Float32 ? DType::Float32 : DType::Float64;
    case EwOp::Exp: case EwOp::Log: case EwOp::Log1p: case EwOp::Sqrt: case EwOp::Sin: case EwOp::Cos:
    case EwOp::Tan: case EwOp::Tanh:
      return t == DType::Float32 ? t : DType::Float64;
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
    c[a] = options.empty() ? std::vector<std::int64_t>{out[a]} : refine_axis_chunks(options);
  }
  return c;
}

Array elementwise(EwOp op, const std::vector<Array>& args, std::optional<DType> dtype = std::nullopt) {
  std::vector<const Expr*> in;
  for (auto& a : args) in.push_back(&expr_of(a));
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
  auto e = make_expr<ElementwiseExpr>(ExprKind::Elementwise, t, shape, std::move(chunks), ew_name(op));
  e->op = op;
  for (auto& a : args) e->inputs.push_back(a.expr());
  e->target = joint_target_of(e->inputs);
  return Array(e);
}

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
  if (v.kind() != Scalar::Kind::Int || is_floating(expr_of(a).dtype)) return with_scalar(op, a, v);
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

ReduceOptions with_axes(std::optional<int> axis, int split_every, bool keepdims = false) {
  ReduceOptions o;
  if (axis) o.axes = {*axis};
  o.split_every = split_every;
  o.keepdims = keepdims;
  return o;
}

}  // namespace

// ---- Array accessors ------------------------------------------------------------------------
DType Array::dtype() const { return expr_of(*this).dtype; }
const Shape& Array::shape() const { return expr_of(*this).shape; }
const Chunks& Array::chunks() const { return expr_of(*this).chunks; }
const std::string& Array::name() const { return expr_of(*this).name; }

Target Array::target() const { return expr_of(*this).target; }

namespace {
// The same array placed on `target`: a generator is re-made there (random numbers are generated
// on the GPU directly, with the same values); anything else is read through an identity view
// placed there, which lowering does not fuse with its differently placed input.
Array place(const Array& a, Target target) {
  const Expr& e = expr_of(a);
  if (e.target == target) return a;
  if (e.kind == ExprKind::Generator) {
    auto g = std::make_shared<GeneratorExpr>(static_cast<const GeneratorExpr&>(e));
    g->name = unique_name(e.name + (target == Target::Device ? "-device" : "-host"));
    g->target = target;
    return Array(g);
  }
  auto v = make_expr<ViewExpr>(ExprKind::View, e.dtype, e.shape, e.chunks, target == Target::Device ? "to_device" : "to_host");
  v->input = a.expr();
  const int nd = static_cast<int>(e.shape.size());
  v->map = AffineMap{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  for (int k = 0; k < nd; ++k) v->map.src[k] = k;
  v->target = target;
  return Array(v);
}
}  // namespace

Array Array::to_device() const { return place(*this, Target::Device); }
Array Array::to_host() const { return place(*this, Target::Host); }
std::int64_t Array::num_chunks() const { return shape_size(chunk_counts(chunks())); }

// ---- creation -------------------------------------------------------------------------------
Array full(Shape shape, double value, ChunkSpec chunks, DType dtype) {
  return make_generator(GenKind::Full, dtype, std::move(shape), chunks, value, 0, 0, 0, 0, "full");
}
Array zeros(Shape shape, ChunkSpec chunks, DType dtype) { return full(std::move(shape), 0.0, std::move(chunks), dtype); }
Array ones(Shape shape, ChunkSpec chunks, DType dtype) { return full(std::move(shape), 1.0, std::move(chunks), dtype); }

Array arange(Scalar start, Scalar stop, Scalar step, std::int64_t chunk, std::optional<DType> dtype) {
  if (step.as_double() == 0) throw Error("arange: step must not be zero");
  const bool any_float = start.is_float() || stop.is_float() || step.is_float();
  const DType t = dtype ? *dtype : (any_float ? DType::Float64 : DType::Int64);
  const double len = std::ceil((stop.as_double() - start.as_double()) / step.as_double());
  const auto n = static_cast<std::int64_t>(len > 0 ? len : 0.0);  // NaN: empty
  return make_generator(GenKind::Arange, t, Shape{n}, ChunkSpec{chunk}, start.as_double(), step.as_double(), 0, 0, 0,
                        "arange");
}

Array scalar(Scalar value, std::optional<DType> dtype) {
  DType t = DType::Float64;
  if (dtype) t = *dtype;
  else if (value.kind() == Scalar::Kind::Bool) t = DType::Bool;
  else if (value.kind() == Scalar::Kind::Int) t = DType::Int64;
  std::int64_t exact = 0;
  if (!is_floating(t)) {
    if (value.is_float()) {
      exact = elem::float_to_int(value.as_double(), t);
    } else if (t == DType::Bool) {
      exact = value.above_int64() || value.as_int() != 0;
    } else {
      if (value.above_int64() || !elem::int_fits(value.as_int(), t))
        throw DTypeError("scalar: " + value.to_string() + " is out of bounds for " + std::string(dtype_name(t)));
      exact = value.as_int();
    }
  }
  auto a = make_generator(GenKind::Full, t, {}, {}, value.as_double(), 0, exact, 0, 0, "scalar");
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->i0 = exact;
  return a;
}

Array from_block(const Block& block, ChunkSpec chunks) {
  if (block.empty()) throw Error("from_block: empty block");
  if (block.memory_kind() != MemoryKind::Host) throw Error("from_block: the block must be in host memory");
  auto c = normalize_chunks(block.shape(), chunks);
  auto e = make_expr<SourceExpr>(ExprKind::Source, block.dtype(), block.shape(), c, "array");
  const std::int64_t nchunks = shape_size(chunk_counts(c));
  const int d = block.ndim();
  const auto strides = row_major_strides(block.shape());
  std::vector<std::vector<std::int64_t>> offs;
  for (auto& a : c) offs.push_back(chunk_offsets(a));
  const std::size_t isz = itemsize(block.dtype());
  for (std::int64_t f = 0; f < nchunks; ++f) {
    auto cc = chunk_coords(c, f);
    Shape cs(d);
    for (int a = 0; a < d; ++a) cs[a] = c[a][cc[a]];
    Block piece(block.dtype(), cs);
    // Copy row by row (last axis contiguous).
    const std::int64_t L = d ? cs[d - 1] : 1;
    const std::int64_t rows = L ? shape_size(cs) / std::max<std::int64_t>(L, 1) : 0;
    std::vector<std::int64_t> coord(std::max(d - 1, 0), 0);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t src = 0;
      for (int a = 0; a + 1 < d; ++a) src += (offs[a][cc[a]] + coord[a]) * strides[a];
      if (d) src += offs[d - 1][cc[d - 1]];
      std::memcpy(static_cast<char*>(piece.raw()) + r * L * isz, static_cast<const char*>(block.raw()) + src * isz, L * isz);
      for (int a = d - 2; a >= 0; --a) {
        if (++coord[a] < cs[a]) break;
        coord[a] = 0;
      }
    }
    e->blocks.emplace_back(std::move(piece));
  }
  return Array(e);
}

namespace random {
Array normal(std::uint64_t seed, double mean, double stddev, Shape shape, ChunkSpec chunks) {
  if (!(stddev >= 0)) throw Error("normal: the standard deviation must be >= 0");
  return make_generator(GenKind::Normal, DType::Float64, std::move(shape), chunks, mean, stddev, 0, 0,
                        mix_key(seed, 0), "normal");
}
Array uniform(std::uint64_t seed, double low, double high, Shape shape, ChunkSpec chunks) {
  return make_generator(GenKind::Uniform, DType::Float64, std::move(shape), chunks, low, high, 0, 0,
                        mix_key(seed, 0), "uniform");
}
Array integers(std::uint64_t seed, std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype) {
  if (high <= low) throw Error("integers: high must be greater than low");
  if (!is_integer(dtype)) throw DTypeError("integers: dtype must be int32 or int64");
  return make_generator(GenKind::Integers, dtype, std::move(shape), chunks, static_cast<double>(low),
                        static_cast<double>(high), low, high, mix_key(seed, 0), "integers");
}
Array RandomState::normal(double mean, double stddev, Shape shape, ChunkSpec chunks) {
  auto a = random::normal(0, mean, stddev, std::move(shape), chunks);
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->key =
      mix_key(seed_, calls_++);
  return a;
}
Array RandomState::uniform(double low, double high, Shape shape, ChunkSpec chunks) {
  auto a = random::uniform(0, low, high, std::move(shape), chunks);
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->key =
      mix_key(seed_, calls_++);
  return a;
}
Array RandomState::integers(std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype) {
  auto a = random::integers(0, low, high, std::move(shape), chunks, dtype);
  std::const_pointer_cast<GeneratorExpr>(std::static_pointer_cast<const GeneratorExpr>(a.expr()))->key =
      mix_key(seed_, calls_++);
  return a;
}
}  // namespace random

// ---- element-wise ---------------------------------------------------------------------------
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
Array float_unary(EwOp op, const Array& a) {
  // Transcendentals of integers and bools compute in float64 (NumPy).
  const DType t = expr_of(a).dtype;
  return elementwise(op, {is_floating(t) ? a : a.astype(DType::Float64)});
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

// ---- views ----------------------------------------------------------------------------------
namespace {
Array make_view(const Array& in, Shape shape, Chunks chunks, AffineMap map, const char* prefix) {
  auto e = make_expr<ViewExpr>(ExprKind::View, expr_of(in).dtype, std::move(shape), std::move(chunks), prefix);
  e->input = in.expr();
  e->target = in.expr()->target;
  e->map = std::move(map);
  return Array(e);
}
}  // namespace

Array Array::operator[](const std::vector<Index>& index) const {
  const Expr& e = expr_of(*this);
  const int nd = static_cast<int>(e.shape.size());
  int consumed = 0;
  for (const auto& ix : index)
    if (!std::holds_alternative<NewAxis>(ix.get())) ++consumed;
  if (consumed > nd)
    throw IndexError("too many indices: " + std::to_string(consumed) + " for an array of " + std::to_string(nd) +
                     " dimensions");
  AffineMap map;
  map.src.assign(nd, -1);
  map.offset.assign(nd, 0);
  map.stride.assign(nd, 0);
  Shape shape;
  Chunks chunks;
  int in_axis = 0;
  auto handle = [&](const Index& ix) {
    const auto& v = ix.get();
    if (std::holds_alternative<NewAxis>(v)) {
      shape.push_back(1);
      chunks.push_back({1});
      return;
    }
    const std::int64_t n = e.shape[in_axis];
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      const std::int64_t k = *i < 0 ? *i + n : *i;
      if (k < 0 || k >= n)
        throw IndexError("index " + std::to_string(*i) + " is out of bounds for axis " + std::to_string(in_axis) +
                         " with size " + std::to_string(n));
      map.offset[in_axis] = k;
      ++in_axis;
      return;
    }
    const Slice& s = std::get<Slice>(v);
    if (s.step == 0) throw IndexError("slice step cannot be zero");
    // Python's slice.indices(n).
    std::int64_t start, stop;
    const std::int64_t st = s.step;
    auto clamp = [&](std::int64_t x, std::int64_t lo, std::int64_t hi) { return std::max(lo, std::min(hi, x)); };
    if (st > 0) {
      start = s.start ? (*s.start < 0 ? clamp(*s.start + n, 0, n) : clamp(*s.start, 0, n)) : 0;
      stop = s.stop ? (*s.stop < 0 ? clamp(*s.stop + n, 0, n) : clamp(*s.stop, 0, n)) : n;
    } else {
      start = s.start ? (*s.start < 0 ? clamp(*s.start + n, -1, n - 1) : clamp(*s.start, -1, n - 1)) : n - 1;
      stop = s.stop ? (*s.stop < 0 ? clamp(*s.stop + n, -1, n - 1) : clamp(*s.stop, -1, n - 1)) : -1;
    }
    std::int64_t len = 0;
    if (st > 0 && stop > start) len = (stop - start + st - 1) / st;
    if (st < 0 && start > stop) len = (start - stop + (-st) - 1) / (-st);
    const int out_axis = static_cast<int>(shape.size());
    map.src[in_axis] = out_axis;
    map.offset[in_axis] = start;
    map.stride[in_axis] = st;
    shape.push_back(len);
    // Output chunks: the part of each input chunk the slice keeps (as Dask does), so that each
    // output chunk reads one input chunk; empty pieces are dropped.
    std::vector<std::int64_t> oc;
    const auto offs = chunk_offsets(e.chunks[in_axis]);
    std::int64_t taken = 0;
    const std::size_t nc = e.chunks[in_axis].size();
    for (std::size_t ci = 0; ci < nc && taken < len; ++ci) {
      const std::size_t c = st > 0 ? ci : nc - 1 - ci;
      const std::int64_t lo = offs[c], hi = offs[c + 1];
      // Count output positions t >= taken with start + t*st in [lo, hi).
      std::int64_t cnt = 0;
      while (taken + cnt < len) {
        const std::int64_t p = start + (taken + cnt) * st;
        if (p < lo || p >= hi) break;
        ++cnt;
      }
      if (cnt) oc.push_back(cnt);
      taken += cnt;
    }
    if (oc.empty()) oc.push_back(0);
    chunks.push_back(std::move(oc));
    ++in_axis;
  };
  for (const auto& ix : index) handle(ix);
  while (in_axis < nd) handle(Index(Slice{}));
  return make_view(*this, std::move(shape), std::move(chunks), std::move(map), "getitem");
}

Array Array::transpose(std::vector<int> axes) const {
  const Expr& e = expr_of(*this);
  const int nd = static_cast<int>(e.shape.size());
  if (axes.empty()) {
    axes.resize(nd);
    for (int a = 0; a < nd; ++a) axes[a] = nd - 1 - a;
  }
  if (static_cast<int>(axes.size()) != nd) throw ShapeError("transpose: axes do not match the array's dimensions");
  std::set<int> seen;
  for (auto& a : axes) {
    a = normalize_axis(a, nd);
    if (!seen.insert(a).second) throw ShapeError("transpose: repeated axis " + std::to_string(a));
  }
  AffineMap map{std::vector<int>(nd), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  Shape shape(nd);
  Chunks chunks(nd);
  for (int o = 0; o < nd; ++o) {
    map.src[axes[o]] = o;
    shape[o] = e.shape[axes[o]];
    chunks[o] = e.chunks[axes[o]];
  }
  return make_view(*this, std::move(shape), std::move(chunks), std::move(map), "transpose");
}

Array Array::broadcast_to(Shape shape) const {
  const Expr& e = expr_of(*this);
  const int nd = static_cast<int>(e.shape.size());
  const int od = static_cast<int>(shape.size());
  if (od < nd) throw ShapeError("broadcast_to: cannot broadcast " + shape_to_string(e.shape) + " to " + shape_to_string(shape));
  AffineMap map{std::vector<int>(nd, -1), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 0)};
  Chunks chunks(od);
  for (int o = 0; o < od; ++o) {
    const int a = o - (od - nd);
    if (a < 0) { chunks[o] = {shape[o]}; continue; }
    if (e.shape[a] == shape[o]) {
      map.src[a] = o;
      map.stride[a] = 1;
      chunks[o] = e.chunks[a];
    } else if (e.shape[a] == 1) {
      chunks[o] = {shape[o]};
    } else {
      throw ShapeError("broadcast_to: cannot broadcast " + shape_to_string(e.shape) + " to " + shape_to_string(shape));
    }
  }
  return make_view(*this, std::move(shape), std::move(chunks), std::move(map), "broadcast_to");
}

// ---- reductions -----------------------------------------------------------------------------
namespace {
Array reduce(const Array& in, ReduceKind kind, ReduceOptions o, const char* name) {
  const Expr& e = expr_of(in);
  const int nd = static_cast<int>(e.shape.size());
  std::vector<int> axes;
  if (o.axes.empty()) {
    axes.resize(nd);
    std::iota(axes.begin(), axes.end(), 0);
  } else {
    for (int a : o.axes) axes.push_back(normalize_axis(a, nd));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw ShapeError(std::string(name) + ": repeated axis");
  }
  if (o.split_every != 0 && o.split_every < 2) throw Error(std::string(name) + ": split_every must be >= 2");
  if ((kind == ReduceKind::ArgMin || kind == ReduceKind::ArgMax) && axes.size() != 1 && axes.size() != static_cast<std::size_t>(nd))
    throw ShapeError(std::string(name) + ": needs one axis or all axes");
  if ((kind == ReduceKind::Min || kind == ReduceKind::Max || kind == ReduceKind::ArgMin || kind == ReduceKind::ArgMax))
    for (int a : axes)
      if (e.shape[a] == 0) throw Error(std::string(name) + ": zero-size array to reduction operation which has no identity");
  DType t = e.dtype;
  switch (kind) {
    case ReduceKind::Sum: case ReduceKind::Prod:
      t = is_floating(e.dtype) ? e.dtype : DType::Int64;
      break;
    case ReduceKind::Mean: case ReduceKind::Var: case ReduceKind::Std:
      t = e.dtype == DType::Float32 ? DType::Float32 : DType::Float64;
      break;
    case ReduceKind::Any: case ReduceKind::All: t = DType::Bool; break;
    case ReduceKind::ArgMin: case ReduceKind::ArgMax: t = DType::Int64; break;
    default: break;
  }
  Shape shape;
  Chunks chunks;
  for (int a = 0; a < nd; ++a) {
    const bool r = std::binary_search(axes.begin(), axes.end(), a);
    if (!r) { shape.push_back(e.shape[a]); chunks.push_back(e.chunks[a]); }
    else if (o.keepdims) { shape.push_back(1); chunks.push_back({1}); }
  }
  auto out = make_expr<ReduceExpr>(ExprKind::Reduce, t, std::move(shape), std::move(chunks), name);
  out->input = in.expr();
  out->target = in.expr()->target;
  out->reduce = kind;
  out->axes = axes;
  out->keepdims = o.keepdims;
  out->split_every = o.split_every ? o.split_every : 8;
  out->ddof = o.ddof;
  return Array(out);
}
}  // namespace

Array Array::sum(ReduceOptions o) const { return reduce(*this, ReduceKind::Sum, o, "sum"); }
Array Array::prod(ReduceOptions o) const { return reduce(*this, ReduceKind::Prod, o, "prod"); }
Array Array::min(ReduceOptions o) const { return reduce(*this, ReduceKind::Min, o, "min"); }
Array Array::max(ReduceOptions o) const { return reduce(*this, ReduceKind::Max, o, "max"); }
Array Array::mean(ReduceOptions o) const { return reduce(*this, ReduceKind::Mean, o, "mean"); }
Array Array::var(ReduceOptions o) const { return reduce(*this, ReduceKind::Var, o, "var"); }
Array Array::std(ReduceOptions o) const { return reduce(*this, ReduceKind::Std, o, "std"); }
Array Array::any(ReduceOptions o) const { return reduce(*this, ReduceKind::Any, o, "any"); }
Array Array::all(ReduceOptions o) const { return reduce(*this, ReduceKind::All, o, "all"); }
Array Array::argmin(std::optional<int> axis, int split_every) const {
  return reduce(*this, ReduceKind::ArgMin, with_axes(axis, split_every), "argmin");
}
Array Array::argmax(std::optional<int> axis, int split_every) const {
  return reduce(*this, ReduceKind::ArgMax, with_axes(axis, split_every), "argmax");
}
Array Array::argmin(const ReduceOptions& o) const { return reduce(*this, ReduceKind::ArgMin, o, "argmin"); }
Array Array::argmax(const ReduceOptions& o) const { return reduce(*this, ReduceKind::ArgMax, o, "argmax"); }

// ---- compute --------------------------------------------------------------------------------
Graph Array::to_graph(std::vector<Key>* chunk_keys) const { return detail::graph_for(*this, nullptr, chunk_keys); }

namespace detail {

Graph graph_for(const Array& a, const Executor* executor, std::vector<Key>* chunk_keys) {
  Lowering low(executor);
  const auto& keys = low.lower(a.expr());
  if (chunk_keys) *chunk_keys = keys;
  return std::move(low.graph());
}

}  // namespace detail

}  // namespace tessera

namespace tessera {
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
