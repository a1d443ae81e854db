#include "host_buffer_cache.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tessera::detail {

namespace {

std::size_t default_capacity() {
  if (const char* env = std::getenv("TESSERA_HOST_BUFFER_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') return static_cast<std::size_t>(mb) << 20;
  }
  std::size_t cap = std::size_t{256} << 20;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    const std::size_t sixteenth = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 16;
    if (sixteenth < cap) cap = sixteenth;
  }
  return cap;
}

}  // namespace

HostBufferCache& HostBufferCache::instance() {
  // Never destroyed: buffers may be freed by other static destructors after main returns.
  static auto* cache = new HostBufferCache(default_capacity());
  return *cache;
}

HostBufferCache::~HostBufferCache() { clear(); }

void* HostBufferCache::take(std::size_t bytes) {
  std::lock_guard lock(mu_);
  auto it = free_.find(bytes);
  if (it == free_.end()) return nullptr;
  void* p = it->second;
  free_.erase(it);
  cached_ -= bytes;
  return p;
}

bool HostBufferCache::keep(void* p, std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (cached_ + bytes > capacity_) return false;
  free_.emplace(bytes, p);
  cached_ += bytes;
  return true;
}

void HostBufferCache::limit_capacity(std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (bytes >= capacity_) return;
  capacity_ = bytes;
  for (auto it = free_.begin(); it != free_.end() && cached_ > capacity_;) {
    std::free(it->second);
    cached_ -= it->first;
    it = free_.erase(it);
  }
}

void HostBufferCache::clear() {
  std::lock_guard lock(mu_);
  for (auto& [bytes, p] : free_) std::free(p);
  free_.clear();
  cached_ = 0;
}

std::size_t HostBufferCache::cached_bytes() const {
  std::lock_guard lock(mu_);
  return cached_;
}

std::size_t HostBufferCache::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_;
}

}  // namespace tessera::detail
