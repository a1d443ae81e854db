#include "tessera/core/block.hpp"

#include <cstring>

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

Block Block::astype(DType dtype) const {
  Block out(dtype, shape_);
  const std::size_t n = static_cast<std::size_t>(size());
  dispatch_dtype(dtype_, [&](auto from_tag) {
    using From = decltype(from_tag);
    const From* src = static_cast<const From*>(raw());
    dispatch_dtype(dtype, [&](auto to_tag) {
      using To = decltype(to_tag);
      To* dst = static_cast<To*>(out.raw());
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<To>(src[i]);
    });
  });
  return out;
}

}  // namespace tessera
