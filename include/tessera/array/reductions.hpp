#pragma once
/** @file
 * Options of the Array reductions (sum, mean, var, argmin, ...; members of Array), and the
 * reductions that are free functions: NaN-aware ones (nansum, nanmean, ...), count_nonzero, ptp
 * and user-defined tree reductions (reduction). */
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera {

class Array;

/** @brief Options of a reduction. Empty axes means all axes. */
struct ReduceOptions {
  std::vector<int> axes;
  bool keepdims = false;
  int split_every = 0;  ///< fan-in of the tree reduction; 0 means the default (8)
  int ddof = 0;         ///< for var and std
};

// NaN-aware reductions (NumPy's nan* functions): NaNs are skipped. On integer and bool arrays
// they are the plain reductions. All-NaN slices give NumPy's results: 0 (nansum), 1 (nanprod),
// NaN (nanmin, nanmax, nanmean, nanvar, nanstd).

/** @brief Sum treating NaN as zero. */
Array nansum(const Array& x, ReduceOptions options = {});
/** @brief Product treating NaN as one. */
Array nanprod(const Array& x, ReduceOptions options = {});
/** @brief Minimum ignoring NaN (NaN where a slice is all NaN). */
Array nanmin(const Array& x, ReduceOptions options = {});
/** @brief Maximum ignoring NaN (NaN where a slice is all NaN). */
Array nanmax(const Array& x, ReduceOptions options = {});
/** @brief Mean of the non-NaN values. */
Array nanmean(const Array& x, ReduceOptions options = {});
/** @brief Variance of the non-NaN values (options.ddof: delta degrees of freedom). */
Array nanvar(const Array& x, ReduceOptions options = {});
/** @brief Standard deviation of the non-NaN values. */
Array nanstd(const Array& x, ReduceOptions options = {});
/**
 * @brief Index of the minimum ignoring NaN (flat without an axis). An all-NaN slice gives -1
 * (NumPy raises ValueError; a lazy array cannot raise before it is computed).
 */
Array nanargmin(const Array& x, std::optional<int> axis = std::nullopt, int split_every = 0);
/** @brief Index of the maximum ignoring NaN; -1 for an all-NaN slice (see nanargmin). */
Array nanargmax(const Array& x, std::optional<int> axis = std::nullopt, int split_every = 0);
/** @brief Number of nonzero (true, NaN included) elements, int64. */
Array count_nonzero(const Array& x, ReduceOptions options = {});
/** @brief Peak to peak: max - min, in x's dtype (integers wrap as in NumPy). */
Array ptp(const Array& x, ReduceOptions options = {});

/** @brief Options of a user-defined reduction (Dask's da.reduction). */
struct ReductionOptions {
  std::vector<int> axes;  ///< empty: all axes
  bool keepdims = false;
  int split_every = 0;  ///< partials concatenated per combine step; 0 means 8
  /// The op folding each group of concatenated partials inside the tree (keepdims = true);
  /// empty: aggregate_op does (Dask's default).
  std::string combine_op;
  std::optional<DType> dtype;  ///< of the result; default: x's dtype
};

/**
 * @brief A tree reduction with registered ops, like Dask's da.reduction. Every op is a function
 * registered with TESSERA_REGISTER_FUNCTION taking `(Block, std::vector<int> axes, bool keepdims)`
 * and returning a Block:
 *  - chunk_op runs on each chunk with keepdims = true and returns a partial that keeps every
 *    axis (any extent along the reduced ones);
 *  - partials are concatenated along the reduced axes, split_every at a time, and combine_op
 *    (keepdims = true) folds each group, level after level;
 *  - aggregate_op folds the last group into the result (keepdims as asked).
 * The result's shape along each reduced axis is 1 with keepdims, absent without.
 */
Array reduction(const Array& x, const std::string& chunk_op, const std::string& aggregate_op,
                const ReductionOptions& options = {});

}  // namespace tessera
