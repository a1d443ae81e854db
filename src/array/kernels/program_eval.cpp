// Evaluates a fused Program over one output chunk (see program.hpp). Compiled once per ISA
// level (isa.hpp). Work proceeds row by row (all axes but the last) and, along the last axis,
// in tiles of kTile elements: every instruction fills a register of one tile, so each
// operation is a tight loop the compiler vectorises, and nothing larger than a tile is ever
// allocated besides the output.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "../wrapping.hpp"
#include "../element_semantics.hpp"
#include "../program.hpp"
#include "isa.hpp"
#include "tessera/core/error.hpp"

#if TESSERA_HAVE_SLEEF
#include <sleef.h>
#endif

namespace tessera::detail::TESSERA_ISA {
namespace {

constexpr std::int64_t kTile = 1024;

// ---- vectorised transcendentals ------------------------------------------------------------------
// libm's sin, exp, ... are scalar calls; SLEEF's vector functions evaluate a whole SIMD register
// at once, in the variant for the ISA level this file is built for (SSE2, AVX2, AVX-512F), with
// the 1-ULP ("u10") accuracy of glibc (hypot: 0.5 ULP). Every element of a tile goes through the
// vector function, the tail too (padded), so a value never depends on where its chunk or tile
// starts. Without SLEEF (TESSERA_HAVE_SLEEF unset) the loops call element_semantics.hpp / libm.
#if TESSERA_HAVE_SLEEF
#if defined(__AVX512F__)
using VecD = __m512d;
constexpr int kLanes = 8;
inline VecD vload(const double* p) { return _mm512_loadu_pd(p); }
inline void vstore(double* p, VecD v) { _mm512_storeu_pd(p, v); }
#define TESSERA_SLEEF(fn, acc) Sleef_##fn##d8_##acc##avx512f
#elif defined(__AVX2__)
using VecD = __m256d;
constexpr int kLanes = 4;
inline VecD vload(const double* p) { return _mm256_loadu_pd(p); }
inline void vstore(double* p, VecD v) { _mm256_storeu_pd(p, v); }
#define TESSERA_SLEEF(fn, acc) Sleef_##fn##d4_##acc##avx2
#else
using VecD = __m128d;
constexpr int kLanes = 2;
inline VecD vload(const double* p) { return _mm_loadu_pd(p); }
inline void vstore(double* p, VecD v) { _mm_storeu_pd(p, v); }
#define TESSERA_SLEEF(fn, acc) Sleef_##fn##d2_##acc##sse2
#endif

// F: a SLEEF function (declared to return a const vector, hence auto rather than a pointer type).
template <auto F>
void vmap1(const double* a, double* o, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) vstore(o + j, F(vload(a + j)));
  if (j < n) {
    alignas(64) double in[kLanes] = {}, out[kLanes];
    std::copy(a + j, a + n, in);
    vstore(out, F(vload(in)));
    std::copy(out, out + (n - j), o + j);
  }
}
template <auto F>
void vmap2(const double* a, const double* b, double* o, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) vstore(o + j, F(vload(a + j), vload(b + j)));
  if (j < n) {
    alignas(64) double x[kLanes] = {}, y[kLanes] = {}, out[kLanes];
    std::copy(a + j, a + n, x);
    std::copy(b + j, b + n, y);
    vstore(out, F(vload(x), vload(y)));
    std::copy(out, out + (n - j), o + j);
  }
}
// SLEEF's asinh and acosh overflow to inf beyond |x| ~ 1.3e154 (x * x does), its log1p beyond
// 1e307, and its sinh and cosh between 709.78 and 710.48 (exp(x) does, x / 2 would not); libm's
// are finite there, so those elements are recomputed with it.
template <typename Scalar>
void beyond(double limit, Scalar scalar, const double* a, double* o, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j)
    if (std::fabs(a[j]) > limit) o[j] = scalar(a[j]);
}
// Both paths of one op in one line: SLEEF's function where it exists, else the scalar one.
#define TESSERA_VMAP1(fn, acc, scalar) vmap1<TESSERA_SLEEF(fn, acc)>(a, o, n)
#define TESSERA_VMAP2(fn, acc, scalar) vmap2<TESSERA_SLEEF(fn, acc)>(a, b, o, n)
#define TESSERA_BEYOND(limit, scalar) beyond(limit, [](double x) { return scalar(x); }, a, o, n)
#else
#define TESSERA_BEYOND(limit, scalar)
#define TESSERA_VMAP1(fn, acc, scalar) for (std::int64_t j = 0; j < n; ++j) o[j] = scalar(a[j])
#define TESSERA_VMAP2(fn, acc, scalar) for (std::int64_t j = 0; j < n; ++j) o[j] = scalar(a[j], b[j])
#endif

struct Registers {
  explicit Registers(std::size_t count) : storage(new std::int64_t[count * kTile + 8]) {}
  double* f(int r) { return reinterpret_cast<double*>(storage.get() + r * kTile); }
  std::int64_t* i(int r) { return storage.get() + r * kTile; }
  std::unique_ptr<std::int64_t[]> storage;
};

