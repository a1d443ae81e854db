#pragma once
/**
 * @file Private: the kinds of merge (pandas' `how`, plus Dask's leftsemi / leftanti). Plain C++17:
 * the host join (join_host.hpp) and the device join (device_relational.cuh) share it.
 */
#include <cstdint>

namespace tessera::dataframe::detail {

enum class JoinHow : std::uint8_t { Inner, Left, Right, Outer, LeftSemi, LeftAnti };

}  // namespace tessera::dataframe::detail
