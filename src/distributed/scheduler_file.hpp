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

}  // namespace tessera::distributed
