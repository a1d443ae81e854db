// Deterministic tests of the scheduler and worker state machines, driven in one process.
#include <limits>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "distributed/scheduler_state_impl.hpp"
#include "sim_cluster.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {
namespace {

using testing::make_task;
using testing::SimCluster;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SchedulerState, ChainCompletesOnTwoWorkers) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.submit("client", {make_task("a"), make_task("b", {"a"}), make_task("c", {"b"}), make_task("d", {"c"})}, {"d"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status("d"), TaskStatus::Memory);
  EXPECT_EQ(c.value("d"), 4);
  EXPECT_TRUE(c.clients["client"].in_memory.count("d"));
  // Intermediates are kept as released lineage, their data freed.
  EXPECT_EQ(c.sched.status("a"), TaskStatus::Released);
  EXPECT_FALSE(c.value("a").has_value());
}

TEST(SchedulerState, CountsTasksByOperationForTheDashboardsProgress) {
  SimCluster c;
  c.add_worker("w1", 1, {}, {"load", "sum"});
  c.submit("client", {make_task("a", {}, "load"), make_task("b", {}, "load"), make_task("s", {"a", "b"}, "sum")},
           {"s"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.op_of("a"), "load");
  EXPECT_EQ(c.sched.op_of("s"), "sum");
  EXPECT_EQ(c.sched.op_of("nope"), "") << "unknown keys have no operation";
  auto count = [&](const std::string& op, TaskStatus st) -> std::size_t {
    for (const auto& [name, counts] : c.sched.status_counts_by_op())
      if (name == op) return counts[static_cast<std::size_t>(st)];
    return 0;
  };
  EXPECT_EQ(count("sum", TaskStatus::Memory), 1u);
  EXPECT_EQ(count("load", TaskStatus::Released), 2u) << "inputs kept as lineage, their data freed";
  // The per-operation counts add up to the totals.
  std::vector<std::size_t> sum(c.sched.status_counts().size(), 0);
  for (const auto& [name, counts] : c.sched.status_counts_by_op())
    for (std::size_t i = 0; i < counts.size(); ++i) sum[i] += counts[i];
  EXPECT_EQ(sum, c.sched.status_counts());
}

TEST(SchedulerState, DiamondCompletes) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.submit("client", {make_task("a"), make_task("b", {"a"}), make_task("c", {"a"}), make_task("d", {"b", "c"})},
           {"d"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.value("d"), 5);
  EXPECT_EQ(c.sched.status("d"), TaskStatus::Memory);
  EXPECT_EQ(c.sched.task_count(), 4u);
}

TEST(SchedulerState, ResourceRestrictedStepsRunOnlyOnTheGpuWorkerOneAtATime) {
  // The seeds' foo -> bar -> baz with bar annotated GPU=1, many times over.
  SimCluster c;
  c.add_worker("gpu", 4, {{"GPU", 1}});
  c.add_worker("cpu", 4);
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 12; ++i) {
    auto n = std::to_string(i);
    tasks.push_back(make_task("foo-" + n));
    Task bar = make_task("bar-" + n, {"foo-" + n});
    bar.annotations.resources["GPU"] = 1;
    tasks.push_back(bar);
    tasks.push_back(make_task("baz-" + n, {"bar-" + n}));
    keys.push_back("baz-" + n);
  }
  c.workers["gpu"]->hold = true;  // lets executions overlap so the limit is observable
  c.submit("client", tasks, keys);
  for (int round = 0; round < 200 && c.clients["client"].in_memory.size() < keys.size(); ++round) {
    c.run();
    c.check_all();
    c.release_held("gpu", 1);
  }
  c.run();
  c.check_all();
  ASSERT_EQ(c.clients["client"].in_memory.size(), keys.size());
  std::set<std::string> foo_workers;
  for (int i = 0; i < 12; ++i) {
    auto n = std::to_string(i);
    EXPECT_EQ(c.executed_on("bar-" + n), "gpu");
    EXPECT_EQ(c.value("baz-" + n), 3);
    foo_workers.insert(c.executed_on("foo-" + n));
  }
  EXPECT_EQ(c.workers["gpu"]->max_res["GPU"], 1.0);
  EXPECT_EQ(foo_workers.size(), 2u) << "non-GPU steps run anywhere";
}