// Rounds a register to its declared dtype, as NumPy would store each intermediate.
void round_to_dtype(const Instr& in, Registers& R, int r, std::int64_t n) {
  if (in.ctype == CType::F64 && in.dtype == DType::Float32) {
    double* x = R.f(r);
    for (std::int64_t j = 0; j < n; ++j) x[j] = static_cast<double>(static_cast<float>(x[j]));
  } else if (in.ctype == CType::F64 && in.dtype == DType::Float16) {
    double* x = R.f(r);
    for (std::int64_t j = 0; j < n; ++j) x[j] = static_cast<double>(float16(x[j]));
  } else if (in.ctype == CType::I64 && in.dtype != DType::Int32 && in.dtype != DType::Bool &&
             in.dtype != DType::Int64 && in.dtype != DType::UInt64) {
    std::int64_t* x = R.i(r);
    for (std::int64_t j = 0; j < n; ++j) x[j] = elem::wrap_int(x[j], in.dtype);
  } else if (in.ctype == CType::I64 && in.dtype == DType::Int32) {
    std::int64_t* x = R.i(r);
    for (std::int64_t j = 0; j < n; ++j) x[j] = static_cast<std::int32_t>(static_cast<std::uint32_t>(x[j]));
  } else if (in.ctype == CType::I64 && in.dtype == DType::Bool) {
    std::int64_t* x = R.i(r);
    for (std::int64_t j = 0; j < n; ++j) x[j] = x[j] != 0;
  }
}

template <typename T>
void load_input(const T* base, std::int64_t start, std::int64_t delta, std::int64_t n, double* out) {
  const T* p = base + start;
  if (delta == 1)
    for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<double>(p[j]);
  else if (delta == 0)  // broadcast along the tile (a column added to a matrix): one value
    std::fill(out, out + n, static_cast<double>(*p));
  else
    for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<double>(p[j * delta]);
}
template <typename T>
std::int64_t to_i64(T x) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, float16>) return elem::to_int64(static_cast<double>(x));
  else return static_cast<std::int64_t>(x);
}
template <typename T>
void load_input(const T* base, std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out) {
  const T* p = base + start;
  if (delta == 1)
    for (std::int64_t j = 0; j < n; ++j) out[j] = to_i64(p[j]);
  else if (delta == 0)
    std::fill(out, out + n, to_i64(*p));
  else
    for (std::int64_t j = 0; j < n; ++j) out[j] = to_i64(p[j * delta]);
}

// kind: the float format of the result (elem::float_kind), for the operations that step in it.
void eval_unary_f(EwOp op, const double* a, double* o, std::int64_t n, int kind) {
  switch (op) {
    case EwOp::Neg: for (std::int64_t j = 0; j < n; ++j) o[j] = -a[j]; break;
    case EwOp::Abs: for (std::int64_t j = 0; j < n; ++j) o[j] = std::fabs(a[j]); break;
    case EwOp::Exp: TESSERA_VMAP1(exp, u10, std::exp); break;
    case EwOp::Log: TESSERA_VMAP1(log, u10, std::log); break;
    case EwOp::Log1p:
      TESSERA_VMAP1(log1p, u10, std::log1p);
      TESSERA_BEYOND(1e307, elem::log1p_f);
      break;
    case EwOp::Sqrt: for (std::int64_t j = 0; j < n; ++j) o[j] = std::sqrt(a[j]); break;
    case EwOp::Square: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] * a[j]; break;
    case EwOp::Sin: TESSERA_VMAP1(sin, u10, std::sin); break;
    case EwOp::Cos: TESSERA_VMAP1(cos, u10, std::cos); break;
    case EwOp::Tan: TESSERA_VMAP1(tan, u10, std::tan); break;
    case EwOp::Tanh: TESSERA_VMAP1(tanh, u10, std::tanh); break;
    case EwOp::Arcsin: TESSERA_VMAP1(asin, u10, elem::arcsin_f); break;
    case EwOp::Arccos: TESSERA_VMAP1(acos, u10, elem::arccos_f); break;
    case EwOp::Arctan: TESSERA_VMAP1(atan, u10, elem::arctan_f); break;
    case EwOp::Arcsinh:
      TESSERA_VMAP1(asinh, u10, elem::arcsinh_f);
      TESSERA_BEYOND(1e150, elem::arcsinh_f);
      break;
    case EwOp::Arccosh:
      TESSERA_VMAP1(acosh, u10, elem::arccosh_f);
      TESSERA_BEYOND(1e150, elem::arccosh_f);
      break;
    case EwOp::Arctanh: TESSERA_VMAP1(atanh, u10, elem::arctanh_f); break;
    case EwOp::Sinh:
      TESSERA_VMAP1(sinh, u10, elem::sinh_f);
      TESSERA_BEYOND(709.0, elem::sinh_f);
      break;
    case EwOp::Cosh:
      TESSERA_VMAP1(cosh, u10, elem::cosh_f);
      TESSERA_BEYOND(709.0, elem::cosh_f);
      break;
    case EwOp::Log2: TESSERA_VMAP1(log2, u10, elem::log2_f); break;
    case EwOp::Log10: TESSERA_VMAP1(log10, u10, elem::log10_f); break;
    case EwOp::Exp2: TESSERA_VMAP1(exp2, u10, elem::exp2_f); break;
    case EwOp::Expm1: TESSERA_VMAP1(expm1, u10, elem::expm1_f); break;
    case EwOp::Cbrt: TESSERA_VMAP1(cbrt, u10, elem::cbrt_f); break;
    case EwOp::I0: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::i0_f(a[j]); break;
    case EwOp::Spacing: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::spacing_f(a[j], kind); break;
    case EwOp::FrexpMantissa: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::frexp_mantissa_f(a[j]); break;
    case EwOp::FrexpExponent: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::frexp_exponent_f(a[j]); break;
    case EwOp::Trunc: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::trunc_f(a[j]); break;
    case EwOp::Rint: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::rint_f(a[j]); break;
    case EwOp::Floor: for (std::int64_t j = 0; j < n; ++j) o[j] = std::floor(a[j]); break;
    case EwOp::Ceil: for (std::int64_t j = 0; j < n; ++j) o[j] = std::ceil(a[j]); break;
    case EwOp::Sign:
      for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] > 0 ? 1.0 : (a[j] < 0 ? -1.0 : (a[j] == 0 ? 0.0 : a[j]));
      break;
    default: throw Error(std::string("unary op ") + ew_name(op) + " has no float kernel");
  }
}

