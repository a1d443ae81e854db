#pragma once
/** @file Private: the output partition of each row of a host table for a hash shuffle. */
#include <cstdint>
#include <string>
#include <vector>

namespace arrow {
class Table;
}

namespace tessera::dataframe::detail {

/**
 * @brief Each row's output partition in [0, parts), by the hash of its `on` columns
 * (partition_index.hpp's definition, so that an int and a float key of equal value agree).
 * Throws Error for a key column of a type that cannot be hashed (lists, structs, decimals).
 */
std::vector<std::uint32_t> hash_partitions(const arrow::Table& table, const std::vector<std::string>& on,
                                           std::uint32_t parts);

}  // namespace tessera::dataframe::detail
