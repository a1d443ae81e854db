#pragma once
/** @file
 * Buffer: owned bytes in host, pinned-host or device memory. */
#include <cstddef>
#include <functional>
#include <memory>

namespace tessera {

/** @brief Where a Buffer's bytes live. */
enum class MemoryKind : std::uint8_t { Host, PinnedHost, Device };

const char* memory_kind_name(MemoryKind kind) noexcept;

/**
 * @brief Owned, immutable-once-published bytes.
 *
 * A Buffer is created by an allocator, filled by the task that produces it, then shared
 * read-only (through shared_ptr<const Buffer>) by every Block and consumer that needs it.
 * Freeing goes through the deleter given at allocation, so device and pinned memory come
 * back to the pool that made them.
 */
class Buffer {
 public:
  using Deleter = std::function<void(void*, std::size_t)>;

  /** @brief 64-byte aligned host memory, uninitialised. */
  static std::shared_ptr<Buffer> allocate_host(std::size_t size);
  /** @brief Adopts memory from another allocator; deleter runs once when the Buffer dies. */
  static std::shared_ptr<Buffer> adopt(void* data, std::size_t size, MemoryKind kind, int device,
                                       Deleter deleter);

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() noexcept { return data_; }
  const void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  MemoryKind kind() const noexcept { return kind_; }
  /** @brief CUDA device ordinal for Device memory, -1 otherwise. */
  int device() const noexcept { return device_; }

 private:
  Buffer(void* data, std::size_t size, MemoryKind kind, int device, Deleter deleter)
      : data_(data), size_(size), kind_(kind), device_(device), deleter_(std::move(deleter)) {}
  void* data_;
  std::size_t size_;
  MemoryKind kind_;
  int device_;
  Deleter deleter_;
};

}  // namespace tessera
