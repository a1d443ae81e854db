#include "tessera/core/key.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <unistd.h>

namespace tessera {

Key chunk_key(const std::string& prefix, const std::vector<std::int64_t>& index) {
  Key k = prefix;
  for (auto i : index) {
    k += ',';
    k += std::to_string(i);
  }
  return k;
}

std::string unique_name(const std::string& prefix) {
  // Unique across processes too (pid and a random salt), so a client's keys never collide
  // with another client's on a shared cluster.
  static const std::uint64_t salt = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ static_cast<std::uint64_t>(::getpid()) ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  char buf[40];
  std::snprintf(buf, sizeof buf, "-%08llx%llx", static_cast<unsigned long long>(salt & 0xffffffffULL),
                static_cast<unsigned long long>(n));
  return prefix + buf;
}

}  // namespace tessera
