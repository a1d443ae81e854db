#pragma once
/** @file
 * Creating arrays: full, zeros, ones, arange, scalar, from_block, from_vector. */
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

Array full(Shape shape, double value, ChunkSpec chunks, DType dtype = DType::Float64);
Array zeros(Shape shape, ChunkSpec chunks, DType dtype = DType::Float64);
Array ones(Shape shape, ChunkSpec chunks, DType dtype = DType::Float64);
/**
 * @brief [start, stop) by step, 1-d. The dtype is NumPy's: float64 when any argument is a
 * floating-point value, else int64; an explicit dtype wins.
 */
Array arange(Scalar start, Scalar stop, Scalar step, std::int64_t chunk, std::optional<DType> dtype = std::nullopt);
inline Array arange(std::int64_t n, std::int64_t chunk = -1) { return arange(0, n, 1, chunk); }
/** @brief Splits a host block into chunks (the block's data is shared, not copied). */
Array from_block(const Block& block, ChunkSpec chunks);
/** @brief Copies host values into a chunked array. */
template <typename T>
Array from_vector(const std::vector<T>& values, Shape shape, ChunkSpec chunks) {
  return from_block(Block::from_values(values, std::move(shape)), std::move(chunks));
}
/**
 * @brief A number as a 0-d array. Its dtype: the one given, else NumPy's for the value (bool,
 * int64 for integers, float64); an integer that does not fit the given dtype throws DTypeError.
 */
Array scalar(Scalar value, std::optional<DType> dtype = std::nullopt);

}  // namespace tessera
