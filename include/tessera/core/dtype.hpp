#pragma once
/** @file
 * Element types of arrays and blocks. */
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

/** @brief Element type of a Block or Array. */
enum class DType : std::uint8_t { Bool, Int32, Int64, Float32, Float64 };

/** @brief Size in bytes of one element. */
constexpr std::size_t itemsize(DType t) noexcept {
  switch (t) {
    case DType::Bool: return 1;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Float32: return 4;
    case DType::Float64: return 8;
  }
  return 0;
}

constexpr bool is_floating(DType t) noexcept { return t == DType::Float32 || t == DType::Float64; }
constexpr bool is_integer(DType t) noexcept { return t == DType::Int32 || t == DType::Int64; }

/** @brief NumPy-style name: "bool", "int32", "int64", "float32", "float64". */
std::string_view dtype_name(DType t) noexcept;
/** @brief Parses a dtype name; throws DTypeError for an unknown one. */
DType dtype_from_name(std::string_view name);
/** @brief NumPy's result type for a binary arithmetic operation on two dtypes. */
DType promote_types(DType a, DType b) noexcept;

/** @brief Maps a C++ type to its DType (bool, int32_t, int64_t, float, double). */
template <typename T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <typename T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

/** @brief Calls f(T{}) with T the C++ type of the dtype. */
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::Int32: return f(std::int32_t{});
    case DType::Int64: return f(std::int64_t{});
    case DType::Float32: return f(float{});
    case DType::Float64: break;
  }
  return f(double{});
}

}  // namespace tessera
