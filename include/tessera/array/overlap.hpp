#pragma once
/** @file
 * Halos between neighbouring chunks, like dask.array.overlap: overlap, trim_internal and
 * map_overlap. */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief What lies beyond an array's edge on one axis when chunks are extended there:
 * "reflect" (mirrored, the edge element repeated: x[1] x[0] | x[0] x[1]), "periodic" (the other
 * end), "nearest" (the edge element), "none" (the outer chunks are not extended), or a constant.
 */
class Boundary {
 public:
  enum class Kind { Reflect, Periodic, Nearest, None, Constant };
  /** @brief "reflect", "periodic", "nearest" or "none"; throws Error for anything else. */
  Boundary(const char* name);  // NOLINT(google-explicit-constructor): map_overlap(..., "periodic")
  Boundary(const std::string& name) : Boundary(name.c_str()) {}  // NOLINT(google-explicit-constructor)
  /** @brief A constant value. */
  Boundary(double value) : kind_(Kind::Constant), value_(value) {}  // NOLINT(google-explicit-constructor)
  Boundary(int value) : Boundary(static_cast<double>(value)) {}      // NOLINT(google-explicit-constructor)
  Kind kind() const noexcept { return kind_; }
  double value() const noexcept { return value_; }

 private:
  Kind kind_ = Kind::None;
  double value_ = 0;
};

/**
 * @brief Every chunk extended by `depth` elements on each side of each axis (one depth: every
 * axis) with the neighbouring chunks' elements, and past the array's edges as `boundary` says
 * (one boundary: every axis). The chunks grow by 2 * depth (less at "none" edges).
 */
Array overlap(const Array& x, std::vector<std::int64_t> depth, std::vector<Boundary> boundary);
/**
 * @brief Removes what overlap added: `depth` elements from each side of every chunk, except at
 * the outer edges of axes whose boundary is "none".
 */
Array trim_internal(const Array& x, std::vector<std::int64_t> depth, std::vector<Boundary> boundary = {"reflect"});
/**
 * @brief Runs the registered op (see map_blocks) on every chunk of the inputs extended by a halo
 * of `depth` (overlap), then trims the halo from its results (trim = true; the op must then
 * return blocks of its input's shape). The inputs are rechunked to the first one's chunks.
 * With trim = false the results keep the extended chunks.
 */
Array map_overlap(const std::string& op, const std::vector<Array>& inputs, std::vector<std::int64_t> depth,
                  std::vector<Boundary> boundary = {"none"}, bool trim = true,
                  std::optional<DType> dtype = std::nullopt);
/** @brief map_overlap of one input. */
inline Array map_overlap(const std::string& op, const Array& x, std::vector<std::int64_t> depth,
                         std::vector<Boundary> boundary = {"none"}, bool trim = true,
                         std::optional<DType> dtype = std::nullopt) {
  return map_overlap(op, std::vector<Array>{x}, std::move(depth), std::move(boundary), trim, dtype);
}

}  // namespace tessera