TEST(SchedulerState, ALooseRestrictionOfAResourceTaskWaitsForItsWorkerAndFallsBackOnlyWhenItIsGone) {
  // A peer-to-peer shuffle pins its unpacks to the workers holding their shards, loosely: a GPU
  // unpack must wait for its worker's GPU, not run on another worker whose GPU is free first.
  SimCluster c;
  c.add_worker("a", 1, {{"GPU", 1}});
  c.add_worker("b", 1, {{"GPU", 1}});
  Task busy = make_task("busy");
  busy.annotations.resources["GPU"] = 1;
  busy.annotations.workers = {"a"};
  Task pinned = make_task("pinned", {"busy"});
  pinned.annotations.resources["GPU"] = 1;
  pinned.annotations.workers = {"a"};
  pinned.annotations.allow_other_workers = true;
  Task other = make_task("other");
  other.annotations.resources["GPU"] = 1;
  other.annotations.workers = {"a"};
  other.annotations.allow_other_workers = true;
  c.workers["a"]->hold = true;
  c.submit("client", {busy, pinned}, {"pinned"});
  c.run();
  c.submit("client", {other}, {"other"});  // a's GPU is taken now
  c.run();
  c.check_all();
  // Nothing has finished on a (held); b's GPU is free, but the tasks are a's.
  EXPECT_EQ(c.executed_on("other"), "");
  for (int round = 0; round < 10 && c.clients["client"].in_memory.size() < 2; ++round) {
    c.release_held("a");
    c.run();
    c.check_all();
  }
  EXPECT_EQ(c.executed_on("busy"), "a");
  EXPECT_EQ(c.executed_on("pinned"), "a");
  EXPECT_EQ(c.executed_on("other"), "a") << "b's GPU was free, but the task is a's";
  // With its worker gone, a loosely restricted task runs elsewhere.
  Task late = make_task("late");
  late.annotations.resources["GPU"] = 1;
  late.annotations.workers = {"a"};
  late.annotations.allow_other_workers = true;
  c.kill("a");
  c.run();
  c.submit("client", {late}, {"late"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.executed_on("late"), "b");
}

TEST(SchedulerState, RootTasksAreQueuedSoInFlightWorkIsBounded) {
  SimCluster c;
  c.add_worker("w1", 2);
  c.add_worker("w2", 2);
  c.workers["w1"]->hold = true;
  c.workers["w2"]->hold = true;
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 100; ++i) {
    tasks.push_back(make_task("r-" + std::to_string(i)));
    keys.push_back("r-" + std::to_string(i));
  }
  c.submit("client", tasks, keys);
  c.run();
  c.check_all();
  for (const auto& w : c.sched.workers()) EXPECT_LE(w.processing, 3u);  // ceil(2 * 1.1)
  EXPECT_EQ(c.sched.queued_count(), 100u - 6u);
  while (c.clients["client"].in_memory.size() < keys.size()) {
    c.release_held("w1");
    c.release_held("w2");
    c.run();
    c.check_all();
    for (const auto& w : c.sched.workers()) EXPECT_LE(w.processing, 3u);
  }
  EXPECT_EQ(c.sched.queued_count(), 0u);
}

TEST(SchedulerState, LocalityPicksTheWorkerHoldingTheBigInput) {
  SimCluster c;
  c.nbytes_of = [](const Key& k) { return k == "big" ? std::size_t{1} << 30 : std::size_t{10}; };
  c.add_worker("w1");
  c.add_worker("w2");
  Task big = make_task("big"), small = make_task("small");
  big.annotations.workers = {"w1"};
  small.annotations.workers = {"w2"};
  c.submit("client", {big, small}, {"big", "small"});
  c.run();
  EXPECT_EQ(c.sched.who_has("big"), std::vector<std::string>{"w1"});
  EXPECT_EQ(c.sched.who_has("small"), std::vector<std::string>{"w2"});
  c.workers["w1"]->hold = true;
  c.workers["w2"]->hold = true;
  c.submit("client", {make_task("combine", {"small", "big"})}, {"combine"});
  c.run();
  EXPECT_EQ(c.sched.processing_on("combine"), "w1");
  c.release_held("w1");
  c.run();
  c.check_all();
  EXPECT_EQ(c.value("combine"), 3);
}

TEST(SchedulerState, HigherPriorityAndEarlierSubmissionRunFirst) {
  SimCluster c;
  c.add_worker("w1", 1);
  c.workers["w1"]->hold = true;
  std::vector<Task> low, later, high;
  std::vector<Key> low_keys, later_keys, high_keys;
  for (int i = 0; i < 5; ++i) {
    low.push_back(make_task("low-" + std::to_string(i)));
    low_keys.push_back(low.back().key);
    later.push_back(make_task("later-" + std::to_string(i)));
    later_keys.push_back(later.back().key);
    high.push_back(make_task("high-" + std::to_string(i)));
    high.back().annotations.priority = 10;
    high_keys.push_back(high.back().key);
  }
  c.submit("client", low, low_keys);
  c.run();
  c.submit("client", later, later_keys);
  c.submit("client", high, high_keys);
  c.run();
  while (c.clients["client"].in_memory.size() < 15) {
    c.release_held("w1", 1);
    c.run();
  }
  c.check_all();
  const auto& ex = c.workers["w1"]->executed;
  auto pos = [&](const Key& k) { return std::find(ex.begin(), ex.end(), k) - ex.begin(); };
  // Two low tasks were already on the worker (1 thread + slack); then every high one, then the
  // rest of the first submission, then the later one.
  for (const auto& h : high_keys) EXPECT_LT(pos(h), pos("low-2")) << h;
  for (const auto& l : {"low-2", "low-3", "low-4"})
    for (const auto& k : later_keys) EXPECT_LT(pos(l), pos(k));
}

