// DataStore: the worker's values in device memory, host memory or spill files (the files'
// format is data_store_spill_file.cpp's; the --memory-limit forms are data_store_limits.cpp's).
#include "data_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <system_error>

#include "../core/logging.hpp"
#include "data_store_spill_file.hpp"
#include "tessera/core/buffer.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {

namespace fs = std::filesystem;

DataStore::DataStore(DataStoreOptions options) : options_(std::move(options)) {
  const double limit = static_cast<double>(options_.memory_limit);
  spill_enabled_ = options_.memory_limit > 0 && options_.target > 0;
  pause_enabled_ = options_.memory_limit > 0 && options_.pause > 0;
  // memory > x  <=>  memory > floor(x) for integer memory.
  auto threshold = [&](double f) {
    const double t = std::floor(f * limit);
    return t >= static_cast<double>(std::numeric_limits<std::size_t>::max())
               ? std::numeric_limits<std::size_t>::max()
               : static_cast<std::size_t>(t);
  };
  if (spill_enabled_) target_bytes_ = threshold(options_.target);
  if (pause_enabled_) pause_bytes_ = threshold(options_.pause);
}

DataStore::~DataStore() {
  for (auto& [id, segment] : segments_) ::close(segment.fd);
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) logging::warn("data store: cannot remove spill directory {}: {}", dir_.string(), ec.message());
}

namespace {
bool is_device_value(const Value& v) { return v.is_block() && v.block().memory_kind() == MemoryKind::Device; }
}  // namespace

bool DataStore::spillable(const Entry& e) const {
  if (e.nbytes == 0 || e.on_device) return false;
  return e.value.is_object() || e.value.is_block() || e.value.is_native();
}

bool DataStore::oversized(std::size_t nbytes) const { return spill_enabled_ && nbytes > target_bytes_; }

void DataStore::touch(Entry& e) {
  if (!e.in_lru) return;
  auto& list = list_of(e);
  list.splice(list.end(), list, e.lru);
}

void DataStore::unlink_lru(Entry& e) {
  if (!e.in_lru) return;
  list_of(e).erase(e.lru);
  e.in_lru = false;
}

void DataStore::drop(Entry& e) {
  unlink_lru(e);
  if (e.on_disk) {
    release_record(e);
    spilled_bytes_ -= e.nbytes;
  } else if (e.on_device) {
    device_bytes_ -= e.nbytes;
  } else {
    memory_bytes_ -= e.nbytes;
  }
}

void DataStore::note_device_failure(const std::string& what) {
  if (!device_warned_) {
    device_warned_ = true;
    logging::warn("data store: moving a device value to host memory failed, keeping it on the device: {}", what);
  } else {
    logging::debug("data store: moving a device value to host memory failed: {}", what);
  }
}

bool DataStore::move_to_host(const Key* key, Entry& e, std::vector<Value>& released) {
  Block host;
  try {
    host = to_host(e.value.block());
  } catch (const std::exception& ex) {
    note_device_failure("key '" + *key + "': " + ex.what());
    return false;
  }
  unlink_lru(e);  // from the device list (e.on_device still set)
  released.push_back(std::move(e.value));
  e.value = Value(std::move(host));
  e.on_device = false;
  device_bytes_ -= e.nbytes;
  memory_bytes_ += e.nbytes;
  ++stats_.device_spilled;
  stats_.device_spilled_bytes += e.nbytes;
  // The newest host value, as zict's Buffer does when fast evicts into slow; a value larger
  // than the host target goes on to disk at once (a failure leaves it in host memory).
  e.lru = lru_.insert(lru_.end(), key);
  e.in_lru = true;
  if (oversized(e.nbytes)) spill(e);
  return true;
}

void DataStore::evict_device(std::vector<Value>& released) {
  if (options_.device_memory_limit == 0) return;
  while (device_bytes_ > options_.device_memory_limit && !device_lru_.empty()) {
    const Key* key = device_lru_.front();
    if (!move_to_host(key, entries_.find(*key)->second, released)) return;  // logged; again next put
  }
}

fs::path DataStore::file_path(std::uint64_t file) const { return dir_ / (std::to_string(file) + ".spill"); }

void DataStore::close_segment(std::uint64_t id) {
  auto it = segments_.find(id);
  if (it == segments_.end()) return;
  ::close(it->second.fd);
  std::error_code ec;
  fs::remove(file_path(id), ec);
  if (ec) logging::debug("data store: cannot remove {}: {}", file_path(id).string(), ec.message());
  if (appending_ == id) appending_ = 0;
  segments_.erase(it);
}

