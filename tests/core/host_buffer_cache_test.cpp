// The cache of large host buffers (src/core/host_buffer_cache.hpp): a freed buffer comes back for
// the next allocation of the same size, never for another size, and never beyond the capacity.
#include "core/host_buffer_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tessera/core/buffer.hpp"

namespace {

using tessera::Buffer;
using tessera::detail::HostBufferCache;

TEST(HostBufferCache, ExactSizesWithinTheCapacity) {
  HostBufferCache cache(std::size_t{8} << 20);
  void* a = std::malloc(std::size_t{4} << 20);
  void* b = std::malloc(std::size_t{4} << 20);
  void* c = std::malloc(std::size_t{2} << 20);
  EXPECT_TRUE(cache.keep(a, std::size_t{4} << 20));
  EXPECT_TRUE(cache.keep(b, std::size_t{4} << 20));
  EXPECT_FALSE(cache.keep(c, std::size_t{2} << 20));  // 10 MiB > 8 MiB
  std::free(c);
  EXPECT_EQ(cache.cached_bytes(), std::size_t{8} << 20);
  EXPECT_EQ(cache.take(std::size_t{2} << 20), nullptr);  // no other size
  void* got = cache.take(std::size_t{4} << 20);
  EXPECT_TRUE(got == a || got == b);
  EXPECT_EQ(cache.cached_bytes(), std::size_t{4} << 20);
  std::free(got);
  cache.limit_capacity(std::size_t{2} << 20);  // below what is cached: the 4 MiB buffer goes
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.capacity(), std::size_t{2} << 20);
  cache.limit_capacity(std::size_t{64} << 20);  // never raised
  EXPECT_EQ(cache.capacity(), std::size_t{2} << 20);
  cache.clear();
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.take(std::size_t{4} << 20), nullptr);
}

TEST(HostBufferCache, LargeBuffersAreReusedAndSmallOnesAreNot) {
  auto& cache = HostBufferCache::instance();
  if (cache.capacity() < (std::size_t{8} << 20)) GTEST_SKIP() << "the cache is off (TESSERA_HOST_BUFFER_CACHE_MB)";
  cache.clear();
  const std::size_t size = (std::size_t{6} << 20) - 123;  // 3 huge pages
  void* first;
  {
    auto b = Buffer::allocate_host(size);
    first = b->data();
    std::memset(b->data(), 7, size);
  }
  EXPECT_EQ(cache.cached_bytes(), std::size_t{6} << 20);
  {
    auto b = Buffer::allocate_host(size - 1000);  // the same number of huge pages
    EXPECT_EQ(b->data(), first);
    EXPECT_EQ(b->size(), size - 1000);
    EXPECT_EQ(cache.cached_bytes(), 0u);
  }
  {
    auto b = Buffer::allocate_host(std::size_t{10} << 20);  // another size: a new buffer
    EXPECT_NE(b->data(), first);
  }
  {
    auto small = Buffer::allocate_host(4096);  // below 2 MiB: plain malloc, never cached
    (void)small;
  }
  EXPECT_EQ(cache.cached_bytes(), (std::size_t{6} << 20) + (std::size_t{10} << 20));
  cache.clear();
}

}  // namespace
