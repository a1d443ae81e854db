#pragma once
/** @file
 * Element-wise operations with NumPy 2's broadcasting, promotion and element semantics. */
#include <optional>

#include "tessera/array/array.hpp"
#include "tessera/array/scalar.hpp"

namespace tessera {

// Arrays combine by NumPy's promotion rules (promote_types). A C++ number combines as a Python
// scalar does in NumPy 2 (scalar.hpp): `x + 1` keeps an int32 x int32 (and throws DTypeError
// when the value does not fit), `x + 1.5` of an integer x is float64, `x < 2.5` compares
// exactly. A 0-d array (scalar()) is an array like any other: its dtype takes part in promotion.
Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);
Array operator+(const Array& a, Scalar b);
Array operator-(const Array& a, Scalar b);
Array operator*(const Array& a, Scalar b);
Array operator/(const Array& a, Scalar b);
Array operator+(Scalar a, const Array& b);
Array operator-(Scalar a, const Array& b);
Array operator*(Scalar a, const Array& b);
Array operator/(Scalar a, const Array& b);
/** @brief Negation; DTypeError for bool (as NumPy, which asks for logical_not). */
Array operator-(const Array& a);
Array operator<(const Array& a, const Array& b);
Array operator<=(const Array& a, const Array& b);
Array operator>(const Array& a, const Array& b);
Array operator>=(const Array& a, const Array& b);
Array operator==(const Array& a, const Array& b);
Array operator!=(const Array& a, const Array& b);
Array operator<(const Array& a, Scalar b);
Array operator<=(const Array& a, Scalar b);
Array operator>(const Array& a, Scalar b);
Array operator>=(const Array& a, Scalar b);
Array operator==(const Array& a, Scalar b);
Array operator!=(const Array& a, Scalar b);
Array operator<(Scalar a, const Array& b);
Array operator<=(Scalar a, const Array& b);
Array operator>(Scalar a, const Array& b);
Array operator>=(Scalar a, const Array& b);
Array operator==(Scalar a, const Array& b);
Array operator!=(Scalar a, const Array& b);
Array operator&&(const Array& a, const Array& b);
Array operator||(const Array& a, const Array& b);
Array operator!(const Array& a);

/**
 * @brief a ** b. Integer powers wrap; a negative integer exponent is an error, as in NumPy:
 * DTypeError when the expression is built if the exponent is a number (or a 0-d constant),
 * a failed task if an exponent array holds one.
 */
Array power(const Array& a, const Array& b);
Array power(const Array& a, Scalar b);
Array power(Scalar a, const Array& b);
Array minimum(const Array& a, const Array& b);
Array maximum(const Array& a, const Array& b);
/** @brief a // b, floored (Python's and NumPy's floor division; with mod, NumPy's divmod). */
Array floor_divide(const Array& a, const Array& b);
Array floor_divide(const Array& a, Scalar b);
/** @brief a % b with the sign of b (NumPy's remainder). */
Array mod(const Array& a, const Array& b);
Array mod(const Array& a, Scalar b);
/** @brief condition ? a : b; a non-bool condition counts as true where it is nonzero (or NaN). */
Array where(const Array& condition, const Array& a, const Array& b);

Array abs(const Array& a);
Array exp(const Array& a);
Array log(const Array& a);
Array log1p(const Array& a);
Array sqrt(const Array& a);
Array square(const Array& a);
Array sin(const Array& a);
Array cos(const Array& a);
Array tan(const Array& a);
Array tanh(const Array& a);
Array floor(const Array& a);
Array ceil(const Array& a);
Array sign(const Array& a);
Array isnan(const Array& a);
Array isfinite(const Array& a);

// ---- more of NumPy's element-wise functions ---------------------------------------------------------
// Result dtypes are NumPy 2's, except where NumPy would give a dtype Tessera lacks: float16
// (transcendentals of bools) is float64, int8 (shifts, fmod and reciprocal of bools) is int64.

/** @brief min(max(a, lo), hi) element-wise; NaN in a (or a bound) gives NaN, as numpy.clip. */
Array clip(const Array& a, const Array& lo, const Array& hi);
Array clip(const Array& a, Scalar lo, Scalar hi);
/**
 * @brief Rounds to `decimals` decimal places, halves to even (numpy.round): rint(a * 10**d) / 10**d.
 * Integers stay integers (rounded to tens, hundreds, ... for negative decimals); bools give float64.
 */
Array round(const Array& a, int decimals = 0);
/** @brief numpy.around: the same as round. */
Array around(const Array& a, int decimals = 0);
/** @brief Rounds toward zero; integers and bools keep their dtype. */
Array trunc(const Array& a);
/** @brief Rounds to the nearest integer, halves to even; integers give float64 (as NumPy). */
Array rint(const Array& a);
/** @brief +-inf tests (bool); false for integers and bools. */
Array isinf(const Array& a);
Array isposinf(const Array& a);
Array isneginf(const Array& a);
/** @brief Whether a's sign bit is set (bool): true for -0.0 and for NaNs with the sign set. */
Array signbit(const Array& a);
/**
 * @brief |a - b| <= atol + rtol * |b| element-wise (bool), numpy.isclose: b is taken as float,
 * infinities are close only to themselves, NaN to nothing unless equal_nan.
 */
