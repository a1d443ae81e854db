// Integration tests of the distributed runtime with thread workers: a real Scheduler, real
// Workers and a Client in this process, talking over TCP on 127.0.0.1 (and inproc://). The task
// functions are registered below; process-worker tests live in process_test.cpp.
#include <atomic>
#include <future>
#include <cmath>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "array/array_ops.hpp"
#include "array/expr.hpp"
#include "cluster_fixture.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "comm/wire.hpp"
#include "distributed/process_cpu.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::client_options;
using tessera_test::Clock;
using tessera_test::expect_close;
using tessera_test::seconds_since;
using tessera_test::wait_until;

// ---- task functions ------------------------------------------------------------------------------
// Set to let cluster_test.wait tasks return early (thread workers share this process), so that a
// test never waits for a long task when it tears its cluster down.
std::atomic<bool> g_release{false};

int ct_inc(int x) { return x + 1; }
int ct_add(int a, int b) { return a + b; }
double ct_scale(double x, double f) { return x * f; }
std::string ct_greet(std::string s) { return "hello " + s; }
Block ct_twice(Block b) {
  auto v = b.to_doubles();
  for (auto& x : v) x *= 2;
  return Block::from_values<double>(v, b.shape());
}
double ct_block_sum(Block b) {
  auto v = b.to_doubles();
  return std::accumulate(v.begin(), v.end(), 0.0);
}
std::int64_t ct_block_size(Block b) { return b.size(); }
Block ct_fail_block(Block b) {
  throw std::runtime_error("cluster_test.fail_block boom on a block of " + std::to_string(b.size()));
}
int ct_fail(int x) {
  if (x >= 0) throw std::runtime_error("cluster_test.fail boom " + std::to_string(x));
  return x;
}
int ct_wait(int ms) {
  auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end && !g_release) std::this_thread::sleep_for(2ms);
  return ms;
}

// Concurrency probe for the resources test: every running call counts itself.
std::atomic<int> g_active{0}, g_max_active{0};
int ct_probe(int i) {
  int now = ++g_active;
  int prev = g_max_active.load();
  while (now > prev && !g_max_active.compare_exchange_weak(prev, now)) {
  }
  std::this_thread::sleep_for(20ms);
  --g_active;
  return i;
}

// Fails on the first attempt of each id, succeeds afterwards.
std::mutex g_flaky_mu;
std::map<int, int> g_flaky_attempts;
int ct_flaky(int id) {
  int attempt;
  {
    std::lock_guard lock(g_flaky_mu);
    attempt = g_flaky_attempts[id]++;
  }
  if (attempt == 0) throw std::runtime_error("flaky first attempt of " + std::to_string(id));
  return id * 10;
}

Block ct_make_block(int i) {
  std::vector<double> v(25000);  // 200,000 bytes
  for (std::size_t j = 0; j < v.size(); ++j) v[j] = i * 1e6 + static_cast<double>(j);
  return Block::from_values<double>(v, {static_cast<std::int64_t>(v.size())});
}

std::atomic<int> g_run_calls{0};
int ct_run_probe() {
  ++g_run_calls;
  return static_cast<int>(::getpid());
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("cluster_test.inc", ct_inc);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.add", ct_add);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.scale", ct_scale);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.greet", ct_greet);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.twice", ct_twice);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.block_sum", ct_block_sum);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.block_size", ct_block_size);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.fail_block", ct_fail_block);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.fail", ct_fail);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.wait", ct_wait);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.probe", ct_probe);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.flaky", ct_flaky);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.make_block", ct_make_block);
TESSERA_REGISTER_FUNCTION_AS("cluster_test.run_probe", ct_run_probe);

namespace {

// Holds g_release down while it lives; releases every waiting task when it goes. Declare it
// after the cluster so that it is destroyed (and the tasks released) before the cluster.
struct ReleaseOnExit {
  ReleaseOnExit() { g_release = false; }
  ~ReleaseOnExit() { g_release = true; }
};

LocalClusterOptions thread_options(const std::string& protocol = "tcp", int n_workers = 2, int threads = 1) {
  LocalClusterOptions o;
  o.processes = false;
  o.protocol = protocol;
  o.n_workers = n_workers;
  o.threads_per_worker = threads;
  o.timeout = 10;
  o.heartbeat_interval = 0.1;
  o.worker_ttl = 10;
  return o;
}

double seed_value(Executor& ex, std::int64_t n, std::int64_t c) { return tessera_test::seed_expr(n, c).compute(ex).item(); }


// ---- 1-3, 5, 10, 11, 13 on thread workers over tcp and inproc --------------------------------------

// The client connects to scheduler_address(), so that with "tcp" it talks TCP too (a Client made
// from the LocalCluster itself may take an in-process shortcut).
class ClusterThreads : public ::testing::TestWithParam<std::string> {
 protected:
  LocalClusterOptions options(int n_workers = 2, int threads = 1) const {
    return thread_options(GetParam(), n_workers, threads);
  }
};

TEST_P(ClusterThreads, SubmitResultOfIntsDoublesStringsBlocks) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  EXPECT_EQ(client.submit("cluster_test.inc", 41).result_as<int>(), 42);
  EXPECT_DOUBLE_EQ(client.submit("cluster_test.scale", 2.5, 4.0).result_as<double>(), 10.0);
  EXPECT_EQ(client.submit("cluster_test.greet", std::string("tessera")).result_as<std::string>(), "hello tessera");
  Block b = Block::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Block r = client.submit("cluster_test.twice", b).result_as<Block>();
  ASSERT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_doubles(), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  EXPECT_DOUBLE_EQ(client.submit("cluster_test.block_sum", b).result_as<double>(), 21.0);
  // result() twice (the value is cached) and status.
  Future f = client.submit("cluster_test.inc", 1);
  EXPECT_EQ(f.result_as<int>(), 2);
  EXPECT_EQ(f.result_as<int>(), 2);
  EXPECT_EQ(f.status(), FutureStatus::Finished);
  EXPECT_TRUE(f.done());
  EXPECT_EQ(f.exception(), nullptr);
}

