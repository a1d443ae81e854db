#include "data_store.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <system_error>

#include <spdlog/spdlog.h>

#include "tessera/core/buffer.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------
// Spill file format (native byte order; files never leave the machine that wrote them):
//   "TSP1"  u8 kind (1 block, 2 object)  u8 dtype  u16 reserved  u32 ndim  u32 type_len
//   u64 payload_bytes  i64 shape[ndim]  char type[type_len]  payload
// ---------------------------------------------------------------------------------------------
constexpr char kMagic[4] = {'T', 'S', 'P', '1'};
constexpr std::uint8_t kKindBlock = 1;
constexpr std::uint8_t kKindObject = 2;
constexpr std::size_t kFixedHeader = 4 + 1 + 1 + 2 + 4 + 4 + 8;
constexpr std::uint32_t kMaxNdim = 64;
constexpr std::uint32_t kMaxTypeName = 1u << 16;

template <typename T>
void append_pod(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

template <typename T>
T read_pod(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { if (fd_ >= 0) ::close(fd_); }
  int get() const { return fd_; }
  int release() { int fd = fd_; fd_ = -1; return fd; }

 private:
  int fd_;
};

/** Writes every byte of the iovecs (writev, retried on partial writes and EINTR); errno on failure. */
int write_all(int fd, iovec* iov, int count) {
  while (count > 0) {
    if (iov->iov_len == 0) { ++iov; --count; continue; }
    ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    auto left = static_cast<std::size_t>(n);
    while (count > 0 && left >= iov->iov_len) { left -= iov->iov_len; ++iov; --count; }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

/** Reads exactly n bytes; false on error or early end of file (errno 0 then). */
bool read_all(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::read(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) { errno = 0; return false; }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

/** Writes one value to a new file; returns "" on success, else what went wrong. */
std::string write_value(const fs::path& path, const Value& value) {
  std::string header;
  const void* payload = nullptr;
  std::uint64_t payload_bytes = 0;
  std::uint8_t kind = 0, dtype = 0;
  std::uint32_t ndim = 0;
  std::string_view type_name;
  const Shape* shape = nullptr;
  if (value.is_block()) {
    const Block& b = value.block();
    kind = kKindBlock;
    dtype = static_cast<std::uint8_t>(b.dtype());
    ndim = static_cast<std::uint32_t>(b.ndim());
    shape = &b.shape();
    payload = b.raw();
    payload_bytes = b.nbytes();
  } else {
    const Object& o = value.object();
    kind = kKindObject;
    type_name = o.type;
    if (type_name.size() > kMaxTypeName) return "object type name too long";
    payload = o.bytes ? o.bytes->data() : nullptr;
    payload_bytes = o.bytes ? o.bytes->size() : 0;
  }
  header.reserve(kFixedHeader + ndim * 8 + type_name.size());
  header.append(kMagic, 4);
  append_pod<std::uint8_t>(header, kind);
  append_pod<std::uint8_t>(header, dtype);
  append_pod<std::uint16_t>(header, 0);
  append_pod<std::uint32_t>(header, ndim);
  append_pod<std::uint32_t>(header, static_cast<std::uint32_t>(type_name.size()));
  append_pod<std::uint64_t>(header, payload_bytes);
  if (shape) for (std::int64_t d : *shape) append_pod<std::int64_t>(header, d);
  header.append(type_name);

  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (fd.get() < 0) return "cannot create " + path.string() + ": " + errno_text(errno);
  iovec iov[2] = {{header.data(), header.size()},
                  {const_cast<void*>(payload), static_cast<std::size_t>(payload_bytes)}};
  int err = write_all(fd.get(), iov, payload_bytes ? 2 : 1);
  if (err == 0 && ::close(fd.release()) != 0) err = errno;
  if (err != 0) {
    std::error_code ec;
    fs::remove(path, ec);
    return "cannot write " + path.string() + ": " + errno_text(err);
  }
  return {};
}

/** Reads a value written by write_value; throws Error / SerializationError. */
Value read_value(const fs::path& path, const Key& key) {
  auto fail = [&](const std::string& why) -> Error {
    return Error("data store: cannot read the spilled value of key '" + key + "' from " + path.string() +
                 ": " + why);
  };
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw fail(errno_text(errno));
  auto read_or_throw = [&](void* data, std::size_t n) {
    if (!read_all(fd.get(), data, n)) throw fail(errno ? errno_text(errno) : "file is truncated");
  };
  char fixed[kFixedHeader];
  read_or_throw(fixed, sizeof fixed);
  if (std::memcmp(fixed, kMagic, 4) != 0) throw fail("not a spill file");
  const auto kind = read_pod<std::uint8_t>(fixed + 4);
  const auto dtype = read_pod<std::uint8_t>(fixed + 5);
  const auto ndim = read_pod<std::uint32_t>(fixed + 8);
  const auto type_len = read_pod<std::uint32_t>(fixed + 12);
  const auto payload = read_pod<std::uint64_t>(fixed + 16);
  if (ndim > kMaxNdim || type_len > kMaxTypeName) throw fail("corrupt header");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw fail(errno_text(errno));
  if (static_cast<std::uint64_t>(st.st_size) != kFixedHeader + 8ull * ndim + type_len + payload)
    throw fail("file size does not match its header");

  if (kind == kKindBlock) {
    if (dtype > static_cast<std::uint8_t>(DType::Float64)) throw fail("corrupt header (dtype)");
    Shape shape(ndim);
    if (ndim) read_or_throw(shape.data(), 8ull * ndim);
    for (std::int64_t d : shape)
      if (d < 0) throw fail("corrupt header (shape)");
    const auto dt = static_cast<DType>(dtype);
    if (static_cast<std::uint64_t>(shape_size(shape)) * itemsize(dt) != payload)
      throw fail("corrupt header (byte count)");
    auto buffer = Buffer::allocate_host(payload);
    if (payload) read_or_throw(buffer->data(), payload);
    return Value(Block(dt, std::move(shape), std::move(buffer)));
  }
  if (kind == kKindObject) {
    if (ndim != 0) throw fail("corrupt header");
    Object o;
    o.type.resize(type_len);
    if (type_len) read_or_throw(o.type.data(), type_len);
    auto bytes = std::make_shared<std::string>(payload, '\0');
    if (payload) read_or_throw(bytes->data(), payload);
    o.bytes = std::move(bytes);
    return Value(std::move(o));
  }
  throw fail("corrupt header (kind)");
}

std::size_t fraction_of(double f, std::size_t total) {
  return static_cast<std::size_t>(std::floor(f * static_cast<double>(total)));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// DataStore
// ---------------------------------------------------------------------------------------------

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
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) spdlog::warn("data store: cannot remove spill directory {}: {}", dir_.string(), ec.message());
}

namespace {
bool is_device_value(const Value& v) { return v.is_block() && v.block().memory_kind() == MemoryKind::Device; }
}  // namespace

bool DataStore::spillable(const Entry& e) const {
  if (e.nbytes == 0 || e.on_device) return false;
  return e.value.is_object() || e.value.is_block();
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
    std::error_code ec;
    fs::remove(file_path(e.file), ec);
    if (ec) spdlog::debug("data store: cannot remove {}: {}", file_path(e.file).string(), ec.message());
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
    spdlog::warn("data store: moving a device value to host memory failed, keeping it on the device: {}", what);
  } else {
    spdlog::debug("data store: moving a device value to host memory failed: {}", what);
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

void DataStore::note_failure(const std::string& what) {
  if (!warned_) {
    warned_ = true;
    spdlog::warn("data store: spilling to disk failed, keeping the data in memory: {}", what);
  } else {
    spdlog::debug("data store: spilling to disk failed: {}", what);
  }
}

bool DataStore::ensure_directory(std::string& error) {
  if (!dir_.empty()) {
    // Removed behind our back? Recreate it with the same name.
    std::error_code ec;
    if (fs::is_directory(dir_, ec)) return true;
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
  const std::uint64_t file = next_file_++;
  error = write_value(file_path(file), e.value);
  if (!error.empty()) {
    note_failure(error);
    return false;
  }
  unlink_lru(e);
  e.value = Value();
  e.on_disk = true;
  e.file = file;
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
  Value value = read_value(file_path(e.file), key);
  ++stats_.unspilled;
  if (oversized(e.nbytes)) return value;  // would be spilled again at once: leave it on disk
  std::error_code ec;
  fs::remove(file_path(e.file), ec);
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
    spdlog::debug("data store: device {} short of {} bytes: moved {} bytes of device values to host", device, bytes,
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

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

namespace {

/** The whole of s as a finite double (no leading '+', no hex, no inf/nan); nullopt otherwise. */
std::optional<double> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> unit_multiplier(const std::string& unit) {
  static const std::map<std::string, double> units = {
      {"", 1.0},          {"b", 1.0},
      {"k", 1e3},         {"kb", 1e3},         {"m", 1e6},          {"mb", 1e6},
      {"g", 1e9},         {"gb", 1e9},         {"t", 1e12},         {"tb", 1e12},
      {"p", 1e15},        {"pb", 1e15},
      {"ki", 0x1p10},     {"kib", 0x1p10},     {"mi", 0x1p20},      {"mib", 0x1p20},
      {"gi", 0x1p30},     {"gib", 0x1p30},     {"ti", 0x1p40},      {"tib", 0x1p40},
      {"pi", 0x1p50},     {"pib", 0x1p50},
  };
  auto it = units.find(unit);
  if (it == units.end()) return std::nullopt;
  return it->second;
}

}  // namespace

namespace {

// parse_memory_limit and parse_device_memory_limit: `device` changes "auto" (0.8 of the device
// instead of total / nworkers) and the wording of messages.
std::size_t parse_limit(const std::string& text, std::size_t total_memory, int nworkers, bool device) {
  auto fail = [&](const std::string& why) {
    return Error(std::string(device ? "invalid device memory limit \"" : "invalid memory limit \"") + text +
                 "\": " + why + " (expected 0, auto, a fraction such as 0.5, or bytes such as 4GB, 512MiB, 10e9)");
  };
  if (nworkers < 1) throw fail("nworkers must be at least 1, got " + std::to_string(nworkers));
  std::string s;  // spaces removed, lower case, as Dask's parse_bytes
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty()) throw fail("empty");
  std::size_t limit = 0;
  if (s == "none") return 0;
  if (device && (s == "auto" || s == "default")) {
    limit = fraction_of(kDefaultDeviceMemoryFraction, total_memory);
  } else if (!device && s == "auto") {
    limit = total_memory / static_cast<std::size_t>(nworkers);
  } else {
    // Trailing letters are the unit, the rest the number, as Dask's parse_bytes.
    std::size_t u = s.size();
    while (u > 0 && std::isalpha(static_cast<unsigned char>(s[u - 1]))) --u;
    const std::string unit = s.substr(u);
    const std::string number = s.substr(0, u);
    if (number.empty()) throw fail("no number");
    auto value = parse_number(number);
    if (!value) throw fail("'" + number + "' is not a number");
    if (*value < 0) throw fail("negative");
    auto mult = unit_multiplier(unit);
    if (!mult) throw fail("unknown unit '" + unit + "'");
    if (unit.empty() && *value <= 1.0) {
      limit = fraction_of(*value, total_memory);  // a fraction of the machine's memory
    } else {
      const double bytes = std::floor(*value * *mult);
      if (bytes >= 0x1p64) throw fail("too large");
      limit = static_cast<std::size_t>(bytes);
    }
  }
  if (limit > 0 && total_memory > 0 && limit > total_memory) {
    spdlog::warn("{} \"{}\" ({} bytes) exceeds the total {} memory ({} bytes); using the latter",
                 device ? "device memory limit" : "memory limit", text, limit, device ? "device" : "system",
                 total_memory);
    limit = total_memory;
  }
  return limit;
}

}  // namespace

std::size_t parse_memory_limit(const std::string& text, std::size_t total_memory, int nworkers) {
  return parse_limit(text, total_memory, nworkers, false);
}

std::size_t parse_device_memory_limit(const std::string& text, std::size_t total_device_memory) {
  return parse_limit(text, total_device_memory, 1, true);
}

namespace {

std::optional<std::uint64_t> read_limit_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || ptr != word.data() + word.size() || v == 0) return std::nullopt;
  return v;
}

}  // namespace

std::size_t system_memory() {
  std::uint64_t total = 0;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) total = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  auto clamp = [&](std::optional<std::uint64_t> v) {
    if (v && (total == 0 || *v < total)) total = *v;
  };
  // cgroup v1 (an unlimited group reports a huge number, which the comparison ignores).
  clamp(read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  // cgroup v2: this process's group ("0::/path" in /proc/self/cgroup), and the mount root.
  {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) != 0) continue;
      std::string group = line.substr(3);
      if (!group.empty() && group != "/") clamp(read_limit_file(fs::path("/sys/fs/cgroup") / group.substr(1) / "memory.max"));
    }
    clamp(read_limit_file("/sys/fs/cgroup/memory.max"));
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_RSS, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > 0)
    clamp(static_cast<std::uint64_t>(rl.rlim_max));
  return static_cast<std::size_t>(total);
}

std::map<std::string, double> parse_resources(const std::string& text) {
  std::map<std::string, double> out;
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream in(spaced);
  std::string entry;
  auto fail = [&](const std::string& why) {
    return Error("invalid resources \"" + text + "\": entry \"" + entry + "\" " + why +
                 " (expected NAME=NUMBER entries separated by spaces or commas, e.g. \"GPU=2 MEM=10e9\")");
  };
  while (in >> entry) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) throw fail("has no '='");
    const std::string name = entry.substr(0, eq);
    const std::string value = entry.substr(eq + 1);
    if (name.empty()) throw fail("has no name");
    auto v = parse_number(value);
    if (!v) throw fail("has a value that is not a number");
    if (*v < 0) throw fail("is negative");
    if (!out.emplace(name, *v).second) throw fail("repeats resource " + name);
  }
  return out;
}

}  // namespace tessera::distributed
