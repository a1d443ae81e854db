#pragma once
// Graphs of scalar sums and products for the graph layer's tests and fuse_linear's (tests/ops).
#include <span>
#include <string>
#include <vector>

#include "tessera/core/block.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera::graph_testing {

// "gtest.graph.sum" and "gtest.graph.mul": the sum and the product of the (scalar) block arguments.
inline const bool registered = [] {
  register_op("gtest.graph.sum", [](const OpContext&, std::span<const Value> args) {
    double s = 0;
    for (const auto& a : args) s += a.block().item();
    return Value(Block::scalar(s));
  });
  register_op("gtest.graph.mul", [](const OpContext&, std::span<const Value> args) {
    double s = 1;
    for (const auto& a : args) s *= a.block().item();
    return Value(Block::scalar(s));
  });
  return true;
}();

inline Task task(Key key, std::vector<Key> deps, std::string op = "gtest.graph.sum", double literal = 1.0) {
  (void)registered;  // used, so that every test file including this registers the ops
  Task t;
  t.key = std::move(key);
  t.op = std::move(op);
  for (auto& d : deps) t.args.emplace_back(KeyRef{std::move(d)});
  t.args.emplace_back(Value(Block::scalar(literal)));
  return t;
}

/** K chains a_i -> b_i -> c_i whose c_i feed a pairwise tree sum; returns the root key. */
inline Key chains_and_tree_sum(Graph& g, int k) {
  std::vector<Key> level;
  for (int i = 0; i < k; ++i) {
    const auto s = std::to_string(i);
    g.add(task("a," + s, {}));
    g.add(task("b," + s, {"a," + s}));
    g.add(task("c," + s, {"b," + s}));
    level.push_back("c," + s);
  }
  int depth = 0;
  while (level.size() > 1) {
    std::vector<Key> next;
    for (std::size_t i = 0; i < level.size(); i += 2) {
      std::vector<Key> deps{level[i]};
      if (i + 1 < level.size()) deps.push_back(level[i + 1]);
      Key key = "sum," + std::to_string(depth) + "," + std::to_string(i / 2);
      g.add(task(key, deps, "gtest.graph.sum", 0.0));
      next.push_back(key);
    }
    level = std::move(next);
    ++depth;
  }
  return level[0];
}

}  // namespace tessera::graph_testing