// A client may send any int as a priority; INT_MIN has no negation in the ordering key (found by
// fuzz/state_events_fuzz.cpp as undefined behaviour under UBSan). It must rank below INT_MAX and
// everything must still run.
TEST(SchedulerState, ExtremePrioritiesRankInOrderAndRun) {
  SimCluster c;
  c.add_worker("w1", 1);
  c.workers["w1"]->hold = true;
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (const int p : {0, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), 0}) {
    tasks.push_back(make_task("p-" + std::to_string(keys.size())));
    tasks.back().annotations.priority = p;
    keys.push_back(tasks.back().key);
  }
  // Two tasks first, which fill the worker's thread and slack, so that the four below are all
  // queued on the scheduler and leave it in priority order.
  std::vector<Task> fill{make_task("fill-0"), make_task("fill-1")};
  c.submit("client", fill, {"fill-0", "fill-1"});
  c.run();
  c.submit("client", tasks, keys);
  c.run();
  while (c.clients["client"].in_memory.size() < keys.size() + 2) {
    c.release_held("w1", 1);
    c.run();
  }
  c.check_all();
  const auto& ex = c.workers["w1"]->executed;
  auto pos = [&](const Key& k) { return std::find(ex.begin(), ex.end(), k) - ex.begin(); };
  EXPECT_LT(pos("p-2"), pos("p-1")) << "INT_MAX runs before INT_MIN";
  EXPECT_LT(pos("p-3"), pos("p-1")) << "0 runs before INT_MIN";
}

TEST(SchedulerState, WorkerLostMidGraphRecomputesFromLineage) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.add_worker("w3");
  // A binary tree reduction over 16 leaves: value of the root = 16 leaves * 1 + internal nodes.
  std::vector<Task> tasks;
  std::vector<Key> level;
  for (int i = 0; i < 16; ++i) {
    tasks.push_back(make_task("leaf-" + std::to_string(i)));
    level.push_back(tasks.back().key);
  }
  int n = 0;
  while (level.size() > 1) {
    std::vector<Key> next;
    for (std::size_t i = 0; i < level.size(); i += 2) {
      tasks.push_back(make_task("sum-" + std::to_string(n++), {level[i], level[i + 1]}));
      next.push_back(tasks.back().key);
    }
    level = next;
  }
  const Key root = level[0];
  c.submit("client", tasks, {root});
  c.run(60);  // part of the graph done
  c.kill("w2");
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status(root), TaskStatus::Memory);
  EXPECT_EQ(c.value(root), 31);  // every node adds 1: 16 leaves + 15 sums
  EXPECT_TRUE(c.clients["client"].in_memory.count(root));
  EXPECT_EQ(c.sched.worker_count(), 2u);
}

TEST(SchedulerState, LosingTheOnlyCopyOfAFinishedResultRecomputesIt) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("a"), make_task("b", {"a"})}, {"b"});
  c.run();
  EXPECT_EQ(c.value("b"), 2);
  c.add_worker("w2");
  c.kill("w1");
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status("b"), TaskStatus::Memory);
  EXPECT_EQ(c.sched.who_has("b"), std::vector<std::string>{"w2"});
  EXPECT_EQ(c.value("b"), 2);
}

TEST(SchedulerState, WorkerReportingALostKeyGetsItRecomputed) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("a"), make_task("b", {"a"})}, {"b"});
  c.run();
  c.to_worker("w1", FreeKeys{"w1", {"b"}});  // the worker lost it (say, a bad spill file)
  c.to_scheduler(RemoveKeys{"w1", {"b"}});
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status("b"), TaskStatus::Memory);
  EXPECT_EQ(c.value("b"), 2);
  EXPECT_EQ(c.attempts["a"], 2) << "a was released lineage and is recomputed first";
}

TEST(SchedulerState, UnknownDependencyErrsWithAClearMessage) {
  SimCluster c;
  c.add_worker("w1");
  c.submit("client", {make_task("b", {"nowhere"})}, {"b"});
  c.run();
  c.check_all();
  ASSERT_TRUE(c.clients["client"].erred.count("b"));
  EXPECT_TRUE(contains(c.clients["client"].erred["b"], "nowhere"));
}

TEST(SchedulerState, FlakyTaskWithRetriesSucceedsOnTheThirdAttempt) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.fail = [](const std::string&, const Key& k, int attempt) -> std::optional<std::string> {
    if (k == "flaky" && attempt <= 2) return "transient failure " + std::to_string(attempt);
    return std::nullopt;
  };
  Task flaky = make_task("flaky");
  flaky.annotations.retries = 2;
  c.submit("client", {flaky, make_task("after", {"flaky"})}, {"after"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.attempts["flaky"], 3);
  EXPECT_EQ(c.sched.status("after"), TaskStatus::Memory);
  EXPECT_TRUE(c.clients["client"].erred.empty());
}

