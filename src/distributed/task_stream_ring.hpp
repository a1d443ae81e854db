#pragma once
/**
 * @file The scheduler's bounded record of finished tasks. push() runs under the scheduler's
 * lock on every finished task, so it is O(1) and, once the ring is full, allocation-free for
 * short strings: slots are overwritten in place and keep their buffers. Readers copy a bounded
 * page under the same lock and format it after releasing it. Private to libtessera.
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/distributed/task_stream.hpp"

namespace tessera::distributed {

class TaskStreamRing {
 public:
  explicit TaskStreamRing(std::size_t capacity = 100000) : capacity_(capacity) {}

  /**
   * @brief Records one entry (its id is assigned here); the oldest goes when full. Returns the
   * worker none of whose entries is left once the oldest went (empty: none), so that the caller
   * frees what it keeps per worker for the stream (the scheduler's clock offsets).
   */
  std::string push(const Key& key, const std::string& prefix, const std::string& worker, int thread, double start,
                   double stop, std::size_t nbytes);

  /** @brief How many entries name this worker (0 when none). */
  std::size_t entries_of(const std::string& worker) const;
  /** @brief How many workers the entries name. */
  std::size_t worker_count() const { return per_worker_.size(); }

  /** @brief Up to `limit` entries with id > since, oldest first. */
  TaskStreamPage since(std::uint64_t since, std::size_t limit) const;

  std::uint64_t newest() const { return next_id_ - 1; }
  std::size_t size() const { return slots_.size(); }

 private:
  std::size_t capacity_;
  std::vector<TaskStreamEntry> slots_;  // grows to capacity_, then a ring
  std::uint64_t next_id_ = 1;
  // Entries per worker: one hash lookup per push for the new entry and one for the one it
  // replaces (no scan), so that a departed worker's records go with its last bar.
  std::unordered_map<std::string, std::size_t> per_worker_;
};

}  // namespace tessera::distributed
