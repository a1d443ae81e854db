// Graph layer: Graph, cull, order, linear_chains (fuse_linear is tests/ops/fuse_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "graph_test_util.hpp"
#include "tessera/core/error.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera;

namespace {

using graph_testing::chains_and_tree_sum;
using graph_testing::task;

void expect_dependencies_first(const Graph& g, const std::unordered_map<Key, std::int64_t>& o) {
  for (const auto& [k, t] : g.tasks())
    for (const auto& d : t.dependencies())
      if (g.contains(d)) { EXPECT_LT(o.at(d), o.at(k)) << d << " must be ordered before " << k; }
}

}  // namespace

TEST(Graph, AddSetMergeAt) {
  Graph g;
  g.add(task("x", {}));
  EXPECT_THROW(g.add(task("x", {})), Error);
  EXPECT_THROW(g.add(task("", {})), Error);
  EXPECT_TRUE(g.contains("x"));
  EXPECT_EQ(g.size(), 1u);
  g.set(task("x", {}, "gtest.graph.mul"));
  EXPECT_EQ(g.at("x").op, "gtest.graph.mul");
  EXPECT_THROW(g.at("nope"), Error);

  Graph h;
  h.add(task("x", {}));  // kept as in g
  h.add(task("y", {"x"}));
  g.merge(h);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(g.at("x").op, "gtest.graph.mul");
  EXPECT_EQ(g.at("y").dependencies(), (std::vector<Key>{"x"}));
}

TEST(Graph, ExternalKeys) {
  Graph g;
  g.add(task("a", {"held-1"}));
  g.add(task("b", {"a", "held-0", "held-1"}));
  EXPECT_EQ(g.external_keys(), (std::vector<Key>{"held-0", "held-1"}));
  g.add(task("held-0", {}));
  EXPECT_EQ(g.external_keys(), (std::vector<Key>{"held-1"}));
}

TEST(Graph, CycleDetectionNamesTheCycle) {
  Graph g;
  g.add(task("a", {"c"}));
  g.add(task("b", {"a"}));
  g.add(task("c", {"b"}));
  g.add(task("d", {"c"}));
  try {
    g.check_acyclic();
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cycle"), std::string::npos) << m;
    for (const char* k : {"a", "b", "c"}) EXPECT_NE(m.find(k), std::string::npos) << m;
  }
  EXPECT_THROW(order(g, {"d"}), Error);

  Graph self;
  self.add(task("s", {"s"}));
  EXPECT_THROW(self.check_acyclic(), Error);

  Graph ok;
  chains_and_tree_sum(ok, 5);
  ok.add(task("dangling", {"external"}));
  EXPECT_NO_THROW(ok.check_acyclic());
}

TEST(Graph, CullKeepsOnlyWhatOutputsNeed) {
  Graph g;
  g.add(task("a", {}));
  g.add(task("b", {"a"}));
  g.add(task("c", {"b", "ext"}));
  g.add(task("unused", {"a"}));
  g.add(task("other", {}));
  Graph c = cull(g, {"c"});
  EXPECT_EQ(c.size(), 3u);
  EXPECT_TRUE(c.contains("a") && c.contains("b") && c.contains("c"));
  EXPECT_FALSE(c.contains("unused"));
  EXPECT_EQ(c.external_keys(), (std::vector<Key>{"ext"}));
  EXPECT_EQ(cull(g, {"b", "other"}).size(), 3u);
  EXPECT_TRUE(cull(g, {}).empty());
}

TEST(Order, DependenciesFirstAndEveryTaskOrdered) {
  Graph g;
  const Key root = chains_and_tree_sum(g, 37);
  g.add(task("side", {"a,3"}));  // not needed by the root: still ordered
  auto o = order(g, {root});
  EXPECT_EQ(o.size(), g.size());
  std::set<std::int64_t> positions;
  for (const auto& [k, p] : o) positions.insert(p);
  EXPECT_EQ(positions.size(), g.size());
  EXPECT_EQ(*positions.rbegin(), static_cast<std::int64_t>(g.size()) - 1);
  expect_dependencies_first(g, o);
  EXPECT_EQ(o.at(root), static_cast<std::int64_t>(g.size()) - 2);  // the output's subgraph comes first
  EXPECT_EQ(o.at("side"), static_cast<std::int64_t>(g.size()) - 1);
  EXPECT_EQ(order(g, {}).size(), g.size());  // no outputs: from every sink
}

