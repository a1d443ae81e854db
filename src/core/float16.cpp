// float16's conversions, apart from the rest of dtype.cpp: they need the compiler's _Float16,
// which clang 14 (the fuzz build, fuzz/CMakeLists.txt) lacks on x86-64.
#include <cstdint>
#include <cstring>

#include "tessera/core/dtype.hpp"

namespace tessera {

// The compiler's _Float16 (GCC on x86-64) converts with IEEE round-to-nearest-even, from double
// directly (never through float, which would round twice).
std::uint16_t float16::from_double(double v) noexcept {
  const _Float16 h = static_cast<_Float16>(v);
  std::uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}

double float16::to_double(std::uint16_t bits) noexcept {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<double>(h);
}

}  // namespace tessera
