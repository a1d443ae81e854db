#pragma once
/**
 * @file
 * A C++ number used as an operand of an array operation.
 *
 * NumPy 2 treats Python scalars as "weak" (NEP 50): they take the array's dtype where they can.
 * Scalar keeps what kind of C++ value was given, so that `x + 1` (an integer) and `x + 1.5` (a
 * floating-point value) follow NumPy's rules for a Python int and a Python float:
 *
 * | array      | bool value | integer value                     | floating value |
 * | ---        | ---        | ---                               | ---            |
 * | bool       | bool       | int64                             | float64        |
 * | int32/64   | the array's| the array's (DTypeError if the value does not fit) | float64 |
 * | float32/64 | the array's| the array's                       | the array's    |
 */
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace tessera {

/** @brief A bool, integer or floating-point value, implicitly made from any C++ arithmetic type. */
class Scalar {
 public:
  enum class Kind : std::uint8_t { Bool, Int, Float };

  template <typename T>
    requires std::is_arithmetic_v<T>
  constexpr Scalar(T v) noexcept {  // NOLINT(google-explicit-constructor): `x + 1` must work
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v ? 1 : 0;
      f_ = v ? 1.0 : 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
        above_int64_ = v > static_cast<T>(std::numeric_limits<std::int64_t>::max());
        i_ = static_cast<std::int64_t>(v);  // the bits, for to_string
      } else {
        i_ = static_cast<std::int64_t>(v);
      }
      f_ = static_cast<double>(v);
    } else {
      kind_ = Kind::Float;
      f_ = static_cast<double>(v);
    }
  }

  constexpr Kind kind() const noexcept { return kind_; }
  constexpr bool is_float() const noexcept { return kind_ == Kind::Float; }
  /** @brief The value as a double (rounded for integers beyond 2^53). */
  constexpr double as_double() const noexcept { return f_; }
  /** @brief The exact value of a bool or integer (INT64_MAX when above_int64()). */
  constexpr std::int64_t as_int() const noexcept {
    return above_int64_ ? std::numeric_limits<std::int64_t>::max() : i_;
  }
  /** @brief An unsigned value larger than any int64. */
  constexpr bool above_int64() const noexcept { return above_int64_; }
  /** @brief The value as written ("3", "2.5", "True"), for messages. */
  std::string to_string() const;

 private:
  Kind kind_ = Kind::Float;
  bool above_int64_ = false;
  std::int64_t i_ = 0;
  double f_ = 0;
};

}  // namespace tessera
