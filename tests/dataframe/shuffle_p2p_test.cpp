// The peer-to-peer shuffle (docs/dataframe-shuffle.md): on the thread pool (the in-process
// exchange) it puts every row where the task-based shuffle does; on worker processes the shards
// go worker to worker, a worker killed mid-shuffle restarts the run with the right answer, and a
// memory limit smaller than the shards spills them, or fails with a clear error when it cannot.
#include <gtest/gtest.h>
#include <signal.h>

#include <arrow/api.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "../distributed/cluster_fixture.hpp"
#include "dataframe_test_util.hpp"
#include "dataframe/shuffle_p2p.hpp"
#include "tessera/core/error.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera::dataframe {
namespace {

using namespace std::chrono_literals;
using namespace tessera::distributed;
using testing::sliced_frame;
using testing::sorted_rows;

// Sets TESSERA_SHUFFLE_METHOD for one test (the lowering reads it) and puts it back.
class ShuffleMethodScope {
 public:
  explicit ShuffleMethodScope(const char* method) {
    if (const char* old = std::getenv("TESSERA_SHUFFLE_METHOD")) old_ = old;
    ::setenv("TESSERA_SHUFFLE_METHOD", method, 1);
  }
  ~ShuffleMethodScope() {
    if (old_) ::setenv("TESSERA_SHUFFLE_METHOD", old_->c_str(), 1);
    else ::unsetenv("TESSERA_SHUFFLE_METHOD");
  }

