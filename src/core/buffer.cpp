#include "tessera/core/buffer.hpp"

#include <cstdlib>
#include <new>

namespace tessera {

const char* memory_kind_name(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::Host: return "host";
    case MemoryKind::PinnedHost: return "pinned-host";
    case MemoryKind::Device: return "device";
  }
  return "unknown";
}

std::shared_ptr<Buffer> Buffer::allocate_host(std::size_t size) {
  constexpr std::size_t alignment = 64;  // a cache line; enough for any SIMD width used
  const std::size_t rounded = (size + alignment - 1) / alignment * alignment;
  void* p = rounded ? std::aligned_alloc(alignment, rounded) : nullptr;
  if (rounded && !p) throw std::bad_alloc();
  return std::shared_ptr<Buffer>(
      new Buffer(p, size, MemoryKind::Host, -1, [](void* q, std::size_t) { std::free(q); }));
}

std::shared_ptr<Buffer> Buffer::adopt(void* data, std::size_t size, MemoryKind kind, int device,
                                      Deleter deleter) {
  return std::shared_ptr<Buffer>(new Buffer(data, size, kind, device, std::move(deleter)));
}

Buffer::~Buffer() {
  if (deleter_) deleter_(data_, size_);
}

}  // namespace tessera
