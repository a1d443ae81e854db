#pragma once
// Internal: the task-list expression the linear algebra builds its graphs with, and the block
// operations (host: src/array/linalg_ops.cpp, device: cuda/linalg_ops.cpp) its tasks call.
//
// Decompositions are not blockwise: a blocked Cholesky's chunk (i, j) reads chunks of its own
// output, a tsqr's Q reads a QR of stacked R factors. Like Dask, which writes these graphs by
// hand, a TasksExpr holds an explicit list of tasks, each an op over chunks of input
// expressions, tasks of input TasksExprs or its own earlier tasks; some of its tasks are the
// chunks of the array.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "expr.hpp"
#include "tessera/core/value.hpp"

namespace tessera::detail {

inline constexpr const char* kContractOp = "tessera.linalg.contract";
inline constexpr const char* kAddOp = "tessera.linalg.add";
inline constexpr const char* kQrOp = "tessera.linalg.qr";
inline constexpr const char* kSvdOp = "tessera.linalg.svd";
inline constexpr const char* kPotrfOp = "tessera.linalg.potrf";
inline constexpr const char* kTrsmOp = "tessera.linalg.trsm";
inline constexpr const char* kGetrfOp = "tessera.linalg.getrf";
inline constexpr const char* kLuExtractOp = "tessera.linalg.lu_extract";
inline constexpr const char* kZerosOp = "tessera.linalg.zeros";

/** One argument of a task: a chunk of an input, a task of an input TasksExpr, or a task of this one. */
struct TaskArg {
  static constexpr int kSelf = -1;
  int input = kSelf;       // index into TasksExpr::inputs, or kSelf
  std::int64_t index = 0;  // chunk (row-major flat) of an input, or a task index when `task`
  bool task = false;       // always true for kSelf
};

struct TaskSpec {
  std::string op;
  std::optional<Value> params;  // the first argument, when the op takes one
  std::vector<TaskArg> args;
};

/** The operands of a contraction (see contract below), kept so that a sum over the product's
 *  free axes can be pushed into them (product_sums.cpp). */
struct ProductOperands {
  ExprPtr a, b;
  int nbatch = 0, nfa = 0, nc = 0, nfb = 0;
};

struct TasksExpr : Expr {
  std::vector<ExprPtr> inputs;
  std::optional<ProductOperands> product;  // set when this is contract(a, b, ...)
  std::vector<TaskSpec> tasks;
  std::vector<Key> keys;               // one per task, fixed when built
  std::vector<std::int64_t> outputs;   // the task of each chunk, row-major chunk order
  using Expr::Expr;
};

/**
 * Builds a TasksExpr: add inputs and tasks, then finish() with the output tasks. Tasks may be
 * added in any order (keys are fixed when added), so a task may name a later one.
 */
class TasksBuilder {
 public:
  TasksBuilder(DType dtype, Shape shape, Chunks chunks, const std::string& prefix);
  /** Input index of `a` (added once). */
  int input(const Array& a);
  /** A chunk of an input, by chunk coordinates. */
  TaskArg chunk(int input, const std::vector<std::int64_t>& coords) const;
  /** A task of an input that is itself a TasksExpr. */
  static TaskArg input_task(int input, std::int64_t task) { return TaskArg{input, task, true}; }
  static TaskArg own(std::int64_t task) { return TaskArg{TaskArg::kSelf, task, true}; }
  /** Reserves a task index (its key is fixed now); set() fills it in later. */
  std::int64_t reserve();
  void set(std::int64_t task, std::string op, std::optional<Value> params, std::vector<TaskArg> args);
  std::int64_t add(std::string op, std::optional<Value> params, std::vector<TaskArg> args) {
    const auto t = reserve();
    set(t, std::move(op), std::move(params), std::move(args));
    return t;
  }
  /** Sum of `parts` (same shapes) as a tree of at most `split_every` per task; returns the root. */
  std::int64_t tree_sum(std::vector<std::int64_t> parts, int split_every = 8);
  /** The array, whose chunk f is task outputs[f]. */
  Array finish(std::vector<std::int64_t> outputs);
  /** Records that the array is contract(a, b, nbatch, nfa, nc, nfb, ...). */
  void set_product(ProductOperands p) { e_->product = std::move(p); }

 private:
  std::shared_ptr<TasksExpr> e_;
};

// ---- parameters of the block ops --------------------------------------------------------------

/**
 * out = sum_k A_k B_k over `pairs` pairs (args: A_1..A_p, B_1..B_p). A block is (batch...,
 * free_a..., contracted...), B (batch..., contracted..., free_b...); the result is (batch...,
 * free_a..., free_b...): a stack of matrix products, one per batch element.
 */
struct ContractParams {
  std::int32_t batch = 0, free_a = 0, free_b = 0, pairs = 1;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(batch, free_a, free_b, pairs);
  }
};

/**
 * Triangular solve after an update: X solves op(T) X = R (left) or X op(T) = R (right), where
 * R = C - sum_k A_k op_b(B_k) (args: T, C, A_1, B_1, A_2, B_2, ...). T is read from its first
 * n x n rows (n = its column count: a getrf block carries its pivot row below). `pivots`
 * (left only) first permutes R's rows by T's pivot row: R[perm].
 */
struct TrsmParams {
  bool left = true, lower = true, trans = false, unit = false, pivots = false, trans_b = false;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(left, lower, trans, unit, pivots, trans_b);
  }
};

/** What lu_extract takes from a getrf block D (args: D[, X]). */
enum class LuPart : std::uint8_t {
  P = 0,        // the permutation matrix P of C = P L U
  L = 1,        // unit lower L
  U = 2,        // upper U
  PermRows = 3  // X[perm] (the true L of an off-diagonal block from P L)
};

struct ZerosParams {
  DType dtype = DType::Float64;
  Shape shape;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(dtype, shape);
  }
};

/** Converts LAPACK's getrf swaps (1-based ipiv) to the permutation perm with C[perm] = L U. */
std::vector<std::int64_t> pivots_to_perm(const std::vector<std::int32_t>& ipiv, std::int64_t rows);

/**
 * The batched product of a (batch, free_a, contracted) and b (batch, contracted, free_b) in
 * dtype t (numeric, not bool): per output chunk, groups of contracted chunk pairs then a tree
 * sum (linalg.cpp). matmul's stacks of matrices and every tensordot and einsum come here.
 */
Array contract(Array a, Array b, int nbatch, int nfa, int nc, int nfb, DType t);

/** The dtype linear algebra computes in: float32 stays, anything else is float64 (NumPy's). */
DType linalg_dtype(DType t);

}  // namespace tessera::detail
