// Chunk specifications: normalize_chunks and Dask's "auto" rule.
#include "tessera/array/chunks.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>

#include "tessera/core/error.hpp"

namespace tessera {

namespace {

constexpr std::int64_t kDefaultAutoBytes = std::int64_t{128} << 20;  // Dask's array.chunk-size

std::atomic<std::int64_t>& auto_bytes_setting() {
  // TESSERA_ARRAY_CHUNK_SIZE (bytes) sets the starting value, as Dask's config file would.
  static std::atomic<std::int64_t> bytes{[] {
    if (const char* env = std::getenv("TESSERA_ARRAY_CHUNK_SIZE")) {
      char* end = nullptr;
      const long long v = std::strtoll(env, &end, 10);
      if (end != env && *end == '\0' && v > 0) return static_cast<std::int64_t>(v);
    }
    return kDefaultAutoBytes;
  }()};
  return bytes;
}

// Dask's round_to: below the extent, the size itself (an uneven last chunk is fine); above it,
// the largest multiple of the extent that fits.
std::int64_t round_to(double c, std::int64_t s) {
  if (c <= static_cast<double>(s)) return std::max<std::int64_t>(1, static_cast<std::int64_t>(c));
  return static_cast<std::int64_t>(std::floor(c / static_cast<double>(s))) * s;
}

// The auto axes (size == auto_chunk) share what the byte budget leaves after the other axes:
// each gets budget^(1/#auto); an axis shorter than that is taken whole and the rest share again.
void resolve_auto(std::vector<std::int64_t>& sizes, std::vector<bool>& whole, const Shape& shape, double limit,
                  std::size_t itemsize) {
  while (true) {
    std::vector<std::size_t> autos;
    double largest_block = 1;
    for (std::size_t a = 0; a < sizes.size(); ++a) {
      if (sizes[a] == auto_chunk) autos.push_back(a);
      else largest_block *= static_cast<double>(std::max<std::int64_t>(1, whole[a] ? shape[a] : sizes[a]));
    }
    if (autos.empty()) return;
    const double size =
        std::pow(limit / static_cast<double>(itemsize) / largest_block, 1.0 / static_cast<double>(autos.size()));
    bool small = false;
    for (auto a : autos)
      if (static_cast<double>(shape[a]) < size) {
        sizes[a] = shape[a];
        whole[a] = true;
        small = true;
      }
    if (small) continue;
    for (auto a : autos) sizes[a] = round_to(size, shape[a]);
    return;
  }
}

}  // namespace

std::int64_t auto_chunk_bytes() { return auto_bytes_setting().load(); }

void set_auto_chunk_bytes(std::int64_t bytes) {
  if (bytes < 0) throw Error("set_auto_chunk_bytes: negative size " + std::to_string(bytes));
  auto_bytes_setting().store(bytes == 0 ? kDefaultAutoBytes : bytes);
}

Chunks normalize_chunks(const ChunkSpec& spec, const Shape& shape, DType dtype, std::int64_t limit) {
  const std::size_t nd = shape.size();
  for (auto n : shape)
    if (n < 0) throw ShapeError("negative extent in shape " + shape_to_string(shape));
  if (spec.is_explicit()) {
    const Chunks& c = spec.chunks();
    if (c.size() != nd)
      throw ShapeError("chunks " + chunks_to_string(c) + " have " + std::to_string(c.size()) +
                       " axes for an array of shape " + shape_to_string(shape));
    for (std::size_t a = 0; a < nd; ++a) {
      if (c[a].empty())
        throw ShapeError("chunks " + chunks_to_string(c) + ": an axis without chunks (an empty axis is {0})");
      std::int64_t sum = 0;
      for (auto n : c[a]) {
        if (n < 0) throw ShapeError("chunks " + chunks_to_string(c) + ": negative chunk size");
        sum += n;
      }
      if (sum != shape[a])
        throw ShapeError("chunks " + chunks_to_string(c) + " do not add up to shape " + shape_to_string(shape));
    }
    return c;
  }
  if (spec.empty() && nd == 0) return {};
  std::vector<std::int64_t> sizes = spec.sizes();
  // Several sizes for a 1-d array are its chunks, as in Dask: {2, 3, 1} for 6 elements.
  if (nd == 1 && sizes.size() > 1) return normalize_chunks(ChunkSpec(Chunks{sizes}), shape, dtype, limit);
  if (sizes.size() == 1 && nd != 1) sizes.assign(nd, sizes[0]);  // one size for every axis
  if (sizes.size() != nd)
    throw ShapeError("chunks " + shape_to_string(sizes) + " do not match the " + std::to_string(nd) +
                     " axes of shape " + shape_to_string(shape));
  std::vector<bool> whole(nd, false);
  for (std::size_t a = 0; a < nd; ++a) {
    if (sizes[a] == auto_chunk) continue;
    if (sizes[a] < -1) throw ShapeError("chunks " + shape_to_string(sizes) + ": negative chunk size");
    if (sizes[a] <= 0) whole[a] = true;
  }
  if (std::find(sizes.begin(), sizes.end(), auto_chunk) != sizes.end()) {
    std::int64_t bytes = limit > 0 ? limit : spec.limit() > 0 ? spec.limit() : auto_chunk_bytes();
    resolve_auto(sizes, whole, shape, static_cast<double>(std::max<std::int64_t>(1, bytes)), itemsize(dtype));
  }
  for (std::size_t a = 0; a < nd; ++a)
    if (whole[a]) sizes[a] = -1;
  return regular_chunks(shape, sizes);
}

}  // namespace tessera
