#pragma once
// Internal: what one element of an element-wise operation is, as NumPy 2 defines it, written once
// for the host evaluator (src/array/kernels/program_eval.cpp, g++) and the device kernels
// (cuda/program_kernel.cuh, nvcc as device code, and its host emulation), so the two cannot
// drift apart. Also the promotion rules the Array API applies when an expression is built.
//
// Only C++17 and no library headers beyond <math.h>/<cstdint> and the dtype enum: nvcc builds
// the project's .cu files as C++17.
#include <math.h>

#include <cstdint>

#include "tessera/core/dtype.hpp"

#if defined(__CUDACC__)
#define TESSERA_ELEM __host__ __device__ __forceinline__
#else
#define TESSERA_ELEM inline
#endif

namespace tessera::detail::elem {
// Internal linkage: the host kernels include this in translation units built for several ISA
// levels (and with -ffast-math for random.cpp), so an out-of-line copy from one of them must never
// be shared with another, as inline functions with external linkage would be.
namespace {

// ---- integers ------------------------------------------------------------------------------------
// Integer arithmetic wraps, as NumPy's does; division by zero gives 0 (NumPy warns and gives 0).

/** a // b (Python's floor division). INT64_MIN // -1 wraps to INT64_MIN, as in NumPy. */
TESSERA_ELEM std::int64_t floor_divide(std::int64_t a, std::int64_t b) {
  if (b == 0) return 0;
  // a / -1 traps (SIGFPE) for a == INT64_MIN, so negate with wrap-around instead.
  if (b == -1) return static_cast<std::int64_t>(0ULL - static_cast<std::uint64_t>(a));
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/** a % b with the sign of b (Python's modulo); 0 when b is 0 or -1 (INT64_MIN % -1 traps). */
TESSERA_ELEM std::int64_t mod(std::int64_t a, std::int64_t b) {
  if (b == 0 || b == -1) return 0;
  std::int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

/**
 * base ** exp for exp >= 0, wrapping like repeated multiplication (NumPy). A negative exponent is
 * an error in NumPy ("Integers to negative integer powers are not allowed."); callers check
 * negative_power first. Here it gives 0 so that a device kernel, which cannot throw, stays defined.
 */
TESSERA_ELEM std::int64_t power(std::int64_t base, std::int64_t exp) {
  if (exp < 0) return 0;
  std::uint64_t result = 1, b = static_cast<std::uint64_t>(base);
  for (auto e = static_cast<std::uint64_t>(exp); e; e >>= 1, b *= b)
    if (e & 1) result *= b;
  return static_cast<std::int64_t>(result);
}
TESSERA_ELEM bool negative_power(std::int64_t exp) { return exp < 0; }
inline constexpr const char* kNegativePowerMessage = "Integers to negative integer powers are not allowed.";

/** Errors an element can raise where NumPy raises; a device kernel reports them in a flag word. */
enum ElementError : std::uint32_t { kNoElementError = 0, kNegativePowerError = 1 };

// ---- floating point --------------------------------------------------------------------------------
// NumPy's npy_divmod (numpy/_core/src/npymath/npy_math_internal.h.src), in T = float or double:
// floor_divide and mod of floats agree as Python's divmod does, which floor(a / b) does not
// (1.0 // 0.1 is 9, not floor(10.000000000000000555) = 10).

TESSERA_ELEM float fmod_t(float a, float b) { return ::fmodf(a, b); }
TESSERA_ELEM double fmod_t(double a, double b) { return ::fmod(a, b); }
TESSERA_ELEM float floor_t(float a) { return ::floorf(a); }
TESSERA_ELEM double floor_t(double a) { return ::floor(a); }
TESSERA_ELEM float copysign_t(float a, float b) { return ::copysignf(a, b); }
TESSERA_ELEM double copysign_t(double a, double b) { return ::copysign(a, b); }

template <typename T>
struct DivMod {
  T div, mod;
};

/** npy_divmod for b != 0 (and b NaN); b == 0 gives (a / b, fmod(a, b)). */
template <typename T>
TESSERA_ELEM DivMod<T> divmod(T a, T b) {
  T m = fmod_t(a, b);
  if (b == 0) return {a / b, m};
  T div = (a - m) / b;  // very nearly an integer multiple of b
  if (m != 0) {  // NaN counts as nonzero, as in C's `if (mod)`
    if ((b < 0) != (m < 0)) {  // Python's sign convention for the remainder
      m += b;
      div -= T(1);
    }
  } else {
    m = copysign_t(T(0), b);
  }
  T floordiv;
  if (div != 0) {
    floordiv = floor_t(div);  // snap to the nearest integer
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = copysign_t(T(0), a / b);
  }
  return {floordiv, m};
}

/** a // b of floats (npy_floor_divide). */
template <typename T>
TESSERA_ELEM T floor_divide_f(T a, T b) {
  return b == 0 ? a / b : divmod(a, b).div;
}
/** a % b of floats, sign of b (npy_remainder). */
template <typename T>
TESSERA_ELEM T mod_f(T a, T b) {
  return b == 0 ? fmod_t(a, b) : divmod(a, b).mod;
}

// ---- more float functions (NumPy's ufuncs of the same names) -------------------------------------
// Computed in double: a float32 result is the double result rounded (as every host and device
// program register is). The host evaluator replaces the transcendental ones by SLEEF's 1-ULP
// vector functions where it has them; these are the reference and the device's definitions.

TESSERA_ELEM double log1p_f(double x) { return ::log1p(x); }
TESSERA_ELEM double trunc_f(double x) { return ::trunc(x); }
/** Round half to even (NumPy's rint and round), in the default rounding mode. */
TESSERA_ELEM double rint_f(double x) { return ::rint(x); }
TESSERA_ELEM double arcsin_f(double x) { return ::asin(x); }
TESSERA_ELEM double arccos_f(double x) { return ::acos(x); }
TESSERA_ELEM double arctan_f(double x) { return ::atan(x); }
TESSERA_ELEM double arcsinh_f(double x) { return ::asinh(x); }
TESSERA_ELEM double arccosh_f(double x) { return ::acosh(x); }
TESSERA_ELEM double arctanh_f(double x) { return ::atanh(x); }
TESSERA_ELEM double sinh_f(double x) { return ::sinh(x); }
TESSERA_ELEM double cosh_f(double x) { return ::cosh(x); }
TESSERA_ELEM double log2_f(double x) { return ::log2(x); }
TESSERA_ELEM double log10_f(double x) { return ::log10(x); }
TESSERA_ELEM double exp2_f(double x) { return ::exp2(x); }
TESSERA_ELEM double expm1_f(double x) { return ::expm1(x); }
TESSERA_ELEM double cbrt_f(double x) { return ::cbrt(x); }
/**
 * The modified Bessel function of the first kind, order 0 (NumPy's i0). Up to |x| = 20 its power
 * series, sum of ((x/2)^2)^k / (k!)^2: every term is positive, so nothing cancels, and 40 terms
 * reach double precision there. Beyond, the asymptotic series e^|x| / sqrt(2 pi |x|) *
 * sum c_k / |x|^k with c_k = c_{k-1} (2k-1)^2 / 8k, whose terms shrink until k near 2|x|. Within
 * 2e-15 of NumPy's Chebyshev expansions over [-700, 700]; like NumPy's, infinite once e^|x|
 * overflows (|x| > 709.78), and NaN at the infinities themselves.
 */
/**
 * The stored format of a float dtype, for stepping between neighbouring values: significand
 * digits, the frexp exponent of the least normal number, and the greatest finite value. kind: 0
 * float64, 1 float32, 2 float16 (float_kind below).
 */
constexpr int float_kind(DType t) { return t == DType::Float32 ? 1 : t == DType::Float16 ? 2 : 0; }
struct FloatFormat {
  int digits;
  int min_exp;
  double max;
};
TESSERA_ELEM FloatFormat float_format(int kind) {
  if (kind == 1) return {24, -125, 3.4028234663852886e38};
  if (kind == 2) return {11, -13, 65504.0};
  return {53, -1021, 1.7976931348623157e308};
}
/** The distance from finite x to its neighbour away from zero in format f (from 0: the least subnormal). */
TESSERA_ELEM double ulp_away(double x, FloatFormat f) {
  int e = f.min_exp;
  if (x != 0) ::frexp(x, &e);
  return ::ldexp(1.0, (e > f.min_exp ? e : f.min_exp) - f.digits);
}
/** NumPy's nextafter: the neighbour of x toward y in the format of `kind`. */
TESSERA_ELEM double nextafter_f(double x, double y, int kind) {
  if (x != x || y != y) return x + y;
  if (x == y) return y;
  const FloatFormat f = float_format(kind);
  const double tiny = ::ldexp(1.0, f.min_exp - f.digits);
  if (x == 0) return y > x ? tiny : -tiny;
  const double ax = x < 0 ? -x : x;
  if ((y > x) == (x > 0)) {  // away from zero
    if (ax >= f.max) return x < 0 ? -HUGE_VAL : HUGE_VAL;
    return x < 0 ? x - ulp_away(x, f) : x + ulp_away(x, f);
  }
  if (ax > f.max) return x < 0 ? -f.max : f.max;  // from an infinity
  int e = 0;
  const double m = ::frexp(x, &e);
  double step = ulp_away(x, f);
  if ((m == 0.5 || m == -0.5) && e > f.min_exp) step *= 0.5;  // a power of two: the gap below is half
  return x < 0 ? x + step : x - step;
}
/**
 * NumPy's spacing: the distance from x to its neighbour away from zero, with x's sign (+ for
 * -0.0, as NumPy); NaN for NaN and infinities, infinity from the greatest finite value. Computed
 * in double, exactly: every value involved is representable there.
 */
TESSERA_ELEM double spacing_f(double x, int kind) {
  if (x - x != 0) return x - x;  // NaN, or inf - inf
  // NumPy's float16 spacing of a negative x is the step toward +inf, positive (its half-float
  // code differs there from its float and double loops); matched, as dask.array gives NumPy's.
  if (kind == 2 && x < 0) return nextafter_f(x, HUGE_VAL, kind) - x;
  const FloatFormat f = float_format(kind);
  const double ax = x < 0 ? -x : x;
  if (ax >= f.max) return x < 0 ? -HUGE_VAL : HUGE_VAL;
  const double u = ulp_away(x, f);
  return x < 0 ? -u : u;
}
/** frexp's mantissa in [0.5, 1) with x's sign; 0, infinities and NaN are their own (NumPy's). */
TESSERA_ELEM double frexp_mantissa_f(double x) {
  if (x == 0 || x - x != 0) return x;
  int e = 0;
  return ::frexp(x, &e);
}
/** frexp's exponent, as a double holding an integer; 0 for 0, infinities and NaN. */
TESSERA_ELEM double frexp_exponent_f(double x) {
  if (x == 0 || x - x != 0) return 0;
  int e = 0;
  ::frexp(x, &e);
  return e;
}

TESSERA_ELEM double i0_f(double x) {
  const double ax = x < 0 ? -x : x;
  if (ax - ax != 0) return ax - ax;  // NaN, and NaN for infinities too, as NumPy's (its inf / inf)
  if (ax <= 20.0) {
    const double q = 0.25 * ax * ax;
    double term = 1.0, sum = 1.0;
    for (int k = 1; k < 64; ++k) {
      term *= q / (static_cast<double>(k) * k);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return sum;
  }
  double c = 1.0, sum = 1.0;
  for (int k = 1; k < 64; ++k) {
    const double odd = 2.0 * k - 1.0;
    c *= odd * odd / (8.0 * k * ax);
    sum += c;
    if (c < sum * 1e-17) break;
  }
  const double e = ::exp(ax);
  if (e > 1.7976931348623157e308) return HUGE_VAL;  // inf / sqrt(inf) would be NaN
  return e * sum / ::sqrt(6.283185307179586476925286766559 * ax);
}
TESSERA_ELEM double arctan2_f(double y, double x) { return ::atan2(y, x); }
TESSERA_ELEM double hypot_f(double a, double b) { return ::hypot(a, b); }
TESSERA_ELEM double copysign_f(double a, double b) { return ::copysign(a, b); }
/**
 * NaN-ignoring minimum and maximum (NumPy's fmin / fmax): NaN only where both are NaN, and a where
 * a and b compare equal, so fmin(-0.0, 0.0) is -0.0, as NumPy's scalar loop (its SIMD loops give
 * +0.0 or b there). C's fmin leaves the zero's sign open, and glibc's call and GCC's vectorised
 * loop answered differently, so host and device could differ: it is spelled out.
 */
TESSERA_ELEM double fmin_f(double a, double b) { return (a <= b || b != b) ? a : b; }
TESSERA_ELEM double fmax_f(double a, double b) { return (a >= b || b != b) ? a : b; }
/** C's remainder with the sign of a (NumPy's fmod), unlike mod_f's Python convention. */
TESSERA_ELEM double fmod_f(double a, double b) { return ::fmod(a, b); }

/**
 * log(exp(a) + exp(b)) without overflow (npy_logaddexp): equal arguments (infinities of one
 * sign included) give a + log(2); NaN in either gives NaN.
 */
TESSERA_ELEM double logaddexp_f(double a, double b) {
  if (a == b) return a + 0.693147180559945309417232121458176568;  // log(2)
  const double d = a - b;
  if (d > 0) return a + ::log1p(::exp(-d));
  if (d <= 0) return b + ::log1p(::exp(d));
  return d;  // NaN
}
/** log2(2**a + 2**b) (npy_logaddexp2). */
TESSERA_ELEM double logaddexp2_f(double a, double b) {
  constexpr double kLog2e = 1.442695040888963407359924681001892137;
  if (a == b) return a + 1;
  const double d = a - b;
  if (d > 0) return a + kLog2e * ::log1p(::exp2(-d));
  if (d <= 0) return b + kLog2e * ::log1p(::exp2(d));
  return d;
}

// ---- more integer functions ------------------------------------------------------------------------

/** C's a % b, sign of a (NumPy's fmod of integers); 0 where b is 0 (NumPy warns) or -1. */
TESSERA_ELEM std::int64_t fmod_i(std::int64_t a, std::int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
/** a << b; 0 once b reaches the width or is negative (npy_lshift). */
TESSERA_ELEM std::int64_t left_shift(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>(b) < 64 ? static_cast<std::int64_t>(static_cast<std::uint64_t>(a) << b) : 0;
}
/**
 * a >> b, arithmetic; the sign (0 or -1) once b reaches the width or is negative (npy_rshift).
 * int32 values held in 64 bits shift to the same results: the low 32 bits of the wider shift are
 * the narrow one's, and past 31 both give 0 / the sign.
 */
TESSERA_ELEM std::int64_t right_shift(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>(b) < 64 ? (a >> b) : (a < 0 ? -1 : 0);
}

// ---- conversions -------------------------------------------------------------------------------------
// float -> integer as NumPy's astype does on x86-64 (cvttsd2si): truncation toward zero; NaN and
// values out of range give the "integer indefinite" INT64_MIN / INT32_MIN. C++'s static_cast is
// undefined there, and CUDA's would saturate.

TESSERA_ELEM std::int64_t to_int64(double x) {
  return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? static_cast<std::int64_t>(x)
                                                                     : static_cast<std::int64_t>(0x8000000000000000ULL);
}
TESSERA_ELEM std::int32_t to_int32(double x) {
  return (x > -2147483649.0 && x < 2147483648.0) ? static_cast<std::int32_t>(x)
                                                 : static_cast<std::int32_t>(0x80000000U);
}
/** Truthiness: nonzero is true, NaN is true. */
TESSERA_ELEM bool to_bool(double x) { return x != 0; }

/**
 * float -> uint64 as NumPy does on x86-64: values in [0, 2**64) exactly (truncated), negative ones
 * above -2**63 through int64 (wrapping: -1.0 gives 2**64 - 1), NaN and the rest 2**63.
 */
TESSERA_ELEM std::int64_t to_uint64_bits(double x) {
  if (x >= 9223372036854775808.0 && x < 18446744073709551616.0)
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(x));
  return to_int64(x);
}

/** A float value converted to an integer dtype held in an int64 register (bool as 0/1; uint64
 *  as its bits). Narrow integers take NumPy's x86-64 path: through int32 or int64, then wrap. */
TESSERA_ELEM std::int64_t float_to_int(double x, DType to) {
  switch (to) {
    case DType::Bool: return to_bool(x) ? 1 : 0;
    case DType::Int32: return to_int32(x);
    case DType::Int8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(to_int32(x)));
    case DType::Int16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(to_int32(x)));
    case DType::UInt8: return static_cast<std::uint8_t>(to_int32(x));
    case DType::UInt16: return static_cast<std::uint16_t>(to_int32(x));
    case DType::UInt32: return static_cast<std::uint32_t>(to_int64(x));
    case DType::UInt64: return to_uint64_bits(x);
    default: return to_int64(x);
  }
}

/** An int64 register wrapped to an integer dtype (narrow integers wrap, bool is 0/1). */
TESSERA_ELEM std::int64_t wrap_int(std::int64_t x, DType to) {
  const auto u = static_cast<std::uint64_t>(x);
  switch (to) {
    case DType::Bool: return x != 0;
    case DType::Int8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(u));
    case DType::Int16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(u));
    case DType::Int32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(u));
    case DType::UInt8: return static_cast<std::uint8_t>(u);
    case DType::UInt16: return static_cast<std::uint16_t>(u);
    case DType::UInt32: return static_cast<std::uint32_t>(u);
    default: return x;
  }
}