 private:
  std::optional<std::string> old_;
};

// Keys with nulls and one key holding half the rows; a string column rides along.
std::shared_ptr<arrow::Table> skewed_table(int rows, unsigned seed) {
  std::mt19937 rng(seed);
  arrow::Int64Builder k;
  arrow::DoubleBuilder v;
  arrow::StringBuilder s;
  for (int r = 0; r < rows; ++r) {
    if (r % 53 == 0) (void)k.AppendNull();
    else (void)k.Append(r % 2 == 0 ? 7 : static_cast<std::int64_t>(rng() % 500));
    (void)v.Append(r * 0.5);
    (void)s.Append("s" + std::to_string(r % 11));
  }
  auto schema = arrow::schema({arrow::field("k", arrow::int64()), arrow::field("v", arrow::float64()),
                               arrow::field("s", arrow::utf8())});
  return arrow::Table::Make(schema, {k.Finish().ValueOrDie(), v.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
}

std::vector<std::shared_ptr<arrow::Table>> partitions_of(const DataFrame& df, Executor& executor, Graph* shown = nullptr) {
  std::vector<Key> keys;
  Graph g = df.to_graph(&keys);
  if (shown) *shown = g;
  std::vector<std::shared_ptr<arrow::Table>> out;
  for (const auto& v : executor.get(g, keys))
    out.push_back(std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(v.native().object)));
  return out;
}

std::size_t count_op(const Graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const auto& [key, t] : g.tasks())
    if (t.op == op) ++n;
  return n;
}

TEST(ShuffleP2P, OnTheThreadPoolEachPartitionHoldsWhatTheTaskBasedShuffleGivesIt) {
  auto t = skewed_table(6000, 1);
  ThreadPoolExecutor pool(2);
  for (int in : {1, 3, 7}) {
    for (int out : {1, 4, 9}) {
      auto df = sliced_frame(t, in);  // 7 slices of 6000 rows: the last one is empty
      std::vector<std::shared_ptr<arrow::Table>> tasks, p2p;
      {
        ShuffleMethodScope m("tasks");
        tasks = partitions_of(df.shuffle({"k"}, out), pool);
      }
      Graph g;
      {
        ShuffleMethodScope m("p2p");
        p2p = partitions_of(df.shuffle({"k"}, out), pool, &g);
      }
      ASSERT_EQ(p2p.size(), static_cast<std::size_t>(out));
      for (int j = 0; j < out; ++j)
        EXPECT_EQ(sorted_rows(p2p[j]), sorted_rows(tasks[j])) << in << " -> " << out << ", partition " << j;
      // N transfers, one barrier and M unpacks: O(N + M) tasks and edges, never N x M.
      EXPECT_EQ(count_op(g, "tessera.frame.shuffle_transfer"), static_cast<std::size_t>(in));
      EXPECT_EQ(count_op(g, "tessera.frame.shuffle_barrier"), 1u);
      EXPECT_EQ(count_op(g, "tessera.frame.shuffle_p2p_unpack"), static_cast<std::size_t>(out));
      EXPECT_EQ(count_op(g, "tessera.frame.shuffle_split"), 0u);
    }
  }
}

TEST(ShuffleP2P, MergesAndSortsOnTheThreadPoolEqualTheTaskBasedOnes) {
  auto left = sliced_frame(skewed_table(4000, 2), 5);
  auto right = sliced_frame(skewed_table(700, 3)->SelectColumns({0, 2}).ValueOrDie(), 3);
  auto queries = [&] {
    return std::vector<DataFrame>{
        left.merge(right, {.how = "inner", .on = {"k"}, .npartitions = 4, .broadcast = false}),
        left.merge(right, {.how = "outer", .on = {"k"}, .broadcast = false}),
        left.sort_values({"v"}, false),
        left.sort_values({"k", "v"}),
    };
  };
  std::vector<std::shared_ptr<arrow::Table>> tasks, p2p;
  {
    ShuffleMethodScope m("tasks");
    for (auto& q : queries()) tasks.push_back(q.compute());
  }
  {
    ShuffleMethodScope m("p2p");
    for (auto& q : queries()) p2p.push_back(q.compute());
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(sorted_rows(p2p[i]), sorted_rows(tasks[i])) << i;
  // A sort's order is the same row for row.
  for (std::size_t i : {2u, 3u}) EXPECT_TRUE(p2p[i]->Equals(*tasks[i])) << i;
}

TEST(ShuffleP2P, AnUnknownMethodIsAClearError) {
  ShuffleMethodScope m("sideways");
  auto df = sliced_frame(skewed_table(10, 1), 2).shuffle({"k"}, 2);
  try {
    df.compute();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TESSERA_SHUFFLE_METHOD"), std::string::npos) << e.what();
  }
}

// A frame read on the workers (so that no partition travels in the graph).
DataFrame timeseries_frame(const std::string& end, const std::string& freq = "10s") {
  TimeseriesOptions o;
  o.start = "2000-01-01";
  o.end = end;
  o.freq = freq;
  o.partition_freq = "1D";
  return timeseries(o);
}

TEST(ShuffleP2P, OnWorkerProcessesShardsGoWorkerToWorkerAndEveryPartitionIsRight) {
  ShuffleMethodScope p2p("p2p");
  auto df = timeseries_frame("2000-01-09");  // 8 partitions of 8,640 rows
  auto shuffled = df.shuffle({"id"}, 6);
  ThreadPoolExecutor pool(2);
  std::vector<std::shared_ptr<arrow::Table>> local;
  {
    ShuffleMethodScope m("tasks");
    local = partitions_of(shuffled, pool);
  }
  LocalCluster cluster(tessera_test::processes_over_tcp());
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 20});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const auto since = client.task_stream_position();
  auto remote = shuffled.compute(client);  // a Client lowers it peer to peer
  EXPECT_EQ(sorted_rows(remote), sorted_rows(shuffled.compute(pool)));
  std::size_t transfers = 0, unpacks = 0, splits = 0;
  std::set<std::string> unpack_workers;
  for (const auto& e : client.get_task_stream(since)) {
    if (e.prefix == "tessera.frame.shuffle_transfer") ++transfers;
    if (e.prefix == "tessera.frame.shuffle_p2p_unpack") {
      ++unpacks;
      unpack_workers.insert(e.worker);
    }
    if (e.prefix == "tessera.frame.shuffle_split") ++splits;
  }
  EXPECT_EQ(transfers, 8u);
  EXPECT_EQ(unpacks, 6u);
  EXPECT_EQ(splits, 0u);
  EXPECT_EQ(unpack_workers.size(), 2u) << "the outputs are owned by both workers";
  // Partition by partition, as on the thread pool (the peer-to-peer graph, computed there).
  std::vector<Key> keys;
  Graph g = shuffled.to_graph(&keys);
  auto values = client.get(g, keys);
  ASSERT_EQ(values.size(), local.size());
  for (std::size_t j = 0; j < values.size(); ++j) {
    auto part = std::static_pointer_cast<const arrow::Table>(values[j].native().object);
    EXPECT_EQ(sorted_rows(std::const_pointer_cast<arrow::Table>(part)), sorted_rows(local[j])) << j;
  }
  // The same frame merged with itself through two shuffles on the cluster.
  auto self = df[std::vector<std::string>{"id", "x"}].merge(df[std::vector<std::string>{"id", "name"}].groupby({"id"}).size(),
                                                           {.on = {"id"}, .broadcast = false});
  EXPECT_EQ(sorted_rows(self.compute(client)), sorted_rows(self.compute(pool)));
}

