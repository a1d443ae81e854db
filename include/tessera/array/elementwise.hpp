#pragma once
/** @file
 * Element-wise operations with NumPy 2's broadcasting, promotion and element semantics. */
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

}  // namespace tessera
