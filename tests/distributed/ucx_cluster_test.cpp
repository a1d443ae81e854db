// Loopback integration tests of --protocol ucx (docs/ucx.md): LocalClusters whose scheduler and
// worker processes (this test binary, through tessera::init) listen on ucx:// and move data over
// UCX where both ends can, over TCP where one cannot. Skipped when this build or process has no
// UCX. Every test checks that no worker process is left behind.
#include <cmath>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::client_options;
using tessera_test::Clock;
using tessera_test::expect_close;
using tessera_test::expect_no_workers_left;
using tessera_test::processes_with;
using tessera_test::seconds_since;
using tessera_test::wait_until;
using tessera_test::seed_expr;

// A block of n doubles, element i = i * 0.5 + seed, every page written.
Block ucx_make(std::int64_t n, double seed) {
  Block b(DType::Float64, {n});
  double* p = b.data<double>();
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<double>(i) * 0.5 + seed;
  return b;
}
double ucx_sum(Block b) {
  double s = 0;
  for (double v : b.to_doubles()) s += v;
  return s;
}
double expected_sum(std::int64_t n, double seed) {
  return 0.5 * static_cast<double>(n) * static_cast<double>(n - 1) / 2 + seed * static_cast<double>(n);
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("ucx_test.make", ucx_make);
TESSERA_REGISTER_FUNCTION_AS("ucx_test.sum", ucx_sum);

namespace {

#define REQUIRE_UCX()                                                                   \
  do {                                                                                  \
    const auto st_ = tessera::comm::ucx_status();                                       \
    if (!st_.available) GTEST_SKIP() << "UCX is not available here: " << st_.reason;    \
  } while (0)

LocalClusterOptions ucx_options(int n_workers = 2) {
  LocalClusterOptions o;
  o.protocol = "ucx";
  o.processes = true;
  o.restart_dead_workers = false;  // a test kills a worker and counts what is left
  o.n_workers = n_workers;
  o.threads_per_worker = 1;
  o.timeout = 20;
  o.heartbeat_interval = 0.2;
  o.worker_ttl = 10;
  // Killed peers make the survivors warn; TESSERA_TEST_WORKER_LOG=warning shows it.
  const char* level = std::getenv("TESSERA_TEST_WORKER_LOG");
  o.log_level = level ? level : "error";
  return o;
}



SubmitOptions on(const std::string& worker, bool strict = true) {
  SubmitOptions o;
  o.annotations = Annotations{};
  o.annotations->workers = {worker};
  o.annotations->allow_other_workers = !strict;
  return o;
}

using tessera_test::find_worker;

std::string extra(const WorkerInfo* w, const std::string& key) {
  if (!w) return "(no such worker)";
  auto it = w->extra.find(key);
  return it == w->extra.end() ? "(none)" : it->second;
}

// A value made on `from` and summed on `to`: the bytes go worker to worker.
double move_between(Client& client, const std::string& from, const std::string& to, std::int64_t n, double seed) {
  Future made = client.submit_with(on(from), "ucx_test.make", n, seed);
  return client.submit_with(on(to), "ucx_test.sum", made).result_as<double>();
}

}  // namespace

// Runs in every build: without UCX (not built, or not starting) ucx:// is TCP behind the scenes.
TEST(UcxCluster, ProtocolUcxComputesWithOrWithoutUcx) {
  const bool ucx = tessera::comm::ucx_status().available;
  std::string address;
  {
    LocalCluster cluster(ucx_options(2));
    address = cluster.scheduler_address();
    Client client(cluster, client_options({}, 10));
    ASSERT_TRUE(client.wait_for_workers(2, 10s));
    for (const auto& w : client.scheduler_info().workers) {
      EXPECT_EQ(w.address.rfind("ucx://", 0), 0u) << w.address;
      EXPECT_EQ(extra(&w, "comm").rfind(ucx ? "ucx" : "tcp", 0), 0u) << extra(&w, "comm");
    }
    const double want = seed_expr(600, 100).compute(local_executor("threads")).item();
    expect_close(seed_expr(600, 100).compute(client).item(), want);
    expect_close(move_between(client, "worker-0", "worker-1", 1000, 0.5), expected_sum(1000, 0.5));
  }
  expect_no_workers_left(address);
}

TEST(UcxCluster, SeedWorkloadAcrossTwoWorkers) {
  REQUIRE_UCX();
  std::string address;
  {
    LocalCluster cluster(ucx_options(2));
    address = cluster.scheduler_address();
    EXPECT_EQ(address.rfind("ucx://", 0), 0u) << address;
    Client client(cluster, client_options({}, 10));
    ASSERT_TRUE(client.wait_for_workers(2, 10s));
    auto info = client.scheduler_info();
    ASSERT_EQ(info.workers.size(), 2u);
    for (const auto& w : info.workers) {
      EXPECT_EQ(w.address.rfind("ucx://", 0), 0u) << w.address;
      EXPECT_EQ(extra(&w, "comm").rfind("ucx", 0), 0u) << w.name << " reaches the scheduler over " << extra(&w, "comm");
      EXPECT_EQ(extra(&w, "transports"), "ucx,tcp") << w.name;
    }
    const double want = seed_expr(1000, 125).compute(local_executor("threads")).item();
    expect_close(seed_expr(1000, 125).compute(client).item(), want);
    // Worker to worker, both ways, small and large (rendezvous into pooled buffers).
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{4} << 20}) {
      expect_close(move_between(client, "worker-0", "worker-1", n, 1.5), expected_sum(n, 1.5));
      expect_close(move_between(client, "worker-1", "worker-0", n, 2.5), expected_sum(n, 2.5));
    }
  }
  expect_no_workers_left(address);
}