TEST(ShuffleP2P, AWorkerKilledMidShuffleRestartsTheRunAndTheAnswerIsRight) {
  ShuffleMethodScope p2p("p2p");
  auto df = timeseries_frame("2000-01-09");
  auto shuffled = df.shuffle({"id"}, 4);
  ThreadPoolExecutor pool(2);
  const auto expected = sorted_rows(shuffled.compute(pool));
  auto o = tessera_test::processes_over_tcp();
  o.restart_dead_workers = true;  // as a nanny would: a new worker takes the dead one's place
  o.timeout = 20;
  // Each transfer waits before it sends, so that the kill lands between transfers.
  o.worker_env = {{{"TESSERA_SHUFFLE_TEST_SEND_DELAY_MS", "300"}}};
  LocalCluster cluster(o);
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 60});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const auto since = client.task_stream_position();
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    // Once two transfers finished (and six wait), kill worker 0.
    for (int i = 0; i < 400 && !killed; ++i) {
      std::size_t done = 0;
      for (const auto& e : client.get_task_stream(since))
        if (e.prefix == "tessera.frame.shuffle_transfer") ++done;
      if (done >= 2) {
        cluster.signal_worker(0, SIGKILL);
        killed = true;
      }
      std::this_thread::sleep_for(25ms);
    }
  });
  auto got = shuffled.compute(client);
  killer.join();
  ASSERT_TRUE(killed) << "the shuffle ended before the kill";
  EXPECT_EQ(sorted_rows(got), expected);
  std::size_t transfers = 0;
  for (const auto& e : client.get_task_stream(since))
    if (e.prefix == "tessera.frame.shuffle_transfer") ++transfers;
  EXPECT_GT(transfers, 8u) << "the run restarted: transfers ran again";
}

// Every column's count and sum, and the sum of each row's partition number (rows in the right
// partition): equal frames of millions of rows, compared without turning rows into text.
std::vector<double> fingerprint(const DataFrame& shuffled, Executor& executor) {
  auto sums = compute({shuffled.count(), shuffled[std::vector<std::string>{"id", "x", "y"}].sum()}, executor);
  std::vector<double> out;
  for (const auto& t : sums)
    for (int c = 0; c < t->num_columns(); ++c) out.push_back(testing::number(t, t->field(c)->name(), 0));
  return out;
}

