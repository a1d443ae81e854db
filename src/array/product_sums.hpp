#pragma once
// Internal: sums of products computed from sums of their operands (product_sums.cpp).
#include <optional>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera::detail {

/**
 * `c` summed over `axes` (sorted, normalised) when c is a matrix product or a contraction and at
 * least one summed axis is a free axis of an operand longer than 1: that operand is summed over
 * it first, so the product does fewer multiplications. std::nullopt when nothing applies (or
 * TESSERA_ARRAY_PUSH_SUMS=0); the caller then builds the plain reduction.
 */
std::optional<Array> sum_of_product(const Array& c, const std::vector<int>& axes, bool keepdims, int split_every);

}  // namespace tessera::detail
