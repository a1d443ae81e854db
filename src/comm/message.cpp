#include "tessera/comm/message.hpp"

#include <cstdint>
#include <sstream>

#include "bounded_archive.hpp"
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
  // Bounded: no length inside the header may claim more than the header holds (a peer's
  // message costs no more memory than it sent).
  detail::BoundedInputArchive ar(data, size);
  try {
    ar(msg.op, msg.fields);
  } catch (const std::exception& e) {
    throw ProtocolError(std::string("corrupt message header (") + std::to_string(size) +
                        " bytes): " + e.what());
  }
  if (ar.remaining() != 0)
    throw ProtocolError("corrupt message header: " + std::to_string(ar.remaining()) +
                        " bytes left over after decoding");
}

}  // namespace tessera::comm
