#pragma once
/** @file
 * Random arrays (counter-based, the same numbers for any chunking, on host or GPU). */
#include <cstdint>

#include "tessera/array/array.hpp"

namespace tessera {

namespace random {
/**
 * @brief Counter-based random arrays (Philox4x32-10). Element i of the array is a pure function
 * of (seed, stream, i): the same seed gives the same numbers for any chunking, on host or GPU,
 * and slicing draws only the kept elements. Integers are bit-identical everywhere; normals and
 * uniforms agree to a few ulps (about 1e-15 absolute), because vectorised and scalar log/cos
 * may round the last bit differently.
 */
Array normal(std::uint64_t seed, double mean, double stddev, Shape shape, ChunkSpec chunks);
Array uniform(std::uint64_t seed, double low, double high, Shape shape, ChunkSpec chunks);
/** @brief Integers in [low, high). */
Array integers(std::uint64_t seed, std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks,
               DType dtype = DType::Int64);

/** @brief Like numpy.random.RandomState: successive calls draw independent streams. */
class RandomState {
 public:
  explicit RandomState(std::uint64_t seed = 0) : seed_(seed) {}
  Array normal(double mean, double stddev, Shape shape, ChunkSpec chunks);
  Array uniform(double low, double high, Shape shape, ChunkSpec chunks);
  Array integers(std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks,
                 DType dtype = DType::Int64);

 private:
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
};
}  // namespace random

}  // namespace tessera
