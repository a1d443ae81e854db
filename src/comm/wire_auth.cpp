// Proving the handshake token without sending it: OpenSSL's random source and HMAC-SHA256.
// See docs/protocol.md ("Handshake") and docs/security.md.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "tessera/comm/comm.hpp"
#include "wire.hpp"

namespace tessera::comm::wire {

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
    throw CommError("the OS random source failed (OpenSSL RAND_bytes)");
  return out;
}

std::vector<std::uint8_t> handshake_proof(const std::string& token, Role role,
                                          const std::vector<std::uint8_t>& connector_hello,
                                          const std::vector<std::uint8_t>& listener_hello) {
  // The label keeps a listener's proof from being replayed as a connector's (reflection); the
  // connector's hello length keeps the two hellos' boundary unambiguous.
  std::vector<std::uint8_t> data;
  const std::string label = role == Role::connector ? "tessera handshake v2 connector" : "tessera handshake v2 listener";
  data.insert(data.end(), label.begin(), label.end());
  data.push_back(0);
  const auto n = static_cast<std::uint64_t>(connector_hello.size());
  for (int i = 0; i < 8; ++i) data.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  data.insert(data.end(), connector_hello.begin(), connector_hello.end());
  data.insert(data.end(), listener_hello.begin(), listener_hello.end());
  std::vector<std::uint8_t> mac(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), data.data(), data.size(), mac.data(), &len) ||
      len != kProofBytes)
    throw CommError("HMAC-SHA256 failed (OpenSSL)");
  mac.resize(len);
  return mac;
}

bool proofs_equal(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool tokens_equal(const std::string& a, const std::string& b) {
  // Compared as their HMACs under a fresh key: equal lengths for CRYPTO_memcmp whatever the
  // tokens' lengths, and no early exit.
  const auto key = random_bytes(32);
  const std::vector<std::uint8_t> ta(a.begin(), a.end()), tb(b.begin(), b.end());
  return proofs_equal(handshake_proof(key, Role::connector, ta, {}), handshake_proof(key, Role::connector, tb, {}));
}

}  // namespace tessera::comm::wire
