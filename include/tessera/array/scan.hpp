#pragma once
/** @file
 * Cumulative sums and products (NumPy's, with Dask's chunked method), diff and ediff1d. */
#include <cstdint>
#include <optional>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief Cumulative sum along an axis (none: over the flattened array). The dtype is NumPy's:
 * int64 for bool and integer arrays, the float dtype otherwise. Each chunk is scanned on its own
 * and the totals of the chunks before it are added afterwards, so chunks scan in parallel.
 */
Array cumsum(const Array& x, std::optional<int> axis = std::nullopt);
/** @brief Cumulative product along an axis (none: flattened); dtypes as cumsum. */
Array cumprod(const Array& x, std::optional<int> axis = std::nullopt);
/** @brief cumsum with NaN counted as zero. */
Array nancumsum(const Array& x, std::optional<int> axis = std::nullopt);
/** @brief cumprod with NaN counted as one. */
Array nancumprod(const Array& x, std::optional<int> axis = std::nullopt);
/**
 * @brief n-th discrete difference along an axis: out[i] = x[i + 1] - x[i], n times (a view of
 * two slices of x; no tasks of its own). bool arrays give x[i + 1] != x[i], as NumPy.
 */
Array diff(const Array& x, int n = 1, int axis = -1);
/** @brief Differences of the flattened array (1-d). */
Array ediff1d(const Array& x);
/**
 * @brief Forward fill (Dask's push): each NaN along `axis` takes the last non-NaN value before
 * it, when at most n NaN precede it in a row (all with n unset); leading NaN stay. Integer and
 * bool arrays are returned unchanged. Chunks along the axis fill in parallel.
 */
Array push(const Array& x, std::optional<std::int64_t> n = std::nullopt, int axis = -1);

}  // namespace tessera
