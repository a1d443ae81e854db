#pragma once
/**
 * @file Private: the record one spilled value is written as (DataStore), appended to a segment
 * file that holds many (creating a file costs far more than appending to one: 1.2 ms against
 * 41 us for 45 KB on the benchmark machine's ext4, and a shuffle spills tens of thousands of
 * small packs). A record, in native byte order (a spill file never leaves the machine that
 * wrote it):
 *
 *     "TSP1"  u8 kind (1 block, 2 object, 3 native)  u8 dtype  u16 reserved  u32 ndim  u32 type_len
 *     u64 payload_bytes  i64 shape[ndim]  char type[type_len]  payload
 */
#include <filesystem>
#include <string>

#include "tessera/core/key.hpp"
#include "tessera/core/value.hpp"

namespace tessera::distributed::detail {

/**
 * Writes one host value as a record at `offset` of the open file `fd` (named `path`, for
 * messages); on success returns "" and sets `*length` to the record's bytes, else returns what
 * went wrong, with the file cut back to `offset` (no partial record is left).
 */
std::string write_spill_record(int fd, const std::filesystem::path& path, std::uint64_t offset, const Value& value,
                               std::uint64_t* length);

/** Reads the record of `length` bytes at `offset` of `path`; throws Error naming `key` and the file. */
Value read_spill_record(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t length, const Key& key);

}  // namespace tessera::distributed::detail