TEST_P(ClusterThreads, MapGather) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  std::vector<int> xs(50);
  std::iota(xs.begin(), xs.end(), 0);
  auto fs = client.map("cluster_test.inc", xs);
  ASSERT_EQ(fs.size(), xs.size());
  std::set<std::string> keys;
  for (auto& f : fs) keys.insert(f.key());
  EXPECT_EQ(keys.size(), xs.size()) << "map must give every call its own key";
  auto values = client.gather(fs);
  ASSERT_EQ(values.size(), xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(from_value<int>(values[i]), xs[i] + 1);

  std::vector<std::string> names{"a", "bb", "ccc"};
  auto gs = client.gather(client.map("cluster_test.greet", names));
  ASSERT_EQ(gs.size(), 3u);
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(from_value<std::string>(gs[i]), "hello " + names[i]);

  std::vector<Block> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(Block::from_values<double>(std::vector<double>(10, i), {10}));
  auto sums = client.gather(client.map("cluster_test.block_sum", blocks));
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(from_value<double>(sums[static_cast<std::size_t>(i)]), 10.0 * i);

  EXPECT_TRUE(client.gather({}).empty());
}

TEST_P(ClusterThreads, FuturesAsArgumentsChain) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  Future f = client.submit("cluster_test.inc", 0);
  for (int i = 0; i < 20; ++i) f = client.submit("cluster_test.inc", f);
  EXPECT_EQ(f.result_as<int>(), 21);
  // A diamond: two futures into one task, one of them used twice.
  Future a = client.submit("cluster_test.inc", 10);
  Future b = client.submit("cluster_test.add", a, a);
  Future c = client.submit("cluster_test.add", a, b);
  EXPECT_EQ(c.result_as<int>(), 11 + 22);
  // Futures mixed with literals; Block futures into a Block function.
  Future blk = client.submit("cluster_test.twice", Block::from_values<double>({1, 2, 3}, {3}));
  Future blk2 = client.submit("cluster_test.twice", blk);
  EXPECT_DOUBLE_EQ(client.submit("cluster_test.block_sum", blk2).result_as<double>(), 24.0);
}

TEST_P(ClusterThreads, ScatterThenUseAsArgument) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  Future s = client.scatter(Block::from_values<double>({1, 2, 3, 4}, {4}));
  EXPECT_DOUBLE_EQ(client.submit("cluster_test.block_sum", s).result_as<double>(), 10.0);
  Block back = s.result_as<Block>();
  EXPECT_EQ(back.to_doubles(), (std::vector<double>{1, 2, 3, 4}));
  Future n = client.scatter(41);
  EXPECT_EQ(client.submit("cluster_test.inc", n).result_as<int>(), 42);
  EXPECT_EQ(client.submit("cluster_test.add", n, n).result_as<int>(), 82);
  Future str = client.scatter(std::string("world"));
  EXPECT_EQ(client.submit("cluster_test.greet", str).result_as<std::string>(), "hello world");
}

TEST_P(ClusterThreads, TaskExceptionThenClusterKeepsWorking) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  Future bad = client.submit("cluster_test.fail", 7);
  try {
    bad.result(5s);
    FAIL() << "result() of a raising task must throw";
  } catch (const TaskError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(bad.key()), std::string::npos) << what;
    EXPECT_NE(what.find("cluster_test.fail boom 7"), std::string::npos) << what;
    EXPECT_EQ(e.key(), bad.key());
  }
  EXPECT_EQ(bad.status(), FutureStatus::Error);
  EXPECT_NE(bad.exception(), nullptr);
  EXPECT_THROW(client.gather({bad}), TaskError);

  // A dependent errs naming the failed dependency.
  Future dep = client.submit("cluster_test.inc", bad);
  try {
    dep.result(5s);
    FAIL() << "a dependent of a failed task must err";
  } catch (const TaskError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(dep.key()), std::string::npos) << what;
    EXPECT_NE(what.find(bad.key()), std::string::npos) << what;
    EXPECT_NE(what.find("cluster_test.fail boom 7"), std::string::npos) << what;
    EXPECT_EQ(e.key(), bad.key()) << "the key that raised";
  }
  // The cluster keeps working.
  EXPECT_EQ(client.submit("cluster_test.inc", 1).result_as<int>(), 2);
  auto fs = client.map("cluster_test.fail", std::vector<int>{1, 2, 3});
  for (auto& f : fs) EXPECT_THROW(f.result(5s), TaskError);
  EXPECT_EQ(client.submit("cluster_test.inc", 2).result_as<int>(), 3);
}

TEST_P(ClusterThreads, UnknownOperationThrowsAtSubmit) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  auto t0 = Clock::now();
  try {
    client.submit("cluster_test.no_such_op", 1);
    FAIL() << "submit of an op no worker has must throw";
  } catch (const UnknownOperationError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cluster_test.no_such_op"), std::string::npos) << what;
    EXPECT_NE(what.find("TESSERA_REGISTER_FUNCTION"), std::string::npos) << what;
  }
  EXPECT_LT(seconds_since(t0), 2.0) << "must fail at once, not wait";
  EXPECT_THROW(client.map("cluster_test.no_such_op", std::vector<int>{1, 2}), UnknownOperationError);
  EXPECT_EQ(client.submit("cluster_test.inc", 1).result_as<int>(), 2);
}

