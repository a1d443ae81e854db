#pragma once
// Internal: take of a generated array (a random array, arange, ...) drawn directly.
#include <cstdint>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera::detail {

/**
 * Whether take_generated_rows applies: x is a generator on the host of a dtype the kernels draw
 * directly (float64, int64; GeneratorSpec::of) and axis is not its last.
 */
bool takes_generated_rows(const Array& x, int axis);

/**
 * x's rows along `axis` listed in `pieces` (in bounds, any order, repeats allowed), one output
 * chunk per piece, where takes_generated_rows(x, axis): each element is drawn from its global
 * index, so rows not asked for are never made and nothing is gathered.
 */
Array take_generated_rows(const Array& x, const std::vector<std::vector<std::int64_t>>& pieces, int axis);

}  // namespace tessera::detail