void eval_unary_i(EwOp op, const std::int64_t* a, std::int64_t* o, std::int64_t n, bool is_unsigned) {
  if (is_unsigned && (op == EwOp::Abs || op == EwOp::Sign)) {  // uint64 registers hold bits above 2**63
    for (std::int64_t j = 0; j < n; ++j) o[j] = op == EwOp::Abs ? a[j] : a[j] != 0;
    return;
  }
  switch (op) {
    case EwOp::Neg: for (std::int64_t j = 0; j < n; ++j) o[j] = static_cast<std::int64_t>(0ULL - static_cast<std::uint64_t>(a[j])); break;
    case EwOp::Abs: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] < 0 ? -a[j] : a[j]; break;
    case EwOp::Square: for (std::int64_t j = 0; j < n; ++j) o[j] = static_cast<std::int64_t>(static_cast<std::uint64_t>(a[j]) * static_cast<std::uint64_t>(a[j])); break;
    case EwOp::Sign: for (std::int64_t j = 0; j < n; ++j) o[j] = (a[j] > 0) - (a[j] < 0); break;
    case EwOp::LogicalNot: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] == 0; break;
    case EwOp::Floor:
    case EwOp::Ceil:
    case EwOp::Trunc: std::memcpy(o, a, sizeof(std::int64_t) * n); break;
    case EwOp::Invert: for (std::int64_t j = 0; j < n; ++j) o[j] = ~a[j]; break;
    default: throw Error(std::string("unary op ") + ew_name(op) + " has no integer kernel");
  }
}

// f32: the result is float32, so the operations that are not exactly rounded (floor division,
// modulo, power) run in float as NumPy's float32 loops do; + - * / of float32 values in double
// round to the same float32 results.
void eval_binary_f(EwOp op, const double* a, const double* b, double* o, std::int64_t n, int kind) {
  const bool f32 = kind != 0;
  using elem::floor_divide_f;
  using elem::mod_f;
  if (f32) {
    auto fa = [&](std::int64_t j) { return static_cast<float>(a[j]); };
    auto fb = [&](std::int64_t j) { return static_cast<float>(b[j]); };
    switch (op) {
      case EwOp::FloorDiv: for (std::int64_t j = 0; j < n; ++j) o[j] = floor_divide_f(fa(j), fb(j)); return;
      case EwOp::Mod: for (std::int64_t j = 0; j < n; ++j) o[j] = mod_f(fa(j), fb(j)); return;
      case EwOp::Pow: for (std::int64_t j = 0; j < n; ++j) o[j] = std::pow(fa(j), fb(j)); return;
      default: break;
    }
  }
  switch (op) {
    case EwOp::Add: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] + b[j]; break;
    case EwOp::Sub: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] - b[j]; break;
    case EwOp::Mul: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] * b[j]; break;
    case EwOp::Div: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] / b[j]; break;
    case EwOp::FloorDiv: for (std::int64_t j = 0; j < n; ++j) o[j] = floor_divide_f(a[j], b[j]); break;
    case EwOp::Mod: for (std::int64_t j = 0; j < n; ++j) o[j] = mod_f(a[j], b[j]); break;
    case EwOp::Pow: for (std::int64_t j = 0; j < n; ++j) o[j] = std::pow(a[j], b[j]); break;
    case EwOp::Minimum:
      for (std::int64_t j = 0; j < n; ++j) o[j] = (a[j] != a[j] || a[j] < b[j]) ? a[j] : b[j];
      break;
    case EwOp::Maximum:
      for (std::int64_t j = 0; j < n; ++j) o[j] = (a[j] != a[j] || a[j] > b[j]) ? a[j] : b[j];
      break;
    case EwOp::Arctan2: TESSERA_VMAP2(atan2, u10, elem::arctan2_f); break;
    case EwOp::Hypot: TESSERA_VMAP2(hypot, u05, elem::hypot_f); break;
    case EwOp::LogAddExp: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::logaddexp_f(a[j], b[j]); break;
    case EwOp::LogAddExp2: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::logaddexp2_f(a[j], b[j]); break;
    case EwOp::CopySign: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::copysign_f(a[j], b[j]); break;
    case EwOp::FMin: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::fmin_f(a[j], b[j]); break;
    case EwOp::FMax: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::fmax_f(a[j], b[j]); break;
    case EwOp::FMod: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::fmod_f(a[j], b[j]); break;
    case EwOp::NextAfter: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::nextafter_f(a[j], b[j], kind); break;
    default: throw Error(std::string("binary op ") + ew_name(op) + " has no float kernel");
  }
}

// uint64: the registers hold the bits; + - * ** wrap alike, the rest compare or divide unsigned.
void eval_binary_u64(EwOp op, const std::int64_t* a, const std::int64_t* b, std::int64_t* o, std::int64_t n) {
  using U = std::uint64_t;
  switch (op) {
    case EwOp::FloorDiv: for (std::int64_t j = 0; j < n; ++j) o[j] = U(b[j]) ? static_cast<std::int64_t>(U(a[j]) / U(b[j])) : 0; break;
    case EwOp::Mod: for (std::int64_t j = 0; j < n; ++j) o[j] = U(b[j]) ? static_cast<std::int64_t>(U(a[j]) % U(b[j])) : 0; break;
    case EwOp::Minimum: for (std::int64_t j = 0; j < n; ++j) o[j] = U(a[j]) < U(b[j]) ? a[j] : b[j]; break;
    case EwOp::Maximum: for (std::int64_t j = 0; j < n; ++j) o[j] = U(a[j]) > U(b[j]) ? a[j] : b[j]; break;
    default: throw Error(std::string("binary op ") + ew_name(op) + " has no uint64 kernel");
  }
}
bool unsigned_differs(EwOp op) {
  return op == EwOp::FloorDiv || op == EwOp::Mod || op == EwOp::Minimum || op == EwOp::Maximum;
}

