#pragma once
/**
 * @file The worker's data store: task results held in device memory, host memory or on disk.
 * Device values above the device limit (or when the device pool runs short) move to host
 * memory, and host values above the host target spill to disk, least recently used first in
 * both tiers, like dask-cuda's DeviceHostFile over Dask's zict-based SpillBuffer.
 *
 * Private to the library (src/): the worker owns one DataStore; tests include it directly.
 */
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/core/key.hpp"
#include "tessera/core/value.hpp"

namespace tessera::distributed {

/** @brief Memory management settings of one worker's store (Dask's distributed.worker.memory.*). */
struct DataStoreOptions {
  /** Bytes; 0 = no limit: never spills, never pauses. */
  std::size_t memory_limit = 0;
  /** After a put/get, spill least-recently-used values while in-memory bytes > target * limit.
   *  A value larger than target * limit is written straight to disk. <= 0 disables spilling. */
  double target = 0.6;
  /** paused() while in-memory bytes > pause * limit. <= 0 disables pausing. */
  double pause = 0.8;
  /** Spill directory root. The store makes its own unique sub-directory in it on the first spill
   *  (creating the root too when missing) and removes that sub-directory in its destructor.
   *  Empty: std::filesystem::temp_directory_path(). */
  std::string directory;
  /** Bytes of values kept in device memory. After a put, while device_bytes() exceeds it, the
   *  least recently used device values are copied to host memory (tessera::to_host) and count
   *  as host memory from then on. 0 = no limit: device values move to host only when the device
   *  pool runs short (relieve_device_pressure). Dask-cuda's --device-memory-limit. */
  std::size_t device_memory_limit = 0;
};

/** @brief Counters since the store was made. */
struct DataStoreStats {
  std::size_t spilled = 0;              ///< values written to disk
  std::size_t unspilled = 0;            ///< values read back from disk by get()
  std::size_t spill_bytes_written = 0;  ///< value bytes written to disk (headers not counted)
  std::size_t device_spilled = 0;       ///< device values moved to host memory
  std::size_t device_spilled_bytes = 0; ///< bytes of those values
  std::size_t device_pressure_calls = 0;  ///< relieve_device_pressure() calls
};

/**
 * @brief Key -> Value map with three tiers: device memory, host memory, disk.
 *
 * A value lives in exactly one tier. Blocks in device memory are in the device tier: they count
 * in device_bytes(), not in memory_bytes(), and leave it (copied to host memory, then counting
 * as host memory) when device_bytes() exceeds device_memory_limit after a put, or when the
 * device pool runs short and calls relieve_device_pressure(); both take the least recently used
 * first. Host values (Objects, host and pinned-host Blocks) spill to disk above the host target,
 * least recently used first. Values never go back up by themselves: get() returns a moved
 * value from host memory or disk, and run_op copies it to the device when a device task needs it.
 *
 * Thread-safe: every member takes one mutex. Disk reads and writes and device-to-host copies
 * happen under it; device memory is never allocated under it, and device buffers the store lets
 * go are released after it is unlocked (their deleters return memory to the device pool).
 * Lock order: a caller may hold its own locks (the worker's state lock) when calling the store;
 * the store calls nothing that takes them. The device pool calls relieve_device_pressure()
 * from inside an allocation with no pool lock held; it takes the store's mutex, so the store
 * must never allocate device memory while holding it (it does not).
 * Bookkeeping is O(1) per put/get (hash map + LRU lists); only moving data does I/O.
 *
 * Spilling never drops data: when a write fails (disk full, unwritable directory) or a device
 * copy fails, the value stays where it was, the first failure is logged (spdlog warn; later ones
 * at debug level) and the next put/get tries again.
 */
class DataStore {
 public:
  explicit DataStore(DataStoreOptions options = {});
  ~DataStore();
  DataStore(const DataStore&) = delete;
  DataStore& operator=(const DataStore&) = delete;

