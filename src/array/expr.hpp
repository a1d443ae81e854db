#pragma once
// Internal: the expression tree behind tessera::Array, and what lowering needs of it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tessera/array/array.hpp"
#include "tessera/core/value.hpp"
#include "program.hpp"

namespace tessera::detail {

using ExprPtr = std::shared_ptr<const Expr>;

enum class ExprKind : std::uint8_t {
  Generator,    // blockwise leaf computed from the global element index (random, full, arange)
  Elementwise,  // blockwise n-ary operation with broadcasting
  View,         // blockwise affine re-indexing: slicing, integer index, transpose, broadcast
  Source,       // chunks given as values (from_block, persist)
  Reduce,       // tree reduction
  Matmul,
  Rechunk,
  Concatenate,
  Reshape,
  MapBlocks,
  Custom,       // lowered by the node itself (CustomExpr::lower_custom): scans, sorts, statistics
  TaskList,     // one explicitly described task per output chunk (gathers, halos, blockwise)
  Tasks,  // an explicit task list (linear algebra: src/array/linalg_tasks.hpp)
};

struct Expr {
  ExprKind kind;
  DType dtype;
  Shape shape;
  Chunks chunks;
  std::string name;
  /// Where this expression's tasks run (Host, or Device: the worker's GPU). Set when built:
  /// inherited from the inputs (Device when any input is), or chosen by to_device()/to_host().
  Target target = Target::Host;
  Expr(ExprKind k, DType d, Shape s, Chunks c, std::string n)
      : kind(k), dtype(d), shape(std::move(s)), chunks(std::move(c)), name(std::move(n)) {}
  virtual ~Expr() = default;
  /** Blockwise nodes fuse into one program per output chunk. */
  bool blockwise() const {
    return kind == ExprKind::Generator || kind == ExprKind::Elementwise || kind == ExprKind::View;
  }
};


struct GeneratorExpr : Expr {
  GenKind gen;
  double p0 = 0, p1 = 0;       // normal: mean, std; uniform: low, high; full: value; arange: start, step
  std::int64_t i0 = 0, i1 = 0;  // integers: low, high; full of an integer or bool dtype: the exact value
  std::uint64_t key = 0;        // Philox key (from the seed and RandomState stream)
  using Expr::Expr;
};


struct ElementwiseExpr : Expr {
  EwOp op;
  std::vector<ExprPtr> inputs;
  using Expr::Expr;
};

/**
 * Affine re-indexing: input coordinate on axis k = offset[k] + stride[k] * out[src[k]], or the
 * constant offset[k] when src[k] < 0. Covers slicing with steps (negative too), integer
 * indexing, transposes, new axes and broadcasting (an output axis no input axis reads).
 */
struct AffineMap {
  std::vector<int> src;
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> stride;
};

struct ViewExpr : Expr {
  ExprPtr input;
  AffineMap map;
  using Expr::Expr;
};

/** Chunks that exist already: values in this process, or results an executor keeps. */
struct SourceExpr : Expr {
  std::vector<Value> blocks;  // one per chunk, row-major chunk order (when kept is null)
  // A persisted array's chunks, one key per chunk in the same order: graphs for the executor
  // that holds them use the keys; any other executor gets the values (fetched when lowered).
  std::shared_ptr<const KeptResults> kept;
  using Expr::Expr;
};


struct ReduceExpr : Expr {
  ExprPtr input;
  ReduceKind reduce;
  std::vector<int> axes;  // sorted, normalised
  bool keepdims = false;
  int split_every = 8;
  int ddof = 0;
  using Expr::Expr;
};

struct MatmulExpr : Expr {
  ExprPtr a, b;  // both 2-d here; vectors are reshaped around it
  using Expr::Expr;
};

struct RechunkExpr : Expr {
  ExprPtr input;
  bool materialize = false;  // computed once as tasks of its own, never fused into a reader
  using Expr::Expr;
};

struct ConcatenateExpr : Expr {
  std::vector<ExprPtr> inputs;
  int axis = 0;
  using Expr::Expr;
};

struct ReshapeExpr : Expr {
  ExprPtr input;  // already chunked so that every output chunk is one contiguous input range
  using Expr::Expr;
};

struct MapBlocksExpr : Expr {
  std::string op;
  std::vector<ExprPtr> inputs;  // same chunk grid as the output, or one chunk (read by every task)
  std::optional<Value> params;  // when set, each task's first argument (the op's parameters)
  // When not empty, one literal first argument per chunk (row-major): what a reader with no
  // input array (from_raw, from_hdf5) reads for that chunk.
  std::vector<Value> chunk_args;
  using Expr::Expr;
};

class Lowering;

/**
 * A materialised node that lowers itself: the chunk-level operations of scans, sorting and
 * statistics (src/array/chunk_map.hpp) add their own tasks through Lowering::add_custom_task.
 */
struct CustomExpr : Expr {
  using Expr::Expr;
  /** Adds the tasks of every chunk and fills keys (row-major chunk order). */
  virtual void lower_custom(Lowering& low, std::vector<Key>& keys) const = 0;
  /** A copy to re-make on another target (Array::to_device/to_host), for a node that draws its
   *  chunks from nothing as a generator does (multinomial's rows); nullptr: read it through a
   *  view placed there instead. */
  virtual std::shared_ptr<Expr> copy_to_place() const { return nullptr; }
};

/**
 * Tasks spelled out per output chunk: chunk f runs calls[f].op on calls[f].params followed by
 * the chunks calls[f].reads names (input index, row-major chunk index of that input). Used by
 * operations whose chunks read an irregular set of input chunks (fancy indexing, halos,
 * blockwise with contractions) and by those whose chunk sizes are unknown until run time.
 */
struct TaskListExpr : Expr {
  struct Call {
    std::string op;
    std::vector<Value> params;
    std::vector<std::pair<int, std::int64_t>> reads;
  };
  std::vector<ExprPtr> inputs;
  std::vector<Call> calls;  // one per output chunk, row-major chunk order
  /** Set when this is a boolean selection data[mask]: a mask of data's shape (axis -1, the
   *  result is 1-d) or a 1-d mask along `axis` (compress). A sum of it is then a masked sum of
   *  data, with nothing selected into new blocks (selection_sums.cpp). */
  struct Selection {
    ExprPtr data, mask;
    int axis = -1;
  };
  std::optional<Selection> selection;
  using Expr::Expr;
};

/** Device when any of the inputs (expression pointers) is on the device (the rule CuPy-backed
 *  Dask arrays follow). */
template <typename Range>
Target joint_target_of(const Range& inputs) {
  for (const auto& e : inputs)
    if (e && e->target == Target::Device) return Target::Device;
  return Target::Host;
}

/** Lowers expressions to tasks; memoises shared sub-expressions. */
class Lowering {
 public:
  /**
   * `executor`: the one that will run the graph (persisted chunks it holds are used by key);
   * nullptr: unknown, so the graph is self-contained.
   */
  explicit Lowering(const Executor* executor = nullptr) : executor_(executor) {}
  /** Keys of every chunk of e, row-major chunk order. */
  const std::vector<Key>& lower(const ExprPtr& e);
  Graph& graph() { return graph_; }
  /** Adds a task of the CustomExpr being lowered (annotated with its target). */
  void add_custom_task(Task t) { add_task(std::move(t)); }