void eval_binary_i(EwOp op, const std::int64_t* a, const std::int64_t* b, std::int64_t* o, std::int64_t n) {
  using U = std::uint64_t;  // wrap-around arithmetic, as NumPy integers do
  switch (op) {
    case EwOp::Add: for (std::int64_t j = 0; j < n; ++j) o[j] = static_cast<std::int64_t>(U(a[j]) + U(b[j])); break;
    case EwOp::Sub: for (std::int64_t j = 0; j < n; ++j) o[j] = static_cast<std::int64_t>(U(a[j]) - U(b[j])); break;
    case EwOp::Mul: for (std::int64_t j = 0; j < n; ++j) o[j] = static_cast<std::int64_t>(U(a[j]) * U(b[j])); break;
    case EwOp::FloorDiv: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::floor_divide(a[j], b[j]); break;
    case EwOp::Mod: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::mod(a[j], b[j]); break;
    case EwOp::Pow:
      for (std::int64_t j = 0; j < n; ++j)
        if (elem::negative_power(b[j])) throw Error(std::string("power: ") + elem::kNegativePowerMessage);
      for (std::int64_t j = 0; j < n; ++j) o[j] = elem::power(a[j], b[j]);
      break;
    case EwOp::Minimum: for (std::int64_t j = 0; j < n; ++j) o[j] = std::min(a[j], b[j]); break;
    case EwOp::Maximum: for (std::int64_t j = 0; j < n; ++j) o[j] = std::max(a[j], b[j]); break;
    case EwOp::LogicalAnd: for (std::int64_t j = 0; j < n; ++j) o[j] = (a[j] != 0) & (b[j] != 0); break;
    case EwOp::LogicalOr: for (std::int64_t j = 0; j < n; ++j) o[j] = (a[j] != 0) | (b[j] != 0); break;
    case EwOp::FMod: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::fmod_i(a[j], b[j]); break;
    case EwOp::BitAnd: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] & b[j]; break;
    case EwOp::BitOr: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] | b[j]; break;
    case EwOp::BitXor: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] ^ b[j]; break;
    case EwOp::LeftShift: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::left_shift(a[j], b[j]); break;
    case EwOp::RightShift: for (std::int64_t j = 0; j < n; ++j) o[j] = elem::right_shift(a[j], b[j]); break;
    default: throw Error(std::string("binary op ") + ew_name(op) + " has no integer kernel");
  }
}

template <typename T>
void eval_compare(EwOp op, const T* a, const T* b, std::int64_t* o, std::int64_t n) {
  switch (op) {
    case EwOp::Lt: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] < b[j]; break;
    case EwOp::Le: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] <= b[j]; break;
    case EwOp::Gt: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] > b[j]; break;
    case EwOp::Ge: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] >= b[j]; break;
    case EwOp::Eq: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] == b[j]; break;
    case EwOp::Ne: for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] != b[j]; break;
    default: throw Error(std::string("comparison ") + ew_name(op) + " is not a comparison");
  }
}

bool is_comparison(EwOp op) { return op >= EwOp::Lt && op <= EwOp::Ne; }

// Exact comparison of integer registers where one side (or both) is uint64, whose registers hold
// the bits: a negative signed value is below every unsigned one (NumPy 2 compares them exactly).
void eval_compare_unsigned(EwOp op, const std::int64_t* a, bool a_u64, const std::int64_t* b, bool b_u64,
                           std::int64_t* o, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    int c;  // -1, 0, 1: a against b
    if (!a_u64 && a[j] < 0) c = -1;
    else if (!b_u64 && b[j] < 0) c = 1;
    else {
      const auto x = static_cast<std::uint64_t>(a[j]), y = static_cast<std::uint64_t>(b[j]);
      c = x < y ? -1 : x > y ? 1 : 0;
    }
    switch (op) {
      case EwOp::Lt: o[j] = c < 0; break;
      case EwOp::Le: o[j] = c <= 0; break;
      case EwOp::Gt: o[j] = c > 0; break;
      case EwOp::Ge: o[j] = c >= 0; break;
      case EwOp::Eq: o[j] = c == 0; break;
      default: o[j] = c != 0; break;
    }
  }
}

/** Accumulates a tile into partial reduction slots. */
class Reducer {
 public:
  Reducer(const Program& p, CType in_type)
      : kind_(static_cast<ReduceKind>(p.reduce.kind)), in_type_(in_type),
        comps_(partial_components(p.reduce.kind)) {}

  template <typename T>
  static void init(ReduceKind kind, T* acc, std::int64_t slots, int comps) {
    for (std::int64_t s = 0; s < slots; ++s) {
      T* a = acc + s * comps;
      switch (kind) {
        case ReduceKind::Sum: case ReduceKind::Mean: case ReduceKind::NanMean: case ReduceKind::Var: case ReduceKind::Std:
        case ReduceKind::Any:
          for (int c = 0; c < comps; ++c) a[c] = 0;
          break;
        case ReduceKind::Prod: case ReduceKind::All: a[0] = 1; break;
        case ReduceKind::Min:
          a[0] = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
          break;
        case ReduceKind::Max:
          a[0] = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
          break;
        case ReduceKind::ArgMin: a[0] = std::numeric_limits<T>::infinity(); a[1] = -1; break;
        case ReduceKind::ArgMax: a[0] = -std::numeric_limits<T>::infinity(); a[1] = -1; break;
      }
    }
  }