void DataStore::release_record(const Entry& e) {
  auto it = segments_.find(e.file);
  if (it == segments_.end()) return;
  Segment& s = it->second;
  if (--s.live == 0) {
    close_segment(e.file);
    return;
  }
  // The disk space back now rather than when the whole segment goes (best effort: a file
  // system without holes keeps the bytes until then).
  ::fallocate(s.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(e.offset),
              static_cast<off_t>(e.length));
}

void DataStore::note_failure(const std::string& what) {
  spill_error_ = what;
  if (!warned_) {
    warned_ = true;
    logging::warn("data store: spilling to disk failed, keeping the data in memory: {}", what);
  } else {
    logging::debug("data store: spilling to disk failed: {}", what);
  }
}

bool DataStore::ensure_directory(std::string& error) {
  if (!dir_.empty()) {
    // Removed behind our back? Recreate it with the same name.
    std::error_code ec;
    if (fs::is_directory(dir_, ec)) return true;
    // The open segment went with it: new records go to a new one (the old ones are lost, and
    // reading them back fails naming the key).
    appending_ = 0;
    fs::create_directories(dir_, ec);
    if (!ec) return true;
    error = "cannot create spill directory " + dir_.string() + ": " + ec.message();
    return false;
  }
  std::error_code ec;
  fs::path root = options_.directory.empty() ? fs::temp_directory_path(ec) : fs::path(options_.directory);
  if (ec) {
    error = "no temporary directory: " + ec.message();
    return false;
  }
  fs::create_directories(root, ec);
  if (ec) {
    error = "cannot create spill directory root " + root.string() + ": " + ec.message();
    return false;
  }
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char name[64];
    std::snprintf(name, sizeof name, "tessera-spill-%ld-%llu-%08x", static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(counter.fetch_add(1)), static_cast<unsigned>(rd()));
    fs::path dir = root / name;
    if (fs::create_directory(dir, ec)) {
      dir_ = std::move(dir);
      return true;
    }
    if (ec) {
      error = "cannot create spill directory " + dir.string() + ": " + ec.message();
      return false;
    }
  }
  error = "cannot create a unique spill directory under " + root.string();
  return false;
}

bool DataStore::spill(Entry& e) {
  std::string error;
  if (!ensure_directory(error)) {
    note_failure(error);
    return false;
  }
  // Appended to the open segment; a segment that cannot take it (full, or its file system
  // refuses to grow it) is closed to appends and one retry goes to a fresh one.
  std::uint64_t length = 0;
  for (int attempt = 0;; ++attempt) {
    if (appending_ != 0 && segments_[appending_].size >= kSegmentBytes) appending_ = 0;
    if (appending_ == 0) {
      const std::uint64_t id = next_file_++;
      const int fd = ::open(file_path(id).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) {
        note_failure("cannot create " + file_path(id).string() + ": " + std::error_code(errno, std::generic_category()).message());
        return false;
      }
      segments_[id] = Segment{fd, 0, 0};
      appending_ = id;
    }
    Segment& s = segments_[appending_];
    error = detail::write_spill_record(s.fd, file_path(appending_), s.size, e.value, &length);
    if (error.empty()) break;
    const bool fresh = s.size == 0;
    if (s.live == 0) close_segment(appending_);
    else appending_ = 0;
    if (fresh || attempt > 0) {
      note_failure(error);
      return false;
    }
  }
  Segment& s = segments_[appending_];
  spill_error_.clear();
  unlink_lru(e);
  e.value = Value();
  e.on_disk = true;
  e.file = appending_;
  e.offset = s.size;
  e.length = length;
  s.size += length;
  ++s.live;
  memory_bytes_ -= e.nbytes;
  spilled_bytes_ += e.nbytes;
  ++stats_.spilled;
  stats_.spill_bytes_written += e.nbytes;
  return true;
}

void DataStore::evict() {
  if (!spill_enabled_) return;
  while (memory_bytes_ > target_bytes_ && !lru_.empty()) {
    auto it = entries_.find(*lru_.front());
    if (!spill(it->second)) return;  // logged; try again on the next put/get
  }
}

std::size_t DataStore::spill_least_recent(std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (!spill_enabled_) return 0;
  std::size_t spilled = 0;
  while (spilled < bytes && !lru_.empty()) {
    Entry& e = entries_.find(*lru_.front())->second;
    const std::size_t n = e.nbytes;
    if (!spill(e)) break;  // logged
    spilled += n;
  }
  return spilled;
}

