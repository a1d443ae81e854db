#pragma once
// Internal: building TaskListExpr arrays (expr.hpp), whose tasks are spelled out per chunk.
#include <cstdint>
#include <vector>

#include "expr.hpp"
#include "gather.hpp"
#include "unknown_chunks.hpp"

namespace tessera::detail {

/**
 * The task that gathers out[i0, i1, ...] = x[index[0][i0], index[1][i1], ...] (global
 * coordinates of x; -1 reads `fill`) from the chunks of x that hold those coordinates: input
 * `input` of the expression being built. Chunk sizes of x must be known. index_axis >= 0: that
 * axis's indices come from one more argument the caller appends to the reads (index[index_axis]
 * must then list the whole axis, so that every chunk along it is read).
 */
TaskListExpr::Call gather_call(const Expr& x, int input, const std::vector<std::vector<std::int64_t>>& index,
                               double fill = 0, int index_axis = -1);

/** A TaskListExpr over `inputs`, with the target of its inputs (Device when any is). */
std::shared_ptr<TaskListExpr> make_task_list(DType dtype, Chunks chunks, std::vector<ExprPtr> inputs,
                                             const std::string& prefix);

/** The array with the given chunks (a rechunk when they differ). */
Array rechunked(const Array& a, Chunks chunks);

}  // namespace tessera::detail