TEST(SchedulerState, TaskWithoutRetriesErrsAndTheClientGetsItsMessage) {
  SimCluster c;
  c.add_worker("w1");
  c.fail = [](const std::string&, const Key& k, int) -> std::optional<std::string> {
    if (k == "bad") return std::string("ValueError: boom");
    return std::nullopt;
  };
  c.submit("client", {make_task("bad"), make_task("after", {"bad"}), make_task("fine")}, {"bad", "after", "fine"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.attempts["bad"], 1);
  EXPECT_EQ(c.sched.status("bad"), TaskStatus::Erred);
  EXPECT_EQ(c.sched.status("after"), TaskStatus::Erred);
  auto& erred = c.clients["client"].erred;
  ASSERT_TRUE(erred.count("bad"));
  EXPECT_TRUE(contains(erred["bad"], "bad")) << erred["bad"];
  EXPECT_TRUE(contains(erred["bad"], "ValueError: boom")) << erred["bad"];
  ASSERT_TRUE(erred.count("after"));
  EXPECT_TRUE(contains(erred["after"], "bad") && contains(erred["after"], "boom")) << erred["after"];
  EXPECT_TRUE(c.clients["client"].in_memory.count("fine"));

  // A retry from the client after the cause is fixed computes both.
  c.fail = nullptr;
  c.to_scheduler(RetryKeys{"client", {"after"}});
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status("after"), TaskStatus::Memory);
  EXPECT_EQ(c.value("after"), 2);
}

TEST(SchedulerState, TaskThatKillsThreeWorkersErrsWithKilledWorker) {
  SimCluster c;
  for (int i = 0; i < 5; ++i) c.add_worker("w" + std::to_string(i));
  c.kill_on_execute = [](const std::string&, const Key& k) { return k == "bomb"; };
  c.submit("client", {make_task("bomb"), make_task("ok")}, {"bomb", "ok"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.attempts["bomb"], 3);
  EXPECT_EQ(c.sched.status("bomb"), TaskStatus::Erred);
  EXPECT_EQ(c.sched.worker_count(), 2u);
  auto& erred = c.clients["client"].erred;
  ASSERT_TRUE(erred.count("bomb"));
  EXPECT_TRUE(contains(erred["bomb"], "KilledWorker: task bomb died on 3 workers")) << erred["bomb"];
  EXPECT_TRUE(c.clients["client"].in_memory.count("ok"));
}

TEST(SchedulerState, WorkStealingMovesQueuedTaskToIdleWorker) {
  SimCluster c;
  c.add_worker("w1", 1);
  c.submit("client", {make_task("src")}, {"src"});
  c.run();
  c.workers["w1"]->hold = true;
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 6; ++i) {
    tasks.push_back(make_task("t-" + std::to_string(i), {"src"}));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  EXPECT_EQ(c.sched.workers()[0].processing, 6u);  // all on w1: the only worker
  c.add_worker("w2", 1);
  c.run();
  c.tick(1.0);
  c.run();
  c.check_all();
  ASSERT_FALSE(c.steals.empty());
  EXPECT_EQ(c.steals[0].worker, "w1");
  int on_w2 = 0;
  for (const auto& k : keys) on_w2 += c.sched.processing_on(k) == "w2" || c.executed_on(k) == "w2";
  EXPECT_GE(on_w2, 1);
  if (on_w2 == 0) for (auto& l : c.logs) std::printf("%s: %s\n", l.topic.c_str(), l.message.c_str());
  c.release_held("w1");
  c.run();
  while (c.clients["client"].in_memory.size() < 7) {
    c.release_held("w1");
    c.run();
  }
  c.check_all();
  for (const auto& k : keys) EXPECT_EQ(c.value(k), 2);
}

TEST(SchedulerState, StealIsRefusedForAnExecutingTask) {
  WorkerConfig wc;
  wc.address = "w1";
  wc.validate = true;
  WorkerState w(wc);
  ComputeTask ct;
  ct.key = "x";
  ct.task = std::make_shared<const Task>(make_task("x"));
  auto acts = w.handle(ct);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Execute>(acts[0]));
  acts = w.handle(StealRequest{"w1", "x"});
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_FALSE(std::get<StealResponse>(acts[0]).accepted);
  ComputeTask ct2 = ct;
  ct2.key = "y";
  ct2.task = std::make_shared<const Task>(make_task("y"));
  EXPECT_TRUE(w.handle(ct2).empty());  // one thread: y is ready, not executing
  acts = w.handle(StealRequest{"w1", "y"});
  EXPECT_TRUE(std::get<StealResponse>(acts[0]).accepted);
  EXPECT_FALSE(w.status("y").has_value());
}

TEST(SchedulerState, SubmitOfOpNoWorkerAdvertisesFailsAtOnce) {
  SimCluster c;
  c.add_worker("w1", 1, {}, {"op"});
  c.submit("client", {make_task("k", {}, "cuda_kernel"), make_task("after", {"k"})}, {"after"});
  c.run();
  c.check_all();
  auto& view = c.clients["client"];
  ASSERT_EQ(view.unavailable.size(), 1u);
  EXPECT_EQ(view.unavailable[0].op, "cuda_kernel");
  EXPECT_TRUE(contains(view.unavailable[0].message, "no worker can run operation 'cuda_kernel'"));
  ASSERT_TRUE(view.erred.count("after"));
  EXPECT_TRUE(contains(view.erred["after"], "cuda_kernel"));
}

