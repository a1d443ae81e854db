// The message decoder (comm::decode_header, src/comm/message.cpp): a header as it comes off the
// wire. A header that decodes must encode again to bytes that decode to the same message (the
// round trip is the same bytes from then on).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  comm::Message msg;
  try {
    comm::decode_header(data, size, msg);
  } catch (const comm::ProtocolError&) {
    return 0;
  }
  std::string once;
  try {
    once = comm::encode_header(msg);
  } catch (const Error&) {
    return 0;  // a native value whose type is not registered here, say
  }
  comm::Message again;
  comm::decode_header(once.data(), once.size(), again);  // throws (a crash) if our own bytes do not decode
  if (again.op != msg.op || again.fields.size() != msg.fields.size()) __builtin_trap();
  if (comm::encode_header(again) != once) __builtin_trap();
  for (const auto& [key, value] : msg.fields) (void)value.describe();
  return 0;
}
