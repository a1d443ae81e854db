#pragma once
/** @file
 * More ways to create arrays, with dask.array's names and NumPy's values: ranges (linspace,
 * logspace, geomspace), matrices (eye, identity, tri, diag, diagonal, triu, tril), grids
 * (meshgrid, indices) and arrays like another (empty_like, zeros_like, ones_like, full_like).
 *
 * Every one is built from generators, views and element-wise operations, so it fuses with what
 * reads it and runs on the host or a GPU like any blockwise expression. chunks default to
 * auto_chunk (Dask's chunks="auto").
 */
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief num evenly spaced values over [start, stop] (or [start, stop) without endpoint): NumPy's
 * values, start + i * step with the last one exactly stop. An integer dtype floors the values.
 */
Array linspace(double start, double stop, std::int64_t num = 50, bool endpoint = true,
               ChunkSpec chunks = auto_chunk, std::optional<DType> dtype = std::nullopt);
/** @brief linspace and its step (NumPy's retstep=True); the step is NaN when num - endpoint is 0. */
std::pair<Array, double> linspace_with_step(double start, double stop, std::int64_t num = 50, bool endpoint = true,
                                            ChunkSpec chunks = auto_chunk,
                                            std::optional<DType> dtype = std::nullopt);
/** @brief base ** linspace(start, stop, num, endpoint). */
Array logspace(double start, double stop, std::int64_t num = 50, bool endpoint = true, double base = 10.0,
               ChunkSpec chunks = auto_chunk, std::optional<DType> dtype = std::nullopt);
/**
 * @brief A geometric progression from start to stop (NumPy's geomspace: both ends exact; both
 * negative works; a zero end throws Error).
 */
Array geomspace(double start, double stop, std::int64_t num = 50, bool endpoint = true,
                ChunkSpec chunks = auto_chunk, std::optional<DType> dtype = std::nullopt);

/** @brief N x M (M defaults to N) with ones on diagonal k (k > 0 above the main one). */
Array eye(std::int64_t N, ChunkSpec chunks = auto_chunk, std::optional<std::int64_t> M = std::nullopt,
          std::int64_t k = 0, DType dtype = DType::Float64);
/** @brief The n x n identity matrix. */
Array identity(std::int64_t n, ChunkSpec chunks = auto_chunk, DType dtype = DType::Float64);
/** @brief N x M (M defaults to N), one at and below diagonal k, zero above. */
Array tri(std::int64_t N, std::optional<std::int64_t> M = std::nullopt, std::int64_t k = 0,
          DType dtype = DType::Float64, ChunkSpec chunks = auto_chunk);
/** @brief The lower triangle of the last two axes: elements above diagonal k are zero. */
Array tril(const Array& m, std::int64_t k = 0);
/** @brief The upper triangle of the last two axes: elements below diagonal k are zero. */
Array triu(const Array& m, std::int64_t k = 0);
/**
 * @brief NumPy's diag: a 1-d v gives the square matrix with v on diagonal k; a 2-d v gives its
 * diagonal k (as diagonal()).
 */
Array diag(const Array& v, std::int64_t k = 0);
/**
 * @brief The diagonal at offset of the plane (axis1, axis2), as the last axis of the result
 * (NumPy's diagonal). A view: it reads only the chunks the diagonal crosses.
 */
Array diagonal(const Array& a, std::int64_t offset = 0, int axis1 = 0, int axis2 = 1);

/** @brief meshgrid's indexing: Cartesian (the first two outputs' axes swapped) or matrix. */
enum class MeshIndexing : std::uint8_t { XY, IJ };
/**
 * @brief Coordinate arrays from 1-d arrays (NumPy's meshgrid); each output is a broadcast view of
 * its input, chunked as the inputs are.
 */
std::vector<Array> meshgrid(const std::vector<Array>& xs, MeshIndexing indexing = MeshIndexing::XY);
/**
 * @brief The index grid of shape (ndim, *dimensions): element [i, ...] is the index along axis i
 * (NumPy's indices). The first axis is in chunks of 1.
 */
Array indices(const Shape& dimensions, DType dtype = DType::Int64, ChunkSpec chunks = auto_chunk);

/** @brief An uninitialised array in NumPy; here zeros (the cheapest defined values). */
Array empty(Shape shape, ChunkSpec chunks = auto_chunk, DType dtype = DType::Float64);
/** @brief Like `a` (its shape, and its dtype and chunks unless given), filled with value. */
Array full_like(const Array& a, double value, std::optional<DType> dtype = std::nullopt,
                std::optional<ChunkSpec> chunks = std::nullopt);
Array zeros_like(const Array& a, std::optional<DType> dtype = std::nullopt,
                 std::optional<ChunkSpec> chunks = std::nullopt);
Array ones_like(const Array& a, std::optional<DType> dtype = std::nullopt,
                std::optional<ChunkSpec> chunks = std::nullopt);
/** @brief zeros_like (NumPy leaves the values undefined). */
Array empty_like(const Array& a, std::optional<DType> dtype = std::nullopt,
                 std::optional<ChunkSpec> chunks = std::nullopt);

}  // namespace tessera
