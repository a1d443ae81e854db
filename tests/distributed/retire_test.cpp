// Graceful retirement and the adaptive target, with worker processes (LocalCluster starting this
// test binary): a retired worker's only copy of a result moves before it closes; the last worker
// holding data is kept; adaptive_target rises with queued work and falls to zero when idle.
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "http_client.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::client_options;
using tessera_test::wait_until;

// n copies of the pid of the process that made it: a value recomputed elsewhere would differ.
Block rt_make(int n) {
  return Block::from_values<double>(std::vector<double>(static_cast<std::size_t>(n), ::getpid()), {n});
}
int rt_sleep(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("retire_test.make", rt_make);
TESSERA_REGISTER_FUNCTION_AS("retire_test.sleep", rt_sleep);

namespace {

LocalClusterOptions options(int n_workers) {
  LocalClusterOptions o;
  o.processes = true;
  o.n_workers = n_workers;
  o.threads_per_worker = 1;
  o.timeout = 10;
  o.heartbeat_interval = 0.2;
  o.log_level = "error";
  return o;
}

// The process ended (gone, or a zombie its parent has not reaped yet).
bool ended(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

const WorkerInfo* find_worker(const SchedulerInfo& info, const std::string& address) {
  for (const auto& w : info.workers)
    if (w.address == address) return &w;
  return nullptr;
}

TEST(RetireWorkers, TheOnlyCopyOfAPersistedResultMovesBeforeTheWorkerCloses) {
  LocalCluster cluster(options(2));
  Client client(cluster, client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  auto info = client.scheduler_info();
  const std::string a = info.workers[0].address, b = info.workers[1].address;
  const int pid_a = info.workers[0].pid;

  // Made on a, held only there.
  SubmitOptions so;
  so.annotations = Annotations{};
  so.annotations->workers = {a};
  Future f = client.submit_with(so, "retire_test.make", 1000);
  ASSERT_TRUE(f.wait(10s));
  info = client.scheduler_info();
  ASSERT_EQ(find_worker(info, a)->keys, 1u);
  ASSERT_EQ(find_worker(info, b)->keys, 0u);

  auto retired = client.retire_workers({a}, 30s);
  ASSERT_EQ(retired, std::vector<std::string>{a});
  info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 1u);
  EXPECT_EQ(info.workers[0].address, b);
  EXPECT_EQ(info.workers[0].keys, 1u) << "the result was not copied to " << b;
  EXPECT_TRUE(wait_until([&] { return ended(pid_a); }, 10)) << "the retired worker's process is still running";
  // The value a made (its pid in every element): copied, not recomputed on b.
  Block v = f.result_as<Block>(10s);
  ASSERT_EQ(v.size(), 1000);
  for (double x : v.to_doubles()) ASSERT_EQ(x, pid_a);
  // The cluster goes on with the remaining worker.
  EXPECT_EQ(client.submit("retire_test.sleep", 1).result_as<int>(10s), 1);
}

TEST(RetireWorkers, ByCountPicksAnIdleWorkerAndKeepsTheLastHolderOfData) {
  LocalCluster cluster(options(2));
  Client client(cluster, client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  // One worker busy for a while: retiring one of two by count takes the idle one.
  Future busy = client.submit("retire_test.sleep", 3000);
  ASSERT_TRUE(wait_until([&] {
    for (const auto& w : client.scheduler_info().workers)
      if (w.processing > 0) return true;
    return false;
  }, 10));
  std::string busy_worker;
  for (const auto& w : client.scheduler_info().workers)
    if (w.processing > 0) busy_worker = w.address;
  auto retired = client.retire_workers(std::size_t{1}, 30s);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_NE(retired[0], busy_worker);
  EXPECT_EQ(busy.result_as<int>(10s), 3000);

  // The last worker holds busy's result and no other worker can take it: it stays.
  auto kept = client.retire_workers({busy_worker}, 5s);
  EXPECT_TRUE(kept.empty());
  auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 1u);
  EXPECT_EQ(info.workers[0].address, busy_worker);
  // ... and still takes tasks (it is no longer retiring).
  EXPECT_EQ(client.submit("retire_test.sleep", 2).result_as<int>(10s), 2);
}

TEST(AdaptiveTarget, RisesWithQueuedWorkAndFallsWhenIdle) {
  LocalCluster cluster(options(1));
  Client client(cluster, client_options());
  ASSERT_TRUE(client.wait_for_workers(1, 10s));
  EXPECT_EQ(client.adaptive_target(), 0u);  // nothing to do, nothing held
  // 40 tasks of 200 ms on one thread: 8 s of work, more than the 5 s target: more workers.
  std::vector<Future> fs = client.map("retire_test.sleep", std::vector<int>(40, 200));
  std::size_t peak = 0;
  EXPECT_TRUE(wait_until([&] {
    peak = std::max(peak, client.adaptive_target());
    return peak >= 2;
  }, 5)) << "peak target " << peak;
  for (auto& f : fs) ASSERT_TRUE(f.wait(30s));
  // Results held: at least one worker is still wanted.
  EXPECT_EQ(client.adaptive_target(), 1u);
  fs.clear();  // released: nothing held, nothing to run
  EXPECT_TRUE(wait_until([&] { return client.adaptive_target() == 0; }, 10));
}

TEST(AdaptiveTarget, ServedByTheDashboard) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.dashboard_address = "127.0.0.1:0";
  Scheduler scheduler(so);
  int port = tessera_test::port_of(scheduler.dashboard_url());
  auto r = tessera_test::http_get(port, "/api/v1/adaptive-target");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\"target\": 0"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"workers\": 0"), std::string::npos) << r.body;
}

}  // namespace