TEST_P(ClusterThreads, ComputingTheSameKeysAgainRightAfterReleasingThem) {
  // Each compute() releases its keys when its futures go (the release leaves in a batch, from
  // another thread); the next compute() of the same expression asks for the same keys at once.
  // The release must not overtake that request and make the scheduler forget keys the client
  // wants again (the client would then wait for a value no worker has).
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  const auto y = (random::uniform(3, 0.0, 1.0, {200, 200}, {100, 100}) + 1).sum();
  const double want = y.compute(local_executor("sync")).item();
  auto loop = std::async(std::launch::async, [&] {
    for (int i = 0; i < 300; ++i) EXPECT_DOUBLE_EQ(y.compute(client).item(), want) << "round " << i;
  });
  if (loop.wait_for(60s) != std::future_status::ready) {
    ADD_FAILURE() << "a compute() of keys just released never finished";
    client.close();  // its fetch gives up with "client is closed"
  }
  try {
    loop.get();
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

TEST_P(ClusterThreads, SeedWorkloadMatchesLocalThreads) {
  LocalCluster cluster(options(2, 2));
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  double want = seed_value(local_executor("threads"), 400, 100);
  double got = seed_value(client, 400, 100);
  expect_close(got, want);
  // Expected magnitude: 200 * 200 elements of about 11.
  EXPECT_NEAR(got / (200.0 * 200.0), 11.0, 0.05);
  // compute() releases its keys afterwards (asynchronously: the release is batched).
  EXPECT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 0; }, 2))
      << cluster.scheduler().task_count() << " tasks still known after compute()";
}

TEST_P(ClusterThreads, AsCompletedWaitAndDoneCallbacks) {
  LocalCluster cluster(options(2, 2));
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  ReleaseOnExit release;
  std::vector<int> delays{60, 0, 30, 10, 45, 5, 20, 0};
  auto fs = client.map("cluster_test.wait", delays);
  AsCompleted ac(fs);
  EXPECT_EQ(ac.remaining(), fs.size());
  std::multiset<std::string> seen;
  while (auto f = ac.next()) {
    EXPECT_TRUE(f->done());
    seen.insert(f->key());
  }
  EXPECT_EQ(ac.remaining(), 0u);
  EXPECT_EQ(seen.size(), fs.size());
  for (auto& f : fs) EXPECT_EQ(seen.count(f.key()), 1u) << f.key() << " must be yielded exactly once";
  EXPECT_FALSE(ac.next().has_value());

  // AsCompleted::add with an already finished future.
  AsCompleted later({});
  later.add(fs[0]);
  auto g = later.next();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->key(), fs[0].key());

  // wait(): all done; a timeout on a long task returns false in time.
  auto more = client.map("cluster_test.wait", std::vector<int>{5, 10, 15});
  EXPECT_TRUE(wait(more, 5s));
  for (auto& f : more) EXPECT_TRUE(f.done());
  Future slow = client.submit("cluster_test.wait", 5000);
  auto t0 = Clock::now();
  EXPECT_FALSE(wait({slow}, 0.2s));
  EXPECT_FALSE(slow.wait(0.1s));
  EXPECT_LT(seconds_since(t0), 2.0);

  // add_done_callback: later on a pending future, at once on a done one.
  std::atomic<int> fired{0};
  std::mutex keys_mu;
  std::vector<std::string> keys;
  Future p = client.submit("cluster_test.wait", 50);
  p.add_done_callback([&](const Future& f) {
    std::lock_guard lock(keys_mu);
    keys.push_back(f.key());
    ++fired;
  });
  ASSERT_TRUE(wait_until([&] { return fired.load() == 1; }, 5));
  {
    std::lock_guard lock(keys_mu);
    EXPECT_EQ(keys.at(0), p.key());
  }
  p.add_done_callback([&](const Future&) { ++fired; });
  EXPECT_EQ(fired.load(), 2) << "a callback on a done future runs at once";
  // Also on an erred future.
  Future bad = client.submit("cluster_test.fail", 1);
  bad.wait(5s);
  bad.add_done_callback([&](const Future& f) {
    EXPECT_EQ(f.status(), FutureStatus::Error);
    ++fired;
  });
  EXPECT_EQ(fired.load(), 3);
  g_release = true;  // let `slow` end
}

TEST_P(ClusterThreads, CancelPendingLongTask) {
  LocalCluster cluster(options(1, 1));
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  ReleaseOnExit release;
  Future running = client.submit("cluster_test.wait", 5000);
  Future pending = client.submit("cluster_test.wait", 5000);
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 2; }, 2));
  pending.cancel();
  auto t0 = Clock::now();
  try {
    pending.result(5s);
    FAIL() << "result() of a cancelled future must throw";
  } catch (const CancelledError& e) {
    EXPECT_NE(std::string(e.what()).find(pending.key()), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    FAIL() << "expected CancelledError, got: " << e.what();
  }
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(pending.status(), FutureStatus::Cancelled);
  EXPECT_FALSE(running.done());
  // Client::cancel of the running one, too.
  client.cancel({running});
  EXPECT_THROW(running.result(5s), CancelledError);
  g_release = true;
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 0; }, 3));
  // The worker is free again.
  EXPECT_EQ(client.submit("cluster_test.inc", 1).result_as<int>(), 2);
}

TEST_P(ClusterThreads, ClientRunOnEveryWorker) {
  LocalCluster cluster(options(3, 1));
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  int before = g_run_calls.load();
  auto out = client.run("cluster_test.run_probe");
  EXPECT_EQ(g_run_calls.load() - before, 3);
  auto info = client.scheduler_info();
  ASSERT_EQ(out.size(), info.workers.size());
  for (const auto& w : info.workers) {
    ASSERT_TRUE(out.count(w.address)) << w.address;
    EXPECT_EQ(from_value<int>(out[w.address]), static_cast<int>(::getpid()));
  }
  auto inc = client.run("cluster_test.inc", {tessera::detail::to_task_value(41)});
  ASSERT_EQ(inc.size(), 3u);
  for (auto& [addr, v] : inc) EXPECT_EQ(from_value<int>(v), 42) << addr;
  // An op that raises on the workers, and one that does not exist.
  EXPECT_THROW(client.run("cluster_test.fail", {tessera::detail::to_task_value(3)}), Error);
  try {
    client.run("cluster_test.no_such_op");
    FAIL() << "run of an unknown op must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cluster_test.no_such_op"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client.submit("cluster_test.inc", 1).result_as<int>(), 2);
}

