#pragma once
// Internal: integer arithmetic that wraps modulo 2^64 (NumPy's integer sums and products wrap)
// without signed overflow, which C++ leaves undefined (and UBSan reports): the operation is
// done on uint64 and the result converted back, modular since C++20. Floating types are added
// and multiplied as usual.
#include <cstdint>
#include <type_traits>

namespace tessera::detail {

template <class T>
constexpr bool wraps_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
constexpr T wrapping_add(T a, T b) {
  if constexpr (wraps_v<T>) return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else return a + b;
}

template <class T>
constexpr T wrapping_mul(T a, T b) {
  if constexpr (wraps_v<T>) return static_cast<T>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
  else return a * b;
}

/** c + x * y, wrapping for integers. */
template <class T>
constexpr T wrapping_mul_add(T c, T x, T y) {
  return wrapping_add(c, wrapping_mul(x, y));
}

}  // namespace tessera::detail
