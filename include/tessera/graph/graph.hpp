#pragma once
/** @file
 * Graph: a set of tasks keyed by the value each produces. */
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/graph/task.hpp"

namespace tessera {

/**
 * @brief A task graph: keys to tasks, with dependencies given by each task's KeyRef arguments.
 *
 * A Graph may reference keys it does not define (values already held by an executor or a
 * cluster); validate() lists those so the caller can check they exist.
 */
class Graph {
 public:
  /** @brief Adds a task; throws Error when the key is already defined. */
  void add(Task task);
  /** @brief Adds or replaces. */
  void set(Task task);
  /** @brief Adds every task of another graph (keys already present are kept). */
  void merge(const Graph& other);

  bool contains(const Key& key) const { return tasks_.count(key) != 0; }
  const Task& at(const Key& key) const;
  std::size_t size() const noexcept { return tasks_.size(); }
  bool empty() const noexcept { return tasks_.empty(); }
  const std::unordered_map<Key, Task>& tasks() const noexcept { return tasks_; }

  /** @brief Keys referenced by some task but defined by none. */
  std::vector<Key> external_keys() const;
  /** @brief Throws Error naming a cycle when the graph has one. */
  void check_acyclic() const;

 private:
  std::unordered_map<Key, Task> tasks_;
};

/** @brief The sub-graph that the given keys need (everything else dropped). */
Graph cull(const Graph& graph, const std::vector<Key>& outputs);

/**
 * @brief An execution order that keeps peak memory low, like dask.order.
 *
 * Depth-first from the outputs: a task's dependencies are ordered just before it, so one
 * chunk's chain (and the reduction step that consumes it) finishes before the next chunk
 * starts. Among ready tasks, executors prefer higher annotation priority, then lower order.
 * Returns key -> position (0 runs first).
 */
std::unordered_map<Key, std::int64_t> order(const Graph& graph, const std::vector<Key>& outputs);

/**
 * @brief The graph's tasks grouped into linear chains, what fusion merges: a task joins the
 * chain of its only dependent when that dependent has no other dependency and the same
 * annotations, and it is not an output. Each chain lists its tasks head first; a task that
 * joins nothing is a chain of one. Chains come in execution order (of their last task), and
 * cover every task once. The pointers are into `graph`. fuse_linear (tessera/ops/fuse.hpp)
 * turns each longer chain into one task.
 */
std::vector<std::vector<const Task*>> linear_chains(const Graph& graph, const std::vector<Key>& outputs);

}  // namespace tessera