TEST_P(ClusterThreads, RetriesOfFlakyTask) {
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  static std::atomic<int> next_id{1000};
  int id1 = next_id++, id2 = next_id++, id3 = next_id++;
  SubmitOptions once;
  once.annotations = Annotations{.retries = 1};
  EXPECT_EQ(client.submit_with(once, "cluster_test.flaky", id1).result_as<int>(), id1 * 10);
  // retries = 0: the first failure is final.
  Future f = client.submit("cluster_test.flaky", id2);
  try {
    f.result(5s);
    FAIL() << "without retries a failing task must err";
  } catch (const TaskError& e) {
    EXPECT_NE(std::string(e.what()).find("flaky first attempt of " + std::to_string(id2)), std::string::npos)
        << e.what();
  }
  {
    std::lock_guard lock(g_flaky_mu);
    EXPECT_EQ(g_flaky_attempts[id1], 2);
    EXPECT_EQ(g_flaky_attempts[id2], 1);
  }
  // The Annotate scope gives retries too.
  {
    Annotate scope(Annotations{.retries = 1});
    EXPECT_EQ(client.submit("cluster_test.flaky", id3).result_as<int>(), id3 * 10);
  }
  // Client::retry re-runs the erred one (its second attempt succeeds).
  client.retry({f});
  EXPECT_EQ(f.result_as<int>(), id2 * 10);
}

TEST_P(ClusterThreads, ScatterLargeBlock) {
  // A 72 MiB value: bigger than the comm layer's default 64 MiB header limit.
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  std::vector<double> v(9u << 20, 1.0);
  Future s = client.scatter(Block::from_values<double>(v, {static_cast<std::int64_t>(v.size())}));
  v.clear();
  v.shrink_to_fit();
  try {
    Value v = client.submit("cluster_test.block_size", s).result(5s);
    EXPECT_EQ(from_value<std::int64_t>(v), std::int64_t{9} << 20);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a scattered 72 MiB block fails: " << e.what();
  }
  EXPECT_EQ(cluster.scheduler().workers().size(), 2u) << "the large value cost the cluster its workers";
}

TEST_P(ClusterThreads, PersistedArrayStaysOnTheWorkersWhileItLives) {
  // Dask's x.persist(): the chunks stay on the workers, later graphs of the same client read
  // them there (no chunk values in the graph), another executor fetches them, and dropping the
  // array releases them.
  LocalCluster cluster(options());
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  const auto x = random::normal(5, 0.0, 1.0, {400, 300}, {100, 100});  // 12 chunks
  const Block want = x.compute(local_executor("sync"));
  const double want_sum = (x + 1).sum().compute(local_executor("sync")).item();
  auto held_bytes = [&] {
    std::size_t b = 0;
    for (const auto& w : client.scheduler_info().workers) b += w.memory;
    return b;
  };
  {
    const Array xp = x.persist(client);
    EXPECT_EQ(cluster.scheduler().task_count(), 12u) << "the persisted chunks are held on the cluster";
    EXPECT_TRUE(wait_until([&] { return held_bytes() >= want.nbytes(); }, 5))
        << held_bytes() << " bytes held on the workers, want at least " << want.nbytes();

    // The client's graph depends on the chunks by key; a self-contained graph carries them.
    std::vector<Key> keys;
    const Graph on_client = tessera::detail::graph_for((xp + 1).sum(), &client, &keys);
    const Graph standalone = (xp + 1).sum().to_graph(&keys);
    auto identity_tasks = [](const Graph& g) {
      return std::count_if(g.tasks().begin(), g.tasks().end(),
                           [](const auto& kt) { return kt.second.op == tessera::detail::kIdentityOp; });
    };
    EXPECT_EQ(identity_tasks(on_client), 0);
    EXPECT_EQ(identity_tasks(standalone), 12);

    expect_close((xp + 1).sum().compute(client).item(), want_sum);
    expect_close((xp + 1).sum().compute(local_executor("threads")).item(), want_sum);
    EXPECT_EQ(xp.compute(client).to_doubles(), want.to_doubles());
    EXPECT_EQ(xp.persist(client).compute(client).to_doubles(), want.to_doubles()) << "persisting it again";
    EXPECT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 12; }, 2))
        << "computations on the persisted array should leave only its chunks behind";
  }
  EXPECT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 0; }, 2))
      << cluster.scheduler().task_count() << " tasks still known after the persisted array was dropped";
  EXPECT_TRUE(wait_until([&] { return held_bytes() == 0; }, 5)) << held_bytes() << " bytes still held";
}

