#pragma once
/** @file
 * Sorting and searching: sort, argsort, topk, argtopk, unique, isin, searchsorted, digitize. */
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief Sorted along an axis, NaN last (NumPy's order). Like Dask, the axis is made one chunk
 * first (a rechunk when it is split); every other axis keeps its chunks.
 */
Array sort(const Array& x, int axis = -1);
/** @brief The indices that sort x along an axis (int64; stable: equal values keep their order). */
Array argsort(const Array& x, int axis = -1);
/**
 * @brief The k largest values along an axis, largest first (k > 0), or the -k smallest, smallest
 * first (k < 0), as Dask's topk: a top-k per chunk, then a tree of merges (split_every at a time,
 * 0: 8). NaN sorts after every number both ways: it is taken only when fewer than |k| numbers
 * remain.
 */
Array topk(const Array& x, std::int64_t k, int axis = -1, int split_every = 0);
/** @brief The indices (int64, along the axis) of topk's values, in topk's order. */
Array argtopk(const Array& x, std::int64_t k, int axis = -1, int split_every = 0);

/** @brief unique's result: the sorted distinct values and how often each occurs. */
struct UniqueResult {
  Array values;  ///< 1-d, x's dtype, ascending, NaNs collapsed into one (last)
  Array counts;  ///< 1-d int64
};
/**
 * @brief The sorted distinct values of the flattened array, with their counts. The result's
 * length depends on the data, so this computes (on `executor`): a unique per chunk, then a tree
 * of merges; the result is a host array.
 */
UniqueResult unique(const Array& x, Executor& executor = local_executor(), int split_every = 0);

/** @brief Whether each element of `element` is in `test_elements` (bool, element's shape). */
Array isin(const Array& element, const Array& test_elements, bool invert = false);
/**
 * @brief Indices into the sorted 1-d array `a` where the values `v` would be inserted to keep
 * it sorted (NumPy's searchsorted; side "left" or "right"). `a` is read as one chunk; the
 * result has v's shape and chunks.
 */
Array searchsorted(const Array& a, const Array& v, const std::string& side = "left");
/**
 * @brief Index of the bin each value falls in (NumPy's digitize): bins must be monotonic
 * (increasing or decreasing); right says whether a bin includes its right edge.
 */
Array digitize(const Array& x, const std::vector<double>& bins, bool right = false);

}  // namespace tessera