void DataStore::put(const Key& key, Value value) {
  std::vector<Value> released;  // device values let go: freed after the lock (declared before it)
  std::lock_guard lock(mu_);
  auto [it, inserted] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (!inserted) {
    drop(e);
    released.push_back(std::move(e.value));
    e = Entry{};
  }
  e.nbytes = value.nbytes();
  e.on_device = is_device_value(value);
  e.value = std::move(value);
  if (e.on_device) {
    device_bytes_ += e.nbytes;
    if (e.nbytes > 0) {
      e.lru = device_lru_.insert(device_lru_.end(), &it->first);
      e.in_lru = true;
    }
    evict_device(released);
    evict();  // what moved to host may push host memory over its target
    return;
  }
  memory_bytes_ += e.nbytes;
  if (spillable(e)) {
    e.lru = lru_.insert(lru_.end(), &it->first);
    e.in_lru = true;
    // Straight to disk; when that fails the disk is failing: leave the others alone this time.
    if (oversized(e.nbytes) && !spill(e)) return;
  }
  evict();
}

std::optional<Value> DataStore::get(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  Entry& e = it->second;
  if (!e.on_disk) {
    touch(e);
    return e.value;
  }
  Value value = detail::read_spill_record(file_path(e.file), e.offset, e.length, key);
  ++stats_.unspilled;
  if (oversized(e.nbytes)) return value;  // would be spilled again at once: leave it on disk
  release_record(e);
  e.on_disk = false;
  e.file = 0;
  e.value = value;
  spilled_bytes_ -= e.nbytes;
  memory_bytes_ += e.nbytes;
  e.lru = lru_.insert(lru_.end(), &it->first);
  e.in_lru = true;
  evict();
  return value;
}

bool DataStore::contains(const Key& key) const {
  std::lock_guard lock(mu_);
  return entries_.count(key) != 0;
}

bool DataStore::erase(const Key& key) {
  Value released;  // freed after the lock
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  drop(it->second);
  released = std::move(it->second.value);
  entries_.erase(it);
  return true;
}

std::size_t DataStore::relieve_device_pressure(int device, std::size_t bytes) {
  std::vector<Value> released;  // freed after the lock: that is what gives the pool its memory
  std::lock_guard lock(mu_);
  ++stats_.device_pressure_calls;
  std::size_t freed = 0;
  for (auto it = device_lru_.begin(); it != device_lru_.end() && freed < std::max<std::size_t>(bytes, 1);) {
    const Key* key = *it++;  // move_to_host unlinks this element
    Entry& e = entries_.find(*key)->second;
    const auto& buffer = e.value.block().buffer();
    // Held by someone else too (a running task's argument): moving it would free nothing now.
    if (buffer->device() != device || buffer.use_count() > 1) continue;
    const std::size_t size = buffer->size();
    if (!move_to_host(key, e, released)) break;
    freed += size;
  }
  if (freed) evict();
  if (freed)
    logging::debug("data store: device {} short of {} bytes: moved {} bytes of device values to host", device, bytes,
                  freed);
  return freed;
}

bool DataStore::is_spilled(const Key& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.on_disk;
}

std::size_t DataStore::nbytes(const Key& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.nbytes;
}

std::size_t DataStore::memory_bytes() const {
  std::lock_guard lock(mu_);
  return memory_bytes_;
}

std::size_t DataStore::device_bytes() const {
  std::lock_guard lock(mu_);
  return device_bytes_;
}

bool DataStore::on_device(const Key& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.on_device;
}

std::size_t DataStore::spilled_bytes() const {
  std::lock_guard lock(mu_);
  return spilled_bytes_;
}

std::string DataStore::spill_error() const {
  std::lock_guard lock(mu_);
  return spill_error_;
}

std::size_t DataStore::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::vector<Key> DataStore::keys() const {
  std::vector<Key> out;
  {
    std::lock_guard lock(mu_);
    out.reserve(entries_.size());
    for (const auto& [k, e] : entries_) out.push_back(k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool DataStore::paused() const {
  std::lock_guard lock(mu_);
  return pause_enabled_ && memory_bytes_ > pause_bytes_;
}

DataStoreStats DataStore::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

fs::path DataStore::spill_directory() const {
  std::lock_guard lock(mu_);
  return dir_;
}

}  // namespace tessera::distributed
