#pragma once
/** @file
 * Complex arrays (complex64, complex128): their parts, conjugate and angle. Arithmetic
 * (+ - * / ** and negation), abs, exp, log, sqrt, square, sin, cos, tan, tanh, isnan, isfinite,
 * == and !=, astype, sum, prod, mean and matmul take complex arrays through the usual functions;
 * the operations NumPy does not define on complex values, or that Tessera does not yet (ordering
 * comparisons, minimum/maximum, floor_divide/mod, min/max/var/std/arg*, where, logical
 * operators, random generators), throw DTypeError when the expression is built. */
#include "tessera/array/array.hpp"

namespace tessera {

/** @brief The real part (NumPy's real): float32 of complex64, float64 of complex128; a real array itself. */
Array real(const Array& a);
/** @brief The imaginary part (NumPy's imag); zeros of a real array's dtype. */
Array imag(const Array& a);
/** @brief The complex conjugate (NumPy's conj); a real array itself. */
Array conj(const Array& a);
/** @brief The angle in radians, atan2(imag, real) (NumPy's angle): float64, float32 of complex64. */
Array angle(const Array& a);
/** @brief re + 1j * im of two real arrays of one shape: complex128, complex64 where both fit float32. */
Array make_complex(const Array& re, const Array& im);

}  // namespace tessera
