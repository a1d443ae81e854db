#pragma once
/**
 * @file The lazy chunked Array.
 *
 * An Array is an expression over chunks; nothing runs until compute() or persist(). Building
 * an expression checks shapes, dtypes and bounds at once and throws ShapeError, DTypeError or
 * IndexError then, never later at run time.
 *
 *     auto x = random::normal(0, 10.0, 1.0, {20000, 20000}, {2000, 2000});
 *     double v = (x + 1)[{step(2), step(2)}].sum().compute().item();
 *
 * Lowering fuses every chain of element-wise operations, slices, transposes and broadcasts
 * into one task per output chunk, pushes slices into generators (only kept elements are
 * drawn), and fuses the first step of a reduction into the same task.
 */
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tessera/array/scalar.hpp"
#include "tessera/core/block.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"

namespace tessera {

namespace detail {
struct Expr;
}

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
/** @brief ::s, every s-th element (negative s walks backwards). */
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

/** @brief Options of a reduction. Empty axes means all axes. */
struct ReduceOptions {
  std::vector<int> axes;
  bool keepdims = false;
  int split_every = 0;  ///< fan-in of the tree reduction; 0 means the default (8)
  int ddof = 0;         ///< for var and std
};

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

  Array astype(DType dtype) const;
  /** @brief Reverses the axes (no argument) or permutes them. */
  Array transpose(std::vector<int> axes = {}) const;
  Array T() const { return transpose(); }
  /** @brief Row-major reshape; needs chunks that map to contiguous ranges (see docs). */
  Array reshape(Shape shape) const;
  /** @brief New chunk sizes per axis (-1: the whole axis); one size applies to every axis. */
  Array rechunk(std::vector<std::int64_t> chunk) const;
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

// ---- creation -------------------------------------------------------------------------------
/** @brief Chunk sizes per axis, like Dask's chunks=(c, c); -1 or 0 means the whole axis. */
using ChunkSpec = std::vector<std::int64_t>;

Array full(Shape shape, double value, ChunkSpec chunks, DType dtype = DType::Float64);
Array zeros(Shape shape, ChunkSpec chunks, DType dtype = DType::Float64);
Array ones(Shape shape, ChunkSpec chunks, DType dtype = DType::Float64);
/**
 * @brief [start, stop) by step, 1-d. The dtype is NumPy's: float64 when any argument is a
 * floating-point value, else int64; an explicit dtype wins.
 */
Array arange(Scalar start, Scalar stop, Scalar step, std::int64_t chunk, std::optional<DType> dtype = std::nullopt);
inline Array arange(std::int64_t n, std::int64_t chunk = -1) { return arange(0, n, 1, chunk); }
/** @brief Splits a host block into chunks (the block's data is shared, not copied). */
Array from_block(const Block& block, ChunkSpec chunks);
/** @brief Copies host values into a chunked array. */
template <typename T>
Array from_vector(const std::vector<T>& values, Shape shape, ChunkSpec chunks) {
  return from_block(Block::from_values(values, std::move(shape)), std::move(chunks));
}

namespace random {
/**
 * @brief Counter-based random arrays (Philox4x32-10). Element i of the array is a pure function
 * of (seed, stream, i): the same seed gives the same numbers for any chunking, on host or GPU,
 * and slicing draws only the kept elements. Integers are bit-identical everywhere; normals and
 * uniforms agree to a few ulps (about 1e-15 absolute), because vectorised and scalar log/cos
 * may round the last bit differently.
 */
Array normal(std::uint64_t seed, double mean, double stddev, Shape shape, ChunkSpec chunks);
Array uniform(std::uint64_t seed, double low, double high, Shape shape, ChunkSpec chunks);
/** @brief Integers in [low, high). */
Array integers(std::uint64_t seed, std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks,
               DType dtype = DType::Int64);

/** @brief Like numpy.random.RandomState: successive calls draw independent streams. */
class RandomState {
 public:
  explicit RandomState(std::uint64_t seed = 0) : seed_(seed) {}
  Array normal(double mean, double stddev, Shape shape, ChunkSpec chunks);
  Array uniform(double low, double high, Shape shape, ChunkSpec chunks);
  Array integers(std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks,
                 DType dtype = DType::Int64);

