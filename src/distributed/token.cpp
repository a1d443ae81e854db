// Making and judging the cluster's token: see token.hpp. The handshake proves it with an HMAC
// (src/comm/wire_auth.cpp) and never sends it, so what is left to an attacker is guessing it, one
// connection per guess (no proof of the listener's is sent to a peer that has not proved its own):
// the token must be too random to guess.
#include "token.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util.hpp"

namespace tessera::distributed {

std::string given_token(const std::string& flag) {
  std::string token = token_or_env(flag);
  return token == kAutoToken ? std::string() : token;
}

std::string generate_token() { return random_hex(static_cast<int>(kMinTokenBits / 4)); }

double token_bits(const std::string& token) {
  if (token.empty()) return 0;
  bool lower = false, upper = false, digit = false, punct = false, other = false;
  for (unsigned char c : token) {
    if (c >= 'a' && c <= 'z') lower = true;
    else if (c >= 'A' && c <= 'Z') upper = true;
    else if (c >= '0' && c <= '9') digit = true;
    else if (c >= 0x20 && c < 0x7f) punct = true;
    else other = true;
  }
  const int alphabet = 26 * lower + 26 * upper + 10 * digit + 33 * punct + 128 * other;
  return static_cast<double>(token.size()) * std::log2(static_cast<double>(std::max(alphabet, 2)));
}

std::string weak_token_warning(const std::string& token) {
  const double bits = token_bits(token);
  if (token.empty() || bits >= kMinTokenBits) return {};
  char text[512];
  std::snprintf(text, sizeof text,
                "the token has at most about %.0f bits of randomness (%zu characters), fewer than %.0f: a peer can "
                "try guesses of it, one connection each; use --token auto, or 32 hex digits from "
                "`od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'`",
                bits, token.size(), kMinTokenBits);
  return text;
}

}  // namespace tessera::distributed
