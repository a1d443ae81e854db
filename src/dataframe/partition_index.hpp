#pragma once
/**
 * @file Private: which output partition a row goes to in a hash shuffle (docs/dataframe-shuffle.md,
 * "Assigning rows"). One definition for host code (partition_host.cpp, over Arrow arrays) and
 * device code (nvcc includes this file too): plain C++17, no Arrow, no Thrust.
 *
 * Both sides of a join must send equal keys to the same partition whatever their column types, so
 * a value is hashed by what it is, not how it is stored: an int32 `1`, an int64 `1` and a double
 * `1.0` hash alike (an integral double within int64's range hashes as that integer), -0.0 hashes
 * as 0, every NaN alike, and a missing value (null, or NaN, which pandas also treats as missing)
 * as one constant, since pandas' merge matches missing keys with each other. Strings hash by
 * their bytes.
 */
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TESSERA_PARTITION_HD __host__ __device__ inline
#else
#define TESSERA_PARTITION_HD inline
#endif

namespace tessera::dataframe::detail::partition_index {

/** @brief The seed every row's hash starts from. */
inline constexpr std::uint64_t kSeed = 0x9e3779b97f4a7c15ull;
/** @brief The hash of a missing value (null or NaN). */
inline constexpr std::uint64_t kMissing = 0x5bd1e9955bd1e995ull;

/** @brief splitmix64's finaliser: every input bit reaches every output bit. */
TESSERA_PARTITION_HD std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/** @brief An integer (any width, booleans as 0 and 1, timestamps as their count). */
TESSERA_PARTITION_HD std::uint64_t hash_int(std::int64_t v) { return mix(static_cast<std::uint64_t>(v)); }

/** @brief A floating-point value: as the integer it equals when it is one, else by its bits. */
TESSERA_PARTITION_HD std::uint64_t hash_double(double v) {
  if (v != v) return kMissing;  // NaN
  // 2^63 is exactly representable; values in [-2^63, 2^63) convert to int64 without overflow.
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
    const auto i = static_cast<std::int64_t>(v);
    if (static_cast<double>(i) == v) return hash_int(i);  // also maps -0.0 to 0
  }
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return mix(bits ^ 0x7ff0000000000000ull);
}

/** @brief A string's bytes (FNV-1a, then mixed). */
TESSERA_PARTITION_HD std::uint64_t hash_bytes(const char* data, std::int64_t size) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::int64_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ull;
  }
  return mix(h ^ static_cast<std::uint64_t>(size));
}

/** @brief A row's hash after one more key column whose value hashed to `value_hash`. */
TESSERA_PARTITION_HD std::uint64_t combine(std::uint64_t row_hash, std::uint64_t value_hash) {
  return mix(row_hash ^ (value_hash + 0x9e3779b97f4a7c15ull + (row_hash << 6) + (row_hash >> 2)));
}

/** @brief The output partition of a row hash among `partitions` (at least 1). */
TESSERA_PARTITION_HD std::uint32_t partition_of(std::uint64_t row_hash, std::uint32_t partitions) {
  // The high bits times the count (Lemire's reduction): uniform, and no division on the device.
  return static_cast<std::uint32_t>(((row_hash >> 32) * static_cast<std::uint64_t>(partitions)) >> 32);
}

/**
 * @brief A sort's output range for a value, given the ascending bounds between ranges (at most
 * `last` of them; ranges are 0..last). Ascending: range i holds the values in
 * [bounds[i-1], bounds[i]); descending the ranges run the other way. A missing value (null or NaN)
 * goes to the last range, or the first with `nulls_first` (na_position="first").
 */
TESSERA_PARTITION_HD std::uint32_t range_of(double v, bool missing, const double* bounds, std::uint32_t count,
                                            std::uint32_t last, bool ascending, bool nulls_first) {
  if (missing || v != v) return nulls_first ? 0u : last;
  std::uint32_t lo = 0, hi = count;  // upper_bound: the first bound above v
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (v < bounds[mid]) hi = mid;
    else lo = mid + 1;
  }
  return ascending ? lo : last - lo;
}

}  // namespace tessera::dataframe::detail::partition_index