TEST_P(ClusterThreads, PersistRaisesTheTaskErrorAndAClosedClientSaysSo) {
  LocalCluster cluster(options());
  auto client = std::make_unique<Client>(cluster.scheduler_address(), client_options(cluster.token()));
  const auto bad = map_blocks("cluster_test.fail_block", {arange(0, 8, 1, 4, DType::Float64)}, DType::Float64);
  EXPECT_THROW(bad.persist(*client), TaskError);
  const Array xp = arange(0, 8, 1, 4, DType::Float64).persist(*client);
  client->close();
  try {
    xp.sum().compute(local_executor("sync"));
    FAIL() << "fetched chunks from a closed client";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cluster, ClusterThreads, ::testing::Values("tcp", "inproc"),
                         [](const auto& info) { return info.param; });

// ---- 4. resources: a Scheduler and two differently configured Workers, by hand ----------------------

TEST(ClusterResources, GpuTasksRunOnlyOnTheGpuWorkerOneAtATime) {
  // Simulated resources: neither worker takes a real GPU, one says it has GPU=1.
  tessera_test::InProcessCluster cluster("resources-token");
  WorkerOptions gpu_opt = cluster.worker("gpu-worker", GpuPolicy::Off);
  gpu_opt.resources = {{"GPU", 1}};
  Worker gpu(gpu_opt);
  Worker cpu(cluster.worker("cpu-worker", GpuPolicy::Off));
  Client client(cluster.scheduler.address(), cluster.client());
  ASSERT_TRUE(client.wait_for_workers(2, 5s));

  auto info = client.scheduler_info();
  for (const auto& w : info.workers) {
    if (w.name == "gpu-worker") EXPECT_EQ(w.resources, (std::map<std::string, double>{{"GPU", 1}}));
    else EXPECT_TRUE(w.resources.empty()) << w.name;
  }

  g_active = 0;
  g_max_active = 0;
  std::vector<int> ids(8);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<Future> gpu_futures;
  {
    Annotate scope(Annotations{.resources = {{"GPU", 1}}});
    gpu_futures = client.map("cluster_test.probe", ids);
    gpu_futures.push_back(client.submit("cluster_test.probe", 100));
  }
  auto values = client.gather(gpu_futures);
  EXPECT_EQ(from_value<int>(values.back()), 100);
  EXPECT_EQ(g_max_active.load(), 1) << "GPU=1: never two GPU tasks at once";
  EXPECT_EQ(gpu.stats().executed, 9u);
  EXPECT_EQ(cpu.stats().executed, 0u) << "a GPU task ran on the worker without a GPU";

  // Un-annotated tasks use both workers (and both threads of each).
  g_max_active = 0;
  std::vector<int> many(24);
  std::iota(many.begin(), many.end(), 0);
  auto plain = client.gather(client.map("cluster_test.probe", many));
  EXPECT_EQ(plain.size(), many.size());
  EXPECT_GT(cpu.stats().executed, 0u) << "plain tasks must run on the CPU worker too";
  EXPECT_GT(gpu.stats().executed, 9u) << "plain tasks must run on the GPU worker too";
  EXPECT_GE(g_max_active.load(), 2);

  // A resource nobody has: the task waits (no-worker) instead of erring or running elsewhere.
  SubmitOptions tpu;
  tpu.annotations = Annotations{.resources = {{"TPU", 1}}};
  Future waiting = client.submit_with(tpu, "cluster_test.inc", 1);
  EXPECT_FALSE(waiting.wait(0.3s));
  EXPECT_EQ(waiting.status(), FutureStatus::Pending);
  waiting.cancel();
  client.close();
}

TEST(ClusterResources, WorkerRestrictionsStrictAndLoose) {
  tessera_test::InProcessCluster cluster("restrictions-token");
  WorkerOptions oa = cluster.worker("a", GpuPolicy::Off), ob = cluster.worker("b", GpuPolicy::Off);
  oa.nthreads = ob.nthreads = 1;
  Worker a(oa);
  Worker b(ob);
  Client client(cluster.scheduler.address(), cluster.client());
  ASSERT_TRUE(client.wait_for_workers(2, 5s));
  SubmitOptions strict, loose, by_address;
  strict.annotations = Annotations{.workers = {"b"}};
  loose.annotations = Annotations{.workers = {"b"}, .allow_other_workers = true};
  by_address.annotations = Annotations{.workers = {a.address()}};
  // One at a time, so that "b" is always idle when the next one is placed.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(client.submit_with(strict, "cluster_test.inc", i).result_as<int>(), i + 1);
  EXPECT_EQ(b.stats().executed, 5u);
  EXPECT_EQ(a.stats().executed, 0u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(client.submit_with(loose, "cluster_test.inc", i).result_as<int>(), i + 1);
  EXPECT_EQ(b.stats().executed, 10u) << "an idle preferred worker must get a loosely restricted task";
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(client.submit_with(by_address, "cluster_test.inc", i).result_as<int>(), i + 1);
  EXPECT_GE(a.stats().executed, 3u) << "restriction by address";
  client.close();
}

// ---- 7. a client that goes away ------------------------------------------------------------------

TEST(ClusterClients, DisconnectReleasesItsTasksOthersUnaffected) {
  LocalCluster cluster(thread_options("tcp", 2, 2));
  ReleaseOnExit release;
  Client other(cluster, client_options());
  Future kept = other.submit("cluster_test.inc", 1);
  EXPECT_EQ(kept.result_as<int>(), 2);

  // Over TCP: the scheduler sees the connection close.
  auto leaving = std::make_unique<Client>(cluster.scheduler_address(), client_options(cluster.token()));
  // Two long tasks on 2 workers x 2 threads: one per worker, so a thread stays free on each.
  auto long_tasks = leaving->map("cluster_test.wait", std::vector<int>{5000, 5001});
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 3; }, 2))
      << cluster.scheduler().task_count();
  EXPECT_EQ(other.submit("cluster_test.inc", 2).result_as<int>(), 3) << "a free thread serves the other client";
  auto t0 = Clock::now();
  leaving->close();
  EXPECT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 1; }, 3))
      << "still " << cluster.scheduler().task_count() << " tasks after the client closed";
  double dropped_after = seconds_since(t0);
  EXPECT_LT(dropped_after, 3.0);
  // The closed client's futures fail instead of blocking.
  EXPECT_THROW(long_tasks[0].result(1s), Error);
  long_tasks.clear();
  leaving.reset();
  g_release = true;
  EXPECT_EQ(kept.result_as<int>(), 2) << "the other client's value is still there";
  EXPECT_EQ(other.submit("cluster_test.inc", 10).result_as<int>(), 11);
  EXPECT_EQ(other.scheduler_info().workers.size(), 2u);
}