TEST(UcxCluster, WorkerKilledMidTransferIsDetectedAndRecomputed) {
  REQUIRE_UCX();
  std::string address;
  {
    LocalCluster cluster(ucx_options(2));
    address = cluster.scheduler_address();
    Client client(cluster, client_options({}, 10));
    ASSERT_TRUE(client.wait_for_workers(2, 10s));
    // 256 MiB made on worker-0 (only a preference, so it can be made again elsewhere), then
    // summed on worker-1: worker-0 is killed while worker-1 pulls it.
    const std::int64_t n = std::int64_t{32} << 20;
    Future made = client.submit_with(on("worker-0", false), "ucx_test.make", n, 3.0);
    ASSERT_TRUE(made.wait(30s));
    auto pids = cluster.worker_pids();
    auto info = client.scheduler_info();
    const WorkerInfo* w0 = find_worker(info, "worker-0");
    ASSERT_TRUE(w0);
    const int victim = w0->pid;
    Future summed = client.submit_with(on("worker-1"), "ucx_test.sum", made);
    std::this_thread::sleep_for(40ms);
    const auto t0 = Clock::now();
    ::kill(victim, SIGKILL);
    ASSERT_TRUE(summed.wait(60s)) << "the sum never finished after worker-0 died";
    expect_close(summed.result_as<double>(), expected_sum(n, 3.0));
    RecordProperty("seconds_after_kill", std::to_string(seconds_since(t0)));
    EXPECT_TRUE(wait_until([&] { return cluster.scheduler().workers().size() == 1; }, 5))
        << "the scheduler did not notice the dead worker";
    // The survivor keeps serving, over UCX.
    expect_close(client.submit_with(on("worker-1"), "ucx_test.sum",
                                    client.submit_with(on("worker-1"), "ucx_test.make", std::int64_t{10}, 1.0))
                     .result_as<double>(),
                 expected_sum(10, 1.0));
    client.close();
  }
  expect_no_workers_left(address);
}

TEST(UcxCluster, UcxFailingOrDisabledAtStartFallsBackToTcp) {
  REQUIRE_UCX();
  for (const std::map<std::string, std::string>& env :
       {std::map<std::string, std::string>{{"UCX_TLS", "bogus"}},  // ucp_init fails in the workers
        std::map<std::string, std::string>{{"TESSERA_UCX", "0"}}}) {
    std::string address;
    {
      auto o = ucx_options(2);
      o.worker_env = {env};
      LocalCluster cluster(o);
      address = cluster.scheduler_address();
      Client client(cluster, client_options({}, 10));
      ASSERT_TRUE(client.wait_for_workers(2, 10s));
      auto info = client.scheduler_info();
      for (const auto& w : info.workers) {
        EXPECT_EQ(extra(&w, "comm"), "tcp") << w.name << " with " << env.begin()->first;
        EXPECT_EQ(extra(&w, "transports"), "tcp") << w.name;
        EXPECT_EQ(w.address.rfind("ucx://", 0), 0u) << "still a ucx:// address (TCP behind it)";
      }
      const double want = seed_expr(600, 100).compute(local_executor("threads")).item();
      expect_close(seed_expr(600, 100).compute(client).item(), want);
      expect_close(move_between(client, "worker-0", "worker-1", std::int64_t{1} << 20, 0.5),
                   expected_sum(std::int64_t{1} << 20, 0.5));
    }
    expect_no_workers_left(address);
  }
}

TEST(UcxCluster, MixedPeersOneUcxOneTcpOnly) {
  REQUIRE_UCX();
  std::string address;
  {
    auto o = ucx_options(2);
    o.worker_env = {{}, {{"TESSERA_UCX", "0"}}};  // worker-1 has no UCX
    LocalCluster cluster(o);
    address = cluster.scheduler_address();
    Client client(cluster, client_options({}, 10));
    ASSERT_TRUE(client.wait_for_workers(2, 10s));
    auto info = client.scheduler_info();
    EXPECT_EQ(extra(find_worker(info, "worker-0"), "comm").rfind("ucx", 0), 0u)
        << extra(find_worker(info, "worker-0"), "comm");
    EXPECT_EQ(extra(find_worker(info, "worker-1"), "comm"), "tcp");
    EXPECT_EQ(extra(find_worker(info, "worker-0"), "transports"), "ucx,tcp");
    EXPECT_EQ(extra(find_worker(info, "worker-1"), "transports"), "tcp");
    for (std::int64_t n : {std::int64_t{3}, std::int64_t{2} << 20}) {
      expect_close(move_between(client, "worker-0", "worker-1", n, 1.0), expected_sum(n, 1.0));
      expect_close(move_between(client, "worker-1", "worker-0", n, 2.0), expected_sum(n, 2.0));
    }
    const double want = seed_expr(800, 100).compute(local_executor("threads")).item();
    expect_close(seed_expr(800, 100).compute(client).item(), want);
  }
  expect_no_workers_left(address);
}
