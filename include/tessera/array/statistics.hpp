#pragma once
/** @file
 * Statistics: average, median, percentile/quantile, cov, corrcoef, histogram, bincount. */
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief Weighted average along an axis (none: all). weights has x's shape, or is 1-d with the
 * length of `axis`. NumPy's dtype: float64 unless x (and the weights) are float32.
 */
Array average(const Array& x, std::optional<int> axis = std::nullopt, const std::optional<Array>& weights = std::nullopt);
/** @brief average and the sum of the weights (NumPy's returned=True), broadcast to its shape. */
std::pair<Array, Array> average_returned(const Array& x, std::optional<int> axis = std::nullopt,
                                         const std::optional<Array>& weights = std::nullopt);

/** @brief Options of median, percentile and quantile. */
struct QuantileOptions {
  std::vector<int> axes;  ///< empty: all axes
  bool keepdims = false;
  /// "linear" (default), "lower", "higher", "nearest" or "midpoint" (NumPy's methods).
  std::string method = "linear";
};

/**
 * @brief Median along the given axes (empty: all). Like Dask, the reduced axes are made single
 * chunks first (a rechunk where they are split). A slice holding NaN gives NaN.
 */
Array median(const Array& x, std::vector<int> axes = {}, bool keepdims = false);
/** @brief Median ignoring NaN (NaN for an all-NaN slice). */
Array nanmedian(const Array& x, std::vector<int> axes = {}, bool keepdims = false);
/**
 * @brief The q-th quantiles (0 <= q <= 1) along the given axes: the result's first axis is q's,
 * then the remaining axes (NumPy's layout). Exact: the reduced axes are single chunks.
 */
Array quantile(const Array& x, const std::vector<double>& q, const QuantileOptions& options = {});
/** @brief One quantile: no q axis in the result. */
Array quantile(const Array& x, double q, const QuantileOptions& options = {});
/** @brief quantile with q in percent (0..100). */
Array percentile(const Array& x, const std::vector<double>& q, const QuantileOptions& options = {});
Array percentile(const Array& x, double q, const QuantileOptions& options = {});
/** @brief quantile ignoring NaN. */
Array nanquantile(const Array& x, const std::vector<double>& q, const QuantileOptions& options = {});
Array nanquantile(const Array& x, double q, const QuantileOptions& options = {});
/** @brief percentile ignoring NaN. */
Array nanpercentile(const Array& x, const std::vector<double>& q, const QuantileOptions& options = {});
Array nanpercentile(const Array& x, double q, const QuantileOptions& options = {});

/**
 * @brief Covariance matrix (NumPy's cov): each row of m is a variable (rowvar; else each
 * column), y adds more variables; normalised by N - 1, N with bias, or N - ddof.
 */
Array cov(const Array& m, const std::optional<Array>& y = std::nullopt, bool rowvar = true, bool bias = false,
          std::optional<int> ddof = std::nullopt);
/** @brief Pearson correlation coefficients (NumPy's corrcoef), clipped to [-1, 1]. */
Array corrcoef(const Array& x, const std::optional<Array>& y = std::nullopt, bool rowvar = true);

/** @brief histogram's result: counts (int64, or float64 with weights or density) and bin edges. */
struct Histogram {
  Array counts;
  Array edges;  ///< float64, one more than counts
};
/**
 * @brief Histogram of the flattened array with `bins` equal bins over [range.first,
 * range.second] (a range is required, as in Dask). Bins are half-open except the last; values
 * outside are not counted. weights: same shape as x. density: counts / (total * bin width).
 */
Histogram histogram(const Array& x, std::int64_t bins, std::pair<double, double> range,
                    const std::optional<Array>& weights = std::nullopt, bool density = false);
/** @brief Histogram over the given monotonically increasing bin edges. */
Histogram histogram(const Array& x, const std::vector<double>& edges, const std::optional<Array>& weights = std::nullopt,
                    bool density = false);
/** @brief histogramdd's result: counts of shape (bins of each dimension) and each dimension's edges. */
struct HistogramDD {
  Array counts;
  std::vector<Array> edges;
};
/**
 * @brief Multidimensional histogram (NumPy's histogramdd): sample[k] holds coordinate k of
 * every point (arrays of one shape, flattened), edges[k] the increasing bin edges of dimension k.
 * In each dimension bins are half-open except the last, and a point outside any dimension's
 * edges is not counted. weights: same shape as the coordinates. density: counts / (total * bin
 * volume).
 */
HistogramDD histogramdd(const std::vector<Array>& sample, const std::vector<std::vector<double>>& edges,
                        const std::optional<Array>& weights = std::nullopt, bool density = false);
/** @brief histogramdd with bins[k] equal bins over range[k] in each dimension. */
HistogramDD histogramdd(const std::vector<Array>& sample, const std::vector<std::int64_t>& bins,
                        const std::vector<std::pair<double, double>>& range,
                        const std::optional<Array>& weights = std::nullopt, bool density = false);
/** @brief histogramdd of an (N, D) array: its columns are the D coordinates. */
HistogramDD histogramdd(const Array& sample, const std::vector<std::int64_t>& bins,
                        const std::vector<std::pair<double, double>>& range,
                        const std::optional<Array>& weights = std::nullopt, bool density = false);
/** @brief The two-dimensional case (NumPy's histogram2d): edges[0] along x, edges[1] along y. */
HistogramDD histogram2d(const Array& x, const Array& y, std::pair<std::int64_t, std::int64_t> bins,
                        std::pair<std::pair<double, double>, std::pair<double, double>> range,
                        const std::optional<Array>& weights = std::nullopt, bool density = false);

/**
 * @brief Occurrences of each non-negative integer in the 1-d x (with weights: their sum,
 * float64). The result's length, max(max(x) + 1, minlength), depends on the data, so x.max() is
 * computed first on `executor` (Dask leaves the length unknown instead). A negative value fails
 * the task.
 */
Array bincount(const Array& x, const std::optional<Array>& weights = std::nullopt, std::int64_t minlength = 0,
               Executor& executor = local_executor());

}  // namespace tessera
