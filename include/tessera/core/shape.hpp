#pragma once
/** @file
 * Shapes, strides and chunk grids. */
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

/** @brief Extent of each axis, outermost first. */
using Shape = std::vector<std::int64_t>;

/** @brief Chunk sizes along each axis: chunks[axis] lists the extent of every chunk on that axis. */
using Chunks = std::vector<std::vector<std::int64_t>>;

/** @brief Number of elements (1 for a 0-d shape). */
std::int64_t shape_size(const Shape& shape) noexcept;
/** @brief Row-major element strides of a shape. */
std::vector<std::int64_t> row_major_strides(const Shape& shape);
/** @brief "(3, 4)" style text for messages. */
std::string shape_to_string(const Shape& shape);
/** @brief Splits each axis into chunks of at most the given size (last chunk may be smaller). */
Chunks regular_chunks(const Shape& shape, const std::vector<std::int64_t>& chunk);
/** @brief The shape implied by a chunk grid. */
Shape chunks_shape(const Chunks& chunks);
/** @brief Number of chunks along each axis. */
std::vector<std::int64_t> chunk_counts(const Chunks& chunks);
/** @brief Starting offset of every chunk along one axis (size n+1: the last entry is the extent). */
std::vector<std::int64_t> chunk_offsets(const std::vector<std::int64_t>& axis_chunks);
/** @brief "((2, 2), (3,))" style text for messages. */
std::string chunks_to_string(const Chunks& chunks);
/** @brief Normalises a possibly negative axis against ndim; throws ShapeError when out of range. */
int normalize_axis(int axis, int ndim);

}  // namespace tessera
