#pragma once
// Internal: take's first step on a generated array (a random array, arange, ...) drawn directly.
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera::detail {

/**
 * The rows `sorted` (distinct, ascending, in bounds) of x along `axis`, in one output piece per
 * input chunk that holds some, when x is a generator on the host of a dtype the kernels draw
 * directly (float64, int64) and axis is not the last: each element is drawn from its global
 * index, so rows not asked for are never made. nullopt otherwise (the caller gathers instead).
 */
std::optional<Array> take_generated_rows(const Array& x, const std::vector<std::int64_t>& sorted, int axis);

}  // namespace tessera::detail
