#pragma once
/**
 * @file Private: a Graph indexed by integer positions, shared by order(), cull(), linear_chains()
 * and the local executors. Not installed.
 */
#include <cstdint>
#include <vector>

#include "tessera/graph/graph.hpp"

namespace tessera::detail {

/**
 * @brief Tasks numbered by execution order (position 0 runs first), with dependencies as
 * compressed rows of positions. Built by one iterative depth-first pass from the roots, so a
 * task's dependencies get the positions just before it (dask.order's main idea).
 */
struct IndexedGraph {
  std::vector<const Task*> tasks;       ///< tasks[p]: the task at position p
  std::vector<std::uint32_t> dep_begin;  ///< size n+1; deps[dep_begin[p] .. dep_begin[p+1])
  std::vector<std::uint32_t> deps;       ///< unique dependency positions, argument order
  std::vector<std::uint32_t> arg_begin;  ///< size n+1; arg_dep[arg_begin[p] + k] for argument k
  std::vector<std::int32_t> arg_dep;     ///< -1 for a literal, else the position it reads
  std::vector<Key> missing;              ///< roots and references defined by no task, sorted, unique
  std::vector<std::int64_t> root_pos;    ///< position of each root, -1 when no task defines it

  std::size_t size() const noexcept { return tasks.size(); }
};

/**
 * @brief Indexes the tasks that `roots` need (all tasks when `include_unreachable`, the
 * unreachable ones ordered after, from their sinks in key order). Roots are visited in the given
 * order and dependencies in argument order. Throws Error naming a cycle.
 */
IndexedGraph index_graph(const Graph& graph, const std::vector<Key>& roots, bool include_unreachable);

}  // namespace tessera::detail