TEST(SchedulerState, WithoutWorkersTasksWaitUntilOneCanRunThem) {
  SimCluster c;
  c.submit("client", {make_task("a", {}, "special"), make_task("b", {"a"})}, {"b"});
  c.run();
  EXPECT_EQ(c.sched.status("a"), TaskStatus::NoWorker);
  c.add_worker("plain", 1, {}, {"op"});
  c.run();
  EXPECT_NE(c.sched.status("a"), TaskStatus::Memory);
  c.add_worker("special", 1, {}, {"op", "special"});
  c.run();
  c.check_all();
  EXPECT_EQ(c.executed_on("a"), "special");
  EXPECT_EQ(c.value("b"), 2);
}

TEST(SchedulerState, ClientRemovalForgetsWhatNothingElseNeeds) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.submit("alice", {make_task("a"), make_task("b", {"a"})}, {"b"});
  c.submit("bob", {make_task("shared"), make_task("x", {"shared"})}, {"x"});
  c.submit("alice", {make_task("shared"), make_task("y", {"shared"})}, {"y"});
  c.run();
  EXPECT_EQ(c.sched.task_count(), 5u);
  c.to_scheduler(RemoveClient{"alice"});
  c.run();
  c.check_all();
  EXPECT_FALSE(c.sched.status("b").has_value());
  EXPECT_FALSE(c.sched.status("a").has_value());
  EXPECT_FALSE(c.sched.status("y").has_value());
  EXPECT_EQ(c.sched.status("x"), TaskStatus::Memory);
  EXPECT_EQ(c.sched.task_count(), 2u);  // shared (lineage of x) and x
  EXPECT_FALSE(c.value("b").has_value()) << "the data was freed on the workers";
  c.to_scheduler(ReleaseKeys{"bob", {"x"}});
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.task_count(), 0u);
  for (const auto& [a, w] : c.workers) {
    EXPECT_TRUE(w->data.empty()) << a;
    EXPECT_EQ(w->state.task_count(), 0u) << a;
  }
}

TEST(SchedulerState, CancelReleasesRunningWork) {
  SimCluster c;
  c.add_worker("w1");
  c.workers["w1"]->hold = true;
  c.submit("client", {make_task("slow")}, {"slow"});
  c.run();
  EXPECT_EQ(c.sched.status("slow"), TaskStatus::Processing);
  c.to_scheduler(CancelKeys{"client", {"slow"}, false});
  c.run();
  EXPECT_EQ(c.clients["client"].cancelled, std::vector<Key>{"slow"});
  EXPECT_FALSE(c.sched.status("slow").has_value());
  c.release_held("w1");
  c.run();
  c.check_all();
  EXPECT_TRUE(c.workers["w1"]->data.empty()) << "a cancelled result is dropped";
}

TEST(SchedulerState, SilentWorkerIsRemovedOnTickAndItsWorkRescheduled) {
  SchedulerConfig cfg = SimCluster::default_config();
  cfg.worker_ttl = 10;
  SimCluster c(cfg);
  c.add_worker("w1");
  c.add_worker("w2");
  c.workers["w1"]->hold = true;
  c.workers["w2"]->hold = true;
  c.submit("client", {make_task("a"), make_task("b")}, {"a", "b"});
  c.run();
  c.to_scheduler(Heartbeat{"w2", 8.0, 0});
  c.tick(12.0);
  c.run();
  EXPECT_EQ(c.sched.worker_count(), 1u);
  c.workers.erase("w1");  // it was silent: gone for good
  c.release_held("w2");
  c.run();
  c.release_held("w2");
  c.run();
  c.check_all();
  EXPECT_EQ(c.sched.status("a"), TaskStatus::Memory);
  EXPECT_EQ(c.sched.status("b"), TaskStatus::Memory);
  bool logged = false;
  for (const auto& l : c.logs) logged |= contains(l.message, "no heartbeat");
  EXPECT_TRUE(logged);
}

