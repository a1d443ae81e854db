#include "tessera/core/buffer.hpp"

#include "host_buffer_cache.hpp"

#include <sys/mman.h>

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
  // Large buffers start on a 2 MiB boundary and ask for transparent huge pages: a 512th of
  // the page faults, and copying out of them with process_vm_readv (UCX's cma, docs/ucx.md)
  // ran at 11-12 GB/s instead of 7.5-8 for 256 MiB on the development VM.
  constexpr std::size_t huge = std::size_t{2} << 20;
  if (size >= huge) {
    // Whole huge pages; a buffer of the same size freed lately is reused (host_buffer_cache.hpp).
    const std::size_t bytes = (size + huge - 1) / huge * huge;
    auto& cache = detail::HostBufferCache::instance();
    void* p = cache.take(bytes);
    if (!p) {
      p = std::aligned_alloc(huge, bytes);
      if (!p) throw std::bad_alloc();
      ::madvise(p, bytes, MADV_HUGEPAGE);
    }
    return std::shared_ptr<Buffer>(new Buffer(p, size, MemoryKind::Host, -1, [bytes](void* q, std::size_t) {
      if (!detail::HostBufferCache::instance().keep(q, bytes)) std::free(q);
    }));
  }
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
