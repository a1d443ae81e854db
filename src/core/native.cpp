#include "tessera/core/native.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "tessera/core/error.hpp"

namespace tessera {
namespace {

struct CodecTable {
  std::shared_mutex mutex;
  // std::map: references handed out by native_codec() stay valid when others are added.
  std::map<std::string, NativeCodec> codecs;
};

CodecTable& table() {
  static CodecTable t;
  return t;
}

}  // namespace

void register_native_codec(const std::string& type, NativeCodec codec) {
  auto& t = table();
  std::unique_lock lock(t.mutex);
  t.codecs[type] = std::move(codec);
}

const NativeCodec& native_codec(const std::string& type) {
  auto& t = table();
  std::shared_lock lock(t.mutex);
  auto it = t.codecs.find(type);
  if (it == t.codecs.end())
    throw Error("no codec for native value type '" + type +
                "' in this process (is the library that defines it, such as tessera_dataframe, linked?)");
  return it->second;
}

}  // namespace tessera

namespace tessera {
namespace {

constexpr std::size_t kAlign = 64;
constexpr std::uint32_t kMaxFrames = 1u << 20;
constexpr std::uint64_t kAbsent = ~std::uint64_t{0};  // the size of a frame the codec left out

std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

template <typename T>
void append_pod(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

}  // namespace

std::string pack_native(const Native& native) {
  const NativeParts parts = native_codec(native.type).encode(native);
  std::string out;
  append_pod<std::uint32_t>(out, static_cast<std::uint32_t>(parts.frames.size()));
  append_pod<std::uint64_t>(out, parts.header.size());
  for (const auto& f : parts.frames) append_pod<std::uint64_t>(out, f ? f->size() : kAbsent);
  out.append(parts.header);
  for (const auto& f : parts.frames) {
    if (!f) continue;
    out.resize(aligned(out.size()), '\0');
    if (f->size() == 0) continue;
    if (f->kind() == MemoryKind::Device)
      throw Error("pack_native(" + native.type + "): a frame is in device memory; copy it to host first");
    out.append(static_cast<const char*>(f->data()), f->size());
  }
  return out;
}

Native unpack_native(const std::string& type, const std::shared_ptr<Buffer>& packed) {
  const auto* base = static_cast<const char*>(packed->data());
  const std::size_t size = packed->size();
  std::size_t pos = 0;
  auto read_u64 = [&](const char* what) {
    if (size - pos < 8) throw Error("native value '" + type + "': packed bytes end inside the " + what);
    std::uint64_t v;
    std::memcpy(&v, base + pos, 8);
    pos += 8;
    return v;
  };
  if (size < 4) throw Error("native value '" + type + "': packed bytes too short");
  std::uint32_t count;
  std::memcpy(&count, base, 4);
  pos = 4;
  if (count > kMaxFrames) throw Error("native value '" + type + "': corrupt frame count");
  const std::uint64_t header_size = read_u64("header size");
  std::vector<std::uint64_t> sizes(count);
  for (auto& s : sizes) s = read_u64("frame sizes");
  if (header_size > size - pos) throw Error("native value '" + type + "': header runs past the end");
  std::string header(base + pos, header_size);
  pos += header_size;
  std::vector<std::shared_ptr<Buffer>> frames;
  frames.reserve(count);
  for (std::uint64_t s : sizes) {
    if (s == kAbsent) {
      frames.emplace_back();
      continue;
    }
    pos = aligned(pos);
    if (pos > size || s > size - pos) throw Error("native value '" + type + "': a frame runs past the end");
    // A view into `packed`: the deleter keeps the whole packing alive instead of freeing.
    frames.push_back(Buffer::adopt(const_cast<char*>(base) + pos, s, MemoryKind::Host, -1,
                                   [keep = packed](void*, std::size_t) {}));
    pos += s;
  }
  return native_codec(type).decode(header, std::move(frames));
}

}  // namespace tessera