TEST(SchedulerState, PausedWorkerGetsNoNewWork) {
  SimCluster c;
  c.add_worker("w1");
  c.add_worker("w2");
  c.to_worker("w1", PauseWorker{true});
  c.run();
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("p-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  c.check_all();
  EXPECT_EQ(c.clients["client"].in_memory.size(), 10u);
  EXPECT_TRUE(c.workers["w1"]->executed.empty());
}

TEST(SchedulerState, RandomGraphsSurviveChurnWithInvariantsChecked) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig cfg = SimCluster::default_config();
    cfg.allowed_failures = 1000;  // random kills may hit one task three times
    SimCluster c(cfg);
    c.nbytes_of = [](const Key& k) { return 8 + std::hash<std::string>{}(k) % 4096; };
    for (int i = 0; i < 4; ++i) c.add_worker("w" + std::to_string(i), 1 + i % 2);
    std::vector<Task> tasks;
    std::map<Key, std::int64_t> expect;
    for (int i = 0; i < 150; ++i) {
      std::vector<Key> deps;
      int ndeps = i < 10 ? 0 : static_cast<int>(rng() % 4);
      for (int d = 0; d < ndeps; ++d) {
        Key k = "t" + std::to_string(rng() % i);
        if (std::find(deps.begin(), deps.end(), k) == deps.end()) deps.push_back(k);
      }
      std::int64_t v = 1;
      for (auto& d : deps) v += expect[d];
      Key key = "t" + std::to_string(i);
      expect[key] = v;
      tasks.push_back(make_task(key, deps));
      if (rng() % 7 == 0) tasks.back().annotations.priority = static_cast<int>(rng() % 3);
    }
    std::vector<Key> wanted;
    for (int i = 140; i < 150; ++i) wanted.push_back("t" + std::to_string(i));
    c.submit("client", tasks, wanted);
    int next_worker = 4;
    double now = 0;
    while (!c.run(25)) {
      unsigned r = rng() % 10;
      if (r == 0 && c.workers.size() > 1) {
        auto it = c.workers.begin();
        std::advance(it, rng() % c.workers.size());
        c.kill(it->first);
      } else if (r == 1) {
        c.add_worker("w" + std::to_string(next_worker++), 2);
      } else if (r == 2) {
        c.tick(now += 1);
      }
    }
    c.check_all();
    for (const auto& k : wanted) {
      ASSERT_EQ(c.sched.status(k), TaskStatus::Memory) << "seed " << seed << " " << k << " " << c.sched.exception(k);
      EXPECT_EQ(c.value(k), expect[k]) << "seed " << seed << " " << k;
    }
    c.to_scheduler(RemoveClient{"client"});
    c.run();
    c.check_all();
    EXPECT_EQ(c.sched.task_count(), 0u);
  }
}

// ---- Worker state machine ------------------------------------------------------------------------

TEST(WorkerState, GathersBatchedPerPeerWithBoundedIncomingTransfers) {
  WorkerConfig wc;
  wc.address = "me";
  wc.transfer_incoming_count_limit = 2;
  wc.validate = true;
  WorkerState w(wc);
  ComputeTask ct;
  ct.key = "sum";
  Task t = make_task("sum", {"a1", "a2", "b1", "c1"});
  ct.task = std::make_shared<const Task>(t);
  ct.who_has = {{"a1", {"pa"}, 10}, {"a2", {"pa"}, 10}, {"b1", {"pb"}, 10}, {"c1", {"pc"}, 10}};
  auto acts = w.handle(ct);
  std::map<std::string, std::vector<Key>> gathers;
  for (auto& a : acts)
    if (auto* g = std::get_if<GatherDep>(&a)) gathers[g->peer] = g->keys;
  EXPECT_EQ(gathers.size(), 2u) << "at most two peers at once";
  EXPECT_EQ(w.in_flight_peers(), 2u);
  ASSERT_TRUE(gathers.count("pa"));
  EXPECT_EQ(gathers["pa"].size(), 2u) << "both keys from pa in one message";
  for (auto& [peer, keys] : gathers) {
    GatherDepSuccess s{peer, {}};
    for (auto& k : keys) s.data.push_back({k, 10});
    acts = w.handle(s);
    bool add_keys = false;
    for (auto& a : acts) add_keys |= std::holds_alternative<AddKeys>(a);
    EXPECT_TRUE(add_keys);
  }
  // The third peer is asked once a slot frees; a failure there is reported as missing data.
  EXPECT_EQ(w.status("c1"), WorkerTaskStatus::Flight);
  acts = w.handle(GatherDepFailure{"pc", "connection refused"});
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(std::get<MissingData>(acts[0]).errant_worker, "pc");
  EXPECT_EQ(w.status("c1"), WorkerTaskStatus::Missing);
  // The scheduler reassigns with a new holder.
  acts = w.handle(FreeKeys{"me", {"sum"}});
  EXPECT_FALSE(w.status("c1").has_value());
  EXPECT_EQ(w.data_keys(), (std::vector<Key>{"a1", "a2", "b1"}));
}

TEST(WorkerState, ExecutesNoMoreThanThreadsOrResourcesAllow) {
  WorkerConfig wc;
  wc.address = "me";
  wc.nthreads = 3;
  wc.resources = {{"GPU", 1}};
  wc.validate = true;
  WorkerState w(wc);
  std::vector<Key> executing;
  auto submit = [&](const Key& k, bool gpu, int prio) {
    ComputeTask ct;
    ct.key = k;
    Task t = make_task(k);
    if (gpu) t.annotations.resources["GPU"] = 1;
    ct.task = std::make_shared<const Task>(t);
    if (gpu) ct.resources["GPU"] = 1;
    ct.priority.order = prio;
    for (auto& a : w.handle(ct))
      if (auto* e = std::get_if<Execute>(&a)) executing.push_back(e->key);
  };
  submit("g1", true, 0);
  submit("g2", true, 1);
  submit("c1", false, 2);
  submit("c2", false, 3);
  submit("c3", false, 4);
  EXPECT_EQ(executing, (std::vector<Key>{"g1", "c1", "c2"}));
  EXPECT_EQ(w.executing_count(), 3u);
  for (auto& a : w.handle(ExecuteSuccess{"g1", 8, "int64", 0, 1, 0}))
    if (auto* e = std::get_if<Execute>(&a)) executing.push_back(e->key);
  EXPECT_EQ(executing.back(), "g2") << "the GPU is free again and g2 has priority";
  w.check_invariants();
}

