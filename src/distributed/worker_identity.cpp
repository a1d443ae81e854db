#include "worker_identity.hpp"

#include <openssl/crypto.h>

#include "util.hpp"

namespace tessera::distributed {

std::string new_registration_secret() { return random_hex(64); }

bool registration_secret_matches(const std::string& expected, const std::string& given) {
  // The lengths are not secret (always 64 digits); the contents are compared in constant time,
  // so that a peer learns nothing from how fast it is refused.
  if (expected.empty() || given.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), given.data(), expected.size()) == 0;
}

}  // namespace tessera::distributed