/** An int64 register of dtype `from` as a double (uint64 registers hold the value's bits). */
TESSERA_ELEM double int_to_double(std::int64_t x, DType from) {
  return from == DType::UInt64 ? static_cast<double>(static_cast<std::uint64_t>(x)) : static_cast<double>(x);
}

// ---- promotion with Python-like scalars (NEP 50) -------------------------------------------------
// A C++ integer or floating-point value combined with an array is "weak": it takes the array's
// kind where it can. These are the rules of numpy 2 for a Python bool, int and float.

enum class ScalarKind : std::uint8_t { Bool, Int, Float };

/** The dtype a weak scalar of `kind` takes beside an array of `array`. */
constexpr DType weak_scalar_dtype(ScalarKind kind, DType array) {
  switch (kind) {
    case ScalarKind::Bool: return array;  // True + int32 array: int32; True + bool array: bool
    case ScalarKind::Int: return array == DType::Bool ? DType::Int64 : array;
    case ScalarKind::Float:
      return (array == DType::Float16 || array == DType::Float32 || array == DType::Complex64 ||
              array == DType::Complex128) ? array : DType::Float64;
  }
  return DType::Float64;
}

/** Whether an integer value is representable in an integer or bool dtype. */
constexpr bool int_fits(std::int64_t v, DType t) {
  switch (t) {
    case DType::Bool: return v == 0 || v == 1;
    case DType::Int8: return v >= -128 && v <= 127;
    case DType::Int16: return v >= -32768 && v <= 32767;
    case DType::Int32: return v >= -2147483648LL && v <= 2147483647LL;
    case DType::UInt8: return v >= 0 && v <= 255;
    case DType::UInt16: return v >= 0 && v <= 65535;
    case DType::UInt32: return v >= 0 && v <= 4294967295LL;
    case DType::UInt64: return v >= 0;
    default: return true;
  }
}

}  // namespace
}  // namespace tessera::detail::elem

#undef TESSERA_ELEM