  // The sum of x[0..n) in four accumulators: vectorises (no add waits on the one before), and
  // sums more accurately than one.
  template <typename A, typename T>
  static A sum4(const T* x, std::int64_t n) {
    // Integer sums wrap as NumPy's do: they are kept in uint64, where that is defined. (Not as
    // four wrapping_add chains: GCC 12.2 at -O3 -march=x86-64-v4 vectorises that form wrongly,
    // 72 values holding 24 ones, summed in rows of 8, gave 12; reproduced in a file of its own, where
    // -O2 and x86-64-v3 give 24.)
    using S = std::conditional_t<wraps_v<A>, std::uint64_t, A>;
    S s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      s0 += static_cast<S>(static_cast<A>(x[j]));
      s1 += static_cast<S>(static_cast<A>(x[j + 1]));
      s2 += static_cast<S>(static_cast<A>(x[j + 2]));
      s3 += static_cast<S>(static_cast<A>(x[j + 3]));
    }
    for (; j < n; ++j) s0 += static_cast<S>(static_cast<A>(x[j]));
    return static_cast<A>((s0 + s1) + (s2 + s3));
  }

  // Folds x[0..n) into one slot (last axis reduced).
  template <typename T, typename A>
  void fold_into_one(const T* x, std::int64_t n, A* a, std::int64_t arg0, std::int64_t arg_step) const {
    switch (kind_) {
      case ReduceKind::Sum: a[0] = wrapping_add(a[0], sum4<A>(x, n)); break;
      case ReduceKind::Prod: for (std::int64_t j = 0; j < n; ++j) a[0] = wrapping_mul(a[0], static_cast<A>(x[j])); break;
      case ReduceKind::Min: for (std::int64_t j = 0; j < n; ++j) if (x[j] < a[0] || x[j] != x[j]) a[0] = x[j]; break;
      case ReduceKind::Max: for (std::int64_t j = 0; j < n; ++j) if (x[j] > a[0] || x[j] != x[j]) a[0] = x[j]; break;
      case ReduceKind::Any: for (std::int64_t j = 0; j < n; ++j) a[0] = a[0] || (x[j] != 0); break;
      case ReduceKind::All: for (std::int64_t j = 0; j < n; ++j) a[0] = a[0] && (x[j] != 0); break;
      case ReduceKind::Mean: {
        a[0] += sum4<A>(x, n);
        a[1] += static_cast<A>(n);
        break;
      }
      case ReduceKind::NanMean: {
        // Four sums and counts at a time, as sum4: no add waits on the one before.
        A s[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0};
        std::int64_t j = 0;
        for (; j + 4 <= n; j += 4)
          for (int k = 0; k < 4; ++k) {
            const bool kept = x[j + k] == x[j + k];
            s[k] += kept ? static_cast<A>(x[j + k]) : A(0);
            c[k] += kept ? A(1) : A(0);
          }
        for (; j < n; ++j) {
          const bool kept = x[j] == x[j];
          s[0] += kept ? static_cast<A>(x[j]) : A(0);
          c[0] += kept ? A(1) : A(0);
        }
        a[0] += (s[0] + s[1]) + (s[2] + s[3]);
        a[1] += (c[0] + c[1]) + (c[2] + c[3]);
        break;
      }
      case ReduceKind::Var: case ReduceKind::Std: {
        // Chan et al.: merge (count, mean, M2) of the tile into the slot.
        const double mean = sum4<double>(x, n) / static_cast<double>(n);
        double m[4] = {0, 0, 0, 0};
        std::int64_t j = 0;
        for (; j + 4 <= n; j += 4)
          for (int k = 0; k < 4; ++k) {
            const double d = static_cast<double>(x[j + k]) - mean;
            m[k] += d * d;
          }
        for (; j < n; ++j) {
          const double d = static_cast<double>(x[j]) - mean;
          m[0] += d * d;
        }
        merge_moments(a, static_cast<double>(n), mean, (m[0] + m[1]) + (m[2] + m[3]));
        break;
      }
      case ReduceKind::ArgMin: case ReduceKind::ArgMax: {
        const bool is_min = kind_ == ReduceKind::ArgMin;
        auto fold = [&](std::int64_t from, std::int64_t to) {
          for (std::int64_t j = from; j < to; ++j) {
            const double v = static_cast<double>(x[j]);
            if (better(is_min, v, static_cast<double>(a[0]), a[1] < 0)) {
              a[0] = static_cast<A>(v);
              a[1] = static_cast<A>(arg0 + j * arg_step);
            }
          }
        };
        // Blocks of kBlock elements none of which beats the current best (nor is NaN) are passed
        // over after one vectorised test; the element-by-element rule runs on the others only.
        constexpr std::int64_t kBlock = 16;
        std::int64_t j = 0;
        for (; j + kBlock <= n; j += kBlock) {
          const double cur = static_cast<double>(a[0]);
          if (a[1] >= 0) {
            if (cur != cur) return;  // a NaN already won (NumPy returns the first NaN)
            bool any = false;
            if (is_min)
              for (std::int64_t k = 0; k < kBlock; ++k) {
                const double v = static_cast<double>(x[j + k]);
                any |= (v < cur) | (v != v);
              }
            else
              for (std::int64_t k = 0; k < kBlock; ++k) {
                const double v = static_cast<double>(x[j + k]);
                any |= (v > cur) | (v != v);
              }
            if (!any) continue;
          }
          fold(j, j + kBlock);
        }
        fold(j, n);
        break;
      }
    }
  }

  // Folds x[j] into slot j for j < n (last axis kept). The common kinds have loops of their own
  // (the same arithmetic as fold_into_one of one element, without a call and a switch per
  // element; they vectorise): reductions along a leading axis spend their time here.
  template <typename T, typename A>
  void fold_elementwise(const T* x, std::int64_t n, A* a, std::int64_t arg0, std::int64_t arg_step) const {
    switch (kind_) {
      case ReduceKind::Sum:
        for (std::int64_t j = 0; j < n; ++j) a[j] = wrapping_add(a[j], static_cast<A>(x[j]));
        return;
      case ReduceKind::Mean:
        for (std::int64_t j = 0; j < n; ++j) {
          a[2 * j] += static_cast<A>(x[j]);
          a[2 * j + 1] += A(1);
        }
        return;
      case ReduceKind::Min:
        for (std::int64_t j = 0; j < n; ++j)
          if (x[j] < a[j] || x[j] != x[j]) a[j] = static_cast<A>(x[j]);
        return;
      case ReduceKind::Max:
        for (std::int64_t j = 0; j < n; ++j)
          if (x[j] > a[j] || x[j] != x[j]) a[j] = static_cast<A>(x[j]);
        return;
      case ReduceKind::Var: case ReduceKind::Std:
        // merge_moments of one element (count 1, mean x, M2 0), as Welford's update.
        for (std::int64_t j = 0; j < n; ++j) {
          A* s = a + 3 * j;
          const double na = static_cast<double>(s[0]), total = na + 1;
          const double delta = static_cast<double>(x[j]) - static_cast<double>(s[1]);
          s[1] = static_cast<A>(static_cast<double>(s[1]) + delta / total);
          s[2] = static_cast<A>(static_cast<double>(s[2]) + delta * delta * na / total);
          s[0] = static_cast<A>(total);
        }
        return;
      default:
        for (std::int64_t j = 0; j < n; ++j) fold_into_one(x + j, 1, a + j * comps_, arg0 + j * arg_step, 0);
    }
  }

  static bool better(bool is_min, double v, double cur, bool empty) {
    if (empty) return true;
    if (cur != cur) return false;  // a NaN already won (NumPy returns the first NaN)
    if (v != v) return true;
    return is_min ? v < cur : v > cur;
  }

  template <typename A>
  static void merge_moments(A* a, double n, double mean, double m2) {
    const double na = static_cast<double>(a[0]);
    if (n == 0) return;
    const double total = na + n;
    const double delta = mean - static_cast<double>(a[1]);
    a[1] = static_cast<A>(static_cast<double>(a[1]) + delta * n / total);
    a[2] = static_cast<A>(static_cast<double>(a[2]) + m2 + delta * delta * na * n / total);
    a[0] = static_cast<A>(total);
  }

  int comps() const { return comps_; }
  CType in_type() const { return in_type_; }

 private:
  ReduceKind kind_;
  CType in_type_;
  int comps_;
};

