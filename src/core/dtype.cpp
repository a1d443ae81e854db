#include "tessera/core/dtype.hpp"

#include "tessera/core/error.hpp"

namespace tessera {

std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "unknown";
}

DType dtype_from_name(std::string_view name) {
  for (DType t : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64})
    if (dtype_name(t) == name) return t;
  if (name == "float" || name == "double") return DType::Float64;
  if (name == "int") return DType::Int64;
  throw DTypeError("unknown dtype '" + std::string(name) +
                   "' (expected bool, int32, int64, float32 or float64)");
}

DType promote_types(DType a, DType b) noexcept {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  // NumPy: int32 with float32 gives float64; any int64/float mix gives float64.
  if (is_floating(a) && is_floating(b)) return DType::Float64;
  if (is_integer(a) && is_integer(b)) return DType::Int64;
  const DType f = is_floating(a) ? a : b;
  const DType i = is_integer(a) ? a : b;
  if (f == DType::Float32 && i == DType::Int32) return DType::Float64;
  (void)i;
  return DType::Float64;
}

}  // namespace tessera
