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

inline constexpr std::uint32_t kProtocolVersion = 2;  // 2: TaskFinished carries the thread
inline constexpr std::uint32_t kMessageMagic = 0x4D525354;  ///< "TSRM" little-endian
inline constexpr std::uint32_t kHelloMagic = 0x48525354;    ///< "TSRH" little-endian
inline constexpr std::size_t kPreambleFixedBytes = 24;      ///< before the frame lengths
inline constexpr std::size_t kHelloFixedBytes = 12;         ///< magic, version, body length
inline constexpr std::size_t kMaxHelloBody = 64 * 1024;

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

/** @brief What each side says when a connection opens. */
struct Hello {
  std::uint32_t version = kProtocolVersion;
  std::string token;
  std::string name;
  std::string address;
  std::vector<std::string> transports;
};

std::vector<std::uint8_t> encode_hello(const Hello& hello);
/** @brief Body length from the fixed part; throws ProtocolError on a bad magic or size. */
std::uint32_t decode_hello_fixed(const std::uint8_t* p, std::uint32_t& version);
/** @brief Decodes the body; throws ProtocolError when malformed. */
Hello decode_hello_body(std::uint32_t version, const std::uint8_t* p, std::size_t n);

/** @brief Empty when hello may talk to us, else the reason (version first, then token). */
std::string check_hello(const Hello& ours, const Hello& theirs);

}  // namespace tessera::comm::wire