 private:
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
};
}  // namespace random

// ---- element-wise ---------------------------------------------------------------------------
// Arrays combine by NumPy's promotion rules (promote_types). A C++ number combines as a Python
// scalar does in NumPy 2 (scalar.hpp): `x + 1` keeps an int32 x int32 (and throws DTypeError
// when the value does not fit), `x + 1.5` of an integer x is float64, `x < 2.5` compares
// exactly. A 0-d array (scalar()) is an array like any other: its dtype takes part in promotion.
Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);
Array operator+(const Array& a, Scalar b);
Array operator-(const Array& a, Scalar b);
Array operator*(const Array& a, Scalar b);
Array operator/(const Array& a, Scalar b);
Array operator+(Scalar a, const Array& b);
Array operator-(Scalar a, const Array& b);
Array operator*(Scalar a, const Array& b);
Array operator/(Scalar a, const Array& b);
/** @brief Negation; DTypeError for bool (as NumPy, which asks for logical_not). */
Array operator-(const Array& a);
Array operator<(const Array& a, const Array& b);
Array operator<=(const Array& a, const Array& b);
Array operator>(const Array& a, const Array& b);
Array operator>=(const Array& a, const Array& b);
Array operator==(const Array& a, const Array& b);
Array operator!=(const Array& a, const Array& b);
Array operator<(const Array& a, Scalar b);
Array operator<=(const Array& a, Scalar b);
Array operator>(const Array& a, Scalar b);
Array operator>=(const Array& a, Scalar b);
Array operator==(const Array& a, Scalar b);
Array operator!=(const Array& a, Scalar b);
Array operator<(Scalar a, const Array& b);
Array operator<=(Scalar a, const Array& b);
Array operator>(Scalar a, const Array& b);
Array operator>=(Scalar a, const Array& b);
Array operator==(Scalar a, const Array& b);
Array operator!=(Scalar a, const Array& b);
Array operator&&(const Array& a, const Array& b);
Array operator||(const Array& a, const Array& b);
Array operator!(const Array& a);

/**
 * @brief A number as a 0-d array. Its dtype: the one given, else NumPy's for the value (bool,
 * int64 for integers, float64); an integer that does not fit the given dtype throws DTypeError.
 */
Array scalar(Scalar value, std::optional<DType> dtype = std::nullopt);
/**
 * @brief a ** b. Integer powers wrap; a negative integer exponent is an error, as in NumPy:
 * DTypeError when the expression is built if the exponent is a number (or a 0-d constant),
 * a failed task if an exponent array holds one.
 */
Array power(const Array& a, const Array& b);
Array power(const Array& a, Scalar b);
Array power(Scalar a, const Array& b);
Array minimum(const Array& a, const Array& b);
Array maximum(const Array& a, const Array& b);
/** @brief a // b, floored (Python's and NumPy's floor division; with mod, NumPy's divmod). */
Array floor_divide(const Array& a, const Array& b);
Array floor_divide(const Array& a, Scalar b);
/** @brief a % b with the sign of b (NumPy's remainder). */
Array mod(const Array& a, const Array& b);
Array mod(const Array& a, Scalar b);
/** @brief condition ? a : b; a non-bool condition counts as true where it is nonzero (or NaN). */
Array where(const Array& condition, const Array& a, const Array& b);

Array abs(const Array& a);
Array exp(const Array& a);
Array log(const Array& a);
Array log1p(const Array& a);
Array sqrt(const Array& a);
Array square(const Array& a);
Array sin(const Array& a);
Array cos(const Array& a);
Array tan(const Array& a);
Array tanh(const Array& a);
Array floor(const Array& a);
Array ceil(const Array& a);
Array sign(const Array& a);
Array isnan(const Array& a);
Array isfinite(const Array& a);

// ---- structural -----------------------------------------------------------------------------
/**
 * @brief NumPy's matmul, OpenBLAS on host: 2-d matrices, 1-d vectors (a vector on the left is a
 * row, on the right a column; that axis is dropped from the result), and n-d stacks of
 * matrices whose leading (batch) axes broadcast; bools give a bool result (any a_ik && b_kj).
 */
Array matmul(const Array& a, const Array& b);
inline Array dot(const Array& a, const Array& b) { return matmul(a, b); }
Array concatenate(const std::vector<Array>& arrays, int axis = 0);
Array stack(const std::vector<Array>& arrays, int axis = 0);
/**
 * @brief Applies a registered op (e.g. a TESSERA_REGISTER_FUNCTION taking and returning Blocks)
 * to matching chunks of the inputs. The inputs are rechunked to the first one's chunks; each
 * output chunk must have the input chunk's shape unless out_chunks gives the output chunking.
 */
Array map_blocks(const std::string& op, const std::vector<Array>& inputs, DType out_dtype,
                 std::optional<Chunks> out_chunks = std::nullopt);

}  // namespace tessera
