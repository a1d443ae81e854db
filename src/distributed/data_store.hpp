#pragma once
/**
 * @file The worker's data store: task results held in memory, spilled to disk under memory
 * pressure (least recently used first), like Dask's zict-based SpillBuffer.
 *
 * Private to the library (src/): the worker owns one DataStore; tests include it directly.
 */
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <list>
#include <map>
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
};

/** @brief Counters since the store was made. */
struct DataStoreStats {
  std::size_t spilled = 0;              ///< values written to disk
  std::size_t unspilled = 0;            ///< values read back from disk by get()
  std::size_t spill_bytes_written = 0;  ///< value bytes written to disk (headers not counted)
};

/**
 * @brief Key -> Value map that keeps in-memory bytes under a target by spilling to disk.
 *
 * Thread-safe: every member takes one mutex (disk reads and writes happen under it).
 * Bookkeeping is O(1) per put/get (hash map + LRU list); only spilling does I/O.
 *
 * Only host values are spilled: Objects and Blocks in host or pinned-host memory. Blocks in
 * device memory and empty Values stay in memory (they count in memory_bytes()).
 *
 * Spilling never drops data: when a write fails (disk full, unwritable directory), the value
 * stays in memory, the first failure is logged (spdlog warn; later ones at debug level) and
 * the next put/get tries again.
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
  /** @brief Bytes of the values held in memory. */
  std::size_t memory_bytes() const;
  /** @brief Bytes of the values held on disk (value bytes, not file sizes). */
  std::size_t spilled_bytes() const;
  /** @brief Keys held, in memory and on disk. */
  std::size_t size() const;
  /** @brief Every key held, sorted. */
  std::vector<Key> keys() const;
  /** @brief True while in-memory bytes exceed pause * memory_limit. */
  bool paused() const;
  DataStoreStats stats() const;
  const DataStoreOptions& options() const { return options_; }
  /** @brief The store's own spill sub-directory; empty until the first successful spill. */
  std::filesystem::path spill_directory() const;

 private:
  struct Entry {
    Value value;                   // empty while on disk
    std::size_t nbytes = 0;
    std::uint64_t file = 0;        // spill file number while on disk
    bool on_disk = false;
    bool in_lru = false;           // in memory and spillable
    std::list<const Key*>::iterator lru;
  };

  bool spillable(const Entry& e) const;
  bool oversized(std::size_t nbytes) const;
  void touch(Entry& e);
  void unlink_lru(Entry& e);
  void drop(Entry& e);           // releases memory / file of an entry about to be removed
  bool spill(Entry& e);          // memory -> disk; false (logged) on failure
  void evict();                  // spill LRU values while memory_bytes_ > threshold
  bool ensure_directory(std::string& error);
  std::filesystem::path file_path(std::uint64_t file) const;
  void note_failure(const std::string& what);

  const DataStoreOptions options_;
  std::size_t target_bytes_ = 0;  // spill while memory_bytes_ > target_bytes_ (when spill_enabled_)
  std::size_t pause_bytes_ = 0;
  bool spill_enabled_ = false;
  bool pause_enabled_ = false;

  mutable std::mutex mu_;
  std::unordered_map<Key, Entry> entries_;
  std::list<const Key*> lru_;  // front: least recently used (in-memory spillable entries only)
  std::size_t memory_bytes_ = 0;
  std::size_t spilled_bytes_ = 0;
  DataStoreStats stats_;
  std::filesystem::path dir_;
  std::uint64_t next_file_ = 1;
  bool warned_ = false;
};

/**
 * @brief Parses Dask's --memory-limit forms into bytes (0 = no limit).
 *
 * "0" or "none": no limit; "auto": total_memory / nworkers; a unitless number <= 1 ("0.5",
 * "1"): that fraction of total_memory (as Dask: of the whole machine); a byte count with an
 * optional decimal (kB, MB, GB, TB, PB, k, M, G, T, P, B) or binary (KiB, MiB, GiB, TiB, PiB,
 * Ki, ...) unit, case-insensitive, spaces ignored: "4GB", "4 GB", "4GiB", "512MiB", "10e9",
 * "1kB". Fractional byte counts are rounded down.
 * As Dask, a limit above total_memory is capped to it (with a warning) when total_memory > 0.
 * Throws tessera::Error quoting the input on anything else (negative, non-finite, garbage).
 */
std::size_t parse_memory_limit(const std::string& text, std::size_t total_memory, int nworkers = 1);

/** @brief Total physical memory of this machine (sysconf), or the cgroup (v1/v2) limit when smaller. */
std::size_t system_memory();

/**
 * @brief Parses worker resources, "GPU=2 MEM=10e9" or "GPU=2,MEM=10e9", into {"GPU":2,"MEM":1e10}.
 *
 * Throws tessera::Error quoting the entry on a missing '=', an empty name, a repeated name or a
 * value that is not a finite number >= 0. An empty or blank text gives an empty map.
 */
std::map<std::string, double> parse_resources(const std::string& text);

}  // namespace tessera::distributed