template <typename T>
void store(const double* x, std::int64_t n, T* out) {
  if constexpr (std::is_same_v<T, bool>)
    for (std::int64_t j = 0; j < n; ++j) out[j] = elem::to_bool(x[j]);
  else if constexpr (std::is_integral_v<T>)
    for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<T>(elem::float_to_int(x[j], dtype_of_v<T>));
  else
    for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<T>(x[j]);
}
template <typename T>
void store(const std::int64_t* x, std::int64_t n, T* out) {
  for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<T>(x[j]);
}

}  // namespace

namespace {
// A complex chunk read through a view (slice, transpose, broadcast, rechunk): the program is one
// Input leaf, copied element by element. Complex arithmetic has its own op (src/array/complex.cpp).
template <typename T>
void copy_view(const Instr& in, const Block& src, const Shape& shape, Block& out) {
  const int d = static_cast<int>(shape.size());
  const std::int64_t L = d ? shape[d - 1] : 1;
  const std::int64_t rows = d ? shape_size(Shape(shape.begin(), shape.end() - 1)) : 1;
  const std::int64_t delta = d ? in.coef[d - 1] : 0;
  const T* s = static_cast<const T*>(src.raw());
  T* o = static_cast<T*>(out.raw());
  std::vector<std::int64_t> coord(std::max(d - 1, 0), 0);
  for (std::int64_t row = 0; row < rows && L > 0; ++row) {
    std::int64_t start = in.base;
    for (int a = 0; a + 1 < d; ++a) start += coord[a] * in.coef[a];
    for (std::int64_t j = 0; j < L; ++j) o[row * L + j] = s[start + j * delta];
    for (int a = d - 2; a >= 0; --a) {
      if (++coord[a] < shape[a]) break;
      coord[a] = 0;
    }
  }
}
}  // namespace