TEST(ClusterClients, DestroyedClientWithLiveFuturesReleasesItsTasks) {
  LocalCluster cluster(thread_options("tcp", 1, 1));
  ReleaseOnExit release;
  std::vector<Future> survivors;
  {
    Client c(cluster.scheduler_address(), client_options(cluster.token()));
    survivors = c.map("cluster_test.wait", std::vector<int>{5000, 5000});
    ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 2; }, 2));
  }  // ~Client with futures still alive
  EXPECT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 0; }, 3))
      << cluster.scheduler().task_count();
  EXPECT_THROW(survivors[0].result(1s), Error);
  survivors.clear();  // must not crash or hang after the client is gone
  g_release = true;
  Client again(cluster, client_options());
  EXPECT_EQ(again.submit("cluster_test.inc", 5).result_as<int>(), 6);
}

TEST(ClusterClients, SchedulerLossEndsEveryWaitOnPendingFutures) {
  // When the scheduler goes away, every way of waiting on a pending future must end: result()
  // and wait() do (they see the closed client); done callbacks and AsCompleted::next() rely on
  // the callbacks firing.
  LocalCluster cluster(thread_options("tcp", 1, 1));
  ReleaseOnExit release;
  Client client(cluster, client_options());
  auto fs = client.map("cluster_test.wait", std::vector<int>{5000, 5001});
  auto fired = std::make_shared<std::atomic<int>>(0);
  fs[0].add_done_callback([fired](const Future&) { ++*fired; });
  auto ac = std::make_shared<AsCompleted>(fs);
  auto next_returned = std::make_shared<std::promise<void>>();
  auto next_future = next_returned->get_future();
  // Detached: if next() never returns, the thread stays blocked but the test still ends.
  std::thread([ac, next_returned] {
    try {
      ac->next();
    } catch (...) {
    }
    next_returned->set_value();
  }).detach();
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() == 2; }, 2));
  cluster.scheduler().stop(true);
  EXPECT_THROW(fs[1].result(2s), Error) << "result() must fail once the scheduler is gone";
  EXPECT_TRUE(wait_until([&] { return fired->load() == 1; }, 2))
      << "a done callback of a pending future never fires after the scheduler is lost";
  EXPECT_EQ(next_future.wait_for(2s), std::future_status::ready)
      << "AsCompleted::next() blocks forever after the scheduler is lost";
  g_release = true;
}

// ---- 8. garbage on the scheduler's (and a worker's) port ------------------------------------------

namespace raw {

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

comm::wire::Hello hello(const std::string& token) {
  comm::wire::Hello h;
  h.nonce = comm::wire::make_nonce();
  if (!token.empty()) h.flags |= comm::wire::kHelloProves;
  h.name = "raw-test";
  h.address = "tcp://127.0.0.1:1";
  h.transports = {"tcp"};
  return h;
}

// Sends our hello, reads the peer's, then (with a token) trades proofs of it; true when the
// peer's hello and proof arrived whole.
bool handshake(tessera_test::RawSocket& s, const std::string& token) {
  const auto ours = comm::wire::encode_hello(hello(token));
  if (!s.send_all(ours)) return false;
  std::vector<std::uint8_t> theirs(comm::wire::kHelloFixedBytes);
  if (!s.recv_exact(theirs.data(), theirs.size())) return false;
  std::uint32_t version = 0;
  std::uint32_t n = comm::wire::decode_hello_fixed(theirs.data(), version);
  theirs.resize(theirs.size() + n);
  if (!s.recv_exact(theirs.data() + comm::wire::kHelloFixedBytes, n)) return false;
  if (token.empty()) return true;
  if (!s.send_all(comm::wire::handshake_proof(token, comm::wire::Role::connector, ours, theirs))) return false;
  std::vector<std::uint8_t> proof(comm::wire::kProofBytes);
  return s.recv_exact(proof.data(), proof.size());
}

std::vector<std::uint8_t> framed(const comm::Message& m) {
  std::string header = comm::encode_header(m);
  auto out = comm::wire::encode_preamble(header.size(), {});
  out.insert(out.end(), header.begin(), header.end());
  return out;
}

}  // namespace raw

void throw_garbage_at(int port, const std::string& token, bool scheduler) {
  SCOPED_TRACE("port " + std::to_string(port));
  using tessera_test::RawSocket;
  using Bytes = std::vector<std::uint8_t>;
  // Sends bytes on a new connection (after a valid hello when asked) and expects it closed.
  auto refused = [&](const std::string& what, const Bytes& bytes, bool after_hello) {
    SCOPED_TRACE(what);
    RawSocket s(port);
    if (after_hello) { ASSERT_TRUE(raw::handshake(s, token)); }
    s.send_all(bytes);
    EXPECT_TRUE(s.closed_by_peer(3));
  };
  auto with_preamble = [](Bytes header) {
    auto out = comm::wire::encode_preamble(header.size(), {});
    out.insert(out.end(), header.begin(), header.end());
    return out;
  };

  refused("random bytes instead of a hello", raw::random_bytes(4096, 1), false);
  const std::string http = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  refused("an HTTP request", Bytes(http.begin(), http.end()), false);
  {
    Bytes h = comm::wire::encode_hello(raw::hello(token));
    h[8] = h[9] = h[10] = h[11] = 0xff;
    refused("a hello with a body length over the limit", h, false);
  }
  {
    // The proof cannot be right without the peer's hello; any 32 bytes stand for a wrong token.
    Bytes h = comm::wire::encode_hello(raw::hello(token));
    const auto proof = comm::wire::handshake_proof(token + "-wrong", comm::wire::Role::connector, h, h);
    h.insert(h.end(), proof.begin(), proof.end());
    refused("a hello with a proof of the wrong token", h, false);
  }
  {
    SCOPED_TRACE("half a hello, then close");
    RawSocket s(port);
    auto h = comm::wire::encode_hello(raw::hello(token));
    s.send_all(h.data(), h.size() / 2);
  }
  {
    SCOPED_TRACE("connect and close at once");
    RawSocket s(port);
  }
  refused("valid hello, then random bytes", raw::random_bytes(4096, 2), true);
  refused("valid hello, then a preamble announcing a 1 TiB header",
          comm::wire::encode_preamble(std::uint64_t{1} << 40, {}), true);
  {
    auto pre = comm::wire::encode_preamble(16, {});
    pre[8] = 0x80;
    pre[9] = 0x96;
    pre[10] = 0x98;  // 10,000,000
    refused("valid hello, then a preamble announcing 10 million frames", pre, true);
  }
  refused("valid hello, then a frame of a header cereal cannot decode", with_preamble(raw::random_bytes(200, 3)), true);
  {
    std::string header = comm::encode_header(comm::Message("x"));
    // cereal writes the op's length as a u64 first: claim 2^62 bytes.
    for (int i = 0; i < 8 && static_cast<std::size_t>(i) < header.size(); ++i)
      header[static_cast<std::size_t>(i)] = i == 7 ? '\x40' : '\0';
    refused("valid hello, then a header claiming a huge op string", with_preamble(Bytes(header.begin(), header.end())),
            true);
  }
  refused("valid hello, then a well-formed message with an unknown op", raw::framed(comm::Message("no-such-op")), true);
  if (scheduler) {
    refused("register-worker without its fields", raw::framed(comm::Message("register-worker")), true);
    comm::Message not_a_hello("register-worker");
    not_a_hello.set("worker", std::string("not a hello"));
    refused("register-worker whose 'worker' field is a string", raw::framed(not_a_hello), true);
    comm::Message junk_events("worker-events");
    junk_events.set("events", std::string("junk"));
    refused("worker-events before registering", raw::framed(junk_events), true);
    refused("scheduler-info without a request id", raw::framed(comm::Message("scheduler-info")), true);
  } else {
    refused("get-data without keys", raw::framed(comm::Message("get-data")), true);
  }
}

