// docs/security.md, "A stopped or hung worker is bounded in time": what the scheduler tells the
// other workers about a silent or removed worker (peer-gone), what worker_silent = 0 and the
// precedence of SchedulerConfig::worker_silent mean, the tasks that stay on a silent worker and
// the FreeKeys it is sent. An in-process Scheduler with fake workers over real sockets, and the
// state machines (SimCluster).
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/wire.hpp"
#include "sim_cluster.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/scheduler_state.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera::distributed::testing::make_task;
using tessera::distributed::testing::SimCluster;
using tessera_test::Clock;
using tessera_test::wait_until;

const std::string kPeersToken = "silent-worker-peers-test-token";

SchedulerOptions peers_scheduler(double worker_silent, double state_worker_silent, double worker_ttl = 60) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kPeersToken;
  so.worker_silent = worker_silent;
  so.state.worker_silent = state_worker_silent;
  so.state.worker_ttl = worker_ttl;
  return so;
}

// A fake worker registered over a real connection (as worker_identity_test.cpp's register_as);
// its "registered" reply is read here.
std::shared_ptr<comm::Comm> peers_register(const std::string& scheduler, const std::string& address) {
  comm::CommOptions co;
  co.token = kPeersToken;
  auto c = comm::connect(scheduler, co);
  wire::WorkerHello hello;
  hello.add.address = address;
  hello.add.name = address;
  hello.add.nthreads = 1;
  comm::Message m(wire::kRegisterWorker);
  m.set("worker", hello);
  c->send(std::move(m)).get();
  const auto reply = c->recv(5000ms);
  EXPECT_EQ(reply.op, wire::kRegistered);
  EXPECT_FALSE(reply.has("error"));
  return c;
}

void peers_heartbeat(comm::Comm& c) {
  std::vector<wire::WorkerToScheduler> events{Heartbeat{}};
  c.send(wire::batch_message(wire::kWorkerEvents, events)).get();
}

// What one fake worker was sent until `until`: the addresses of its peer-gone notices, and
// whether the scheduler closed its connection.
struct PeerNotices {
  std::vector<std::string> gone;
  bool closed = false;
};

// Reads what has come (and comes) until `until`; other messages are skipped.
void read_notices(comm::Comm& c, PeerNotices& out, Clock::time_point until) {
  while (!out.closed) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    try {
      const auto m = c.recv(std::max(left, 1ms));
      if (m.op == wire::kPeerGone) out.gone.push_back(m.get<std::string>("address"));
    } catch (const comm::CommTimeoutError&) {
      return;
    } catch (const comm::CommError&) {
      out.closed = true;
    }
    if (left.count() <= 0) return;
  }
}

const std::string kAddrA = "tcp://127.0.0.1:1", kAddrB = "tcp://127.0.0.1:2";

WorkerSummary peers_summary(const SimCluster& c, const std::string& address) {
  for (const auto& w : c.sched.workers())
    if (w.address == address) return w;
  ADD_FAILURE() << "no worker " << address;
  return {};
}

