#pragma once
/** @file
 * Task keys. */
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

/**
 * @brief The name of a task and of the value it produces.
 *
 * Keys are strings so they hash fast and cross the wire unchanged. Chunked arrays use
 * "name-token,i,j" keys, made by chunk_key(), like Dask's (name, i, j) tuples.
 */
using Key = std::string;

/** @brief "prefix,i,j,...": the key of one chunk of a collection. */
Key chunk_key(const std::string& prefix, const std::vector<std::int64_t>& index);
/** @brief A process-unique token for naming new collections ("normal-3f2a..."). */
std::string unique_name(const std::string& prefix);

}  // namespace tessera
