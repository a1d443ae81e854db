#pragma once
/**
 * @file
 * NumPy's and dask.array's other names for operations Tessera has, and the functions of theirs
 * that are compositions of other operations (so they fuse and run on host and device alike):
 *
 *     auto [q, r] = divmod(x, y);              // floor_divide and mod
 *     Array y = select({x < 0, x > 1}, {-x, x * 2}, 0.0);
 *     Array m = coarsen(CoarsenKind::Mean, x, {{0, 2}, {1, 3}});   // 2 x 3 means
 */
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/** @brief Wraps a host block as a chunked array (Dask's from_array / asarray / array). */
Array from_array(const Block& block, ChunkSpec chunks);
Array asarray(const Block& block, ChunkSpec chunks);
Array asanyarray(const Block& block, ChunkSpec chunks);
Array array(const Block& block, ChunkSpec chunks);

/** @brief a / b (NumPy's true_divide). */
Array true_divide(const Array& a, const Array& b);
/** @brief mod (NumPy's remainder: the sign of the divisor). */
Array remainder(const Array& a, const Array& b);
/** @brief (floor_divide(a, b), mod(a, b)). */
std::pair<Array, Array> divmod(const Array& a, const Array& b);
/** @brief |x| as a float (NumPy's fabs: integers become float64). */
Array fabs(const Array& x);
/** @brief Rounds toward zero (NumPy's fix: floats keep their dtype, integers become float64). */
Array fix(const Array& x);
/** @brief isnan (pandas-style names dask.array has). */
Array isnull(const Array& x);
Array notnull(const Array& x);
/** @brief x * 2**n, elementwise (float result). */
Array ldexp(const Array& x, const Array& n);
/** @brief (fractional part, integral part), both with the sign of x; inf gives (0, inf). */
std::pair<Array, Array> modf(const Array& x);
/**
 * @brief (mantissa, exponent) with x == mantissa * 2**exponent and 0.5 <= |mantissa| < 1
 * (NumPy's frexp): the mantissa keeps x's float dtype (integers: float64), the exponent is int32;
 * 0, infinities and NaN give themselves and exponent 0.
 */
std::pair<Array, Array> frexp(const Array& x);

/** @brief imag(x) != 0 (all false for a real dtype), and its negation (NumPy's iscomplex, isreal). */
Array iscomplex(const Array& x);
Array isreal(const Array& x);

inline int ndim(const Array& a) { return a.ndim(); }
inline const Shape& shape(const Array& a) { return a.shape(); }
/** @brief The dtype NumPy's promotion gives for these arrays together. */
DType result_type(const std::vector<Array>& arrays);

/**
 * @brief condlist[i] picks choicelist[i], the first true condition winning; else `fallback`
 * (NumPy's select). Conditions and choices broadcast together.
 */
Array select(const std::vector<Array>& condlist, const std::vector<Array>& choicelist, Scalar fallback = 0);
/** @brief choices[a] elementwise for an integer index array a in [0, choices.size()) (mode
 *  "raise" is not checked lazily: use mode "clip" or "wrap", as NumPy names them). */
Array choose(const Array& a, const std::vector<Array>& choices, const std::string& mode = "clip");
/** @brief Evaluates funclist[i] where condlist[i] holds (the last true wins, as in NumPy); one
 *  extra function is the default where none holds; elsewhere 0. */
Array piecewise(const Array& x, const std::vector<Array>& condlist,
                const std::vector<std::function<Array(const Array&)>>& funclist);

/** @brief Flat indices of the coordinates multi_index in an array of shape dims ("wrap"|"clip"). */
Array ravel_multi_index(const std::vector<Array>& multi_index, const Shape& dims, const std::string& mode = "clip");
/** @brief The coordinates, one array per axis of dims, of flat indices (NumPy's unravel_index). */
std::vector<Array> unravel_index(const Array& indices, const Shape& dims);
/** @brief Row and column indices of the lower (upper) triangle of an n x m matrix from diagonal k. */
std::pair<Array, Array> tril_indices(std::int64_t n, std::int64_t k = 0, std::int64_t m = -1, std::int64_t chunk = -1);
std::pair<Array, Array> triu_indices(std::int64_t n, std::int64_t k = 0, std::int64_t m = -1, std::int64_t chunk = -1);
std::pair<Array, Array> tril_indices_from(const Array& a, std::int64_t k = 0);
std::pair<Array, Array> triu_indices_from(const Array& a, std::int64_t k = 0);

