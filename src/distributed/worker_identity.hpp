#pragma once
/**
 * @file A worker's proof that it is the worker registered at an address (issue 19). The
 * scheduler hands each worker registration a fresh random secret in its reply; a later
 * registration for the same address while that worker still looks connected (a reconnect the
 * scheduler has not noticed yet: a half-open TCP connection, a restarted worker on a fixed port)
 * replaces it only when it carries that secret. The address alone is public (peers and clients
 * learn it), so it cannot be the proof.
 */
#include <string>

namespace tessera::distributed {

/** @brief A new registration secret: 256 bits from the OS random source, as 64 hex digits. */
std::string new_registration_secret();

/** @brief Whether `given` is `expected`, in time independent of where they differ; an empty
 * `expected` (no secret handed out) matches nothing. */
bool registration_secret_matches(const std::string& expected, const std::string& given);

}  // namespace tessera::distributed