TEST(Order, ChainsCompleteBeforeNewOnesStart) {
  const int k = 64;
  Graph g;
  const Key root = chains_and_tree_sum(g, k);
  auto o = order(g, {root});
  std::vector<std::pair<std::int64_t, Key>> seq;
  for (const auto& [key, p] : o) seq.emplace_back(p, key);
  std::sort(seq.begin(), seq.end());
  // Walk the order: a chain is in progress from its a_i until c_i's consumer (a sum) has run.
  std::set<std::string> in_progress;
  std::size_t most = 0;
  std::set<Key> done;
  for (const auto& [p, key] : seq) {
    done.insert(key);
    if (key.rfind("a,", 0) == 0) in_progress.insert(key.substr(2));
    if (key.rfind("sum,", 0) == 0)
      for (const auto& d : g.at(key).dependencies())
        if (d.rfind("c,", 0) == 0) in_progress.erase(d.substr(2));
    most = std::max(most, in_progress.size());
  }
  EXPECT_LE(most, 2u) << "order interleaves chains";
  // Partial sums are not all deferred to the end: the first one runs before the last chain starts.
  EXPECT_LT(o.at("sum,0,0"), o.at("a," + std::to_string(k - 1)));
}

TEST(Order, IterativeAndFastOnAMillionTaskChain) {
  const int n = 1'000'000;
  Graph g;
  g.add(task("t,0", {}));
  for (int i = 1; i < n; ++i) g.add(task("t," + std::to_string(i), {"t," + std::to_string(i - 1)}));
  const auto t0 = std::chrono::steady_clock::now();
  auto o = order(g, {"t," + std::to_string(n - 1)});  // recursion this deep would overflow the stack
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("order() of a %d-task chain: %.3f s\n", n, s);
  ASSERT_EQ(o.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(o.at("t,0"), 0);
  EXPECT_EQ(o.at("t,123456"), 123456);
  EXPECT_EQ(o.at("t," + std::to_string(n - 1)), n - 1);
  EXPECT_LT(s, 20.0);  // generous: catches quadratic behaviour only
}

TEST(Graph, LinearChainsGroupEveryTaskOnceHeadFirst) {
  Graph g;
  g.add(task("a", {}));
  g.add(task("b", {"a"}));
  g.add(task("c", {"b"}));  // a -> b -> c: one chain
  g.add(task("d", {"c"}));  // c is an output: d starts its own chain
  g.add(task("p", {}));
  g.add(task("q", {"p"}));
  g.add(task("r", {"p"}));  // p has two dependents: a chain of one
  Task s = task("s", {"q"});
  s.annotations.priority = 1;  // other annotations than q: not joined
  g.add(s);
  auto chains = linear_chains(g, {"c", "d", "r", "s"});
  std::map<Key, std::vector<Key>> by_tail;
  std::size_t tasks = 0;
  for (const auto& chain : chains) {
    ASSERT_FALSE(chain.empty());
    std::vector<Key> keys;
    for (const Task* t : chain) keys.push_back(t->key);
    tasks += keys.size();
    by_tail[keys.back()] = keys;
  }
  EXPECT_EQ(tasks, g.size());
  EXPECT_EQ(by_tail.size(), 6u);
  EXPECT_EQ(by_tail["c"], (std::vector<Key>{"a", "b", "c"}));
  EXPECT_EQ(by_tail["d"], (std::vector<Key>{"d"}));
  EXPECT_EQ(by_tail["p"], (std::vector<Key>{"p"}));
  EXPECT_EQ(by_tail["q"], (std::vector<Key>{"q"}));
  EXPECT_EQ(by_tail["r"], (std::vector<Key>{"r"}));
  EXPECT_EQ(by_tail["s"], (std::vector<Key>{"s"}));
  for (const auto& chain : chains)
    for (const Task* t : chain) EXPECT_EQ(t, &g.at(t->key)) << "not a pointer into the graph";
}
