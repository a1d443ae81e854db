#pragma once
/** @file
 * Element types of arrays and blocks. */
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

/**
 * @brief Element type of a Block or Array. New dtypes are appended (the numeric codes travel on
 * the wire and in spill files).
 */
enum class DType : std::uint8_t {
  Bool, Int32, Int64, Float32, Float64,
  Int8, Int16, UInt8, UInt16, UInt32, UInt64,
  Float16,  // storage only: computed in float32/float64 and rounded to float16 on store
  Complex64, Complex128,
};
/** @brief Number of dtypes: every code below it is valid. */
inline constexpr int kNumDTypes = static_cast<int>(DType::Complex128) + 1;
/** @brief Whether a serialized dtype code names a dtype. */
constexpr bool valid_dtype_code(std::uint8_t code) noexcept { return code < kNumDTypes; }

/** @brief Size in bytes of one element. */
constexpr std::size_t itemsize(DType t) noexcept {
  switch (t) {
    case DType::Bool: case DType::Int8: case DType::UInt8: return 1;
    case DType::Int16: case DType::UInt16: case DType::Float16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    case DType::Int64: case DType::UInt64: case DType::Float64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
  }
  return 0;
}

/** @brief float16, float32, float64 (real floating point; complex is is_complex). */
constexpr bool is_floating(DType t) noexcept {
  return t == DType::Float16 || t == DType::Float32 || t == DType::Float64;
}
constexpr bool is_complex(DType t) noexcept { return t == DType::Complex64 || t == DType::Complex128; }
constexpr bool is_unsigned(DType t) noexcept {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}
constexpr bool is_signed_integer(DType t) noexcept {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
/** @brief Signed or unsigned integer (not bool). */
constexpr bool is_integer(DType t) noexcept { return is_signed_integer(t) || is_unsigned(t); }
/** @brief The real dtype of a complex one's parts (itself for a real dtype). */
constexpr DType real_dtype(DType t) noexcept {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
/** @brief The complex dtype that holds a dtype's values: complex64 for float16/float32 and the
 *  integers NumPy casts safely to float32, complex128 otherwise. */
DType complex_dtype_for(DType t) noexcept;

/** @brief NumPy-style name: "bool", "int8" ... "uint64", "float16", "float32", "float64",
 *  "complex64", "complex128". */
std::string_view dtype_name(DType t) noexcept;
/** @brief Parses a dtype name; throws DTypeError for an unknown one. */
DType dtype_from_name(std::string_view name);
/** @brief NumPy's result type for a binary arithmetic operation on two dtypes (np.result_type). */
DType promote_types(DType a, DType b) noexcept;

/**
 * @brief The C++ type of a float16 element: its IEEE binary16 bits. Values convert to and from
 * it explicitly (rounding to nearest even), never implicitly, so float16 arithmetic always
 * happens in a wider type as NumPy's float16 loops do.
 */
struct float16 {
  std::uint16_t bits = 0;
  float16() = default;
  /** @brief The float16 nearest to a number (rounded once, from the number itself). */
  template <typename T>
  explicit float16(T v) : bits(from_double(static_cast<double>(v))) {}
  explicit operator double() const { return to_double(bits); }
  explicit operator float() const { return static_cast<float>(to_double(bits)); }
  template <typename T>
  explicit operator T() const {
    return static_cast<T>(to_double(bits));
  }
  static std::uint16_t from_double(double v) noexcept;
  static double to_double(std::uint16_t bits) noexcept;
  // Comparisons are exact on the values (NaN unordered, -0 == +0), as NumPy's float16 ones:
  // sorting, searching and gathering code compares elements of any dtype.
  friend bool operator==(float16 a, float16 b) { return to_double(a.bits) == to_double(b.bits); }
  friend bool operator!=(float16 a, float16 b) { return !(a == b); }
  friend bool operator<(float16 a, float16 b) { return to_double(a.bits) < to_double(b.bits); }
  friend bool operator>(float16 a, float16 b) { return b < a; }
  friend bool operator<=(float16 a, float16 b) { return to_double(a.bits) <= to_double(b.bits); }
  friend bool operator>=(float16 a, float16 b) { return b <= a; }
};

/** @brief Maps a C++ type to its DType. */
template <typename T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::Int16; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct dtype_of<std::uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct dtype_of<float16> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::Complex64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::Complex128; };
template <typename T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

namespace detail {
/** Throws DTypeError: `what` does not support complex dtypes. */
[[noreturn]] void throw_complex_unsupported(DType t, const char* what);
}  // namespace detail

/**
 * @brief Calls f(T{}) with T the C++ type of a real dtype (float16 is tessera::float16); a
 * complex dtype throws DTypeError (use dispatch_any_dtype where complex values are handled).
 */
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::Int8: return f(std::int8_t{});
    case DType::Int16: return f(std::int16_t{});
    case DType::Int32: return f(std::int32_t{});
    case DType::Int64: return f(std::int64_t{});
    case DType::UInt8: return f(std::uint8_t{});
    case DType::UInt16: return f(std::uint16_t{});
    case DType::UInt32: return f(std::uint32_t{});
    case DType::UInt64: return f(std::uint64_t{});
    case DType::Float16: return f(float16{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Complex64: case DType::Complex128: break;
  }
  detail::throw_complex_unsupported(t, "this operation");
}

/** @brief dispatch_dtype, and std::complex<float> / std::complex<double> for complex dtypes. */
template <typename F>
decltype(auto) dispatch_any_dtype(DType t, F&& f) {
  if (t == DType::Complex64) return f(std::complex<float>{});
  if (t == DType::Complex128) return f(std::complex<double>{});
  return dispatch_dtype(t, std::forward<F>(f));
}

}  // namespace tessera
