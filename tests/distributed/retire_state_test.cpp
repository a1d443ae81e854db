// Retirement and the adaptive target in the state machines alone (SimCluster, invariants
// checked after every event): data only a retiring worker holds is copied before it is told to
// close, nothing is recomputed, a retiring worker gets no new tasks, the last holder of data is
// kept, and adaptive_target follows queued work.
#include <gtest/gtest.h>

#include "sim_cluster.hpp"

namespace {

using namespace tessera;
using namespace tessera::distributed;
using tessera::distributed::testing::make_task;
using tessera::distributed::testing::SimCluster;

Task on(const std::string& worker, Task t) {
  t.annotations.workers = {worker};
  return t;
}

TEST(RetireState, DataOnlyTheRetiringWorkerHoldsIsCopiedThenItCloses) {
  SimCluster sim;
  for (const char* w : {"a", "b", "c"}) sim.add_worker(w);
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 6; ++i) {
    tasks.push_back(on("a", make_task("x" + std::to_string(i))));
    keys.push_back("x" + std::to_string(i));
  }
  sim.submit("client", tasks, keys);
  ASSERT_TRUE(sim.run());
  for (const auto& k : keys) ASSERT_EQ(sim.sched.who_has(k), std::vector<std::string>{"a"});

  sim.to_scheduler(RetireWorkers{{"a"}, 1});
  ASSERT_TRUE(sim.run());
  EXPECT_EQ(sim.closed, std::vector<std::string>{"a"});
  EXPECT_EQ(sim.sched.worker_count(), 2u);
  std::map<std::string, int> per_worker;
  for (const auto& k : keys) {
    auto holders = sim.sched.who_has(k);
    ASSERT_EQ(holders.size(), 1u) << k;
    per_worker[holders[0]]++;
    EXPECT_EQ(sim.sched.status(k), TaskStatus::Memory);
    EXPECT_EQ(sim.attempts[k], 1) << k << " was recomputed";
    EXPECT_EQ(sim.value(k), 1);
  }
  // Spread over the two others by the bytes they hold.
  EXPECT_EQ(per_worker["b"], 3);
  EXPECT_EQ(per_worker["c"], 3);
  sim.check_all();
}

TEST(RetireState, ARetiringWorkerGetsNoNewTasksAndClosesAfterItsRunningOne) {
  SimCluster sim;
  sim.add_worker("a");
  sim.add_worker("b");
  ASSERT_TRUE(sim.run());
  sim.workers.at("a")->hold = true;
  sim.submit("client", {on("a", make_task("slow"))}, {"slow"});
  ASSERT_TRUE(sim.run());
  ASSERT_EQ(sim.sched.processing_on("slow"), "a");
  sim.to_scheduler(RetireWorkers{{"a"}, 1});
  ASSERT_TRUE(sim.run());
  EXPECT_TRUE(sim.closed.empty()) << "closed while running a task";
  EXPECT_TRUE(sim.sched.retiring("a"));
  std::vector<Task> more;
  std::vector<Key> keys;
  for (int i = 0; i < 4; ++i) {
    more.push_back(make_task("y" + std::to_string(i)));
    keys.push_back("y" + std::to_string(i));
  }
  sim.submit("client", more, keys);
  ASSERT_TRUE(sim.run());
  for (const auto& k : keys) EXPECT_NE(sim.executed_on(k), "a") << k;
  sim.release_held("a");
  ASSERT_TRUE(sim.run());
  EXPECT_EQ(sim.closed, std::vector<std::string>{"a"});
  EXPECT_EQ(sim.sched.who_has("slow"), std::vector<std::string>{"b"});
  EXPECT_EQ(sim.attempts["slow"], 1);
  sim.check_all();
}

TEST(RetireState, TheLastHolderOfDataIsKept) {
  SimCluster sim;
  sim.add_worker("a");
  sim.submit("client", {make_task("x")}, {"x"});
  ASSERT_TRUE(sim.run());
  sim.to_scheduler(RetireWorkers{{"a"}, 1});
  ASSERT_TRUE(sim.run());
  EXPECT_TRUE(sim.closed.empty());
  EXPECT_FALSE(sim.sched.retiring("a"));
  sim.submit("client", {make_task("y", {"x"})}, {"y"});
  ASSERT_TRUE(sim.run());
  EXPECT_EQ(sim.value("y"), 2);  // it still takes tasks
  // A worker holding nothing is retired at once, even the last one.
  SimCluster idle;
  idle.add_worker("a");
  ASSERT_TRUE(idle.run());
  idle.to_scheduler(RetireWorkers{{"a"}, 1});
  ASSERT_TRUE(idle.run());
  EXPECT_EQ(idle.closed, std::vector<std::string>{"a"});
}

TEST(RetireState, WorkersToCloseTakesIdleAndLightWorkersFirst) {
  SimCluster sim;
  for (const char* w : {"a", "b", "c"}) sim.add_worker(w);
  ASSERT_TRUE(sim.run());
  sim.workers.at("b")->hold = true;
  sim.submit("client", {on("b", make_task("busy")), on("c", make_task("held"))}, {"busy", "held"});
  ASSERT_TRUE(sim.run());
  EXPECT_EQ(sim.sched.workers_to_close(1), std::vector<std::string>{"a"});  // idle, holds nothing
  EXPECT_EQ(sim.sched.workers_to_close(2), (std::vector<std::string>{"a", "c"}));  // c only holds data
  EXPECT_EQ(sim.sched.workers_to_close(5).size(), 3u);
}

TEST(RetireState, AdaptiveTargetFollowsQueuedWork) {
  SimCluster sim;
  sim.add_worker("a");
  ASSERT_TRUE(sim.run());
  EXPECT_EQ(sim.sched.adaptive_target(), 0u);
  sim.workers.at("a")->hold = true;
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 100; ++i) {
    tasks.push_back(make_task("t" + std::to_string(i)));
    keys.push_back("t" + std::to_string(i));
  }
  sim.submit("client", tasks, keys);
  ASSERT_TRUE(sim.run());
  // 100 tasks at the default 0.5 s on one thread: 50 s of work, 10 workers for 5 s.
  EXPECT_EQ(sim.sched.adaptive_target(), 10u);
  EXPECT_EQ(sim.sched.adaptive_target(50), 1u);
  sim.release_held("a");
  ASSERT_TRUE(sim.run());
  sim.release_held("a");
  ASSERT_TRUE(sim.run());
  sim.workers.at("a")->hold = false;
  while (!sim.workers.at("a")->held.empty()) {
    sim.release_held("a");
    ASSERT_TRUE(sim.run());
  }
  for (const auto& k : keys) ASSERT_EQ(sim.sched.status(k), TaskStatus::Memory) << k;
  EXPECT_EQ(sim.sched.adaptive_target(), 1u);  // results held
  sim.to_scheduler(ReleaseKeys{"client", keys});
  ASSERT_TRUE(sim.run());
  EXPECT_EQ(sim.sched.adaptive_target(), 0u);
  // No workers at all and work waiting: at least one.
  SimCluster empty;
  empty.submit("client", {make_task("z")}, {"z"});
  ASSERT_TRUE(empty.run());
  EXPECT_GE(empty.sched.adaptive_target(), 1u);
}

}  // namespace
