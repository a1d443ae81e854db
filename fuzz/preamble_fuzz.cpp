// The frame reader: what tcp:// (and ucx://'s TCP stage) does with the bytes of a message as they
// arrive (src/comm/tcp_conn.cpp, begin_message and finish_message): the fixed preamble and its
// checks, the frame lengths and theirs, then, once the header and frames are all there, the
// header's decoding and the blocks that refer to frames. Nothing is allocated for a length that
// the checks have not passed and the input does not hold (a peer's message costs what it sent).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "comm/transports.hpp"
#include "tessera/comm/message.hpp"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < comm::wire::kPreambleFixedBytes) return 0;
  const comm::CommOptions options;  // the limits every listener has by default
  const auto pre = comm::wire::decode_preamble_fixed(data);
  if (!comm::detail::check_preamble(pre, options).empty()) return 0;
  const std::size_t need = comm::wire::kPreambleFixedBytes + 8 * std::size_t{pre.nframes};
  if (size < need) return 0;  // the reader waits for the frame lengths
  std::vector<std::uint64_t> lens;
  std::uint64_t total = 0;
  if (!comm::detail::read_frame_sizes(data, pre, options, lens, total).empty()) return 0;
  if (lens.size() != pre.nframes) __builtin_trap();
  if (total > size - need) return 0;  // the reader waits for the rest
  const std::uint8_t* p = data + need;
  comm::Message msg;
  try {
    comm::decode_header(p, pre.header_bytes, msg);
  } catch (const comm::ProtocolError&) {
    return 0;
  }
  p += pre.header_bytes;
  for (auto n : lens) {
    auto frame = Buffer::allocate_host(n);
    if (n) std::memcpy(frame->data(), p, n);
    p += n;
    msg.frames.push_back(std::move(frame));
  }
  // What receivers do with a block field: a frame, its dtype and shape (Message::get_block).
  for (const auto& [key, value] : msg.fields) {
    if (!value.is_object() || value.object().type != "tessera.comm.block_ref") continue;
    try {
      const Block b = msg.get_block(key);
      if (!b.empty() && b.nbytes() > b.buffer()->size()) __builtin_trap();  // a block past its frame
    } catch (const Error&) {
    }
  }
  return 0;
}