// ---- Transitions table and stories ---------------------------------------------------------------

// The state changes of a story, as "from>to" strings, and their stimulus ids.
std::vector<std::string> moves(const std::vector<TransitionRecord>& story) {
  std::vector<std::string> out;
  for (const auto& r : story) out.push_back(std::string(task_status_name(r.from)) + ">" + task_status_name(r.to));
  return out;
}
std::vector<std::string> stimuli(const std::vector<TransitionRecord>& story) {
  std::vector<std::string> out;
  for (const auto& r : story) out.push_back(r.stimulus);
  return out;
}

// A worker, then a -> b submitted: b waits on a, which is processing on the worker.
void start_chain(detail::SchedulerStateImpl& s, std::vector<SchedulerAction>& out) {
  SchedulerEvent add = AddWorker{"tcp://w1", "w1", 1, {}, 0, {"op"}, 1.0};
  s.handle(add, out);
  SchedulerEvent graph = UpdateGraph{"client", {make_task("a"), make_task("b", {"a"})}, {"b"}, {}, 2.0};
  s.handle(graph, out);
}

TEST(SchedulerState, StoryOfATaskThatRanListsItsTransitionsInOrderWithStimulusIds) {
  SchedulerConfig cfg;
  cfg.validate = true;
  SchedulerState s(cfg);
  s.handle(AddWorker{"tcp://w1", "w1", 1, {}, 0, {"op"}, 1.0});                                  // event 1
  s.handle(UpdateGraph{"client", {make_task("a"), make_task("b", {"a"})}, {"b"}, {}, 2.0});        // event 2
  s.handle(Heartbeat{"tcp://w1", 3.0, 0, 0, 0, 0, 0, 0});                                                  // event 3
  s.handle(TaskFinished{"tcp://w1", "a", 8, "int64", 3.0, 3.5, 0});                                  // event 4
  s.handle(TaskFinished{"tcp://w1", "b", 8, "int64", 3.5, 4.0, 0});                                  // event 5
  s.handle(ReleaseKeys{"client", {"b"}});                                                         // event 6
  EXPECT_EQ(s.status("a"), std::nullopt);

  const auto a = s.story("a");
  ASSERT_EQ(moves(a), (std::vector<std::string>{"released>waiting", "waiting>processing", "processing>memory",
                                                "memory>released", "released>forgotten"}));
  EXPECT_EQ(stimuli(a), (std::vector<std::string>{"update-graph-client-2", "update-graph-client-2",
                                                  "task-finished-tcp://w1-4", "task-finished-tcp://w1-5",
                                                  "release-keys-client-6"}));
  for (const auto& r : a) EXPECT_EQ(r.key, "a");
  EXPECT_EQ(a.front().time, 2.0);
  for (std::size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i].time, a[i - 1].time);

  const auto b = s.story("b");
  ASSERT_EQ(moves(b), (std::vector<std::string>{"released>waiting", "waiting>processing", "processing>memory",
                                                "memory>released", "released>forgotten"}));
  EXPECT_EQ(b[1].stimulus, "task-finished-tcp://w1-4") << "b became runnable when a finished";
  EXPECT_TRUE(s.story("never-submitted").empty());
}

TEST(SchedulerState, TransitionLogIsBoundedAndCanBeTurnedOff) {
  SchedulerConfig cfg;
  cfg.transition_log_length = 3;
  SchedulerState s(cfg);
  s.handle(AddWorker{"tcp://w1", "w1", 1, {}, 0, {"op"}, 1.0});
  s.handle(UpdateGraph{"client", {make_task("a"), make_task("b", {"a"})}, {"b"}, {}, 2.0});
  s.handle(TaskFinished{"tcp://w1", "a", 8, "int64", 3.0, 3.5, 0});
  // Logged: b released>waiting, a released>waiting, a waiting>processing, a processing>memory,
  // b waiting>processing; the ring keeps the last three.
  EXPECT_EQ(moves(s.story("a")), (std::vector<std::string>{"waiting>processing", "processing>memory"}));
  EXPECT_EQ(moves(s.story("b")), (std::vector<std::string>{"waiting>processing"}));

  cfg.transition_log_length = 0;
  SchedulerState off(cfg);
  off.handle(AddWorker{"tcp://w1", "w1", 1, {}, 0, {"op"}, 1.0});
  off.handle(UpdateGraph{"client", {make_task("a")}, {"a"}, {}, 2.0});
  EXPECT_EQ(off.status("a"), TaskStatus::Processing);
  EXPECT_TRUE(off.story("a").empty());
}

