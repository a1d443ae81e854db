#pragma once
/**
 * @file Private: the file one spilled value is written to (DataStore). The format, in native
 * byte order (a spill file never leaves the machine that wrote it):
 *
 *     "TSP1"  u8 kind (1 block, 2 object, 3 native)  u8 dtype  u16 reserved  u32 ndim  u32 type_len
 *     u64 payload_bytes  i64 shape[ndim]  char type[type_len]  payload
 */
#include <filesystem>
#include <string>

#include "tessera/core/key.hpp"
#include "tessera/core/value.hpp"

namespace tessera::distributed::detail {

/** Writes one host value to a new file; returns "" on success, else what went wrong (no partial file is left). */
std::string write_spill_file(const std::filesystem::path& path, const Value& value);

/** Reads a value written by write_spill_file; throws Error / SerializationError naming `key` and the file. */
Value read_spill_file(const std::filesystem::path& path, const Key& key);

}  // namespace tessera::distributed::detail
