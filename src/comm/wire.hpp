#pragma once
/**
 * @file The byte layout of tcp:// (and later ucx://) framing and of the handshake hello.
 * See docs/protocol.md. Private to comm (tests include it to speak exactly the same bytes).
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::comm::wire {

// 2: the hello carries a nonce instead of the token; a token is proven by an HMAC (wire_auth.cpp).
// 3: TaskFinished carries the thread, Heartbeat spilled bytes and bytes received/sent, the
//    worker event TransferDone and the task-stream request (docs/protocol.md).
// 4: the scheduler event AcquireReplicas (retire-workers moves data first) and the requests
//    retire-workers and adaptive-target.
// 5: Heartbeat (and a worker in scheduler-info) carries the process's CPU, memory and GPU use.
// 6: Client::restart: the restart request, restart-worker, restarted, register-worker's nanny.
// 7: Heartbeat's usage (and a worker's in scheduler-info) carries the GPU's PCIe and NVLink
//    throughput (NVML).
// 8: the nanny's own connection: register-nanny, kill-worker, worker-killed.
// 9: the nanny's worker-given-up (its worker's waiting tasks err, issue 29); the connector
//    proves its token first and the listener sends its proof only once it checked that one
//    (a stranger got an HMAC of the token to test guesses against offline).
// 10: ucx:// links between two processes of one host may offer and use a shared ring (active
//     messages of kinds 5-9, docs/ucx.md); a version-9 peer would close the link on them.
inline constexpr std::uint32_t kProtocolVersion = 12;
inline constexpr std::uint32_t kMessageMagic = 0x4D525354;  ///< "TSRM" little-endian
inline constexpr std::uint32_t kHelloMagic = 0x48525354;    ///< "TSRH" little-endian
/// What a tcp:// listener at its connection cap sends before it closes a connection: kFullMagic,
/// its version, its cap; 12 bytes, where a connector reads a hello's fixed part.
inline constexpr std::uint32_t kFullMagic = 0x46525354;     ///< "TSRF" little-endian
inline constexpr std::size_t kPreambleFixedBytes = 24;      ///< before the frame lengths
inline constexpr std::size_t kHelloFixedBytes = 12;         ///< magic, version, body length
// A hello comes before the peer has proved anything, so it must cost little: its body (a nonce,
// a name, an address, the transports, ~100-300 bytes in practice) is at most 4 KiB, and is read
// as it arrives (tcp_setup.cpp). Was 64 KiB, allocated and zeroed when the prefix claimed it.
inline constexpr std::size_t kMaxHelloBody = 4 * 1024;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;          ///< HMAC-SHA256
inline constexpr std::uint32_t kHelloProves = 1;        ///< hello flag: a token proof follows
/**
 * What a listener sends instead of its proof when the connector's was wrong, then closes: the
 * same kProofBytes for every connection and token, so it tells the connector why (its token is
 * not the listener's) and nothing a guess of the token could be tested against.
 */
inline constexpr char kProofRefused[kProofBytes + 1] = "tessera: token proof refused\0\0\0";

/** @brief The fixed part of a message preamble. */
struct Preamble {
  std::uint32_t magic = kMessageMagic;
  std::uint16_t version = static_cast<std::uint16_t>(kProtocolVersion);
  std::uint16_t flags = 0;
  std::uint32_t nframes = 0;
  std::uint64_t header_bytes = 0;
};

/** @brief Preamble plus each frame length, ready to write. */
std::vector<std::uint8_t> encode_preamble(std::uint64_t header_bytes,
                                          const std::vector<std::uint64_t>& frame_bytes,
                                          std::uint16_t version = kProtocolVersion);
/** @brief Reads the fixed part (kPreambleFixedBytes bytes); no validation. */
Preamble decode_preamble_fixed(const std::uint8_t* p);

/**
 * @brief What each side says when a connection opens. It never holds the token: a side with a
 * token sets kHelloProves and then sends handshake_proof() over both hellos.
 */
struct Hello {
  std::uint32_t version = kProtocolVersion;
  std::string nonce;        ///< kNonceBytes from the OS random source (make_nonce)
  std::uint32_t flags = 0;  ///< kHelloProves
  std::string name;
  std::string address;
  std::vector<std::string> transports;
};

std::vector<std::uint8_t> encode_hello(const Hello& hello);
/** @brief The notice a listener at its cap of `max_connections` sends (kFullMagic). */
std::vector<std::uint8_t> encode_full_notice(std::uint32_t max_connections);
/**
 * @brief Body length from the fixed part; throws ProtocolError on a bad magic or size, and one
 * saying the server is full on a listener's kFullMagic notice.
 */
std::uint32_t decode_hello_fixed(const std::uint8_t* p, std::uint32_t& version);
/**
 * @brief Decodes the body; throws ProtocolError when malformed. Of a body of another version
 * only the four strings are read (name, address and transports, for check_hello's refusal).
 */
Hello decode_hello_body(std::uint32_t version, const std::uint8_t* p, std::size_t n);

/**
 * @brief Empty when hello may talk to us, else the reason: the version first, then whether both
 * sides have a token (the token itself is checked by the proofs that follow).
 */
std::string check_hello(const Hello& ours, const Hello& theirs);

// ---- proving the token (wire_auth.cpp) --------------------------------------------------------

/** @brief Which end of the connection computes a proof; the two never produce the same one. */
enum class Role { connector, listener };

/** @brief n bytes from the OS random source (OpenSSL RAND_bytes); throws CommError on failure. */
std::string random_bytes(std::size_t n);
/** @brief A fresh nonce for a hello. */
inline std::string make_nonce() { return random_bytes(kNonceBytes); }
/**
 * @brief HMAC-SHA256 keyed by the token over role and both hellos as sent (the connector's
 * first), so it binds both nonces, names, addresses and flags: kProofBytes.
 */
std::vector<std::uint8_t> handshake_proof(const std::string& token, Role role,
                                          const std::vector<std::uint8_t>& connector_hello,
                                          const std::vector<std::uint8_t>& listener_hello);
/** @brief Constant-time comparison (CRYPTO_memcmp); false when the sizes differ. */
bool proofs_equal(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b);
/** @brief Whether two tokens are equal, in time independent of where they differ (inproc://). */
bool tokens_equal(const std::string& a, const std::string& b);

}  // namespace tessera::comm::wire
