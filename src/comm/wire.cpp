#include "wire.hpp"

#include <cstdio>
#include <cstring>

#include "tessera/comm/comm.hpp"

namespace tessera::comm::wire {

namespace {

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

template <typename T>
T get(const std::uint8_t* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(p[i]) << (8 * i);
  return v;
}

void put_string(std::vector<std::uint8_t>& out, const std::string& s) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

std::string get_string(const std::uint8_t*& p, const std::uint8_t* end, const char* what) {
  if (end - p < 4) throw ProtocolError(std::string("truncated handshake (") + what + ")");
  const auto n = get<std::uint32_t>(p);
  p += 4;
  if (static_cast<std::size_t>(end - p) < n)
    throw ProtocolError(std::string("truncated handshake (") + what + " of " + std::to_string(n) + " bytes)");
  std::string s(reinterpret_cast<const char*>(p), n);
  p += n;
  return s;
}

}  // namespace

std::vector<std::uint8_t> encode_preamble(std::uint64_t header_bytes,
                                          const std::vector<std::uint64_t>& frame_bytes,
                                          std::uint16_t version) {
  std::vector<std::uint8_t> out;
  out.reserve(kPreambleFixedBytes + 8 * frame_bytes.size());
  put<std::uint32_t>(out, kMessageMagic);
  put<std::uint16_t>(out, version);
  put<std::uint16_t>(out, 0);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(frame_bytes.size()));
  put<std::uint32_t>(out, 0);
  put<std::uint64_t>(out, header_bytes);
  for (auto n : frame_bytes) put<std::uint64_t>(out, n);
  return out;
}

Preamble decode_preamble_fixed(const std::uint8_t* p) {
  Preamble pre;
  pre.magic = get<std::uint32_t>(p);
  pre.version = get<std::uint16_t>(p + 4);
  pre.flags = get<std::uint16_t>(p + 6);
  pre.nframes = get<std::uint32_t>(p + 8);
  pre.header_bytes = get<std::uint64_t>(p + 16);
  return pre;
}

std::vector<std::uint8_t> encode_hello(const Hello& hello) {
  std::vector<std::uint8_t> body;
  // Version 1's four strings (the nonce where the token was), then the flags: a version 1 peer
  // reads the strings, ignores the rest and reports the version mismatch.
  put_string(body, hello.nonce);
  put_string(body, hello.name);
  put_string(body, hello.address);
  std::string transports;
  for (const auto& t : hello.transports) transports += (transports.empty() ? "" : ",") + t;
  put_string(body, transports);
  put<std::uint32_t>(body, hello.flags);
  std::vector<std::uint8_t> out;
  out.reserve(kHelloFixedBytes + body.size());
  put<std::uint32_t>(out, kHelloMagic);
  put<std::uint32_t>(out, hello.version);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<std::uint8_t> encode_full_notice(std::uint32_t max_connections) {
  std::vector<std::uint8_t> out;
  put<std::uint32_t>(out, kFullMagic);
  put<std::uint32_t>(out, kProtocolVersion);
  put<std::uint32_t>(out, max_connections);
  return out;
}

std::uint32_t decode_hello_fixed(const std::uint8_t* p, std::uint32_t& version) {
  const auto magic = get<std::uint32_t>(p);
  if (magic == kFullMagic)
    throw ProtocolError("the server is full: it has as many connections open as it allows (" +
                        std::to_string(get<std::uint32_t>(p + 8)) + ", max_connections); try again later");
  if (magic != kHelloMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", magic);
    throw ProtocolError(std::string("bad handshake magic ") + hex + " (not a Tessera peer?)");
  }
  version = get<std::uint32_t>(p + 4);
  const auto n = get<std::uint32_t>(p + 8);
  if (n > kMaxHelloBody)
    throw ProtocolError("handshake of " + std::to_string(n) + " bytes exceeds the limit of " +
                        std::to_string(kMaxHelloBody));
  return n;
}

Hello decode_hello_body(std::uint32_t version, const std::uint8_t* p, std::size_t n) {
  const std::uint8_t* end = p + n;
  Hello h;
  h.version = version;
  h.nonce = get_string(p, end, "nonce");
  h.name = get_string(p, end, "name");
  h.address = get_string(p, end, "address");
  const auto transports = get_string(p, end, "transports");
  std::size_t start = 0;
  while (start < transports.size()) {
    auto comma = transports.find(',', start);
    if (comma == std::string::npos) comma = transports.size();
    if (comma > start) h.transports.push_back(transports.substr(start, comma - start));
    start = comma + 1;
  }
  // Another version: its name is known (the four strings keep their place), the rest is not
  // ours to read; version 1 sent its token where the nonce is, which is not kept.
  if (version != kProtocolVersion) {
    h.nonce.clear();
    return h;
  }
  if (h.nonce.size() != kNonceBytes)
    throw ProtocolError("handshake nonce of " + std::to_string(h.nonce.size()) + " bytes, not " +
                        std::to_string(kNonceBytes));
  if (end - p < 4) throw ProtocolError("truncated handshake (flags)");
  h.flags = get<std::uint32_t>(p);
  return h;
}

std::string check_hello(const Hello& ours, const Hello& theirs) {
  if (ours.version != theirs.version)
    return "protocol version mismatch: we speak " + std::to_string(ours.version) + ", peer " +
           (theirs.name.empty() ? std::string() : "'" + theirs.name + "' ") + "speaks " +
           std::to_string(theirs.version);
  const bool we_prove = ours.flags & kHelloProves, they_prove = theirs.flags & kHelloProves;
  if (we_prove && !they_prove) return "handshake token mismatch (we require a token; the peer has none)";
  if (!we_prove && they_prove) return "handshake token mismatch (the peer requires a token; we have none)";
  return {};
}

}  // namespace tessera::comm::wire