TEST(ClusterRobustness, GarbageBytesDoNotStopTheScheduler) {
  auto o = thread_options("tcp", 2, 1);
  o.token = "garbage-token";
  LocalCluster cluster(o);
  int port = tessera_test::port_of(cluster.scheduler_address());
  ASSERT_GT(port, 0);
  // A connection that says nothing stays open meanwhile (until the handshake timeout).
  tessera_test::RawSocket idle(port);
  throw_garbage_at(port, o.token, /*scheduler=*/true);
  // The same against a worker's port.
  {
    Client probe(cluster, client_options());
    auto info = probe.scheduler_info();
    ASSERT_EQ(info.workers.size(), 2u);
    throw_garbage_at(tessera_test::port_of(info.workers[0].address), o.token, /*scheduler=*/false);
  }
  Client client(cluster, client_options());
  EXPECT_EQ(client.scheduler_info().workers.size(), 2u);
  EXPECT_EQ(client.submit("cluster_test.inc", 1).result_as<int>(), 2);
  expect_close(seed_value(client, 200, 50), seed_value(local_executor("threads"), 200, 50));
}

TEST(ClusterRobustness, RegisteredClientSendingJunkIsDroppedAlone) {
  // A registered client whose events do not decode is disconnected; its tasks are released and
  // the other clients go on.
  auto o = thread_options("tcp", 1, 1);
  o.token = "junk-client-token";
  LocalCluster cluster(o);
  Client good(cluster, client_options(o.token));
  Future kept = good.submit("cluster_test.inc", 1);
  EXPECT_EQ(kept.result_as<int>(), 2);
  {
    comm::CommOptions co;
    co.token = o.token;
    auto c = comm::connect(cluster.scheduler_address(), co);
    comm::Message hello("register-client");
    hello.set("client", std::string("junk-client"));
    c->send(std::move(hello)).get();
    auto reply = c->recv(std::chrono::milliseconds(3000));
    EXPECT_EQ(reply.op, "registered");
    comm::Message junk("client-events");
    junk.set("events", std::string("definitely not a vector of events"));
    c->send(std::move(junk)).get();
    bool closed = false;
    try {
      while (true) c->recv(std::chrono::milliseconds(3000));
    } catch (const comm::CommTimeoutError&) {
      closed = false;
    } catch (const comm::CommError&) {
      closed = true;
    }
    EXPECT_TRUE(closed) << "the scheduler must drop a client whose events do not decode";
  }
  EXPECT_EQ(kept.result_as<int>(), 2);
  EXPECT_EQ(good.submit("cluster_test.inc", 2).result_as<int>(), 3);
}

// ---- 9. scheduler_info and wait_for_workers ----------------------------------------------------------

TEST(ClusterInfo, SchedulerInfoOfThreadWorkers) {
  auto o = thread_options("tcp", 2, 2);
  o.resources = "GPU=2 MEM=1e9";
  LocalCluster cluster(o);
  Client client(cluster, client_options());
  EXPECT_TRUE(client.wait_for_workers(2, 1s));
  auto info = client.scheduler_info();
  EXPECT_EQ(info.address, cluster.scheduler_address());
  EXPECT_FALSE(info.id.empty());
  EXPECT_GE(info.uptime, 0.0);
  ASSERT_EQ(info.workers.size(), 2u);
  std::set<std::string> names;
  for (const auto& w : info.workers) {
    names.insert(w.name);
    EXPECT_EQ(w.nthreads, 2);
    EXPECT_EQ(w.resources, (std::map<std::string, double>{{"GPU", 2}, {"MEM", 1e9}}));
    EXPECT_EQ(w.pid, static_cast<int>(::getpid())) << "thread workers live in this process";
    EXPECT_GT(w.ops, 10u);
    EXPECT_FALSE(w.host.empty());
    EXPECT_EQ(w.address.rfind("tcp://127.0.0.1:", 0), 0u) << w.address;
  }
  EXPECT_EQ(names, (std::set<std::string>{"worker-0", "worker-1"}));

  auto t0 = Clock::now();
  EXPECT_FALSE(client.wait_for_workers(3, 0.3s));
  double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 2.0);
  std::thread adder([&] { cluster.add_worker(); });
  EXPECT_TRUE(client.wait_for_workers(3, 5s));
  adder.join();
  info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 3u);
  names.clear();
  for (const auto& w : info.workers) names.insert(w.name);
  EXPECT_TRUE(names.count("worker-2"));

  // Task counts while something is held.
  Future f = client.submit("cluster_test.inc", 1);
  f.wait(5s);
  info = client.scheduler_info();
  EXPECT_EQ(info.tasks, 1u);
  EXPECT_EQ(info.task_states["memory"], 1u);
  std::size_t keys = 0;
  for (const auto& w : info.workers) keys += w.keys;
  EXPECT_EQ(keys, 1u);
}

