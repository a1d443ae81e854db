#pragma once
// Internal: large host buffers freed lately, kept for the next allocation of the same size.
//
// A large Buffer (2 MiB or more) is its own mapping: glibc maps blocks of that size (above its
// largest mmap threshold once 2 MiB-aligned) and unmaps them when freed, so every new chunk is
// fresh pages the kernel must zero on first touch. A task graph allocates chunks of a few sizes
// over and over (a chunk made, read, freed, the next one made), and that zeroing took as much
// time as the arithmetic (a fancy index over 20000^2 generated floats: 1.4 s of system time,
// 1.7 s of user time). Reusing a freed buffer of the same size skips it. The cache is bounded
// (TESSERA_HOST_BUFFER_CACHE_MB, default 256 MiB or a 16th of the machine's memory if less; 0
// turns it off), and only exact sizes are reused, so no buffer is larger than asked for.
#include <cstddef>
#include <map>
#include <mutex>

namespace tessera::detail {

class HostBufferCache {
 public:
  /** The process's cache, sized from the environment on first use. */
  static HostBufferCache& instance();

  explicit HostBufferCache(std::size_t capacity) : capacity_(capacity) {}
  ~HostBufferCache();
  HostBufferCache(const HostBufferCache&) = delete;
  HostBufferCache& operator=(const HostBufferCache&) = delete;

  /** A cached buffer of exactly `bytes`, or nullptr. */
  void* take(std::size_t bytes);
  /** Keeps p (of `bytes`) for reuse; false when that would exceed the capacity (the caller frees it). */
  bool keep(void* p, std::size_t bytes);
  /** Lowers the capacity to at most `bytes` (never raises it), freeing what no longer fits. */
  void limit_capacity(std::size_t bytes);
  /** Frees every cached buffer. */
  void clear();
  std::size_t cached_bytes() const;
  std::size_t capacity() const;

 private:
  mutable std::mutex mu_;
  std::multimap<std::size_t, void*> free_;  // size -> buffers of that size
  std::size_t cached_ = 0;
  std::size_t capacity_;
};

}  // namespace tessera::detail
