#include "wire.hpp"

#include "tessera/comm/comm.hpp"
#include "tessera/core/device.hpp"

namespace tessera::distributed::wire {
namespace {

// One value of put_values(): an Object in the header, a Block whose bytes are a frame, or a
// Native's codec header with its buffers as frames.
struct WireValue {
  std::uint8_t kind = 0;  // 0 empty, 1 block, 2 object, 3 native
  std::uint8_t dtype = 0;
  Shape shape;
  std::int64_t frame = -1;  // -1: an empty Block
  Object object;
  std::string native_type, native_header;
  std::vector<std::int64_t> native_frames;  // -1: an absent buffer
  template <class A>
  void serialize(A& ar) {
    ar(kind);
    if (kind == 1) ar(dtype, shape, frame);
    else if (kind == 2) ar(object);
    else if (kind == 3) ar(native_type, native_header, native_frames);
  }
};

// A device buffer copied to host memory (through a byte Block, the unit to_host moves).
std::shared_ptr<Buffer> buffer_to_host(const std::shared_ptr<Buffer>& b) {
  if (!b || b->kind() != MemoryKind::Device) return b;
  return to_host(Block(DType::Bool, {static_cast<std::int64_t>(b->size())}, b)).buffer();
}

}  // namespace

void put_values(comm::Message& m, const std::vector<Value>& values, DeviceBlocks device_blocks) {
  std::vector<WireValue> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Value& v = values[i];
    WireValue& w = out[i];
    if (v.is_block()) {
      // Host blocks are framed without a copy; device blocks are copied to host unless the
      // comm takes device frames (it then stages them itself, overlapped with the send).
      const Block b = device_blocks == DeviceBlocks::AsIs ? v.block() : to_host(v.block());
      w.kind = 1;
      w.dtype = static_cast<std::uint8_t>(b.dtype());
      w.shape = b.shape();
      if (!b.empty()) w.frame = static_cast<std::int64_t>(m.add_frame(b.buffer()));
    } else if (v.is_object()) {
      w.kind = 2;
      w.object = v.object();
    } else if (v.is_native()) {
      NativeParts parts = native_codec(v.native().type).encode(v.native());
      w.kind = 3;
      w.native_type = v.native().type;
      w.native_header = std::move(parts.header);
      for (auto& f : parts.frames) {
        if (!f) {
          w.native_frames.push_back(-1);
          continue;
        }
        w.native_frames.push_back(static_cast<std::int64_t>(
            m.add_frame(device_blocks == DeviceBlocks::AsIs ? f : buffer_to_host(f))));
      }
    }
  }
  m.set("values", out);
}

std::vector<Value> get_values(const comm::Message& m) {
  auto in = m.get<std::vector<WireValue>>("values");
  std::vector<Value> out;
  out.reserve(in.size());
  for (auto& w : in) {
    if (w.kind == 0) {
      out.emplace_back();
    } else if (w.kind == 2) {
      out.emplace_back(std::move(w.object));
    } else if (w.kind == 3) {
      std::vector<std::shared_ptr<Buffer>> frames;
      frames.reserve(w.native_frames.size());
      for (std::int64_t f : w.native_frames) {
        if (f < 0) {
          frames.emplace_back();
          continue;
        }
        if (static_cast<std::size_t>(f) >= m.frames.size() || !m.frames[f])
          throw comm::ProtocolError("message '" + m.op + "': native value refers to missing frame " +
                                    std::to_string(f));
        frames.push_back(m.frames[f]);
      }
      try {
        out.emplace_back(native_codec(w.native_type).decode(w.native_header, std::move(frames)));
      } catch (const Error& e) {
        throw comm::ProtocolError("message '" + m.op + "': bad native value '" + w.native_type + "': " + e.what());
      }
    } else if (w.kind == 1) {
      if (!valid_dtype_code(w.dtype))
        throw comm::ProtocolError("message '" + m.op + "': unknown dtype code " + std::to_string(w.dtype));
      if (w.frame < 0) {
        out.emplace_back(Block());
        continue;
      }
      if (static_cast<std::size_t>(w.frame) >= m.frames.size() || !m.frames[w.frame])
        throw comm::ProtocolError("message '" + m.op + "': value refers to missing frame " +
                                  std::to_string(w.frame));
      try {
        out.emplace_back(Block(static_cast<DType>(w.dtype), w.shape, m.frames[w.frame]));
      } catch (const Error& e) {
        throw comm::ProtocolError("message '" + m.op + "': bad block: " + e.what());
      }
    } else {
      throw comm::ProtocolError("message '" + m.op + "': unknown value kind " + std::to_string(w.kind));
    }
  }
  return out;
}

std::string value_type(const Value& v) {
  if (v.is_block()) {
    const Block& b = v.block();
    std::string s(dtype_name(b.dtype()));
    s += shape_to_string(b.shape());
    return s;
  }
  if (v.is_object()) return v.object().type;
  if (v.is_native()) return v.native().type;
  return "empty";
}

}  // namespace tessera::distributed::wire
