#include "tessera/core/block.hpp"

#include <complex>
#include <cstring>
#include <type_traits>

namespace tessera {

Block::Block(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(Buffer::allocate_host(nbytes())) {}

Block::Block(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)) {
  if (!buffer_) throw Error("Block: null buffer");
  if (buffer_->size() < nbytes())
    throw ShapeError("Block: buffer of " + std::to_string(buffer_->size()) + " bytes is too small for " +
                     std::string(dtype_name(dtype_)) + " " + shape_to_string(shape_));
}

void Block::check_type(DType t) const {
  if (t != dtype_)
    throw DTypeError("block holds " + std::string(dtype_name(dtype_)) + ", accessed as " +
                     std::string(dtype_name(t)));
}

std::vector<double> Block::to_doubles() const {
  if (memory_kind() == MemoryKind::Device) throw Error("to_doubles: block is in device memory");
  std::vector<double> out(static_cast<std::size_t>(size()));
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(raw());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

const void* Block::item_pointer() const {
  if (empty()) throw Error("item(): the block is empty");
  if (size() != 1)
    throw ShapeError("item(): block of shape " + shape_to_string(shape_) + " has " +
                     std::to_string(size()) + " elements, not 1");
  if (memory_kind() == MemoryKind::Device) throw Error("item(): block is in device memory");
  return raw();
}

double Block::item() const { return item<double>(); }

Block Block::reshaped(Shape shape) const {
  if (shape_size(shape) != size())
    throw ShapeError("cannot reshape a block of shape " + shape_to_string(shape_) + " to " +
                     shape_to_string(shape));
  Block b = *this;
  b.shape_ = std::move(shape);
  return b;
}

namespace {
template <typename T>
struct is_std_complex : std::false_type {};
template <typename T>
struct is_std_complex<std::complex<T>> : std::true_type {};

// One element converted as NumPy's astype does: a complex value to a real dtype keeps its real
// part; float16 converts through double.
template <typename To, typename From>
To convert_element(const From& x) {
  if constexpr (is_std_complex<From>::value && is_std_complex<To>::value) {
    return To(static_cast<typename To::value_type>(x.real()), static_cast<typename To::value_type>(x.imag()));
  } else if constexpr (is_std_complex<From>::value) {
    return convert_element<To>(x.real());
  } else if constexpr (is_std_complex<To>::value) {
    return To(static_cast<typename To::value_type>(static_cast<double>(x)), 0);
  } else if constexpr (std::is_same_v<From, float16> && !std::is_same_v<To, float16>) {
    return static_cast<To>(static_cast<double>(x));
  } else {
    return static_cast<To>(x);
  }
}
}  // namespace

Block Block::astype(DType dtype) const {
  Block out(dtype, shape_);
  const std::size_t n = static_cast<std::size_t>(size());
  dispatch_any_dtype(dtype_, [&](auto from_tag) {
    using From = decltype(from_tag);
    const From* src = static_cast<const From*>(raw());
    dispatch_any_dtype(dtype, [&](auto to_tag) {
      using To = decltype(to_tag);
      To* dst = static_cast<To*>(out.raw());
      for (std::size_t i = 0; i < n; ++i) dst[i] = convert_element<To>(src[i]);
    });
  });
  return out;
}

}  // namespace tessera
