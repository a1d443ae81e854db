#include "frame_pool.hpp"

#include <sys/mman.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace tessera::comm::detail {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kHuge = std::size_t{2} << 20;
constexpr std::size_t kLargeMaxBytes = std::size_t{512} << 20;
constexpr auto kLargeIdle = std::chrono::seconds(30);
constexpr unsigned kSmallMinShift = 6;   // 64 B
constexpr unsigned kSmallMaxShift = 20;  // 1 MiB; 1 MiB < n < 2 MiB rounds up to 2 MiB (large)
// Each small class keeps at most this many bytes of free buffers (and at most kSmallClassMax):
// 15 classes, so at most 60 MiB idle, and one busy size never crowds out the others.
constexpr std::size_t kSmallClassBytes = std::size_t{4} << 20;
constexpr std::size_t kSmallClassMax = 256;

class FramePool {
 public:
  static FramePool& instance() {
    static auto* pool = new FramePool();  // never destroyed: Buffers may be freed during exit
    return *pool;
  }

  Frame get(std::size_t n) {
    if (n <= (std::size_t{1} << kSmallMaxShift)) return get_small(n);
    return get_large(n);
  }

  std::size_t free_bytes() {
    std::lock_guard lk(mu_);
    return small_bytes_ + large_bytes_;
  }

 private:
  struct Entry {
    void* p;
    std::size_t capacity;
    Clock::time_point freed;
  };

  static unsigned size_class(std::size_t n) {
    const unsigned shift = n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1));
    return shift < kSmallMinShift ? kSmallMinShift : shift;
  }

  Frame get_small(std::size_t n) {
    const unsigned cls = size_class(n);
    const std::size_t capacity = std::size_t{1} << cls;
    void* p = nullptr;
    {
      std::lock_guard lk(mu_);
      auto& list = small_[cls];
      if (!list.empty()) {
        p = list.back();
        list.pop_back();
        small_bytes_ -= capacity;
      }
    }
    if (!p) {
      p = std::aligned_alloc(64, capacity);
      if (!p) throw std::bad_alloc();
    }
    return Buffer::adopt(p, n, MemoryKind::Host, -1, [cls](void* q, std::size_t) { instance().put_small(q, cls); });
  }

  void put_small(void* p, unsigned cls) {
    const std::size_t capacity = std::size_t{1} << cls;
    {
      std::lock_guard lk(mu_);
      auto& list = small_[cls];
      if (list.size() < kSmallClassMax && (list.size() + 1) * capacity <= kSmallClassBytes) {
        list.push_back(p);
        small_bytes_ += capacity;
        return;
      }
    }
    std::free(p);
  }

  Frame get_large(std::size_t n) {
    const std::size_t rounded = (n + kHuge - 1) / kHuge * kHuge;
    void* p = nullptr;
    std::size_t capacity = 0;
    std::vector<Entry> expired;
    {
      std::lock_guard lk(mu_);
      expire_locked(Clock::now(), expired);
      // Best fit, never more than a quarter larger than needed; among equals the most recently
      // freed (its pages are the likeliest still in cache).
      std::size_t best = large_.size();
      for (std::size_t i = large_.size(); i-- > 0;) {
        const auto c = large_[i].capacity;
        if (c >= rounded && c - rounded <= rounded / 4 && (best == large_.size() || c < large_[best].capacity))
          best = i;
      }
      if (best < large_.size()) {
        p = large_[best].p;
        capacity = large_[best].capacity;
        large_bytes_ -= capacity;
        large_.erase(large_.begin() + static_cast<std::ptrdiff_t>(best));
      }
    }
    release(expired);
    if (!p) {
      p = std::aligned_alloc(kHuge, rounded);
      if (!p) throw std::bad_alloc();
      ::madvise(p, rounded, MADV_HUGEPAGE);
      capacity = rounded;
    }
    return Buffer::adopt(p, n, MemoryKind::Host, -1,
                         [capacity](void* q, std::size_t) { instance().put_large(q, capacity); });
  }

  void put_large(void* p, std::size_t capacity) {
    if (capacity > kLargeMaxBytes) return std::free(p);
    std::vector<Entry> evicted;
    {
      std::lock_guard lk(mu_);
      const auto now = Clock::now();
      expire_locked(now, evicted);
      large_.push_back({p, capacity, now});
      large_bytes_ += capacity;
      while (large_bytes_ > kLargeMaxBytes) {
        large_bytes_ -= large_.front().capacity;
        evicted.push_back(large_.front());
        large_.erase(large_.begin());
      }
    }
    release(evicted);
  }

  void expire_locked(Clock::time_point now, std::vector<Entry>& out) {
    while (!large_.empty() && now - large_.front().freed > kLargeIdle) {
      large_bytes_ -= large_.front().capacity;
      out.push_back(large_.front());
      large_.erase(large_.begin());
    }
  }

  static void release(const std::vector<Entry>& entries) {
    for (const auto& e : entries) std::free(e.p);
  }

  std::mutex mu_;
  std::array<std::vector<void*>, kSmallMaxShift + 1> small_;
  std::size_t small_bytes_ = 0;
  std::vector<Entry> large_;  // oldest first; a handful at most
  std::size_t large_bytes_ = 0;
};

}  // namespace

Frame allocate_frame(std::size_t n) { return FramePool::instance().get(n); }

std::size_t frame_pool_free_bytes() { return FramePool::instance().free_bytes(); }

}  // namespace tessera::comm::detail
