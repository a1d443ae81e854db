#pragma once
/** @file
 * fuse_linear: linear chains of a graph as single "tessera.fused" tasks. */
#include <vector>

#include "tessera/graph/graph.hpp"

namespace tessera {

/**
 * @brief Fuses linear chains (a task whose only dependent is the next task, with the same
 * annotations; see linear_chains) into one task running the op "tessera.fused", so that
 * per-chunk chains cost one task. Output keys are never fused away.
 */
Graph fuse_linear(const Graph& graph, const std::vector<Key>& outputs);

}  // namespace tessera