  /** @brief Stores (or replaces) a value; may spill others (LRU). Does not throw on I/O errors. */
  void put(const Key& key, Value value);
  /**
   * @brief The value, marked most recently used; nullopt when absent.
   *
   * A spilled value is read back into memory and its file removed, which may spill others; a
   * spilled value larger than target * limit is read but left on disk. Throws tessera::Error
   * when a spill file cannot be read back (removed or corrupted behind the store's back).
   */
  std::optional<Value> get(const Key& key);
  bool contains(const Key& key) const;
  /** @brief Removes a key from memory or disk (deleting its file); false when absent. */
  bool erase(const Key& key);
  /** @brief True when the key is held on disk (false when in memory or absent). */
  bool is_spilled(const Key& key) const;
  /** @brief Value::nbytes() of the value, 0 when absent. */
  std::size_t nbytes(const Key& key) const;
  /** @brief Bytes of the values held in host memory (device values not counted). */
  std::size_t memory_bytes() const;
  /** @brief Bytes of the values held in device memory. */
  std::size_t device_bytes() const;
  /** @brief True when the key's value is a block in device memory. */
  bool on_device(const Key& key) const;
  /**
   * @brief Moves least-recently-used device values of `device` to host memory until `bytes`
   * of device memory have been freed; returns the bytes freed (possibly fewer, or 0).
   *
   * The worker installs it as the DeviceRuntime pressure handler. Only values the store alone
   * holds are moved (one a running task still reads would free nothing now). Runs on the
   * allocating thread; the moved values may in turn push host memory over its target and spill
   * to disk. Never throws.
   */
  std::size_t relieve_device_pressure(int device, std::size_t bytes);
  /**
   * @brief Spills least-recently-used host values until at least `bytes` of them went to disk
   * or none is left in memory; returns the bytes spilled. For a process whose resident memory
   * is above its limit for reasons the store does not count. Does nothing when spilling is off
   * (no memory limit); a failed write stops it (logged, as for any spill).
   */
  std::size_t spill_least_recent(std::size_t bytes);
  /** @brief Bytes of the values held on disk (value bytes, not file sizes). */
  std::size_t spilled_bytes() const;
  /** @brief Why the last spill to disk failed; empty when it succeeded (or none was tried). */
  std::string spill_error() const;
  /** @brief Keys held, in memory and on disk. */
  std::size_t size() const;
  /** @brief Every key held, sorted. */
  std::vector<Key> keys() const;
  /** @brief True while host in-memory bytes exceed pause * memory_limit. */
  bool paused() const;
  DataStoreStats stats() const;
  const DataStoreOptions& options() const { return options_; }
  /** @brief The store's own spill sub-directory; empty until the first successful spill. */
  std::filesystem::path spill_directory() const;

 private:
  struct Entry {
    Value value;                   // empty while on disk
    std::size_t nbytes = 0;
    std::uint64_t file = 0;        // spill segment number while on disk
    std::uint64_t offset = 0, length = 0;  // its record in that segment
    bool on_disk = false;
    bool on_device = false;        // a block in device memory (counts in device_bytes_)
    bool in_lru = false;           // in lru_ (host, spillable) or device_lru_ (device, nbytes > 0)
    std::list<const Key*>::iterator lru;
  };

  bool spillable(const Entry& e) const;
  bool oversized(std::size_t nbytes) const;
  std::list<const Key*>& list_of(const Entry& e) { return e.on_device ? device_lru_ : lru_; }
  void touch(Entry& e);
  void unlink_lru(Entry& e);
  void drop(Entry& e);           // releases memory / file of an entry about to be removed
  bool spill(Entry& e);          // memory -> disk; false (logged) on failure
  void evict();                  // spill LRU values while memory_bytes_ > threshold
  // device -> host (the old device value goes to `released`, freed after unlocking); false (logged) on failure
  bool move_to_host(const Key* key, Entry& e, std::vector<Value>& released);
  void evict_device(std::vector<Value>& released);  // move LRU device values while device_bytes_ > limit
  void note_device_failure(const std::string& what);
  bool ensure_directory(std::string& error);
  std::filesystem::path file_path(std::uint64_t file) const;
  // A spilled value's record is no longer needed: its bytes are freed (a hole punched) and the
  // segment is closed and removed with its last record.
  void release_record(const Entry& e);
  void close_segment(std::uint64_t id);
  void note_failure(const std::string& what);

  const DataStoreOptions options_;
  std::size_t target_bytes_ = 0;  // spill while memory_bytes_ > target_bytes_ (when spill_enabled_)
  std::size_t pause_bytes_ = 0;
  bool spill_enabled_ = false;
  bool pause_enabled_ = false;

  mutable std::mutex mu_;
  std::unordered_map<Key, Entry> entries_;
  std::list<const Key*> lru_;  // front: least recently used (in-memory spillable entries only)
  std::list<const Key*> device_lru_;  // front: least recently used device value
  std::size_t memory_bytes_ = 0;
  std::size_t device_bytes_ = 0;
  std::size_t spilled_bytes_ = 0;
  DataStoreStats stats_;
  std::filesystem::path dir_;
  std::uint64_t next_file_ = 1;
  // Spill segments: files that records are appended to, each until it passes kSegmentBytes.
  struct Segment {
    int fd = -1;
    std::uint64_t size = 0;  // bytes written (records end to end)
    std::size_t live = 0;    // records still needed
  };
  static constexpr std::uint64_t kSegmentBytes = std::uint64_t{64} << 20;
  std::unordered_map<std::uint64_t, Segment> segments_;
  std::uint64_t appending_ = 0;  // the segment records go to; 0: none open
  bool warned_ = false;
  std::string spill_error_;  // the last write's failure; cleared by a successful one
  bool device_warned_ = false;
};

}  // namespace tessera::distributed
