// The scheduler's side of the peer-to-peer shuffle without processes: its run table
// (ShuffleRuns) and the two state-machine events it uses (PinTasks, ForgetResults).
#include <gtest/gtest.h>

#include "distributed/shuffle_runs.hpp"
#include "sim_cluster.hpp"

namespace tessera::distributed {
namespace {

using testing::make_task;
using testing::SimCluster;

ShuffleKeys keys_of(const std::string& token) { return {token + "-transfer-", token + "-barrier", token + "-"}; }

TEST(ShuffleRuns, TheFirstJoinCreatesTheRunAndLaterJoinsGetTheSameOne) {
  ShuffleRuns runs;
  bool created = false;
  const auto& r = runs.join("s", 4, 5, keys_of("s"), {"w2", "w1", "w2"}, {}, created);
  EXPECT_TRUE(created);
  EXPECT_EQ(r.run.workers, (std::vector<std::string>{"w1", "w2"})) << "sorted, each once";
  const auto id = r.run.id;
  // Contiguous ranges of outputs per participant.
  EXPECT_EQ(r.run.owner(0), 0u);
  EXPECT_EQ(r.run.owner(2), 0u);
  EXPECT_EQ(r.run.owner(3), 1u);
  EXPECT_EQ(r.run.owner(4), 1u);
  EXPECT_EQ(runs.join("s", 4, 5, keys_of("s"), {"w3"}, {}, created).run.id, id);
  EXPECT_FALSE(created) << "participants are fixed when the run is created";
  EXPECT_THROW(runs.join("s", 3, 5, keys_of("s"), {"w1"}, {}, created), Error) << "another shape, same token";
  EXPECT_THROW(runs.join("t", 1, 1, keys_of("t"), {}, {}, created), Error) << "no workers";
  EXPECT_THROW(runs.join("t", 1, 0, keys_of("t"), {"w1"}, {}, created), Error) << "no outputs";
}

TEST(ShuffleRuns, TheBarrierPassesOnceEveryInputWasSentInThisRun) {
  ShuffleRuns runs;
  bool created = false;
  const auto id = runs.join("s", 3, 2, keys_of("s"), {"w1", "w2"}, {}, created).run.id;
  runs.input_done("s", id, 0);
  runs.input_done("s", id, 2);
  EXPECT_EQ(runs.barrier("s", id), (std::vector<Key>{"s-transfer-1"}));
  runs.input_done("s", id, 1);
  runs.input_done("s", id, 1);  // a retried transfer says it twice
  EXPECT_TRUE(runs.barrier("s", id).empty());
  EXPECT_THROW(runs.input_done("s", id + 1, 0), ShuffleRunLost);
  EXPECT_THROW(runs.barrier("other", id), ShuffleRunLost);
  EXPECT_THROW(runs.input_done("s", id, 3), Error) << "an input out of range";
}

TEST(ShuffleRuns, TheRunEndsWithItsLastUnpackAndTheNextJoinStartsAnother) {
  ShuffleRuns runs;
  bool created = false;
  const auto id = runs.join("s", 1, 3, keys_of("s"), {"w1"}, /*already_done=*/{1}, created).run.id;
  EXPECT_FALSE(runs.task_finished("s-0").has_value());
  EXPECT_FALSE(runs.task_finished("s-transfer-0").has_value()) << "not an unpack";
  auto ended = runs.task_finished("s-2");
  ASSERT_TRUE(ended.has_value()) << "output 1 was held already";
  EXPECT_EQ(ended->id, id);
  EXPECT_EQ(runs.current("s"), nullptr);
  EXPECT_THROW(runs.input_done("s", id, 0), ShuffleRunLost) << "a late message of the ended run";
  const auto next = runs.join("s", 1, 3, keys_of("s"), {"w1"}, {}, created).run.id;
  EXPECT_TRUE(created);
  EXPECT_GT(next, id) << "ids are never reused";
}

TEST(ShuffleRuns, ALostParticipantLosesItsCurrentAndEndedRuns) {
  ShuffleRuns runs;
  bool created = false;
  const auto a = runs.join("a", 2, 2, keys_of("a"), {"w1", "w2"}, {}, created).run.id;
  runs.join("b", 2, 2, keys_of("b"), {"w2"}, {}, created);
  runs.join("c", 1, 1, keys_of("c"), {"w1"}, {}, created);
  ASSERT_TRUE(runs.task_finished("c-0").has_value());  // c ended, w1 took part
  auto lost = runs.worker_removed("w1");
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0].run.token, "a");
  EXPECT_EQ(lost[1].run.token, "c") << "an ended run's results may be needed again";
  EXPECT_EQ(ShuffleRuns::input_keys(lost[0]), (std::vector<Key>{"a-transfer-0", "a-transfer-1", "a-barrier"}));
  EXPECT_EQ(ShuffleRuns::unpack_keys(lost[0]), (std::vector<Key>{"a-0", "a-1"}));
  EXPECT_EQ(runs.current("a"), nullptr);
  EXPECT_NE(runs.current("b"), nullptr) << "w1 took no part in b";
  EXPECT_THROW(runs.barrier("a", a), ShuffleRunLost);
  EXPECT_FALSE(runs.task_finished("a-0").has_value()) << "the lost run's unpacks are not counted";
  EXPECT_TRUE(runs.worker_removed("w1").empty()) << "reported once";
}

TEST(ShuffleStateEvents, PinTasksPlacesAWaitingTaskOnItsWorker) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.run();
  for (const char* w : {"w1", "w2"}) {
    const std::string a = std::string("a-") + w, b = std::string("b-") + w;
    c.submit("client", {make_task(a), make_task(b, {a})}, {b});
    c.to_scheduler(PinTasks{{b}, {w}});
    c.run();
    c.check_all();
    EXPECT_EQ(c.executed_on(b), w);
  }
}

TEST(ShuffleStateEvents, AForgottenResultIsComputedAgainWhenStillWanted) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("a"), make_task("b", {"a"})}, {"a", "b"});
  c.run();
  ASSERT_EQ(c.sched.status("a"), TaskStatus::Memory);
  const int before = c.attempts["a"];
  c.to_scheduler(ForgetResults{{"a", "unknown-key"}, "a test"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status("a"), TaskStatus::Memory);
  EXPECT_EQ(c.attempts["a"], before + 1) << "computed again";
  EXPECT_EQ(c.sched.status("b"), TaskStatus::Memory) << "its dependent's result is kept";
}

}  // namespace
}  // namespace tessera::distributed