Block run_program(const Program& p, const std::vector<const Block*>& inputs) {
  const int ninstr = static_cast<int>(p.instrs.size());
  if (ninstr == 0) throw Error("empty blockwise program");
  for (const Instr& in : p.instrs)
    if (in.code == InstrCode::Input && (in.input < 0 || in.input >= static_cast<int>(inputs.size())))
      throw Error("blockwise program reads input " + std::to_string(in.input) + " of " +
                  std::to_string(inputs.size()));
  if (is_complex(p.out_dtype) || std::any_of(p.instrs.begin(), p.instrs.end(), [](const Instr& in) { return is_complex(in.dtype); })) {
    const Instr& leaf = p.instrs.back();
    if (ninstr != 1 || leaf.code != InstrCode::Input || p.reduce.enabled || leaf.dtype != p.out_dtype ||
        inputs[leaf.input]->dtype() != p.out_dtype)
      detail::throw_complex_unsupported(p.out_dtype, "a fused element-wise program");
    Block out(p.out_dtype, p.shape);
    if (p.out_dtype == DType::Complex64) copy_view<std::complex<float>>(leaf, *inputs[leaf.input], p.shape, out);
    else copy_view<std::complex<double>>(leaf, *inputs[leaf.input], p.shape, out);
    return out;
  }

  const int d = static_cast<int>(p.shape.size());
  const std::int64_t L = d ? p.shape[d - 1] : 1;
  const std::int64_t rows = d ? shape_size(Shape(p.shape.begin(), p.shape.end() - 1)) : 1;
  const Instr& root = p.instrs.back();
  const int root_reg = ninstr - 1;

  // Output: the chunk itself, or the partial of a reduction (reduced axes of length 1, plus a
  // trailing axis of components when the reduction keeps several numbers per element).
  Block out;
  Shape pshape;
  std::vector<std::int64_t> pstride;
  const bool reducing = p.reduce.enabled;
  int comps = 1;
  DType pdtype = p.out_dtype;
  if (reducing) {
    comps = partial_components(p.reduce.kind);
    pdtype = root.ctype == CType::F64 || partial_dtype(p.reduce.kind, DType::Int64) == DType::Float64
                 ? DType::Float64 : DType::Int64;
    for (int a = 0; a < d; ++a) pshape.push_back(p.reduce.axes[a] ? 1 : p.shape[a]);
    pstride = row_major_strides(pshape);
    Shape full = pshape;
    if (comps > 1) full.push_back(comps);
    out = Block(pdtype, full);
    const std::int64_t slots = shape_size(pshape);
    if (pdtype == DType::Float64) Reducer::init(static_cast<ReduceKind>(p.reduce.kind), out.data<double>(), slots, comps);
    else Reducer::init(static_cast<ReduceKind>(p.reduce.kind), out.data<std::int64_t>(), slots, comps);
  } else {
    out = Block(p.out_dtype, p.shape);
  }
  if (rows == 0 || L == 0) return out;

  Registers R(static_cast<std::size_t>(ninstr));
  // Constants fill their registers once.
  for (int r = 0; r < ninstr; ++r) {
    const Instr& in = p.instrs[r];
    const bool constant = in.code == InstrCode::Scalar ||
                          (in.code == InstrCode::Generator && static_cast<GenKind>(in.sub) == GenKind::Full);
    if (!constant) continue;
    if (in.ctype == CType::F64) std::fill_n(R.f(r), kTile, in.p0);
    else std::fill_n(R.i(r), kTile, in.code == InstrCode::Scalar ? in.i0 : elem::float_to_int(in.p0, in.dtype));
  }

  Reducer reducer(p, root.ctype);
  // Generators read transposed (the next row is the next counter: x.T of a random x) draw two
  // rows at once, one Philox call for both (generate_f64_row_pair); the second row waits in
  // `pair_rows`. pair_ready[r] is the row whose values are there.
  std::vector<std::vector<double>> pair_rows(ninstr);
  std::vector<std::int64_t> pair_ready(ninstr, -1);
  for (int r = 0; r < ninstr && d >= 2; ++r) {
    const Instr& in = p.instrs[r];
    const auto g = static_cast<GenKind>(in.sub);
    if (in.code == InstrCode::Generator && in.ctype == CType::F64 && (g == GenKind::Uniform || g == GenKind::Normal) &&
        in.coef.size() == static_cast<std::size_t>(d) && in.coef[d - 2] == 1 && in.coef[d - 1] != 0 &&
        p.shape[d - 2] > 1)
      pair_rows[r].resize(static_cast<std::size_t>(L));
  }
  std::vector<std::int64_t> coord(std::max(d - 1, 0), 0);
  std::vector<std::int64_t> row_start(ninstr, 0);
  const bool last_reduced = reducing && d > 0 && p.reduce.axes[d - 1];
  const std::int64_t arg_step = reducing && d > 0 ? p.reduce.arg_coef[d - 1] : 0;

  for (std::int64_t row = 0; row < rows; ++row) {
    for (int r = 0; r < ninstr; ++r) {
      const Instr& in = p.instrs[r];
      if (in.code != InstrCode::Generator && in.code != InstrCode::Input) continue;
      std::int64_t s = in.base;
      for (int a = 0; a + 1 < d; ++a) s += coord[a] * in.coef[a];
      row_start[r] = s;
    }
    std::int64_t slot_base = 0, arg_base = reducing ? p.reduce.arg_base : 0;
    if (reducing)
      for (int a = 0; a + 1 < d; ++a) {
        if (!p.reduce.axes[a]) slot_base += coord[a] * pstride[a];
        arg_base += coord[a] * p.reduce.arg_coef[a];
      }

    for (std::int64_t j0 = 0; j0 < L; j0 += kTile) {
      const std::int64_t n = std::min(kTile, L - j0);
      for (int r = 0; r < ninstr; ++r) {
        const Instr& in = p.instrs[r];
        const std::int64_t delta = d ? (in.coef.empty() ? 0 : in.coef[d - 1]) : 0;
        switch (in.code) {
          case InstrCode::Scalar: break;
          case InstrCode::Generator: {
            if (static_cast<GenKind>(in.sub) == GenKind::Full) break;
            const std::int64_t start = row_start[r] + j0 * delta;
            if (!pair_rows[r].empty()) {
              if (pair_ready[r] == row) {
                std::memcpy(R.f(r), pair_rows[r].data() + j0, static_cast<std::size_t>(n) * sizeof(double));
                round_to_dtype(in, R, r, n);
                break;
              }
              // Only when this row's next one is in the same slab of the chunk.
              if (coord[d - 2] + 1 < p.shape[d - 2] &&
                  generate_f64_row_pair(in.sub, in.key, in.p0, in.p1, start, delta, n, R.f(r), pair_rows[r].data() + j0)) {
                pair_ready[r] = row + 1;
                round_to_dtype(in, R, r, n);
                break;
              }
            }
            if (in.ctype == CType::F64) generate_f64(in.sub, in.key, in.p0, in.p1, start, delta, n, R.f(r));
            else generate_i64(in.sub, in.key, in.i0, in.i1, in.p0, in.p1, start, delta, n, R.i(r));
            round_to_dtype(in, R, r, n);
            break;
          }
          case InstrCode::Input: {
            const Block& blk = *inputs[in.input];
            const std::int64_t start = row_start[r] + j0 * delta;
            dispatch_dtype(blk.dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T* base = static_cast<const T*>(blk.raw());
              if (in.ctype == CType::F64) load_input(base, start, delta, n, R.f(r));
              else load_input(base, start, delta, n, R.i(r));
            });
            break;
          }
          case InstrCode::Op: {
            const auto op = static_cast<EwOp>(in.sub);
            const Instr& A = p.instrs[in.a];
            if (op == EwOp::Cast || op == EwOp::IsNan || op == EwOp::IsFinite) {
              if (A.ctype == CType::F64 && in.ctype == CType::F64) std::memcpy(R.f(r), R.f(in.a), n * sizeof(double));
              else if (A.ctype == CType::I64 && in.ctype == CType::I64) std::memcpy(R.i(r), R.i(in.a), n * sizeof(std::int64_t));
              else if (A.ctype == CType::I64) {
                const auto* a = R.i(in.a);
                double* o = R.f(r);
                if (A.dtype == DType::UInt64) for (std::int64_t j = 0; j < n; ++j) o[j] = elem::int_to_double(a[j], DType::UInt64);
                else for (std::int64_t j = 0; j < n; ++j) o[j] = static_cast<double>(a[j]);
              }
              else {
                const double* a = R.f(in.a);
                std::int64_t* o = R.i(r);
                if (op == EwOp::IsNan) for (std::int64_t j = 0; j < n; ++j) o[j] = a[j] != a[j];
                else if (op == EwOp::IsFinite) for (std::int64_t j = 0; j < n; ++j) o[j] = std::isfinite(a[j]);
                else for (std::int64_t j = 0; j < n; ++j) o[j] = elem::float_to_int(a[j], in.dtype);
              }
              if ((op == EwOp::IsNan || op == EwOp::IsFinite) && A.ctype == CType::I64) {
                std::int64_t* o = R.i(r);
                for (std::int64_t j = 0; j < n; ++j) o[j] = op == EwOp::IsFinite;
              }
            } else if (is_unary(op)) {
              if (in.ctype == CType::F64) eval_unary_f(op, R.f(in.a), R.f(r), n, elem::float_kind(in.dtype));
              else eval_unary_i(op, R.i(in.a), R.i(r), n, is_unsigned(in.dtype));
            } else if (is_comparison(op)) {
              const Instr& B = p.instrs[in.b];
              if (A.ctype == CType::F64) eval_compare(op, R.f(in.a), R.f(in.b), R.i(r), n);
              else if (A.dtype == DType::UInt64 || B.dtype == DType::UInt64)
                eval_compare_unsigned(op, R.i(in.a), A.dtype == DType::UInt64, R.i(in.b), B.dtype == DType::UInt64, R.i(r), n);
              else eval_compare(op, R.i(in.a), R.i(in.b), R.i(r), n);
            } else if (is_binary(op)) {
              if (in.ctype == CType::F64) eval_binary_f(op, R.f(in.a), R.f(in.b), R.f(r), n, elem::float_kind(in.dtype));
              else if (in.dtype == DType::UInt64 && unsigned_differs(op)) eval_binary_u64(op, R.i(in.a), R.i(in.b), R.i(r), n);
              else eval_binary_i(op, R.i(in.a), R.i(in.b), R.i(r), n);
            } else if (op == EwOp::Where) {
              const std::int64_t* c = R.i(in.a);
              if (in.ctype == CType::F64) {
                const double *x = R.f(in.b), *y = R.f(in.c);
                double* o = R.f(r);
                for (std::int64_t j = 0; j < n; ++j) o[j] = c[j] ? x[j] : y[j];
              } else {
                const std::int64_t *x = R.i(in.b), *y = R.i(in.c);
                std::int64_t* o = R.i(r);
                for (std::int64_t j = 0; j < n; ++j) o[j] = c[j] ? x[j] : y[j];
              }
            }
            round_to_dtype(in, R, r, n);
            break;
          }
        }
      }

      if (!reducing) {
        const std::int64_t offset = row * L + j0;
        dispatch_dtype(p.out_dtype, [&](auto tag) {
          using T = decltype(tag);
          T* o = static_cast<T*>(out.raw()) + offset;
          if (root.ctype == CType::F64) store(R.f(root_reg), n, o);
          else store(R.i(root_reg), n, o);
        });
      } else {
        const std::int64_t a0 = arg_base + j0 * arg_step;
        auto fold = [&](auto* acc) {
          auto* slot = acc + (last_reduced ? slot_base : slot_base + j0) * comps;
          if (root.ctype == CType::F64) {
            if (last_reduced) reducer.fold_into_one(R.f(root_reg), n, slot, a0, arg_step);
            else reducer.fold_elementwise(R.f(root_reg), n, slot, a0, arg_step);
          } else {
            if (last_reduced) reducer.fold_into_one(R.i(root_reg), n, slot, a0, arg_step);
            else reducer.fold_elementwise(R.i(root_reg), n, slot, a0, arg_step);
          }
        };
        if (pdtype == DType::Float64) fold(out.data<double>());
        else fold(out.data<std::int64_t>());
      }
    }
    // Next row: odometer over all axes but the last.
    for (int a = d - 2; a >= 0; --a) {
      if (++coord[a] < p.shape[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

}  // namespace tessera::detail::TESSERA_ISA
