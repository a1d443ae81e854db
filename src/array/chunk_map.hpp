#pragma once
// Internal: chunk-level operations for scans, sorting and statistics.
//
// A ChunkMapExpr runs a registered op once per output chunk on chunks of its inputs that the
// builder lists (reads[f]), with cereal-encoded parameters (shared, or one per output chunk).
// With it a per-chunk sort, a tree of top-k merges or a histogram's partial counts are plain
// expressions; element-wise work before and after them still fuses (the inputs are lowered as
// usual, and readers of a ChunkMapExpr read its chunks as inputs).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "expr.hpp"

namespace tessera::detail {

/** (input index, flat chunk index of that input) */
using ChunkRead = std::pair<int, std::int64_t>;

struct ChunkMapExpr : CustomExpr {
  std::string op;
  std::vector<Value> params;  // one shared value, or one per output chunk
  std::vector<ExprPtr> inputs;
  std::vector<std::vector<ChunkRead>> reads;  // per output chunk, in argument order
  using CustomExpr::CustomExpr;
  void lower_custom(Lowering& low, std::vector<Key>& keys) const override;
};

/** A ChunkMapExpr; its target is the inputs' joint target. */
Array chunk_map(const std::string& op, DType dtype, Chunks chunks, const std::vector<Array>& inputs,
                std::vector<Value> params, std::vector<std::vector<ChunkRead>> reads, const std::string& name);

/** The chunk grid `a` reads on the same grid: reads[f] = {(0, f)}. */
std::vector<std::vector<ChunkRead>> same_grid_reads(const Chunks& chunks);

/** a with new chunks (a no-op when they are a's). */
Array rechunk_exact(const Array& a, Chunks chunks);

/** a rechunked so that every axis in `axes` is one chunk (the others keep their chunks). */
Array whole_axes(const Array& a, const std::vector<int>& axes);

/**
 * a with its chunks computed as tasks of their own: later expressions read them instead of
 * fusing a's element-wise work (used where one small result is read by many tasks).
 */
Array materialize(const Array& a);

/** Normalised, sorted, distinct axes; all axes when empty. */
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* what);

/** a with the given axes moved to the end, in order (a view; no-op when already there). */
Array move_axes_last(const Array& a, const std::vector<int>& axes);

/** The inverse of move_axes_last for an array with the same number of axes. */
Array move_last_axes_back(const Array& a, const std::vector<int>& axes);

}  // namespace tessera::detail