 private:
  /** Evaluates the blockwise tree under root over the given chunking, one task per chunk. */
  void lower_blockwise(const Expr& root, const Chunks& chunks, const std::string& name, std::vector<Key>& keys);
  /** A task gathering the box [lo, lo + box) of e from the chunks overlapping it. */
  Key emit_assemble(const Expr& e, const std::vector<Key>& keys, const std::vector<std::int64_t>& lo, const Shape& box);
  void lower_reduce(const ReduceExpr& e, std::vector<Key>& keys);
  void lower_matmul(const MatmulExpr& e, std::vector<Key>& keys);
  void lower_rechunk(const RechunkExpr& e, std::vector<Key>& keys);
  void lower_concatenate(const ConcatenateExpr& e, std::vector<Key>& keys);
  void lower_reshape(const ReshapeExpr& e, std::vector<Key>& keys);
  void lower_map_blocks(const MapBlocksExpr& e, std::vector<Key>& keys);
  void lower_task_list(const TaskListExpr& e, std::vector<Key>& keys);
  void lower_tasks(const Expr& e, std::vector<Key>& keys);  // a TasksExpr (linalg_tasks.cpp)
  /** Chunk offsets of every axis of e (chunk_offsets per axis), computed once per expression. */
  const std::vector<std::vector<std::int64_t>>& offsets(const Expr& e);
  /** Adds a task of the expression being lowered, annotated with that expression's target. */
  void add_task(Task t);
  /**
   * Nodes of the fused tree under `root` that are computed once, as their own tasks, and read
   * as inputs, instead of being fused into every program that reads them (shared_nodes.cpp).
   */
  const std::unordered_set<const Expr*>& shared_nodes(const Expr& root);
  friend class ProgramBuilder;
  const Executor* executor_;
  Target target_ = Target::Host;  // of the expression whose tasks are being emitted
  Graph graph_;
  std::unordered_map<const Expr*, std::vector<Key>> memo_;
  std::unordered_map<const Expr*, std::vector<std::vector<std::int64_t>>> offsets_;
  std::unordered_map<const Expr*, std::unordered_set<const Expr*>> shared_;
};

/** How a fused program reads one input of an element-wise node (broadcast axes read element 0),
 *  given the map through which the node itself is read. */
AffineMap elementwise_input_map(const Expr& node, const Expr& input, const AffineMap& m);
/** How a fused program reads a view's input, given the map through which the view is read. */
AffineMap view_input_map(const ViewExpr& v, const AffineMap& m);

/** Array::to_graph for a graph that `executor` will run (nullptr: a self-contained graph). */
Graph graph_for(const Array& a, const Executor* executor, std::vector<Key>* chunk_keys);

/** The expression behind an Array; throws for a default-constructed one. */
const Expr& expr_of(const Array& a);

/** Row-major chunk index <-> chunk coordinates. */
std::vector<std::int64_t> chunk_coords(const Chunks& chunks, std::int64_t flat);
std::int64_t chunk_flat(const Chunks& chunks, const std::vector<std::int64_t>& coords);

/** Builds an Expr with a fresh name. */
template <typename T>
std::shared_ptr<T> make_expr(ExprKind kind, DType dtype, Shape shape, Chunks chunks, const std::string& prefix) {
  return std::make_shared<T>(kind, dtype, std::move(shape), std::move(chunks), unique_name(prefix));
}

/** `a` with exactly these chunks (a Rechunk node; `a` itself when it has them already). */
Array rechunk_to(const Array& a, Chunks chunks);

/** Common refinement of the chunk boundaries of several chunkings of one axis. */
std::vector<std::int64_t> refine_axis_chunks(const std::vector<std::vector<std::int64_t>>& options);

}  // namespace tessera::detail