Array isclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Array isclose(const Array& a, Scalar b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/** @brief Whether every element is close (a 0-d bool array; compute it to read the answer). */
Array allclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/**
 * @brief NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest and lowest finite
 * values), as numpy.nan_to_num. Integers and bools are returned unchanged.
 */
Array nan_to_num(const Array& a, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt);

// Transcendentals: integers and bools compute in float64, float32 stays float32.
Array arcsin(const Array& a);
Array arccos(const Array& a);
Array arctan(const Array& a);
Array arcsinh(const Array& a);
Array arccosh(const Array& a);
Array arctanh(const Array& a);
Array sinh(const Array& a);
Array cosh(const Array& a);
Array log2(const Array& a);
Array log10(const Array& a);
Array exp2(const Array& a);
Array expm1(const Array& a);
Array cbrt(const Array& a);
/** @brief The modified Bessel function of the first kind, order 0 (numpy.i0: non-floats give float64). */
Array i0(const Array& a);
/**
 * @brief The distance from a to the next value of its dtype away from zero, with a's sign
 * (numpy.spacing: + for -0.0, NaN for infinities, inf for the greatest finite value).
 */
Array spacing(const Array& a);
/** @brief Degrees to radians (a * pi/180) and back. */
Array deg2rad(const Array& a);
Array rad2deg(const Array& a);
Array radians(const Array& a);
Array degrees(const Array& a);
/** @brief sin(pi x) / (pi x), 1 at 0 (numpy.sinc). */
Array sinc(const Array& a);

/** @brief 1 / a; of integers, integer division (0 for |a| > 1; 0 gives the dtype's minimum, as NumPy on x86-64). */
Array reciprocal(const Array& a);
/** @brief +a: a itself; DTypeError for bool (as NumPy). */
Array positive(const Array& a);
/** @brief -a (the same as unary minus). */
Array negative(const Array& a);

// Binary floating-point functions (integers and bools compute in float64).
/** @brief The angle of the point (x, y): atan2(y, x) with the signs of both. */
Array arctan2(const Array& y, const Array& x);
Array arctan2(const Array& y, Scalar x);
Array arctan2(Scalar y, const Array& x);
/** @brief sqrt(a*a + b*b) without undue overflow. */
Array hypot(const Array& a, const Array& b);
Array hypot(const Array& a, Scalar b);
Array hypot(Scalar a, const Array& b);
/** @brief log(exp(a) + exp(b)), and log2(2**a + 2**b), without overflow. */
Array logaddexp(const Array& a, const Array& b);
Array logaddexp(const Array& a, Scalar b);
Array logaddexp(Scalar a, const Array& b);
Array logaddexp2(const Array& a, const Array& b);
Array logaddexp2(const Array& a, Scalar b);
Array logaddexp2(Scalar a, const Array& b);
/** @brief |a| with the sign of b. */
Array copysign(const Array& a, const Array& b);
Array copysign(const Array& a, Scalar b);
Array copysign(Scalar a, const Array& b);
/** @brief The next value of the dtype after a toward b (numpy.nextafter; b itself where a == b). */
Array nextafter(const Array& a, const Array& b);
Array nextafter(const Array& a, Scalar b);
Array nextafter(Scalar a, const Array& b);
/** @brief a ** b in float64 (float32 too is widened, as numpy.float_power). */
Array float_power(const Array& a, const Array& b);
Array float_power(const Array& a, Scalar b);
Array float_power(Scalar a, const Array& b);
/** @brief 0 where x < 0, h where x == 0, 1 where x > 0, NaN where x is NaN. */
Array heaviside(const Array& x, const Array& h);
Array heaviside(const Array& x, Scalar h);

/** @brief Minimum and maximum that ignore NaN (NaN only where both are); of integers, minimum/maximum. */
Array fmin(const Array& a, const Array& b);
Array fmin(const Array& a, Scalar b);
Array fmin(Scalar a, const Array& b);
Array fmax(const Array& a, const Array& b);
Array fmax(const Array& a, Scalar b);
Array fmax(Scalar a, const Array& b);
/** @brief C's remainder, with the sign of a (mod takes the sign of b); integer fmod by 0 is 0. */
Array fmod(const Array& a, const Array& b);
Array fmod(const Array& a, Scalar b);
Array fmod(Scalar a, const Array& b);

/** @brief Truth of a xor truth of b (bool); NaN counts as true. */
Array logical_xor(const Array& a, const Array& b);
Array logical_xor(const Array& a, Scalar b);

// Bitwise operations: integers and bools only (DTypeError for floats, as NumPy's TypeError).
Array bitwise_and(const Array& a, const Array& b);
Array bitwise_and(const Array& a, Scalar b);
Array bitwise_and(Scalar a, const Array& b);
Array bitwise_or(const Array& a, const Array& b);
Array bitwise_or(const Array& a, Scalar b);
Array bitwise_or(Scalar a, const Array& b);
Array bitwise_xor(const Array& a, const Array& b);
Array bitwise_xor(const Array& a, Scalar b);
Array bitwise_xor(Scalar a, const Array& b);
/** @brief ~a; of bools, logical not. */
Array bitwise_not(const Array& a);
Array invert(const Array& a);
/** @brief a << b and a >> b (arithmetic); shifting by the width or more, or by a negative count, gives 0 (>>: the sign). */
Array left_shift(const Array& a, const Array& b);
Array left_shift(const Array& a, Scalar b);
Array left_shift(Scalar a, const Array& b);
Array right_shift(const Array& a, const Array& b);
Array right_shift(const Array& a, Scalar b);
Array right_shift(Scalar a, const Array& b);

}  // namespace tessera
