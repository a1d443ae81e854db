#include "tessera/comm/message.hpp"

#include <cstdint>
#include <istream>
#include <sstream>
#include <streambuf>

#include "tessera/comm/comm.hpp"
#include "ops/task_serialize.hpp"

namespace tessera::comm {

namespace {

// Where add_block() puts a block's metadata; the bytes are frames[frame].
struct BlockRef {
  std::uint8_t dtype = 0;
  Shape shape;
  std::int64_t frame = -1;  // -1: an empty Block
  template <class Archive>
  void serialize(Archive& ar) {
    ar(dtype, shape, frame);
  }
};

// Reads the header in place, without copying it into a string first.
struct MemoryBuf : std::streambuf {
  MemoryBuf(const char* p, std::size_t n) {
    char* b = const_cast<char*>(p);
    setg(b, b, b + n);
  }
};

}  // namespace

const Value& Message::field(const std::string& key) const {
  auto it = fields.find(key);
  if (it == fields.end()) throw_bad_field(key, "no such field");
  return it->second;
}

void Message::throw_bad_field(const std::string& key, const std::string& why) const {
  throw ProtocolError("message '" + op + "': field '" + key + "': " + why);
}

Message& Message::add_block(const std::string& key, const Block& block) {
  BlockRef ref;
  ref.dtype = static_cast<std::uint8_t>(block.dtype());
  ref.shape = block.shape();
  if (!block.empty()) ref.frame = static_cast<std::int64_t>(add_frame(block.buffer()));
  fields[key] = Value(to_object(ref, "tessera.comm.block_ref"));
  return *this;
}

Block Message::get_block(const std::string& key) const {
  const auto ref = get<BlockRef>(key);
  if (ref.frame < 0) return Block();
  if (static_cast<std::size_t>(ref.frame) >= frames.size() || !frames[ref.frame])
    throw_bad_field(key, "refers to frame " + std::to_string(ref.frame) + " of " +
                             std::to_string(frames.size()));
  if (!valid_dtype_code(ref.dtype))
    throw_bad_field(key, "unknown dtype code " + std::to_string(ref.dtype));
  try {
    Block b(static_cast<DType>(ref.dtype), ref.shape, frames[ref.frame]);
    return b;
  } catch (const Error& e) {
    throw_bad_field(key, e.what());
  }
}

std::size_t Message::frame_bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& f : frames) n += f ? f->size() : 0;
  return n;
}

std::string encode_header(const Message& msg) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(msg.op, msg.fields);
  }
  return std::move(os).str();
}

void decode_header(const void* data, std::size_t size, Message& msg) {
  MemoryBuf buf(static_cast<const char*>(data), size);
  std::istream is(&buf);
  try {
    cereal::BinaryInputArchive ar(is);
    ar(msg.op, msg.fields);
  } catch (const std::exception& e) {
    // cereal throws its own exceptions, and a corrupt length can make it ask for absurd memory.
    throw ProtocolError(std::string("corrupt message header (") + std::to_string(size) +
                        " bytes): " + e.what());
  }
  if (buf.in_avail() != 0)
    throw ProtocolError("corrupt message header: " + std::to_string(buf.in_avail()) +
                        " bytes left over after decoding");
}

}  // namespace tessera::comm
