#pragma once
/**
 * @file Private: cereal serialization of tasks and values (Task, Annotations, KeyRef, Arg,
 * Value, Object, Block), the encoding the wire protocol (comm, distributed) and the
 * "tessera.fused" task list (fused_tasks.hpp) share. Not installed: users serialize their own
 * types with tessera/ops/serialize.hpp.
 *
 * Blocks are written as (dtype, shape, raw bytes) with cereal::binary_data, so use a binary
 * archive. Device blocks must be copied to host first; serializing one throws
 * SerializationError.
 */
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cereal/types/variant.hpp>

#include "tessera/core/native.hpp"
#include "tessera/graph/task.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

// ---- Block ---------------------------------------------------------------------------------

template <class Archive>
void save(Archive& ar, const Block& b) {
  const bool present = !b.empty();
  ar(present);
  if (!present) return;
  if (b.memory_kind() == MemoryKind::Device)
    throw SerializationError("cannot serialize a block in device memory; copy it to host first");
  ar(static_cast<std::uint8_t>(b.dtype()), b.shape());
  if (b.nbytes() > 0) ar(cereal::binary_data(b.raw(), b.nbytes()));
}

template <class Archive>
void load(Archive& ar, Block& b) {
  bool present = false;
  ar(present);
  if (!present) {
    b = Block();
    return;
  }
  std::uint8_t dt = 0;
  Shape shape;
  ar(dt, shape);
  if (!valid_dtype_code(dt))
    throw SerializationError("corrupt block: unknown dtype code " + std::to_string(dt));
  // Reject shapes whose byte size is negative or absurd before allocating anything.
  constexpr std::int64_t kMaxBytes = std::int64_t{1} << 48;
  std::int64_t bytes = static_cast<std::int64_t>(itemsize(static_cast<DType>(dt)));
  for (auto d : shape) {
    if (d < 0) throw SerializationError("corrupt block: negative extent in shape " + shape_to_string(shape));
    if (d != 0 && bytes > kMaxBytes / d)
      throw SerializationError("corrupt block: shape " + shape_to_string(shape) + " is too large");
    bytes *= d;
  }
  // A bounded archive (comm's BoundedInputArchive) knows how many bytes the block can still
  // have: refuse a larger claim before allocating it.
  if constexpr (requires { ar.remaining(); })
    if (static_cast<std::uint64_t>(bytes) > ar.remaining())
      throw SerializationError("corrupt block: shape " + shape_to_string(shape) + " needs " + std::to_string(bytes) +
                               " bytes; only " + std::to_string(ar.remaining()) + " are left");
  Block out(static_cast<DType>(dt), std::move(shape));
  if (out.nbytes() > 0) ar(cereal::binary_data(out.raw(), out.nbytes()));
  b = std::move(out);
}

// ---- Object / Value ------------------------------------------------------------------------

template <class Archive>
void save(Archive& ar, const Object& o) {
  const bool has_bytes = o.bytes != nullptr;
  ar(o.type, has_bytes);
  if (has_bytes) ar(*o.bytes);
}

template <class Archive>
void load(Archive& ar, Object& o) {
  bool has_bytes = false;
  ar(o.type, has_bytes);
  if (has_bytes) {
    std::string bytes;
    ar(bytes);
    o.bytes = std::make_shared<const std::string>(std::move(bytes));
  } else {
    o.bytes.reset();
  }
}

// A Native goes through its codec and pack_native (one copy): literal task arguments are small;
// partitions cross processes as frames (distributed/wire.cpp), not through here.
template <class Archive>
void save(Archive& ar, const Value& v) {
  const std::uint8_t tag = v.is_block() ? 1 : v.is_object() ? 2 : v.is_native() ? 3 : 0;
  ar(tag);
  if (tag == 1) ar(v.block());
  else if (tag == 2) ar(v.object());
  else if (tag == 3) ar(v.native().type, pack_native(v.native()));
}

template <class Archive>
void load(Archive& ar, Value& v) {
  std::uint8_t tag = 0;
  ar(tag);
  switch (tag) {
    case 0: v = Value(); return;
    case 1: {
      Block b;
      ar(b);
      v = Value(std::move(b));
      return;
    }
    case 2: {
      Object o;
      ar(o);
      v = Value(std::move(o));
      return;
    }
    case 3: {
      std::string type, packed;
      ar(type, packed);
      auto buffer = Buffer::allocate_host(packed.size());
      if (!packed.empty()) std::memcpy(buffer->data(), packed.data(), packed.size());
      try {
        v = Value(unpack_native(type, buffer));
      } catch (const Error& e) {
        throw SerializationError(std::string("corrupt native value: ") + e.what());
      }
      return;
    }
    default: throw SerializationError("corrupt value: unknown tag " + std::to_string(tag));
  }
}

// ---- Graph types ---------------------------------------------------------------------------

template <class Archive>
void serialize(Archive& ar, KeyRef& r) {
  ar(r.key);
}

template <class Archive>
void serialize(Archive& ar, Annotations& a) {
  ar(a.resources, a.priority, a.retries, a.workers, a.allow_other_workers, a.target);
}

// Arg (std::variant<KeyRef, Value>) goes through cereal/types/variant.hpp.

template <class Archive>
void serialize(Archive& ar, Task& t) {
  ar(t.key, t.op, t.args, t.annotations);
}

}  // namespace tessera
