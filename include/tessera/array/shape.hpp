#pragma once
/** @file
 * Shape manipulation with dask.array's names and NumPy's semantics: axes (squeeze, expand_dims,
 * atleast_*d, swapaxes, moveaxis, rollaxis), order (flip, rot90, roll), flattening (ravel),
 * repetition (tile, repeat, pad), joining (block, hstack, vstack, dstack, column_stack),
 * splitting (split, array_split) and broadcast_arrays.
 *
 * Axis reorderings and reversals are views (affine re-indexings that fuse into the reading
 * program); joins, pads and rolls are concatenations of views, so no data moves until a task
 * reads it.
 */
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/** @brief Removes the given axes of length 1 (all of them without axes; ShapeError otherwise). */
Array squeeze(const Array& a, std::optional<std::vector<int>> axes = std::nullopt);
/** @brief Inserts axes of length 1 at the given positions of the result (NumPy's expand_dims). */
Array expand_dims(const Array& a, std::vector<int> axes);
/** @brief At least 1-d (a 0-d array becomes shape (1)). */
Array atleast_1d(const Array& a);
/** @brief At least 2-d: (N) becomes (1, N). */
Array atleast_2d(const Array& a);
/** @brief At least 3-d: (N) becomes (1, N, 1) and (M, N) becomes (M, N, 1). */
Array atleast_3d(const Array& a);
/** @brief The elements in row-major order as a 1-d array. */
Array ravel(const Array& a);
/**
 * @brief Reshapes each chunk on its own (dask.array.reshape_blockwise): no data moves between
 * chunks, and the elements are not in NumPy's row-major order. To fewer dimensions each output
 * axis merges consecutive input axes (chunks are then worked out; giving them is an Error); to
 * as many or more, `chunks` says the output chunks, as many as the input's and each of the same
 * size as its input chunk in row-major chunk order. One extent may be -1.
 */
Array reshape_blockwise(const Array& x, Shape shape, std::optional<Chunks> chunks = std::nullopt);
/** @brief ravel (NumPy's ndarray.flatten). */
inline Array flatten(const Array& a) { return ravel(a); }

/** @brief Reverses the order along the given axes (all axes without any). */
Array flip(const Array& a, std::optional<std::vector<int>> axes = std::nullopt);
inline Array flip(const Array& a, int axis) { return flip(a, std::vector<int>{axis}); }
/** @brief flip along axis 1. */
Array fliplr(const Array& a);
/** @brief flip along axis 0. */
Array flipud(const Array& a);
/** @brief Rotates by 90 degrees k times in the plane of `axes`, from the first towards the second. */
Array rot90(const Array& a, int k = 1, std::pair<int, int> axes = {0, 1});
Array swapaxes(const Array& a, int axis1, int axis2);
/** @brief Moves axes to new positions, the others keeping their order. */
Array moveaxis(const Array& a, std::vector<int> source, std::vector<int> destination);
inline Array moveaxis(const Array& a, int source, int destination) {
  return moveaxis(a, std::vector<int>{source}, std::vector<int>{destination});
}
/** @brief Moves `axis` to lie before position `start` (NumPy's rollaxis). */
Array rollaxis(const Array& a, int axis, int start = 0);

/**
 * @brief Shifts elements along an axis, those leaving one end entering at the other; without an
 * axis the array is rolled as if flattened.
 */
Array roll(const Array& a, std::int64_t shift, std::optional<int> axis = std::nullopt);
/** @brief Several shifts along several axes (NumPy's tuple form; a repeated axis adds up). */
Array roll(const Array& a, const std::vector<std::int64_t>& shifts, const std::vector<int>& axes);

/** @brief The modes of pad (NumPy's names). */
enum class PadMode : std::uint8_t {
  Constant,   ///< constant_value
  Edge,       ///< the edge value repeated
  Reflect,    ///< mirrored without repeating the edge: 3 2 | 1 2 3 | 2 1
  Symmetric,  ///< mirrored with the edge: 2 1 | 1 2 3 | 3 2
  Wrap,       ///< the other end: 2 3 | 1 2 3 | 1 2
};
/**
 * @brief Pads every axis: `widths` holds (before, after) per axis, or one pair for every axis.
 * Widths larger than the axis repeat the pattern, as NumPy's do.
 */
Array pad(const Array& a, const std::vector<std::pair<std::int64_t, std::int64_t>>& widths,
          PadMode mode = PadMode::Constant, double constant_value = 0);
/** @brief The same width before and after every axis. */
Array pad(const Array& a, std::int64_t width, PadMode mode = PadMode::Constant, double constant_value = 0);

/** @brief Repeats the whole array reps[i] times along axis i (NumPy's tile). */
Array tile(const Array& a, const std::vector<std::int64_t>& reps);
inline Array tile(const Array& a, std::int64_t reps) { return tile(a, std::vector<std::int64_t>{reps}); }
/** @brief Repeats each element `repeats` times along `axis` (without one: of the flattened array). */
Array repeat(const Array& a, std::int64_t repeats, std::optional<int> axis = std::nullopt);

/** @brief A nested list of arrays for block(): an Array, or a list of BlockLists. */
class BlockList {
 public:
  BlockList(Array a) : array_(std::move(a)) {}  // NOLINT(google-explicit-constructor)
  BlockList(std::initializer_list<BlockList> items) : items_(items), is_list_(true) {}
  BlockList(std::vector<BlockList> items) : items_(std::move(items)), is_list_(true) {}  // NOLINT
  bool is_list() const noexcept { return is_list_; }
  const Array& array() const noexcept { return array_; }
  const std::vector<BlockList>& items() const noexcept { return items_; }

 private:
  Array array_;
  std::vector<BlockList> items_;
  bool is_list_ = false;
};
/**
 * @brief Assembles an array from nested lists of blocks (NumPy's block): the innermost lists
 * join along the last axis, the next ones along the axis before it, and so on.
 */
Array block(const BlockList& blocks);

/** @brief Joins along axis 1 (axis 0 for 1-d arrays). */
Array hstack(const std::vector<Array>& arrays);
/** @brief Joins along axis 0 after atleast_2d. */
Array vstack(const std::vector<Array>& arrays);
/** @brief Joins along axis 2 after atleast_3d. */
Array dstack(const std::vector<Array>& arrays);
/** @brief 1-d arrays as columns of a 2-d array; 2-d arrays join along axis 1. */
Array column_stack(const std::vector<Array>& arrays);

/** @brief `sections` equal parts along axis (ShapeError when they cannot be equal). */
std::vector<Array> split(const Array& a, std::int64_t sections, int axis = 0);
/** @brief Parts between the given indices along axis (NumPy's split with a list of indices). */
std::vector<Array> split(const Array& a, const std::vector<std::int64_t>& indices, int axis = 0);
/** @brief `sections` parts, the first ones one longer when they cannot be equal. */
std::vector<Array> array_split(const Array& a, std::int64_t sections, int axis = 0);

/** @brief The arrays broadcast against each other (views; each axis chunked as the inputs are). */
std::vector<Array> broadcast_arrays(const std::vector<Array>& arrays);

}  // namespace tessera