TEST(SchedulerState, DisallowedTransitionThrowsNamingTaskStatesAndStimulus) {
  SchedulerConfig cfg;
  detail::SchedulerStateImpl s(cfg);
  std::vector<SchedulerAction> out;
  start_chain(s, out);
  ASSERT_EQ(s.tasks[s.find_task("b")].state, TaskStatus::Waiting);
  // Memory comes only from a worker's task-finished, never from a recommendation.
  s.out = &out;
  s.begin_event("gtest-poke", nullptr);
  s.recommend(s.find_task("b"), TaskStatus::Memory);
  try {
    s.run();
    FAIL() << "waiting -> memory was allowed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "task b from waiting to memory")) << what;
    EXPECT_TRUE(contains(what, "stimulus gtest-poke-3")) << what;
    EXPECT_TRUE(contains(what, "released -> waiting  update-graph-client-2")) << what;  // b's story
  }
  // Queued and no-worker are decided on the way to processing, never recommended.
  s.recs.clear();
  s.recommend(s.find_task("a"), TaskStatus::Queued);
  EXPECT_THROW(s.run(), Error);
  // A state change the table does not list throws too, whatever makes it.
  s.recs.clear();
  try {
    s.set_state(s.find_task("b"), TaskStatus::Memory);
    FAIL() << "waiting -> memory was allowed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "impossible state change of task b from waiting to memory (stimulus gtest-poke-3)"))
        << e.what();
  }
  EXPECT_EQ(s.tasks[s.find_task("b")].state, TaskStatus::Waiting);
}

TEST(SchedulerState, OvertakenRecommendationIsANoOp) {
  SchedulerConfig cfg;
  detail::SchedulerStateImpl s(cfg);
  std::vector<SchedulerAction> out;
  start_chain(s, out);
  // a is processing: a late "waiting" (made while it was released) must leave it alone.
  s.out = &out;
  s.begin_event("gtest-late", nullptr);
  s.recommend(s.find_task("a"), TaskStatus::Waiting);
  s.recommend(s.find_task("a"), TaskStatus::Processing);
  EXPECT_NO_THROW(s.run());
  EXPECT_EQ(s.tasks[s.find_task("a")].state, TaskStatus::Processing);
  EXPECT_NO_THROW(s.check());
}

TEST(SchedulerState, InvariantFailureMessageContainsTheTaskStory) {
  SchedulerConfig cfg;
  detail::SchedulerStateImpl s(cfg);
  std::vector<SchedulerAction> out;
  start_chain(s, out);
  ASSERT_NO_THROW(s.check());
  s.tasks[s.find_task("b")].waiting_on = 5;  // b waits on a alone
  try {
    s.check();
    FAIL() << "the corrupted count went unnoticed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "b (waiting) waiting_on 5 != 1")) << what;
    EXPECT_TRUE(contains(what, "story of b:\n  released -> waiting  update-graph-client-2  t=2.000000")) << what;
  }
}

// ---- Scale -----------------------------------------------------------------------------------------

TEST(SchedulerSimulation, ThousandWorkersHundredThousandTasks) {
  SchedulerConfig cfg;  // no per-event validation at this scale
  SimCluster c(cfg, false);
  c.record_logs = false;
  for (int i = 0; i < 1000; ++i) c.add_worker("tcp://10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":9000", 2);
  c.run();
  // A binary tree reduction over 50,000 leaves: 99,999 tasks.
  std::vector<Task> tasks;
  tasks.reserve(100000);
  std::vector<Key> level;
  for (int i = 0; i < 50000; ++i) {
    tasks.push_back(make_task("leaf-" + std::to_string(i)));
    level.push_back(tasks.back().key);
  }
  int n = 0;
  while (level.size() > 1) {
    std::vector<Key> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) {
      tasks.push_back(make_task("sum-" + std::to_string(n++), {level[i], level[i + 1]}));
      next.push_back(tasks.back().key);
    }
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  const Key root = level[0];
  const std::size_t ntasks = tasks.size();
  auto t0 = std::chrono::steady_clock::now();
  c.submit("client", std::move(tasks), {root});
  c.run();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(c.sched.status(root), TaskStatus::Memory);
  EXPECT_EQ(c.value(root), static_cast<std::int64_t>(ntasks));
  c.check_all();
  std::printf("{\"benchmark\": \"scheduler_simulation\", \"workers\": 1000, \"tasks\": %zu, \"events\": %zu, "
              "\"gathers\": %zu, \"seconds\": %.3f, \"tasks_per_s\": %.0f, \"scheduler_seconds\": %.3f, "
              "\"scheduler_us_per_task\": %.2f}\n",
              ntasks, c.events, c.gathers, secs, ntasks / secs, c.scheduler_seconds,
              1e6 * c.scheduler_seconds / ntasks);
}

}  // namespace
}  // namespace tessera::distributed
