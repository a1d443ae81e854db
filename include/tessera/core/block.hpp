#pragma once
/** @file
 * Block: a typed, row-major n-d chunk over a Buffer. */
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/core/buffer.hpp"
#include "tessera/core/dtype.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/shape.hpp"

namespace tessera {

/**
 * @brief A contiguous row-major n-d array of one dtype. Cheap to copy: copies share the Buffer.
 *
 * Blocks are the values that array tasks consume and produce. A Block is immutable once a task
 * has returned it; mutable access exists only for the producer filling a fresh Block.
 */
class Block {
 public:
  Block() = default;
  /** @brief Uninitialised host block. */
  Block(DType dtype, Shape shape);
  /** @brief Wraps an existing buffer, which must hold at least size()*itemsize bytes. */
  Block(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer);

  /** @brief A host block holding a copy of the values, with the given shape. */
  template <typename T>
  static Block from_values(const std::vector<T>& values, Shape shape) {
    Block b(dtype_of_v<T>, std::move(shape));
    if (static_cast<std::int64_t>(values.size()) != b.size())
      throw ShapeError("from_values: " + std::to_string(values.size()) + " values for shape " +
                       shape_to_string(b.shape()));
    T* out = b.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return b;
  }
  /** @brief A 0-d host block holding one value. */
  template <typename T>
  static Block scalar(T value) {
    return from_values<T>({value}, {});
  }

  bool empty() const noexcept { return buffer_ == nullptr; }
  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  int ndim() const noexcept { return static_cast<int>(shape_.size()); }
  std::int64_t size() const noexcept { return shape_size(shape_); }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * itemsize(dtype_); }
  MemoryKind memory_kind() const noexcept { return buffer_ ? buffer_->kind() : MemoryKind::Host; }
  const std::shared_ptr<Buffer>& buffer() const noexcept { return buffer_; }

  void* raw() noexcept { return buffer_ ? buffer_->data() : nullptr; }
  const void* raw() const noexcept { return buffer_ ? buffer_->data() : nullptr; }

  /** @brief Typed pointer; throws DTypeError when T does not match dtype(). */
  template <typename T>
  T* data() {
    check_type(dtype_of_v<T>);
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_type(dtype_of_v<T>);
    return static_cast<const T*>(raw());
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(size())};
  }
  /** @brief All elements converted to double (host blocks only), for tests and small results. */
  std::vector<double> to_doubles() const;
  /** @brief The single element of a one-element block, converted to double. */
  double item() const;
  /**
   * @brief The single element of a one-element host block, converted from its dtype straight to
   * T: an int64 result reads exactly as std::int64_t, never through double (which keeps 53 bits).
   */
  template <typename T>
    requires std::is_arithmetic_v<T>
  T item() const {
    const void* p = item_pointer();
    return dispatch_dtype(dtype_, [p](auto tag) { return static_cast<T>(*static_cast<const decltype(tag)*>(p)); });
  }

  /** @brief Same data, new shape with the same number of elements (no copy). */
  Block reshaped(Shape shape) const;
  /** @brief Copy converted to another dtype (host). */
  Block astype(DType dtype) const;

 private:
  void check_type(DType t) const;
  // The element of a one-element host block; throws ShapeError or Error otherwise.
  const void* item_pointer() const;
  DType dtype_ = DType::Float64;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace tessera
