// Spill records: one value each, appended to a segment file (format in data_store_spill_file.hpp).
#include "data_store_spill_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed::detail {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[4] = {'T', 'S', 'P', '1'};
constexpr std::uint8_t kKindBlock = 1;
constexpr std::uint8_t kKindObject = 2;
constexpr std::uint8_t kKindNative = 3;  // payload: pack_native's bytes; type name: the codec
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

 private:
  int fd_;
};

/** Writes every byte of the iovecs at `offset` (pwritev, retried on partial writes and EINTR); errno on failure. */
int write_all_at(int fd, std::uint64_t offset, iovec* iov, int count) {
  while (count > 0) {
    if (iov->iov_len == 0) { ++iov; --count; continue; }
    ssize_t n = ::pwritev(fd, iov, count, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    offset += static_cast<std::uint64_t>(n);
    auto left = static_cast<std::size_t>(n);
    while (count > 0 && left >= iov->iov_len) { left -= iov->iov_len; ++iov; --count; }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

/** Reads exactly n bytes at `offset`; false on error or early end of file (errno 0 then). */
bool read_all_at(int fd, std::uint64_t offset, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30), static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) { errno = 0; return false; }
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

}  // namespace

std::string write_spill_record(int fd, const fs::path& path, std::uint64_t offset, const Value& value,
                               std::uint64_t* length) {
  std::string header;
  std::string packed;  // a Native's parts, packed
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
  } else if (value.is_native()) {
    kind = kKindNative;
    type_name = value.native().type;
    if (type_name.size() > kMaxTypeName) return "native type name too long";
    try {
      packed = pack_native(value.native());
    } catch (const Error& e) {
      return std::string("cannot encode: ") + e.what();
    }
    payload = packed.data();
    payload_bytes = packed.size();
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

  iovec iov[2] = {{header.data(), header.size()},
                  {const_cast<void*>(payload), static_cast<std::size_t>(payload_bytes)}};
  const int err = write_all_at(fd, offset, iov, payload_bytes ? 2 : 1);
  if (err != 0) {
    // Cut the partial record off, so that the segment holds whole records only.
    const bool cut = ::ftruncate(fd, static_cast<off_t>(offset)) == 0;
    return "cannot write " + path.string() + ": " + errno_text(err) +
           (cut ? "" : " (and cutting the partial record off failed: " + errno_text(errno) + ")");
  }
  *length = header.size() + payload_bytes;
  return {};
}

Value read_spill_record(const fs::path& path, std::uint64_t offset, std::uint64_t length, const Key& key) {
  auto fail = [&](const std::string& why) -> Error {
    return Error("data store: cannot read the spilled value of key '" + key + "' from " + path.string() +
                 ": " + why);
  };
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw fail(errno_text(errno));
  std::uint64_t at = offset;
  auto read_or_throw = [&](void* data, std::size_t n) {
    if (!read_all_at(fd.get(), at, data, n)) throw fail(errno ? errno_text(errno) : "file is truncated");
    at += n;
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
  if (length != kFixedHeader + 8ull * ndim + type_len + payload) throw fail("record size does not match its header");

  if (kind == kKindBlock) {
    if (!valid_dtype_code(dtype)) throw fail("corrupt header (dtype)");
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
  if (kind == kKindNative) {
    if (ndim != 0) throw fail("corrupt header");
    std::string type(type_len, '\0');
    if (type_len) read_or_throw(type.data(), type_len);
    auto buffer = Buffer::allocate_host(payload);
    if (payload) read_or_throw(buffer->data(), payload);
    try {
      return Value(unpack_native(type, buffer));
    } catch (const Error& e) {
      throw fail(e.what());
    }
  }
  throw fail("corrupt header (kind)");
}

}  // namespace tessera::distributed::detail
