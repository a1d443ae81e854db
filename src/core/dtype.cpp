#include "tessera/core/dtype.hpp"

#include <cstring>

#include "tessera/core/error.hpp"

namespace tessera {

namespace {
constexpr DType kAll[] = {DType::Bool,   DType::Int8,    DType::Int16,   DType::Int32,     DType::Int64,
                          DType::UInt8,  DType::UInt16,  DType::UInt32,  DType::UInt64,    DType::Float16,
                          DType::Float32, DType::Float64, DType::Complex64, DType::Complex128};
static_assert(sizeof(kAll) / sizeof(kAll[0]) == kNumDTypes);

// NumPy's kinds, in the order of its promotion lattice.
enum class Kind { Bool, Int, UInt, Float, Complex };
Kind kind_of(DType t) {
  if (t == DType::Bool) return Kind::Bool;
  if (is_signed_integer(t)) return Kind::Int;
  if (is_unsigned(t)) return Kind::UInt;
  if (is_floating(t)) return Kind::Float;
  return Kind::Complex;
}
DType signed_of_size(std::size_t bytes) {
  switch (bytes) {
    case 1: return DType::Int8;
    case 2: return DType::Int16;
    case 4: return DType::Int32;
    default: return DType::Int64;
  }
}
DType float_of_size(std::size_t bytes) {
  return bytes <= 2 ? DType::Float16 : bytes == 4 ? DType::Float32 : DType::Float64;
}
// The smallest float that holds every value of an integer dtype (NumPy's safe casts): 8-bit
// integers fit float16, 16-bit float32, wider ones float64.
DType float_for_int(DType t) {
  const auto n = itemsize(t);
  return n == 1 ? DType::Float16 : n == 2 ? DType::Float32 : DType::Float64;
}
DType promote_real(DType a, DType b) {
  Kind ka = kind_of(a), kb = kind_of(b);
  if (ka > kb) { std::swap(a, b); std::swap(ka, kb); }
  const auto na = itemsize(a), nb = itemsize(b);
  if (ka == kb) return na >= nb ? a : b;
  if (ka == Kind::Bool) return b;
  if (ka == Kind::Int && kb == Kind::UInt) {
    if (na > nb) return a;
    return nb >= 8 ? DType::Float64 : signed_of_size(nb * 2);  // int64 with uint64: float64
  }
  // An integer with a float: the wider of the float and the float the integer needs.
  const DType fi = float_for_int(a);
  return float_of_size(std::max(itemsize(fi), nb));
}
}  // namespace

namespace detail {
void throw_complex_unsupported(DType t, const char* what) {
  throw DTypeError(std::string(what) + " does not support the complex dtype " + std::string(dtype_name(t)));
}
}  // namespace detail

std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Float16: return "float16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
  }
  return "unknown";
}

DType dtype_from_name(std::string_view name) {
  for (DType t : kAll)
    if (dtype_name(t) == name) return t;
  if (name == "float" || name == "double") return DType::Float64;
  if (name == "int") return DType::Int64;
  if (name == "half") return DType::Float16;
  if (name == "complex") return DType::Complex128;
  throw DTypeError("unknown dtype '" + std::string(name) +
                   "' (expected bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, "
                   "float32, float64, complex64 or complex128)");
}

DType complex_dtype_for(DType t) noexcept {
  if (is_complex(t)) return t;
  if (t == DType::Bool) return DType::Complex64;
  return promote_real(t, DType::Float32) == DType::Float32 ? DType::Complex64 : DType::Complex128;
}

DType promote_types(DType a, DType b) noexcept {
  if (a == b) return a;
  if (is_complex(a) || is_complex(b)) {
    // complex64 holds what float32 holds; anything wider makes complex128.
    const DType ra = is_complex(a) ? real_dtype(a) : a, rb = is_complex(b) ? real_dtype(b) : b;
    return promote_real(promote_real(ra, rb), DType::Float32) == DType::Float32 ? DType::Complex64
                                                                                : DType::Complex128;
  }
  return promote_real(a, b);
}

}  // namespace tessera
