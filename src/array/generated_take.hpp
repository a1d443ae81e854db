#pragma once
// Internal: take's first step on a generated array (a random array, arange, ...) drawn directly.
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera::detail {

/**
 * x's rows along `axis` listed in `pieces` (in bounds, any order, repeats allowed), one output
 * chunk per piece, when x is a generator on the host of a dtype the kernels draw directly
 * (float64, int64) and axis is not the last: each element is drawn from its global index, so
 * rows not asked for are never made and nothing is gathered. nullopt otherwise (the caller
 * gathers instead).
 */
std::optional<Array> take_generated_rows(const Array& x, const std::vector<std::vector<std::int64_t>>& pieces,
                                         int axis);

}  // namespace tessera::detail
