// Issue 19, a stopped worker: once it has been silent for worker_silent, the tasks it was sent
// go to the other workers and its results count as lost (computed again where needed); it is
// removed after worker_ttl as before; woken up, it takes tasks again and nothing it reports
// for a task taken from it is counted. The state machine (SimCluster) and real processes.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "sim_cluster.hpp"
#include "tessera/distributed/scheduler_state.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera::distributed::testing::make_task;
using tessera::distributed::testing::SimCluster;
using tessera_test::client_options;
using tessera_test::wait_until;

WorkerSummary summary_of(const SimCluster& c, const std::string& address) {
  for (const auto& w : c.sched.workers())
    if (w.address == address) return w;
  ADD_FAILURE() << "no worker " << address;
  return {};
}

TEST(SilentWorker, ItsTasksAndResultsGoToTheOthers) {
  SchedulerConfig cfg = SimCluster::default_config();
  cfg.worker_ttl = 100;
  cfg.worker_silent = 1;
  SimCluster c(cfg);
  c.add_worker("w1");
  c.add_worker("w2");
  // Results on both workers, wanted by the client.
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("a-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  ASSERT_GT(summary_of(c, "w2").has_what, 0u) << "the test needs results on w2";
  // w2 stops: what it is sent next waits there.
  c.workers["w2"]->hold = true;
  tasks.clear();
  keys.clear();
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("b-" + std::to_string(i), {"a-" + std::to_string(i)}));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  ASSERT_FALSE(c.workers["w2"]->held.empty()) << "the test needs tasks waiting on w2";
  EXPECT_LT(c.clients["client"].in_memory.size(), 20u);
  // w1 is heard from, w2 not: past worker_silent, the computation finishes on w1 alone.
  c.to_scheduler(Heartbeat{"w1", 2.0, 0});
  c.tick(2.0);
  c.run();
  c.check_all();
  for (const auto& k : keys) EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(c.clients["client"].in_memory.count("a-" + std::to_string(i)));
  EXPECT_EQ(summary_of(c, "w2").processing, 0u);
  EXPECT_EQ(summary_of(c, "w2").has_what, 0u) << "results on a silent worker are unreachable";
  EXPECT_EQ(c.sched.worker_count(), 2u) << "removing it is worker_ttl's";
  // It wakes up: a result it reports for a task taken from it (finished before it read its
  // FreeKeys) is dropped, not counted as a copy; what it still held runs to no effect.
  const Key taken = c.workers["w2"]->held.front().first;
  c.to_scheduler(TaskFinished{"w2", taken, 8, "int64", 2.1, 2.2, 0});
  c.workers["w2"]->hold = false;
  c.release_held("w2");
  c.run();
  c.to_scheduler(Heartbeat{"w2", 2.5, 0});
  c.run();
  c.check_all();
  bool dropped = false;
  for (const auto& l : c.logs) dropped |= l.message.find("taken from it while it was silent") != std::string::npos;
  EXPECT_TRUE(dropped);
  for (const auto& k : keys) EXPECT_TRUE(c.value(k).has_value()) << k;
  EXPECT_EQ(summary_of(c, "w2").has_what, 0u);
  // Heard from again, it takes part in the next computation.
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
  for (const auto& k : keys) EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
  EXPECT_FALSE(c.workers["w2"]->executed.empty());
  c.check_all();
}

// Loaded into the worker processes: ssh_plugin.slow_inc (x + 1 after ms) and ssh_plugin.add.
std::filesystem::path plugin_path() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libtessera_ssh_tasks.so";
}

// 300 tasks of 20 ms (x + 1), then their sum by a tree of adds: the value is 1 + 2 + ... + 300.
Future slow_sum(Client& client, int n) {
  std::vector<Future> level;
  for (int i = 0; i < n; ++i) level.push_back(client.submit("ssh_plugin.slow_inc", i, 20));
  while (level.size() > 1) {
    std::vector<Future> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(client.submit("ssh_plugin.add", level[i], level[i + 1]));
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  return level.front();
}

TEST(SilentWorker, StoppedDuringAComputationWhichFinishesLongBeforeTheTtl) {
  if (!std::filesystem::exists(plugin_path())) GTEST_SKIP() << "libtessera_ssh_tasks.so not built";
  auto o = tessera_test::processes_over_tcp();
  o.worker_ttl = 60;  // the scheduler's worker_silent stays at its default, 5 s
  o.preload = {plugin_path().string()};
  LocalCluster cluster(o);
  Client client(cluster, client_options(cluster.token()));
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const int stopped_pid = cluster.worker_pids().at(1);
  const int n = 300, want = n * (n + 1) / 2;
  const auto t0 = std::chrono::steady_clock::now();
  Future total = slow_sum(client, n);
  std::this_thread::sleep_for(1s);  // both workers have run some and hold results
  const bool finished_before_stop = total.status() != FutureStatus::Pending;
  cluster.signal_worker(1, SIGSTOP);
  const auto stopped_at = std::chrono::steady_clock::now();
  struct Cont {  // the stopped process continues even when an assertion fails
    LocalCluster& c;
    ~Cont() { c.signal_worker(1, SIGCONT); }
  } cont{cluster};
  ASSERT_FALSE(finished_before_stop) << "the computation ended before the stop: the test needs more tasks";
  ASSERT_TRUE(wait_until([&] { return tessera_test::process_state(stopped_pid) == 'T'; }, 2));
  int got = -1;
  try {
    got = total.result_as<int>(50s);
  } catch (const std::exception& e) {
    FAIL() << "the computation waited for the stopped worker: " << e.what();
  }
  const auto now = std::chrono::steady_clock::now();
  const double took = std::chrono::duration<double>(now - t0).count();
  const double after_stop = std::chrono::duration<double>(now - stopped_at).count();
  EXPECT_EQ(got, want);
  std::printf("[ silent   ] %d tasks of 20 ms and %d adds, a worker stopped 1 s in: done %.1f s after the start, "
              "%.1f s after the stop (worker_silent 5 s, worker_ttl 60 s)\n",
              n, n - 1, took, after_stop);
  EXPECT_LT(after_stop, 30.0) << "not well before the 60 s TTL";

  // Woken up before the TTL: it is heard from again and computes correctly with the other.
  cluster.signal_worker(1, SIGCONT);
  ASSERT_TRUE(wait_until([&] { return tessera_test::process_state(stopped_pid) != 'T'; }, 2));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(::kill(stopped_pid, 0), 0) << "the woken worker exited";
  EXPECT_EQ(client.scheduler_info().workers.size(), 2u);
  EXPECT_EQ(slow_sum(client, 40).result_as<int>(30s), 40 * 41 / 2);
  auto y = random::normal(18, 0.0, 1.0, {400, 400}, {50, 50});
  tessera_test::expect_close((y - 2).sum().compute(client).item(), (y - 2).sum().compute(local_executor("sync")).item());
}

}  // namespace
