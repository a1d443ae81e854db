#include "task_stream_ring.hpp"

#include <algorithm>

namespace tessera::distributed {

std::string TaskStreamRing::push(const Key& key, const std::string& prefix, const std::string& worker, int thread,
                                 double start, double stop, std::size_t nbytes) {
  if (capacity_ == 0) return {};
  std::uint64_t id = next_id_++;
  const bool reuse = slots_.size() == capacity_;
  if (!reuse) slots_.emplace_back();
  TaskStreamEntry& e = slots_[(id - 1) % capacity_];  // while growing, the one just added
  // Counted before the old entry is let go: a worker replacing its own bar never reaches 0.
  ++per_worker_[worker];
  std::string gone;
  if (reuse) {
    auto it = per_worker_.find(e.worker);
    if (it != per_worker_.end() && --it->second == 0) {
      gone = e.worker;
      per_worker_.erase(it);
    }
  }
  // Assignment, not construction: a reused slot keeps its strings' buffers.
  e.id = id;
  e.key = key;
  e.prefix = prefix;
  e.worker = worker;
  e.thread = thread;
  e.start = start;
  e.stop = stop;
  e.nbytes = nbytes;
  return gone;
}

std::size_t TaskStreamRing::entries_of(const std::string& worker) const {
  auto it = per_worker_.find(worker);
  return it == per_worker_.end() ? 0 : it->second;
}

TaskStreamPage TaskStreamRing::since(std::uint64_t since, std::size_t limit) const {
  TaskStreamPage page;
  page.newest = newest();
  std::uint64_t oldest = page.newest >= slots_.size() ? page.newest - slots_.size() + 1 : 1;
  std::uint64_t first = std::max(since + 1, oldest);
  if (since + 1 < oldest) page.dropped = oldest - (since + 1);
  if (first > page.newest || capacity_ == 0) return page;
  std::uint64_t last = std::min<std::uint64_t>(page.newest, first + limit - 1);
  if (limit == 0) return page;
  page.entries.reserve(static_cast<std::size_t>(last - first + 1));
  for (std::uint64_t id = first; id <= last; ++id) page.entries.push_back(slots_[(id - 1) % capacity_]);
  return page;
}

}  // namespace tessera::distributed