// Unset, the method is peer to peer on a cluster and task-based on the thread pool.
TEST(ShuffleP2P, TheDefaultIsPeerToPeerOnAClusterAndTaskBasedOnTheThreadPool) {
  ShuffleMethodScope unset("");
  auto shuffled = timeseries_frame("2000-01-05").shuffle({"id"}, 3);
  ThreadPoolExecutor pool(2);
  EXPECT_EQ(detail::shuffle_method(&pool), detail::ShuffleMethod::Tasks);
  LocalCluster cluster(tessera_test::processes_over_tcp());
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 20});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  EXPECT_EQ(detail::shuffle_method(&client), detail::ShuffleMethod::PeerToPeer);
  const auto since = client.task_stream_position();
  EXPECT_EQ(sorted_rows(shuffled.compute(client)), sorted_rows(shuffled.compute(pool)));
  std::size_t transfers = 0, splits = 0;
  for (const auto& e : client.get_task_stream(since)) {
    if (e.prefix == "tessera.frame.shuffle_transfer") ++transfers;
    if (e.prefix == "tessera.frame.shuffle_split") ++splits;
  }
  EXPECT_EQ(transfers, 4u);
  EXPECT_EQ(splits, 0u);
}

TEST(ShuffleP2P, AMemoryLimitSmallerThanTheShardsSpillsThemAndTheAnswerIsRight) {
  ShuffleMethodScope p2p("p2p");
  // 60 partitions, 5.2 million rows, about 210 MB: some 105 MB of shards for each worker, past
  // the 77 MB (60%) of its 128 MiB limit at which its store spills.
  auto df = timeseries_frame("2000-03-01", "1s");
  auto shuffled = df.shuffle({"id"}, 8);
  ThreadPoolExecutor pool(2);
  const auto expected = fingerprint(shuffled, pool);
  auto o = tessera_test::processes_over_tcp();
  o.memory_limit = "128MiB";
  o.worker_args = {"--memory-terminate-fraction", "0"};  // the resident size is the process's, not the shards'
  o.timeout = 20;
  LocalCluster cluster(o);
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 120});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  std::atomic<bool> done{false};
  std::atomic<std::size_t> most_spilled{0};
  std::thread watch([&] {
    while (!done) {
      for (const auto& w : client.scheduler_info().workers) most_spilled = std::max<std::size_t>(most_spilled, w.spilled);
      std::this_thread::sleep_for(50ms);
    }
  });
  std::vector<double> got;
  try {
    got = fingerprint(shuffled, client);
  } catch (...) {
    done = true;
    watch.join();
    throw;
  }
  done = true;
  watch.join();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t c = 0; c < got.size(); ++c) EXPECT_NEAR(got[c], expected[c], 1e-9 * std::max(1.0, std::abs(expected[c]))) << c;
  EXPECT_GT(most_spilled.load(), 0u) << "shards were spilled to disk";
}

TEST(ShuffleP2P, ShardsThatCannotBeHeldOrSpilledFailTheShuffleWithTheReason) {
  ShuffleMethodScope p2p("p2p");
  testing::TempDir dir;
  const auto spill = dir.path() / "spill";
  std::filesystem::create_directories(spill);
  auto df = timeseries_frame("2000-03-01", "1s");
  auto o = tessera_test::processes_over_tcp();
  o.memory_limit = "128MiB";
  o.local_directory = spill.string();  // fine at start ...
  o.worker_args = {"--memory-terminate-fraction", "0"};
  LocalCluster cluster(o);
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 60});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  std::filesystem::remove_all(spill);  // ... then gone, as when the disk fills up
  std::ofstream(spill) << "not a directory any more";
  try {
    fingerprint(df.shuffle({"id"}, 8), client);
    FAIL() << "expected the shuffle to fail";
  } catch (const std::exception& e) {
    // The shards (or a partition before them) could not be held: the client hears why.
    EXPECT_NE(std::string(e.what()).find("cannot hold"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("spilling to disk failed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cluster.worker_count(), 2u) << "the workers live on";
}

}  // namespace
}  // namespace tessera::dataframe