/** @brief The order-th central moment along axes (all when empty), like dask.array.moment. */
Array moment(const Array& a, int order, std::vector<int> axes = {}, int ddof = 0);
/**
 * @brief Applies func(a, axis) over each axis in turn; a result with one dimension fewer gets
 * it back (length 1), as NumPy's apply_over_axes does.
 */
Array apply_over_axes(const std::function<Array(const Array&, int)>& func, const Array& a, const std::vector<int>& axes);
/**
 * @brief Runs the registered op `op` (a function of one 1-d Block, e.g. registered with
 * TESSERA_REGISTER_FUNCTION) on every 1-d slice of `a` along `axis` (Dask's apply_along_axis).
 * Each call must return a block of shape `out_shape` (() for a scalar); its values, cast to
 * out_dtype, take the place of the axis: the result's shape is a.shape[:axis] + out_shape +
 * a.shape[axis+1:]. The axis is gathered into one chunk first.
 */
Array apply_along_axis(const std::string& op, int axis, const Array& a, DType out_dtype = DType::Float64,
                       const Shape& out_shape = {});

enum class CoarsenKind { Sum, Mean, Min, Max, Prod };
/**
 * @brief Reduces non-overlapping windows: factors maps an axis to its window length, which must
 * divide the axis (Dask's coarsen with trim_excess=false; trim_excess=true drops the tail).
 * Runs as one fused task per chunk (a window's elements are strided views of the input).
 */
Array coarsen(CoarsenKind kind, const Array& x, const std::map<int, std::int64_t>& factors, bool trim_excess = false);

/**
 * @brief Inserts `values` before each of `indices` along axis (NumPy's insert with a list of
 * indices, each in [-len, len]): one slab per index, values broadcast to the slab.
 */
Array insert(const Array& a, std::vector<std::int64_t> indices, const Array& values, int axis);
Array insert(const Array& a, std::vector<std::int64_t> indices, Scalar value, int axis);
/** @brief Removes the slabs at `indices` (each in [-len, len), repeats ignored) along axis. */
Array delete_(const Array& a, std::vector<std::int64_t> indices, int axis);
/** @brief concatenate({a, values}, axis) (NumPy's append with an axis). */
Array append(const Array& a, const Array& values, int axis);
/**
 * @brief The gradient along each of `axes` (all when empty) by central differences inside and
 * one-sided differences at the edges (NumPy's gradient, edge_order 1, one spacing per axis or
 * one for all). Each axis needs at least 2 elements.
 */
std::vector<Array> gradient(const Array& f, std::vector<int> axes = {}, std::vector<double> spacing = {});

/**
 * @brief The sorted distinct values of a and b together, flattened (NumPy's union1d). Like
 * unique(), the result's length depends on the data: it is computed on `executor` and returned
 * as a host array.
 */
Array union1d(const Array& a, const Array& b, Executor& executor = local_executor());
/**
 * @brief f called once with the index arrays of `shape` (one per axis, each of `shape`,
 * element [i, j, ...] holding i, j, ... as `dtype`), chunked by `chunks` (NumPy's and Dask's
 * fromfunction: f sees whole lazy arrays, so it must be written with array operations).
 */
Array fromfunction(const std::function<Array(const std::vector<Array>&)>& f, const Shape& shape,
                   ChunkSpec chunks = auto_chunk, DType dtype = DType::Float64);
/**
 * @brief The arrays rechunked to the common refinement of their chunk boundaries on each axis,
 * so that they can be combined chunk by chunk (Dask's unify_chunks, for arrays of one shape;
 * axes of length 1 broadcast and keep their chunk). Different shapes: ShapeError.
 */
std::vector<Array> unify_chunks(const std::vector<Array>& arrays);

}  // namespace tessera
