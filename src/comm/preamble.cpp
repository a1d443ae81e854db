// What a receiver checks in a message's preamble before it allocates anything for the message
// (tcp_conn.cpp and ucx_engine.cpp read the bytes; see docs/protocol.md, "Framing"). Kept apart from
// comm.cpp so that the fuzz target for the frame reader (fuzz/preamble_fuzz.cpp) links only this.
#include <cstdio>
#include <cstring>

#include "transports.hpp"

namespace tessera::comm::detail {

std::string check_preamble(const wire::Preamble& pre, const CommOptions& options) {
  if (pre.magic != wire::kMessageMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", pre.magic);
    return std::string("bad message magic ") + hex + " (garbage, or not a Tessera peer)";
  }
  if (pre.version != wire::kProtocolVersion)
    return "message protocol version " + std::to_string(pre.version) + ", expected " +
           std::to_string(wire::kProtocolVersion);
  if (pre.nframes > options.max_frames)
    return "message declares " + std::to_string(pre.nframes) + " frames; the limit is " +
           std::to_string(options.max_frames);
  if (pre.header_bytes > options.max_header_bytes)
    return "message header of " + std::to_string(pre.header_bytes) + " bytes exceeds the limit of " +
           std::to_string(options.max_header_bytes);
  return {};
}

std::string read_frame_sizes(const std::uint8_t* p, const wire::Preamble& pre, const CommOptions& options,
                             std::vector<std::uint64_t>& lens, std::uint64_t& total) {
  lens.resize(pre.nframes);
  total = pre.header_bytes;
  for (std::uint32_t i = 0; i < pre.nframes; ++i) {
    std::uint64_t n = 0;
    std::memcpy(&n, p + wire::kPreambleFixedBytes + 8 * i, 8);  // x86-64: little-endian
    if (n > options.max_frame_bytes)
      return "frame " + std::to_string(i) + " of " + std::to_string(n) + " bytes exceeds the limit of " +
             std::to_string(options.max_frame_bytes);
    lens[i] = n;
    total += n;
  }
  if (total > options.max_message_bytes)
    return "message of " + std::to_string(total) + " bytes exceeds the limit of " +
           std::to_string(options.max_message_bytes);
  return {};
}

}  // namespace tessera::comm::detail