// ---- 12. spill to disk under a small memory limit ------------------------------------------------------

SchedulerOptions spill_scheduler_options(const std::string& token) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = token;
  return so;
}

// A worker of the spill tests: heartbeats every 0.1 s (each re-checks memory), spilling in `dir`.
WorkerOptions spill_worker_options(const Scheduler& scheduler, const std::string& token,
                                   const tessera_test::TempDir& dir) {
  WorkerOptions wo;
  wo.scheduler_address = scheduler.address();
  wo.token = token;
  wo.heartbeat_interval = 0.1;
  wo.death_timeout = 5;
  wo.local_directory = dir.str();
  return wo;
}

TEST(ClusterSpill, SmallMemoryLimitSpillsAndValuesSurvive) {
  tessera_test::TempDir dir;
  const SchedulerOptions so = spill_scheduler_options("spill-token");
  Scheduler scheduler(so);
  WorkerOptions wo = spill_worker_options(scheduler, so.token, dir);
  wo.memory_limit = 1 << 20;
  wo.memory_target = 0.6;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 2; ++i) {
    wo.name = "spill-" + std::to_string(i);
    workers.push_back(std::make_unique<Worker>(wo));
  }
  Client client(scheduler.address(), client_options(so.token));
  ASSERT_TRUE(client.wait_for_workers(2, 5s));
  std::vector<int> ids(20);
  std::iota(ids.begin(), ids.end(), 0);
  auto fs = client.map("cluster_test.make_block", ids);
  ASSERT_TRUE(wait(fs, 20s)) << "tasks did not finish (paused workers?)";
  std::size_t spilled = 0, executed = 0;
  for (auto& w : workers) {
    auto st = w->stats();
    spilled += st.spilled;
    executed += st.executed;
    EXPECT_LE(st.memory_bytes, std::size_t{1} << 20) << "memory held above the limit";
  }
  EXPECT_EQ(executed, 20u);
  EXPECT_GT(spilled, 0u) << "20 x 200 KB on 2 workers of 1 MB must spill";
  auto check = [](const Value& v, int i) {
    const Block& b = v.block();
    ASSERT_EQ(b.size(), 25000);
    auto d = b.to_doubles();
    EXPECT_EQ(d.front(), i * 1e6);
    EXPECT_EQ(d[12345], i * 1e6 + 12345);
    EXPECT_EQ(d.back(), i * 1e6 + 24999);
  };
  auto values = client.gather(fs);
  ASSERT_EQ(values.size(), 20u);
  for (int i = 0; i < 20; ++i) check(values[static_cast<std::size_t>(i)], i);
  for (int i = 19; i >= 0; --i) check(fs[static_cast<std::size_t>(i)].result(), i);
  // Spilled values as task inputs.
  auto sums = client.gather(client.map("cluster_test.block_sum", fs));
  for (int i = 0; i < 20; ++i)
    EXPECT_DOUBLE_EQ(from_value<double>(sums[static_cast<std::size_t>(i)]), 25000 * (i * 1e6) + 24999.0 * 25000 / 2);
}

// The store counts only its values; a process whose resident memory is over memory_spill of
// its limit for other reasons (here: the test process itself, its libraries and threads) spills
// what the store holds, though the store is far below its own target. Off (memory_spill 0): none.
TEST(ClusterSpill, ResidentMemoryOverTheSpillFractionSpillsWhatTheStoreHolds) {
  for (const double spill_fraction : {0.7, 0.0}) {
    tessera_test::TempDir dir;
    const SchedulerOptions so = spill_scheduler_options("rss-spill-token");
    Scheduler scheduler(so);
    WorkerOptions wo = spill_worker_options(scheduler, so.token, dir);
    wo.name = "rss-spill";
    // The process's resident memory at 80% of the limit: above the spill fraction, while the
    // store's 20 x 200 KB stay far below its target (60% of the limit, tens of MB).
    const std::size_t resident = tessera::distributed::resident_bytes();
    ASSERT_GT(resident, std::size_t{20} << 20);
    wo.memory_limit = static_cast<std::size_t>(static_cast<double>(resident) / 0.8);
    wo.memory_spill = spill_fraction;
    Worker worker(wo);
    Client client(scheduler.address(), client_options(so.token));
    ASSERT_TRUE(client.wait_for_workers(1, 5s));
    std::vector<int> ids(20);
    std::iota(ids.begin(), ids.end(), 0);
    auto fs = client.map("cluster_test.make_block", ids);
    ASSERT_TRUE(wait(fs, 20s));
    std::this_thread::sleep_for(300ms);  // a few heartbeats, each of which checks
    const auto st = worker.stats();
    if (spill_fraction > 0) {
      EXPECT_GT(st.spilled, 0u) << "resident memory above 70% of the limit spilled nothing";
    } else {
      EXPECT_EQ(st.spilled, 0u) << "spilled with memory_spill off and the store below its target";
    }
    auto values = client.gather(fs);  // spilled or not, every value is intact
    ASSERT_EQ(values.size(), 20u);
    EXPECT_EQ(values[7].block().to_doubles()[5], 7e6 + 5);
  }
}

}  // namespace
