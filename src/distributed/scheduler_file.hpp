#pragma once
/**
 * @file Reading a scheduler file (--scheduler-file, Dask's JSON with the scheduler's address).
 * Private to the library (src/); tests and fuzz/scheduler_file_fuzz.cpp include it directly.
 * read_scheduler_file (tessera/distributed/scheduler.hpp) waits for the file and calls this.
 */
#include <string>

namespace tessera::distributed {

/**
 * @brief The "address" entry of a scheduler file's text; throws tessera::Error naming `path` when
 * the text has none.
 */
std::string scheduler_address_from_text(const std::string& text, const std::string& path);

/** @brief The "token" entry of a scheduler file's text ("" when it has none, or is not JSON). */
std::string scheduler_token_from_text(const std::string& text);

/**
 * @brief The token a scheduler started with `--token auto` wrote into its scheduler file ("" when
 * the file has none or cannot be read now): for workers and clients given the file and no token.
 */
std::string scheduler_file_token(const std::string& path);

}  // namespace tessera::distributed
