#pragma once
/**
 * @file The scheduler's bounded record of finished tasks. push() runs under the scheduler's
 * lock on every finished task, so it is O(1) and, once the ring is full, allocation-free for
 * short strings: slots are overwritten in place and keep their buffers. Readers copy a bounded
 * page under the same lock and format it after releasing it. Private to libtessera.
 */
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/distributed/task_stream.hpp"

namespace tessera::distributed {

class TaskStreamRing {
 public:
  explicit TaskStreamRing(std::size_t capacity = 100000) : capacity_(capacity) {}

  /** @brief Records one entry (its id is assigned here); the oldest goes when full. */
  void push(const Key& key, const std::string& prefix, const std::string& worker, int thread, double start,
            double stop, std::size_t nbytes);

  /** @brief Up to `limit` entries with id > since, oldest first. */
  TaskStreamPage since(std::uint64_t since, std::size_t limit) const;

  std::uint64_t newest() const { return next_id_ - 1; }
  std::size_t size() const { return slots_.size(); }

 private:
  std::size_t capacity_;
  std::vector<TaskStreamEntry> slots_;  // grows to capacity_, then a ring
  std::uint64_t next_id_ = 1;
};

}  // namespace tessera::distributed
