// Chunk specifications: normalize_chunks and Dask's "auto" rule.
#include "tessera/array/chunks.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "generator.hpp"
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

// Dask's auto_chunks with previous_chunks (a rechunk): the auto axes grow or shrink from the
// median of their current chunks by one common factor, merging whole current chunks where they
// grow (so boundaries stay aligned) and rounding to a multiple of the prevalent chunk otherwise.
// Each entry of `out` is a size, or (explicit[a]) the chunks of axis a.
void resolve_auto_from(std::vector<std::int64_t>& sizes, std::vector<bool>& whole, Chunks& out,
                       std::vector<bool>& explicit_axis, const Shape& shape, double limit, std::size_t itemsize,
                       const Chunks& previous) {
  constexpr double kTolerance = 1.25;  // Dask's array.chunk-size-tolerance
  const std::size_t nd = sizes.size();
  std::set<std::size_t> autos;
  double largest_block = 1;
  for (std::size_t a = 0; a < nd; ++a) {
    if (sizes[a] == auto_chunk) autos.insert(a);
    else largest_block *= static_cast<double>(std::max<std::int64_t>(1, whole[a] ? shape[a] : sizes[a]));
  }
  // median (a number) or, once decided by a boundary, the axis's one chunk (a "tuple").
  std::map<std::size_t, double> median;
  for (auto a : autos) {
    std::vector<std::int64_t> c = previous[a];
    std::sort(c.begin(), c.end());
    const std::size_t n = c.size();
    median[a] = n % 2 ? static_cast<double>(c[n / 2]) : (static_cast<double>(c[n / 2 - 1]) + static_cast<double>(c[n / 2])) / 2;
  }
  auto multiplier_of = [&](const std::map<std::size_t, double>& m) {
    double prod = 1;
    for (const auto& [a, v] : m)
      if (v != 0) prod *= v;
    return limit / static_cast<double>(itemsize) / largest_block / prod;
  };
  // The prevalent chunk of an axis when it is most of them, else the axis itself.
  std::vector<std::int64_t> ideal(nd);
  for (std::size_t a = 0; a < nd; ++a) {
    std::map<std::int64_t, std::size_t> freq;
    std::vector<std::int64_t> order;
    for (auto c : previous[a])
      if (freq[c]++ == 0) order.push_back(c);
    std::int64_t mode = order.empty() ? 0 : order[0];
    for (auto c : order)
      if (freq[c] > freq[mode]) mode = c;
    ideal[a] = mode > 1 && 2 * freq[mode] >= previous[a].size() ? mode : shape[a];
  }
  double multiplier = multiplier_of(median);
  const bool reduce_case = multiplier < 1;
  // In Dask the results of a reduction are the medians themselves (one dict), so the multiplier
  // is recomputed from the rounded sizes until it settles.
  std::map<std::size_t, double> sized;  // a size per axis (the growing case keeps them apart)
  std::map<std::size_t, std::vector<std::int64_t>> merged;
  bool remaining = true;
  for (int pass = 0; remaining && pass < 64; ++pass) {
    const std::size_t count = autos.size();
    remaining = false;
    for (auto a : std::set<std::size_t>(autos)) {
      const double this_multiplier = std::pow(multiplier, 1.0 / static_cast<double>(count));
      const double proposed = median.at(a) * this_multiplier;
      const double max_chunk = proposed * std::pow(kTolerance, 1.0 / static_cast<double>(count));
      if (proposed > static_cast<double>(shape[a])) {  // the whole axis
        autos.erase(a);
        median.erase(a);
        remaining = true;
        largest_block *= static_cast<double>(std::max<std::int64_t>(1, shape[a]));
        sized.erase(a);
        merged[a] = {shape[a]};
        continue;
      }
      const auto prev_max = *std::max_element(previous[a].begin(), previous[a].end());
      if (reduce_case || static_cast<double>(prev_max) > max_chunk) {
        const double r = static_cast<double>(round_to(proposed, ideal[a]));
        if (reduce_case) median[a] = r;
        sized[a] = r;
        merged.erase(a);
        if (proposed < 1) {
          remaining = true;
          autos.erase(a);
        }
        continue;
      }
      std::vector<std::int64_t> dim;
      std::int64_t run = 0;
      for (auto c : previous[a]) {
        if (static_cast<double>(c + run) <= proposed) {
          run += c;
        } else {
          if (run > 0) dim.push_back(run);
          run = c;
        }
      }
      if (run > 0) dim.push_back(run);
      sized.erase(a);
      merged[a] = dim;
    }
    if (remaining || reduce_case) {
      const double last = multiplier;
      multiplier = multiplier_of(median);
      if (multiplier != last) remaining = true;
    }
  }
  for (const auto& [a, v] : sized) {
    sizes[a] = static_cast<std::int64_t>(v);
    whole[a] = false;
  }
  for (const auto& [a, c] : merged) {
    out[a] = c.empty() ? std::vector<std::int64_t>{0} : c;
    explicit_axis[a] = true;
    sizes[a] = -1;
  }
}

}  // namespace

std::int64_t auto_chunk_bytes() { return auto_bytes_setting().load(); }

void set_auto_chunk_bytes(std::int64_t bytes) {
  if (bytes < 0) throw Error("set_auto_chunk_bytes: negative size " + std::to_string(bytes));
  auto_bytes_setting().store(bytes == 0 ? kDefaultAutoBytes : bytes);
}

namespace {
Chunks normalize(const ChunkSpec& spec, const Shape& shape, DType dtype, std::int64_t limit, const Chunks& previous);
}  // namespace

Chunks normalize_chunks(const ChunkSpec& spec, const Shape& shape, DType dtype, std::int64_t limit) {
  return normalize(spec, shape, dtype, limit, Chunks{});
}

namespace detail {
Chunks normalize_chunks_from(const ChunkSpec& spec, const Shape& shape, DType dtype, const Chunks& previous) {
  return normalize(spec, shape, dtype, 0, previous);
}
}  // namespace detail

namespace {
Chunks normalize(const ChunkSpec& spec, const Shape& shape, DType dtype, std::int64_t limit, const Chunks& previous) {
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
  if (nd == 1 && sizes.size() > 1) return normalize(ChunkSpec(Chunks{sizes}), shape, dtype, limit, previous);
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
  Chunks out(nd);
  std::vector<bool> explicit_axis(nd, false);
  if (std::find(sizes.begin(), sizes.end(), auto_chunk) != sizes.end()) {
    const std::int64_t bytes = limit > 0 ? limit : spec.limit() > 0 ? spec.limit() : auto_chunk_bytes();
    const double budget = static_cast<double>(std::max<std::int64_t>(1, bytes));
    if (previous.size() == nd && nd > 0 && chunks_shape(previous) == shape)
      resolve_auto_from(sizes, whole, out, explicit_axis, shape, budget, itemsize(dtype), previous);
    else
      resolve_auto(sizes, whole, shape, budget, itemsize(dtype));
  }
  for (std::size_t a = 0; a < nd; ++a)
    if (whole[a]) sizes[a] = -1;
  Chunks regular = regular_chunks(shape, sizes);
  for (std::size_t a = 0; a < nd; ++a)
    if (explicit_axis[a]) regular[a] = out[a];
  return regular;
}

}  // namespace

}  // namespace tessera
