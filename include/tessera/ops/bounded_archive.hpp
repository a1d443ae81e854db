#pragma once
/**
 * @file
 * A cereal input archive over a buffer already received, which refuses any length that
 * claims more than the bytes left, before anything is allocated for it (issue 19: a 46-byte
 * message whose string length claimed 1.5 GiB made cereal's BinaryInputArchive resize a string
 * to that size). Reads exactly what cereal::BinaryOutputArchive writes. Message headers
 * (comm's decode_header) and objects (from_object, serialize.hpp) are decoded with it.
 *
 * Bounds: a size tag (string, vector, map length) <= the bytes left; a bool is 0 or 1; a vector
 * of arithmetic T needs n * sizeof(T) of them; a vector of anything else grows as its elements
 * decode instead of being resized to the claimed count first (each element then costs at least
 * the byte it took). A Block's bytes are checked by its load (task_serialize.hpp) through
 * remaining().
 */
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/cereal.hpp>

namespace tessera::detail {

class BoundedInputArchive : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
 public:
  BoundedInputArchive(const void* data, std::size_t size)
      : cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision>(this),
        p_(static_cast<const char*>(data)), end_(p_ + size) {}

  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }

  void loadBinary(void* data, std::size_t n) {
    require(n, "bytes");
    if (n) std::memcpy(data, p_, n);
    p_ += n;
  }

  /** Throws unless n more bytes are left; `what` names the claim in the message. */
  void require(std::size_t n, const char* what) const {
    if (n > remaining())
      throw cereal::Exception("a length of " + std::to_string(n) + " " + what + " exceeds the " +
                              std::to_string(remaining()) + " bytes left");
  }

 private:
  const char* p_;
  const char* end_;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, T& t) {
  ar.loadBinary(std::addressof(t), sizeof(t));
}

// A bool is the one byte BinaryOutputArchive writes, 0 or 1; any other value would be undefined
// behaviour once read as a bool (fuzz/object_fuzz.cpp's first finding: an Object's has-bytes flag
// of 255), so it is refused as corrupt.
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, bool& b) {
  unsigned char byte = 0;
  ar.loadBinary(&byte, 1);
  if (byte > 1) throw cereal::Exception("a bool of value " + std::to_string(byte) + ", not 0 or 1");
  b = byte != 0;
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  ar.require(static_cast<std::size_t>(t.size), "elements");  // every element takes a byte at least
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, static_cast<std::size_t>(bd.size));
}

// More specialised than cereal's vector<bool> load, which the overload below would be ambiguous with.
template <class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, std::vector<bool, A>& v) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));  // n <= bytes left, one byte each
  v.clear();
  v.reserve(static_cast<std::size_t>(n));
  for (cereal::size_type i = 0; i < n; ++i) {
    bool b = false;
    ar(b);
    v.push_back(b);
  }
}

// More specialised than cereal's vector loads (which resize to the claimed count first).
template <class T, class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, std::vector<T, A>& v) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  v.clear();
  if constexpr (std::is_arithmetic_v<T>) {
    if (n > ar.remaining() / sizeof(T)) ar.require(ar.remaining() + 1, "vector bytes");
    v.resize(static_cast<std::size_t>(n));
    ar(cereal::binary_data(v.data(), static_cast<std::size_t>(n) * sizeof(T)));
  } else {
    for (cereal::size_type i = 0; i < n; ++i) {
      v.emplace_back();
      ar(v.back());
    }
  }
}

}  // namespace tessera::detail

CEREAL_REGISTER_ARCHIVE(tessera::detail::BoundedInputArchive)

namespace cereal::traits::detail {
// What BinaryOutputArchive writes, this reads (cereal consults it for load_minimal types).
template <>
struct get_output_from_input<tessera::detail::BoundedInputArchive> {
  using type = cereal::BinaryOutputArchive;
};
}  // namespace cereal::traits::detail
