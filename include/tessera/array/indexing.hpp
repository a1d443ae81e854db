#pragma once
/** @file
 * NumPy basic indexing of an Array: x[{step(2), slice(1, 10), 3, newaxis}]; fancy indexing
 * (integer lists and arrays, boolean masks) and the functions built on it (take, compress,
 * nonzero, argwhere, extract). */
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <variant>
#include <vector>

namespace tessera {

/** @brief start:stop:step on one axis; empty start/stop mean the ends (as in Python). */
struct Slice {
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
  std::int64_t step = 1;
};
/** @brief start:stop:step. */
inline Slice slice(std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                   std::int64_t step = 1) {
  return Slice{start, stop, step};
}
/** @brief Every s-th element, Python's \::s (a negative s walks backwards). */
inline Slice step(std::int64_t s) { return Slice{std::nullopt, std::nullopt, s}; }
/** @brief ":" (the whole axis). */
inline Slice all() { return Slice{}; }
/** @brief Inserts an axis of length 1 (numpy.newaxis). */
struct NewAxis {};
inline constexpr NewAxis newaxis{};

/** @brief One item of an index expression: an integer, a slice, or newaxis. */
class Index {
 public:
  Index(std::int64_t i) : v_(i) {}
  Index(int i) : v_(static_cast<std::int64_t>(i)) {}
  Index(Slice s) : v_(s) {}
  Index(NewAxis n) : v_(n) {}
  const std::variant<std::int64_t, Slice, NewAxis>& get() const { return v_; }

 private:
  std::variant<std::int64_t, Slice, NewAxis> v_;
};

class Array;

/**
 * @brief NumPy's take: the elements at `indices` along `axis` (negative ones count from the
 * end; repeated and unsorted ones are fine). Each output chunk gathers from the input chunks that
 * hold its indices; sorted indices give one output chunk per input chunk they read.
 */
Array take(const Array& x, const std::vector<std::int64_t>& indices, int axis = 0);
/** @brief take(x, {3, 1, -1}): a braced list is a list of indices (never an Array). */
Array take(const Array& x, std::initializer_list<std::int64_t> indices, int axis = 0);
/**
 * @brief take with an integer Array of indices, read when the graph runs: the output has the
 * index array's chunks along `axis` (n-d indices: their shape replaces the axis, as in NumPy,
 * through a reshape). Out-of-bounds indices fail the task that reads them.
 */
Array take(const Array& x, const Array& indices, int axis = 0);
/**
 * @brief Reorders `axis` so that each group of `indexer` is contiguous and in one chunk (Dask's
 * shuffle): the result is take(x, the groups concatenated, axis), chunked along `axis` by
 * packing whole groups, in order, into chunks of at most `chunk_size` (0: the largest input
 * chunk along the axis); a group longer than that is a chunk of its own. Indices may repeat
 * and be negative; an empty indexer gives an empty axis.
 */
Array shuffle(const Array& x, const std::vector<std::vector<std::int64_t>>& indexer, int axis,
              std::int64_t chunk_size = 0);
/**
 * @brief NumPy's compress with a condition known now: the slices along `axis` (the flattened
 * array without one) where condition is true; a shorter condition counts as false past its end.
 */
Array compress(const std::vector<bool>& condition, const Array& x, std::optional<int> axis = std::nullopt);
/**
 * @brief compress with a 1-d boolean Array: its values are only known when the graph runs, so
 * the result's chunks along `axis` have unknown sizes (see Array::compute_chunk_sizes).
 */
Array compress(const Array& condition, const Array& x, std::optional<int> axis = std::nullopt);
/** @brief The (k, ndim) int64 coordinates of the nonzero elements, row-major (unknown k). */
Array argwhere(const Array& x);
/** @brief One int64 array of coordinates per axis of the nonzero elements (unknown lengths). */
std::vector<Array> nonzero(const Array& x);
/** @brief The flat indices of the nonzero elements of x raveled (unknown length). */
Array flatnonzero(const Array& x);
/** @brief One-argument where: nonzero(condition). */
std::vector<Array> where(const Array& condition);
/** @brief The elements of x (raveled) where condition (raveled, same size) is true. */
Array extract(const Array& condition, const Array& x);

}  // namespace tessera