bool logged(const SimCluster& c, const std::string& needle) {
  for (const auto& l : c.logs)
    if (l.message.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

// Lines 341-342: "the other workers are told it is gone (`peer-gone`) so that their fetches from
// it fail instead of waiting". Without the notice a peer fetching from a stopped worker waits on
// a connection that never answers. Told once per silence, not every tick. It also shows that
// SchedulerConfig::worker_silent = 0 takes SchedulerOptions::worker_silent.
TEST(SilentWorkerPeers, EachIsToldOnceThatTheOtherWentSilent) {
  Scheduler sched(peers_scheduler(0.5, 0));
  auto a = peers_register(sched.address(), kAddrA);
  auto b = peers_register(sched.address(), kAddrB);
  const auto t0 = Clock::now();
  PeerNotices to_a, to_b;
  // Neither sends a heartbeat: both are silent past 0.5 s.
  read_notices(*a, to_a, t0 + 2500ms);
  read_notices(*b, to_b, Clock::now() + 100ms);
  EXPECT_FALSE(to_a.closed);
  EXPECT_FALSE(to_b.closed);
  ASSERT_EQ(to_a.gone.size(), 1u) << "A must be told exactly once about B";
  EXPECT_EQ(to_a.gone[0], kAddrB);
  ASSERT_EQ(to_b.gone.size(), 1u) << "B must be told exactly once about A";
  EXPECT_EQ(to_b.gone[0], kAddrA);
  EXPECT_EQ(sched.workers().size(), 2u) << "silent is not removed: that is worker_ttl's";
  a->close();
  b->close();
}

// Lines 346-347: after `--worker-ttl` "it is removed: its connection is closed, the other workers
// are told". A process that wakes after that must find its connection closed, and its peers'
// fetches from it must fail.
TEST(SilentWorkerPeers, AWorkerRemovedByTheTtlIsClosedAndItsPeersAreTold) {
  Scheduler sched(peers_scheduler(0, 0, /*worker_ttl=*/1));  // no silence notices: only the TTL's
  auto a = peers_register(sched.address(), kAddrA);
  auto b = peers_register(sched.address(), kAddrB);
  PeerNotices to_a, to_b;
  const auto t0 = Clock::now();
  // B keeps sending heartbeats, A none.
  while (Clock::now() - t0 < 4s && !(to_a.closed && !to_b.gone.empty())) {
    peers_heartbeat(*b);
    read_notices(*b, to_b, Clock::now() + 200ms);
    if (!to_a.closed) read_notices(*a, to_a, Clock::now() + 1ms);
  }
  EXPECT_TRUE(to_a.closed) << "the removed worker's connection was left open";
  EXPECT_TRUE(to_a.gone.empty());
  ASSERT_EQ(to_b.gone.size(), 1u) << "B was not told (once) that A was removed";
  EXPECT_EQ(to_b.gone[0], kAddrA);
  EXPECT_FALSE(to_b.closed) << "a worker that sends heartbeats was closed";
  ASSERT_EQ(sched.workers().size(), 1u);
  EXPECT_EQ(sched.workers()[0].address, kAddrB);
  b->close();
}

// Lines 336-338: `SchedulerOptions::worker_silent`, `SchedulerConfig::worker_silent`; "`0` =
// never". 0 in both must turn the silence rule off (a deployment with long pauses relies on
// it), and a value in SchedulerConfig takes precedence over SchedulerOptions'.
TEST(SilentWorkerPeers, ZeroMeansNeverAndSchedulerConfigsValueWins) {
  Scheduler never(peers_scheduler(0, 0));
  Scheduler config_wins(peers_scheduler(5, 0.5));  // the options' 5 s would not come within the test
  auto na = peers_register(never.address(), kAddrA);
  auto nb = peers_register(never.address(), kAddrB);
  auto ca = peers_register(config_wins.address(), kAddrA);
  auto cb = peers_register(config_wins.address(), kAddrB);
  const auto t0 = Clock::now();
  PeerNotices never_a, never_b, config_a, config_b;
  read_notices(*ca, config_a, t0 + 2500ms);
  read_notices(*cb, config_b, Clock::now() + 100ms);
  read_notices(*na, never_a, Clock::now() + 1ms);
  read_notices(*nb, never_b, Clock::now() + 1ms);
  EXPECT_TRUE(never_a.gone.empty() && never_b.gone.empty()) << "worker_silent 0 still announced a silent worker";
  ASSERT_EQ(config_a.gone.size(), 1u) << "SchedulerConfig::worker_silent 0.5 did not take effect within 2.5 s";
  EXPECT_EQ(config_a.gone[0], kAddrB);
  EXPECT_EQ(config_b.gone.size(), 1u);
  for (auto* c : {&na, &nb, &ca, &cb}) (*c)->close();
}

// The state machine's side of "`0` = never": an unheard worker keeps its tasks and results and
// still gets new tasks (before worker_silent existed, and for deployments that turn it off).
TEST(SilentWorkerPeers, StateMachineWithZeroWorkerSilentTakesNothingFromAnUnheardWorker) {
  SchedulerConfig cfg = SimCluster::default_config();
  cfg.worker_ttl = 100;
  cfg.worker_silent = 0;
  cfg.work_stealing = false;  // stealing would move w2's waiting tasks for another reason
  SimCluster c(cfg);
  c.add_worker("w1");
  c.add_worker("w2");
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("a-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  const std::size_t held_before = peers_summary(c, "w2").has_what;
  ASSERT_GT(held_before, 0u) << "the test needs results on w2";
  c.workers["w2"]->hold = true;
  tasks.clear();
  keys.clear();
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("b-" + std::to_string(i), {"a-" + std::to_string(i)}));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  const std::size_t processing_before = peers_summary(c, "w2").processing;
  ASSERT_GT(processing_before, 0u) << "the test needs tasks waiting on w2";
  // 50 s in which only w1 is heard from.
  for (int t = 1; t <= 50; ++t) {
    c.to_scheduler(Heartbeat{"w1", static_cast<double>(t), 0});
    c.tick(static_cast<double>(t));
  }
  c.run();
  c.check_all();
  EXPECT_FALSE(logged(c, "silent")) << "worker_silent 0 still treated w2 as silent";
  EXPECT_EQ(peers_summary(c, "w2").processing, processing_before) << "tasks were taken from w2";
  EXPECT_EQ(peers_summary(c, "w2").has_what, held_before) << "results on w2 were counted as lost";
  // Still a worker like the others: new tasks are placed on it too.
  c.workers["w2"]->hold = false;
  c.release_held("w2");
  c.run();
  const std::size_t executed_before = c.workers["w2"]->executed.size();
  c.workers["w1"]->hold = true;
  tasks.clear();
  keys.clear();
  for (int i = 0; i < 4; ++i) {
    tasks.push_back(make_task("c-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  c.release_held("w1");
  c.run();
  c.release_held("w1");
  c.run();
  EXPECT_GT(c.workers["w2"]->executed.size(), executed_before);
  for (const auto& k : keys) EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(c.clients["client"].in_memory.count("b-" + std::to_string(i)));
  c.check_all();
}

// Line 340: "(those only it may run, with resources or strict restrictions, stay)". Moving a task
// that needs a GPU or a named worker to another worker would run it where it must not run.
TEST(SilentWorkerPeers, TasksOnlyTheSilentWorkerMayRunStayOnIt) {
  SchedulerConfig cfg = SimCluster::default_config();
  cfg.worker_ttl = 100;
  cfg.worker_silent = 1;
  SimCluster c(cfg);
  c.add_worker("gpu", 2, {{"GPU", 1}});
  c.add_worker("cpu", 2);
  c.run();
  c.workers["gpu"]->hold = true;
  Task needs_gpu = make_task("needs-gpu");
  needs_gpu.annotations.resources["GPU"] = 1;
  Task pinned = make_task("pinned");
  pinned.annotations.workers = {"gpu"};  // strict: allow_other_workers is false
  c.submit("client", {needs_gpu, pinned}, {"needs-gpu", "pinned"});
  c.run();
  ASSERT_EQ(peers_summary(c, "gpu").processing, 2u) << "the test needs both tasks sent to the gpu worker";
  // gpu goes silent: only cpu is heard from, past worker_silent.
  c.to_scheduler(Heartbeat{"cpu", 2.0, 0});
  c.tick(2.0);
  c.run();
  c.check_all();
  ASSERT_TRUE(logged(c, "gpu silent for")) << "the gpu worker was not seen as silent";
  EXPECT_EQ(peers_summary(c, "gpu").processing, 2u) << "a task only the silent worker may run was taken from it";
  EXPECT_TRUE(c.workers["cpu"]->executed.empty()) << "a restricted task ran on another worker";
  EXPECT_TRUE(c.clients["client"].in_memory.empty());
  // It wakes: they finish there.
  c.to_scheduler(Heartbeat{"gpu", 2.5, 0});
  c.workers["gpu"]->hold = false;
  c.release_held("gpu");
  c.run();
  c.check_all();
  EXPECT_TRUE(c.clients["client"].in_memory.count("needs-gpu"));
  EXPECT_TRUE(c.clients["client"].in_memory.count("pinned"));
  EXPECT_EQ(c.executed_on("needs-gpu"), "gpu");
  EXPECT_EQ(c.executed_on("pinned"), "gpu");
  EXPECT_TRUE(c.workers["cpu"]->executed.empty());
}

// Line 342: "It is sent `FreeKeys` for all of it, which it reads when it wakes". A woken worker
// that kept its old results and queued tasks would hold memory for keys the scheduler no longer
// counts on it, and run work already done elsewhere.
TEST(SilentWorkerPeers, TheSilentWorkerIsSentFreeKeysForWhatItHeld) {
  SchedulerConfig cfg = SimCluster::default_config();
  cfg.worker_ttl = 100;
  cfg.worker_silent = 1;
  SimCluster c(cfg);
  c.add_worker("w1");
  c.add_worker("w2");
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("a-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  std::vector<Key> on_w2;
  for (const auto& k : keys)
    if (c.workers["w2"]->data.count(k)) on_w2.push_back(k);
  ASSERT_FALSE(on_w2.empty()) << "the test needs results on w2";
  c.workers["w2"]->hold = true;
  tasks.clear();
  keys.clear();
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("b-" + std::to_string(i), {"a-" + std::to_string(i)}));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  std::vector<Key> queued_on_w2;  // sent to w2 and waiting there for a thread
  for (const auto& k : keys)
    if (auto s = c.workers["w2"]->state.status(k); s && *s == WorkerTaskStatus::Ready) queued_on_w2.push_back(k);
  ASSERT_FALSE(queued_on_w2.empty()) << "the test needs tasks queued on w2";

  c.to_scheduler(Heartbeat{"w1", 2.0, 0});
  c.tick(2.0);
  c.run();
  c.check_all();
  ASSERT_EQ(peers_summary(c, "w2").has_what, 0u);
  // What its running task reads stays until that task ends (a task cannot be stopped midway).
  std::set<Key> inputs_of_running;
  for (const auto& [k, task] : c.workers["w2"]->held)
    for (const auto& d : task->dependencies()) inputs_of_running.insert(d);
  EXPECT_LE(inputs_of_running.size(), 1u) << "w2 has one thread: one task may be running there";
  const auto w2_keys = c.workers["w2"]->state.data_keys();
  for (const auto& k : on_w2) {
    if (inputs_of_running.count(k)) continue;
    EXPECT_EQ(c.workers["w2"]->data.count(k), 0u) << k << " is still held by the silent worker";
    EXPECT_EQ(std::count(w2_keys.begin(), w2_keys.end(), k), 0) << k << " is still in its state machine's data";
  }
  for (const auto& k : queued_on_w2) {
    auto s = c.workers["w2"]->state.status(k);
    EXPECT_TRUE(!s || (*s != WorkerTaskStatus::Ready && *s != WorkerTaskStatus::Waiting))
        << k << " is still queued on the silent worker (" << worker_task_status_name(*s) << ")";
  }
  // It wakes: its running task ends (its result is dropped by the scheduler), and nothing of
  // what it held is left.
  c.workers["w2"]->hold = false;
  c.release_held("w2");
  c.run();
  c.check_all();
  for (const auto& k : on_w2) EXPECT_EQ(c.workers["w2"]->data.count(k), 0u) << k << " is still held after it woke";
  for (const auto& k : keys) EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
}
