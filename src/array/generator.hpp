#pragma once
// Internal: building generator expressions (full, arange, scalar, the random arrays), shared by
// creation.cpp and random.cpp.
#include <cstdint>

#include "expr.hpp"

namespace tessera::detail {

/** The chunks of `shape` for a ChunkSpec (tessera::normalize_chunks; auto sizes use dtype). */
Chunks normalize_chunks(const Shape& shape, const ChunkSpec& spec, DType dtype = DType::Float64);
/**
 * normalize_chunks for a rechunk from `previous` chunks (Dask's previous_chunks): auto axes scale
 * the median current chunk by one common factor, growing by merging whole current chunks (the
 * boundaries stay aligned) and shrinking to a multiple of the most common chunk.
 */
Chunks normalize_chunks_from(const ChunkSpec& spec, const Shape& shape, DType dtype, const Chunks& previous);
/** A well-spread Philox key for (seed, RandomState call). */
std::uint64_t mix_key(std::uint64_t seed, std::uint64_t stream);
/** A generator expression; checks the shape. A Full of an integer dtype holds its exact value in i0. */
Array make_generator(GenKind gen, DType dtype, Shape shape, const ChunkSpec& chunks, double p0, double p1,
                     std::int64_t i0, std::int64_t i1, std::uint64_t key, const char* prefix);

}  // namespace tessera::detail
