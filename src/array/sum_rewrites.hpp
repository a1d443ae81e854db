#pragma once
// Internal: reductions computed without building the array they reduce. A sum of a product is
// taken of the operands' sums (product_sums.cpp); a sum of a boolean selection is a masked sum
// of the data (selection_sums.cpp). Array::sum and Array::mean (reductions.cpp) try them first.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera::detail {

/** False when TESSERA_ARRAY_PUSH_SUMS=0 (read once): the reductions then build what they reduce. */
inline bool sum_rewrites_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_ARRAY_PUSH_SUMS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

/**
 * `c` summed over `axes` (sorted, normalised) when c is a matrix product or a contraction and at
 * least one summed axis is a free axis of an operand longer than 1: that operand is summed over
 * it first, so the product does fewer multiplications. std::nullopt when nothing applies; the
 * caller then builds the plain reduction.
 */
std::optional<Array> sum_of_product(const Array& c, const std::vector<int>& axes, bool keepdims, int split_every);

/**
 * `s` summed (or, `mean`, averaged) over `axes` when s is data[mask] and the axes include the
 * selected one: where(mask, data, 0) summed, fused with whatever computes data and mask, instead
 * of the selected elements copied into blocks of unknown size first. std::nullopt otherwise.
 */
std::optional<Array> sum_of_selection(const Array& s, const std::vector<int>& axes, bool keepdims, int split_every,
                                      bool mean);

}  // namespace tessera::detail
