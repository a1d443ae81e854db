#pragma once
/**
 * @file
 * The lazy chunked Array.
 *
 * An Array is an expression over chunks; nothing runs until compute() or persist(). Building
 * an expression checks shapes, dtypes and bounds at once and throws ShapeError, DTypeError or
 * IndexError then, never later at run time.
 *
 *     auto x = random::normal(0, 10.0, 1.0, {20000, 20000}, {2000, 2000});
 *     double v = (x + 1)[{step(2), step(2)}].sum().compute().item();
 *
 * This header is the class alone; tessera/array.hpp gives it with every operation on arrays (one
 * header per kind under tessera/array/).
 *
 * Lowering fuses every chain of element-wise operations, slices, transposes and broadcasts
 * into one task per output chunk, pushes slices into generators (only kept elements are
 * drawn), and fuses the first step of a reduction into the same task.
 */
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/array/chunks.hpp"
#include "tessera/array/indexing.hpp"
#include "tessera/array/reductions.hpp"
#include "tessera/array/scalar.hpp"
#include "tessera/core/block.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"

namespace tessera {

namespace detail {
struct Expr;
}

/**
 * @brief Size of a chunk not known until the graph runs (Dask's NaN), e.g. after boolean
 * indexing; an axis with such a chunk has extent unknown_size in shape() too.
 */
inline constexpr std::int64_t unknown_size = -1;

/** @brief A lazy n-d array split into chunks. Cheap to copy (shares the expression). */
class Array {
 public:
  Array() = default;
  explicit Array(std::shared_ptr<const detail::Expr> expr) : expr_(std::move(expr)) {}

  DType dtype() const;
  const Shape& shape() const;
  const Chunks& chunks() const;
  int ndim() const { return static_cast<int>(shape().size()); }
  std::int64_t size() const { return shape_size(shape()); }
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * itemsize(dtype()); }
  /** @brief Number of chunks. */
  std::int64_t num_chunks() const;
  /** @brief The expression's unique name (the prefix of its chunk keys). */
  const std::string& name() const;
  bool valid() const noexcept { return expr_ != nullptr; }
  const std::shared_ptr<const detail::Expr>& expr() const noexcept { return expr_; }

  /** @brief NumPy basic indexing: x[{step(2), slice(1, 10), 3, newaxis}]. */
  Array operator[](const std::vector<Index>& index) const;
  /** @brief x[i]: integer index on the first axis. */
  Array operator[](std::int64_t i) const { return (*this)[std::vector<Index>{Index(i)}]; }
  /**
   * @brief Fancy indexing with an array: a boolean mask of x's shape (the selected elements,
   * raveled, row-major) or 1-d along the first axis (the selected slices), giving chunks of
   * unknown size; or integer indices along the first axis (take(x, index, 0)).
   */
  Array operator[](const Array& index) const;

  /** @brief False when some chunk sizes are unknown (after a boolean mask, nonzero, ...). */
  bool known_chunks() const;
  /**
   * @brief Computes the sizes of unknown chunks (running the graph once, as Dask does) and
   * returns the same array with known chunks; an array with known chunks is returned as is.
   */
  Array compute_chunk_sizes(Executor& executor = local_executor()) const;

  Array astype(DType dtype) const;
  /** @brief Reverses the axes (no argument) or permutes them. */
  Array transpose(std::vector<int> axes = {}) const;
  Array T() const { return transpose(); }
  /** @brief Row-major reshape; needs chunks that map to contiguous ranges (see docs). */
  Array reshape(Shape shape) const;
  /**
   * @brief New chunks (ChunkSpec: sizes per axis, -1 for the whole axis, one size for every
   * axis, explicit irregular chunks, or auto_chunk).
   */
  Array rechunk(const ChunkSpec& chunks) const;
  /** @brief Broadcasts to a larger shape (NumPy rules). */
  Array broadcast_to(Shape shape) const;

  Array sum(ReduceOptions options = {}) const;
  Array prod(ReduceOptions options = {}) const;
  Array min(ReduceOptions options = {}) const;
  Array max(ReduceOptions options = {}) const;
  Array mean(ReduceOptions options = {}) const;
  Array var(ReduceOptions options = {}) const;
  Array std(ReduceOptions options = {}) const;
  Array any(ReduceOptions options = {}) const;
  Array all(ReduceOptions options = {}) const;
  /** @brief Index of the minimum, over all axes (flat index) or along one axis. */
  Array argmin(std::optional<int> axis = std::nullopt, int split_every = 0) const;
  Array argmax(std::optional<int> axis = std::nullopt, int split_every = 0) const;
  /** @brief argmin with options: no axis or one axis, keepdims, split_every (ddof is ignored). */
  Array argmin(const ReduceOptions& options) const;
  Array argmax(const ReduceOptions& options) const;

  /**
   * @brief Where the chunks are computed and live: Target::Host, or Target::Device (the GPU of
   * whichever worker runs each task; the local executor uses device 0). Operations on a device
   * array give device arrays; mixing host and device arrays gives a device array.
   */
  Target target() const;
  /** @brief The same array computed on GPUs (random arrays are generated there directly). */
  Array to_device() const;
  /** @brief The same array brought back to host memory. */
  Array to_host() const;

  /** @brief Computes the whole array into one host Block (device results are copied back). */
  Block compute(Executor& executor = local_executor()) const;
  /**
   * @brief Computes into one Block in `where`: Target::Device gives a block in this process's
   * GPU 0 (a client with a GPU asking for device data; throws DeviceError without one).
   */
  Block compute(Executor& executor, Target where) const;
  /**
   * @brief Computes every chunk and returns an Array backed by the results. A local executor
   * keeps them in this process. A distributed Client leaves them on its workers (device chunks
   * on their GPUs) for as long as the returned Array, or one built from it, lives: later graphs
   * on that client read them there, and another executor fetches them (Dask's persist).
   */
  Array persist(Executor& executor = local_executor()) const;
  /** @brief The lowered task graph and the keys of the chunks (row-major chunk order). */
  Graph to_graph(std::vector<Key>* chunk_keys) const;

 private:
  std::shared_ptr<const detail::Expr> expr_;
};

}  // namespace tessera
