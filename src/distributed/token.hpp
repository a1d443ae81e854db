#pragma once
/**
 * @file The cluster's shared token as the binaries take it (docs/security.md): `--token auto`
 * makes one from the OS random source, and a token that is easy to guess gets a warning at
 * start. Private to the library (src/); tests include it directly.
 */
#include <string>

namespace tessera::distributed {

/** @brief The randomness a token should have at least: a guess then costs 2^127 tries on average. */
inline constexpr double kMinTokenBits = 128;

/** @brief What `--token auto` (tessera-scheduler) stands for. */
inline constexpr const char* kAutoToken = "auto";

/**
 * @brief The token a worker or client was given: `flag`, else $TESSERA_TOKEN; "auto" (meant for
 * the scheduler, perhaps exported to every process) counts as none, so that it is taken from the
 * scheduler file where the scheduler wrote the one it made.
 */
std::string given_token(const std::string& flag);

/** @brief 128 bits from the OS random source (OpenSSL RAND_bytes), as 32 hex digits. */
std::string generate_token();

/**
 * @brief An upper estimate of a token's randomness in bits, as Dask's: its length times log2 of
 * the alphabet its characters come from, the alphabet being the sum of the character classes
 * present (lower case 26, upper case 26, digits 10, other printable ASCII 33, any other byte
 * 128). A dictionary word scores more than it is worth; a short or one-class token less than
 * 128 either way. 0 for an empty token.
 */
double token_bits(const std::string& token);

/**
 * @brief Empty when the token is empty (none) or has at least kMinTokenBits by token_bits(), else
 * a warning for the log that says the estimate and how to make a strong one.
 */
std::string weak_token_warning(const std::string& token);

}  // namespace tessera::distributed
