// A submitted graph is checked whole when it arrives (src/distributed/scheduler_graph_check.cpp):
// a dependency that is neither in the graph nor known to the scheduler, a cycle, or a graph
// beyond the size limits is refused with an error to that client alone, and nothing of it is
// kept. Driven through the scheduler state machine in one process (tests/distributed/sim_cluster.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "distributed/scheduler_graph_check.hpp"
#include "sim_cluster.hpp"

namespace tessera::distributed {
namespace {

using testing::make_task;
using testing::SimCluster;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The message of issue 29: one task depends on a key that exists nowhere, another names an
// operation no worker has. Before the check, the scheduler's transitions never settled on it.
TEST(SchedulerGraphCheck, AnUnknownDependencyBesideAnUnknownOperationIsRefusedWhole) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("a", {"ghost"}), make_task("b", {}, "no_such_op"), make_task("c", {"a", "b"})}, {"c"});
  ASSERT_TRUE(c.run(10000)) << "the scheduler kept sending messages";
  ASSERT_TRUE(c.clients["client"].erred.count("c"));
  EXPECT_TRUE(contains(c.clients["client"].erred["c"], "ghost")) << c.clients["client"].erred["c"];
  EXPECT_EQ(c.sched.task_count(), 0u) << "nothing of a refused graph is kept";
  c.check_all();

  // The same client, and another, go on.
  c.submit("client", {make_task("x")}, {"x"});
  c.submit("other", {make_task("y"), make_task("z", {"y"})}, {"z"});
  ASSERT_TRUE(c.run(10000));
  EXPECT_EQ(c.sched.status("x"), TaskStatus::Memory);
  EXPECT_EQ(c.sched.status("z"), TaskStatus::Memory);
  EXPECT_FALSE(c.clients["other"].erred.count("z"));
}

TEST(SchedulerGraphCheck, ACycleIsRefusedAndNamesItsKeys) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("p", {"q"}), make_task("q", {"r"}), make_task("r", {"p"}), make_task("s", {"p"})},
           {"s"});
  ASSERT_TRUE(c.run(10000));
  ASSERT_TRUE(c.clients["client"].erred.count("s"));
  const std::string& m = c.clients["client"].erred["s"];
  EXPECT_TRUE(contains(m, "cycle")) << m;
  EXPECT_TRUE(contains(m, "p") && contains(m, "q") && contains(m, "r")) << m;
  EXPECT_EQ(c.sched.task_count(), 0u);
  c.check_all();
}

TEST(SchedulerGraphCheck, ATaskThatDependsOnItselfIsACycle) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("self", {"self"})}, {"self"});
  ASSERT_TRUE(c.run(10000));
  ASSERT_TRUE(c.clients["client"].erred.count("self"));
  EXPECT_TRUE(contains(c.clients["client"].erred["self"], "cycle"));
  EXPECT_EQ(c.sched.task_count(), 0u);
}

TEST(SchedulerGraphCheck, DependenciesOnKeysTheSchedulerHoldsAreAccepted) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("a")}, {"a"});
  ASSERT_TRUE(c.run(10000));
  ASSERT_EQ(c.sched.status("a"), TaskStatus::Memory);
  c.submit("client", {make_task("b", {"a"})}, {"b"});
  ASSERT_TRUE(c.run(10000));
  EXPECT_EQ(c.sched.status("b"), TaskStatus::Memory);
  EXPECT_TRUE(c.clients["client"].erred.empty());
}

TEST(SchedulerGraphCheck, TheLimitsAreChecked) {
  GraphLimits limits;
  limits.max_tasks = 3;
  limits.max_key_bytes = 8;
  limits.max_dependencies = 2;
  auto known = [](const Key&) { return false; };
  auto refuse = [&](std::vector<Task> tasks, std::vector<Key> keys) {
    UpdateGraph u;
    u.tasks = std::move(tasks);
    u.keys = std::move(keys);
    return check_graph(u, known, limits);
  };
  EXPECT_EQ(refuse({make_task("a"), make_task("b", {"a"})}, {"b"}), "");
  EXPECT_TRUE(contains(refuse({make_task("a"), make_task("b"), make_task("c"), make_task("d")}, {"d"}), "4 tasks"));
  EXPECT_TRUE(contains(refuse({make_task("a_very_long_key")}, {"a_very_long_key"}), "key of 15 bytes"));
  EXPECT_TRUE(contains(refuse({make_task("a"), make_task("b"), make_task("c", {"a", "b", "a"})}, {"c"}),
                       "3 dependencies"));
  EXPECT_TRUE(contains(refuse({make_task("a")}, {"a", "a_very_long_key"}), "key of 15 bytes"));
}

}  // namespace
}  // namespace tessera::distributed
