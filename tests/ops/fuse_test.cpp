// fuse_linear: linear chains as one "tessera.fused" task, with the results of the unfused graph.
#include <gtest/gtest.h>

#include <variant>

#include "../graph/graph_test_util.hpp"
#include "ops/fused_tasks.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/ops/fuse.hpp"

using namespace tessera;
using graph_testing::chains_and_tree_sum;
using graph_testing::task;

namespace {

TEST(Fuse, LinearChainsBecomeOneTaskWithTheSameResult) {
  Graph g;
  const Key root = chains_and_tree_sum(g, 8);  // a power of two: no one-input sums
  Graph f = fuse_linear(g, {root});
  // Each a->b->c chain becomes one task keyed c,i; the sums stay.
  EXPECT_EQ(f.size(), g.size() - 2 * 8);
  for (int i = 0; i < 8; ++i) {
    const auto& t = f.at("c," + std::to_string(i));
    EXPECT_EQ(t.op, "tessera.fused");
    EXPECT_TRUE(t.dependencies().empty());
    auto inner = decode_fused_tasks(std::get<Value>(t.args.at(0)));
    ASSERT_EQ(inner.size(), 3u);
    EXPECT_EQ(inner[0].key, "a," + std::to_string(i));
    EXPECT_EQ(inner[2].key, "c," + std::to_string(i));
  }
  EXPECT_FALSE(f.contains("a,0"));
  EXPECT_NO_THROW(f.check_acyclic());
  SyncExecutor ex;
  EXPECT_EQ(ex.get(f, {root})[0].block().item(), ex.get(g, {root})[0].block().item());
  EXPECT_EQ(ex.get(f, {root})[0].block().item(), 24.0);

  // With 10 chains the tree has one-input sums; they fuse into their single input too.
  Graph g10;
  const Key root10 = chains_and_tree_sum(g10, 10);
  Graph f10 = fuse_linear(g10, {root10});
  EXPECT_EQ(f10.size(), g10.size() - 2 * 10 - 2);
  EXPECT_EQ(ex.get(f10, {root10})[0].block().item(), 30.0);
}

TEST(Fuse, OutputsAnnotationsAndFanOutStopFusion) {
  Graph g;
  g.add(task("a", {}, "gtest.graph.sum", 2.0));
  g.add(task("b", {"a"}, "gtest.graph.mul", 3.0));  // output: must stay
  g.add(task("c", {"b"}, "gtest.graph.sum", 1.0));
  Task d = task("d", {"c"}, "gtest.graph.mul", 2.0);
  d.annotations.priority = 5;  // different annotations: not fused with c
  g.add(d);
  g.add(task("e", {"d"}));  // e and e2 both read d: d is not linear into either
  g.add(task("e2", {"d"}));
  g.add(task("x", {"ext"}, "gtest.graph.sum", 1.0));  // head reading an external key
  g.add(task("y", {"x"}, "gtest.graph.mul", 4.0));
  Graph f = fuse_linear(g, {"b", "e", "e2", "y"});
  EXPECT_TRUE(f.contains("b"));
  EXPECT_EQ(f.at("b").op, "tessera.fused");  // a fused into b
  EXPECT_EQ(f.at("c").op, "gtest.graph.sum");
  EXPECT_EQ(f.at("d").annotations.priority, 5);
  EXPECT_EQ(f.at("d").op, "gtest.graph.mul");
  EXPECT_EQ(f.at("y").op, "tessera.fused");
  EXPECT_EQ(f.at("y").dependencies(), (std::vector<Key>{"ext"}));
  EXPECT_EQ(f.external_keys(), (std::vector<Key>{"ext"}));
  EXPECT_FALSE(f.contains("a"));
  EXPECT_FALSE(f.contains("x"));

  g.add(task("ext", {}, "gtest.graph.sum", 0.5));
  f.add(task("ext", {}, "gtest.graph.sum", 0.5));
  SyncExecutor ex;
  const std::vector<Key> outs{"b", "e", "e2", "y"};
  auto r1 = ex.get(g, outs), r2 = ex.get(f, outs);
  for (std::size_t i = 0; i < outs.size(); ++i) EXPECT_EQ(r1[i].block().item(), r2[i].block().item()) << outs[i];
  EXPECT_EQ(r2[0].block().item(), 6.0);
  EXPECT_EQ(r2[3].block().item(), 6.0);  // (0.5 + 1) * 4
}

TEST(Fuse, ChainHeadWithSeveralInputs) {
  Graph g;
  g.add(task("p", {}, "gtest.graph.sum", 2.0));
  g.add(task("q", {}, "gtest.graph.sum", 3.0));
  g.add(task("p2", {"p"}, "gtest.graph.sum", 0.0));  // p2 and q2 both feed h: not linear
  g.add(task("h", {"p", "q"}, "gtest.graph.mul", 1.0));  // p has two dependents
  g.add(task("i", {"h"}, "gtest.graph.sum", 10.0));
  g.add(task("j", {"i", "p2"}, "gtest.graph.sum", 0.0));
  Graph f = fuse_linear(g, {"j"});
  EXPECT_EQ(f.at("i").op, "tessera.fused");
  EXPECT_EQ(f.at("i").dependencies(), (std::vector<Key>{"p", "q"}));
  SyncExecutor ex;
  EXPECT_EQ(ex.get(f, {"j"})[0].block().item(), ex.get(g, {"j"})[0].block().item());
  EXPECT_EQ(ex.get(f, {"j"})[0].block().item(), 2 * 3 + 10 + 2);
}

}  // namespace
