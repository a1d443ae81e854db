#pragma once
// The check a submitted graph passes before the scheduler takes any of it (issue 29): every
// dependency is in the graph or already known, there is no cycle, and the graph, its keys and
// each task's dependencies stay within limits. A graph that fails is refused whole, with the
// reason, to the client that sent it (SchedulerStateImpl::on(UpdateGraph)); nothing of it is kept,
// so no message can leave the scheduler's transitions with a task they cannot settle.
#include <cstddef>
#include <functional>
#include <string>

#include "tessera/distributed/events.hpp"

namespace tessera::distributed {

/** Bounds on one submitted graph: far above what a client builds, far below what hurts. */
struct GraphLimits {
  std::size_t max_tasks = 50'000'000;        ///< tasks in one UpdateGraph
  std::size_t max_key_bytes = 64 * 1024;     ///< length of a task's key, a dependency or a wanted key
  std::size_t max_dependencies = 10'000'000;  ///< dependencies of one task
};

/**
 * Empty when `graph` may be taken; otherwise why not, naming the keys involved. `known(key)`
 * says whether the scheduler already holds a task of that key (a dependency on it is allowed).
 * Tasks whose key is already known are not checked: the scheduler keeps the task it has.
 * Linear in the graph's tasks and dependencies; allocates only an index of the graph's keys.
 */
std::string check_graph(const UpdateGraph& graph, const std::function<bool(const Key&)>& known,
                        const GraphLimits& limits = {});

}  // namespace tessera::distributed
