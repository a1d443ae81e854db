#include "wire.hpp"

#include "tessera/comm/comm.hpp"
#include "tessera/core/device.hpp"

namespace tessera::distributed::wire {
namespace {

// One value of put_values(): an Object in the header, or a Block whose bytes are a frame.
struct WireValue {
  std::uint8_t kind = 0;  // 0 empty, 1 block, 2 object
  std::uint8_t dtype = 0;
  Shape shape;
  std::int64_t frame = -1;  // -1: an empty Block
  Object object;
  template <class A>
  void serialize(A& ar) {
    ar(kind);
    if (kind == 1) ar(dtype, shape, frame);
    else if (kind == 2) ar(object);
  }
};

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
    } else if (w.kind == 1) {
      if (w.dtype > static_cast<std::uint8_t>(DType::Float64))
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
  return "empty";
}

}  // namespace tessera::distributed::wire
