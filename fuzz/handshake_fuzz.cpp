// The handshake (src/comm/wire.cpp, wire_auth.cpp) as a listener with a token meets a peer: the
// peer's hello (fixed part, then body), the check of both hellos, then the peer's proof of the
// token, 32 bytes that must equal the HMAC over both hellos (src/comm/tcp_setup.cpp). The input
// is the peer's side of the exchange: its hello, then its proof.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/wire.hpp"
#include "tessera/comm/comm.hpp"

using namespace tessera::comm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string token = "fuzz-token";
  static const wire::Hello ours = [] {
    wire::Hello h;
    h.nonce = std::string(wire::kNonceBytes, '\x5a');  // fixed, so a run can be replayed
    h.flags = wire::kHelloProves;
    h.name = "scheduler";
    h.address = "tcp://127.0.0.1:8786";
    h.transports = {"tcp"};
    return h;
  }();
  static const std::vector<std::uint8_t> our_bytes = wire::encode_hello(ours);

  if (size < wire::kHelloFixedBytes) return 0;
  std::uint32_t version = 0, n = 0;
  wire::Hello theirs;
  try {
    n = wire::decode_hello_fixed(data, version);
    if (n > size - wire::kHelloFixedBytes) return 0;  // the listener waits for the rest
    theirs = wire::decode_hello_body(version, data + wire::kHelloFixedBytes, n);
  } catch (const ProtocolError&) {
    return 0;
  }
  // Of our version, what decoded encodes to the same hello.
  if (version == wire::kProtocolVersion) {
    const auto again = wire::encode_hello(theirs);
    std::uint32_t v2 = 0;
    const auto n2 = wire::decode_hello_fixed(again.data(), v2);
    const auto back = wire::decode_hello_body(v2, again.data() + wire::kHelloFixedBytes, n2);
    if (back.nonce != theirs.nonce || back.name != theirs.name || back.address != theirs.address ||
        back.transports != theirs.transports || back.flags != theirs.flags)
      __builtin_trap();
  }
  if (!wire::check_hello(ours, theirs).empty()) return 0;
  const std::size_t used = wire::kHelloFixedBytes + n;
  const std::vector<std::uint8_t> their_bytes(data, data + used);
  const auto expected = wire::handshake_proof(token, wire::Role::connector, their_bytes, our_bytes);
  const std::vector<std::uint8_t> proof(data + used, data + std::min(size, used + wire::kProofBytes));
  // A proof from the input is accepted only if it is the HMAC itself; the listener's own proof
  // (its role's label) never passes for the connector's.
  const bool accepted = wire::proofs_equal(proof, expected);
  if (accepted && proof != expected) __builtin_trap();
  const auto reflected = wire::handshake_proof(token, wire::Role::listener, their_bytes, our_bytes);
  if (wire::proofs_equal(reflected, expected)) __builtin_trap();
  return 0;
}
