// DataFrames on a cluster: worker processes read the partitions, partitions and partial results
// cross processes as Arrow buffers in frames, persist keeps them on the workers, and a bad
// partition fails its task while the cluster lives on.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "../distributed/cluster_fixture.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"

namespace tessera::dataframe {
namespace {

using namespace std::chrono_literals;
using namespace tessera::distributed;
using testing::as_map;
using testing::TempDir;


std::string trips_csv(int rows, int seed) {
  std::ostringstream os;
  os << "passenger_count,tip_amount,name\n";
  for (int r = 0; r < rows; ++r) {
    if (r % 17 == 3) os << "," << (r % 13) * 0.5 << ",n" << (r + seed) % 5 << "\n";
    else os << (r + seed) % 7 << "," << (r % 13) * 0.5 << ",n" << (r + seed) % 5 << "\n";
  }
  return os.str();
}

TEST(DataFrameCluster, GroupbyOnWorkerProcessesEqualsTheThreadPool) {
  TempDir dir;
  for (int f = 0; f < 4; ++f) dir.write("t-" + std::to_string(f) + ".csv", trips_csv(3000, f));
  ReadCsvOptions o;
  o.assume_missing = true;
  o.blocksize = 8000;
  auto df = read_csv(dir.file("t-*.csv"), o);
  auto query = df.groupby({"passenger_count"})["tip_amount"].agg(
      std::map<std::string, std::vector<std::string>>{{"tip_amount", {"mean", "std", "count"}}}, {.split_every = 3});
  ThreadPoolExecutor pool(2);
  auto local = query.compute(pool);

  LocalCluster cluster(tessera_test::processes_over_tcp());
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 10});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  auto remote = query.compute(client);
  ASSERT_EQ(remote->num_rows(), local->num_rows());
  for (const char* c : {"tip_amount_mean", "tip_amount_std", "tip_amount_count"}) {
    auto a = as_map(local, "passenger_count", c), b = as_map(remote, "passenger_count", c);
    for (const auto& [k, v] : a) EXPECT_NEAR(b[k], v, 1e-12 * std::max(1.0, std::abs(v))) << c << " " << k;
  }

  // Persisted partitions stay on the workers; later graphs read them there.
  auto kept = df.persist(client);
  EXPECT_EQ(kept.len(client), 12000);
  EXPECT_EQ(as_map(kept.groupby({"name"}).size().compute(client), "name", "size"),
            as_map(df.groupby({"name"}).size().compute(pool), "name", "size"));
  // The string column made it through the codec intact.
  auto names = kept["name"].value_counts().compute(client);
  EXPECT_EQ(names->num_rows(), 5);
}

TEST(DataFrameCluster, MergesAndShufflesOnWorkerProcessesEqualTheThreadPool) {
  TempDir dir;
  for (int f = 0; f < 3; ++f) dir.write("t-" + std::to_string(f) + ".csv", trips_csv(2000, f));
  dir.write("names.csv", "name,label,rank\nn0,zero,0\nn1,one,1\nn3,three,3\nn9,nine,9\n");
  ReadCsvOptions o;
  o.assume_missing = true;
  o.blocksize = 20000;
  auto trips = read_csv(dir.file("t-*.csv"), o);
  auto names = read_csv(dir.file("names.csv"));
  ASSERT_GT(trips.npartitions(), 2);
  // A broadcast of the one-partition lookup, a hash join of both sides, and a plain shuffle.
  auto broadcast = trips.merge(names, {.how = "left", .on = {"name"}});
  auto hashed = trips.merge(names, {.how = "outer", .on = {"name"}, .npartitions = 3, .broadcast = false});
  auto by_count = trips.merge(trips.groupby({"passenger_count"}).size(), {.on = {"passenger_count"}, .broadcast = false});
  auto shuffled = trips.shuffle({"passenger_count"}, 4);
  auto sorted = trips.sort_values({"tip_amount", "passenger_count"}, false);
  ThreadPoolExecutor pool(2);
  LocalCluster cluster(tessera_test::processes_over_tcp());
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 10});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  for (const auto* df : {&broadcast, &hashed, &by_count, &shuffled, &sorted}) {
    auto local = df->compute(pool), remote = df->compute(client);
    EXPECT_EQ(remote->num_rows(), local->num_rows()) << df->name();
    EXPECT_EQ(testing::sorted_rows(remote), testing::sorted_rows(local)) << df->name();
  }
  EXPECT_EQ(broadcast.len(client), 6000);
  auto order = sorted.compute(client);  // descending by tip_amount, which has no missing values
  ASSERT_EQ(order->num_rows(), 6000);
  for (std::int64_t r = 1; r < order->num_rows(); ++r)
    ASSERT_GE(testing::number(order, "tip_amount", r - 1), testing::number(order, "tip_amount", r)) << r;
  // groupby drops the rows with no passenger_count, so the inner merge has every other row.
  EXPECT_EQ(by_count.len(client), trips.len(pool) - trips[trips["passenger_count"].isnull()].len(pool));
}

// Device frames on worker processes with a stand-in GPU each (examples/testing/fake_gpu.cpp: host
// memory labelled Device): device tasks go to them, and the peer-to-peer shuffle's shards cross the
// wire as device frames, are packed by the receiver and unpacked onto its "GPU".
TEST(DataFrameCluster, DeviceFramesMergeShuffleAndSortOnGpuWorkerProcesses) {
  const auto lib = std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "examples" /
                   "libtessera_fake_gpu.so";
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << "no " << lib.string() << " (the examples are not built)";
  TempDir dir;
  for (int f = 0; f < 3; ++f) dir.write("t-" + std::to_string(f) + ".csv", trips_csv(2000, f));
  dir.write("names.csv", "name,label,rank\nn0,zero,0\nn1,one,1\nn3,three,3\nn9,nine,9\n");
  ReadCsvOptions o;
  o.assume_missing = true;
  o.blocksize = 20000;
  auto trips = read_csv(dir.file("t-*.csv"), o);
  auto names = read_csv(dir.file("names.csv"));
  auto gpu_trips = trips.to_device(), gpu_names = names.to_device();
  ThreadPoolExecutor pool(2);
  auto options = tessera_test::processes_over_tcp();
  options.preload = {lib.string()};
  options.resources = "GPU=1";
  LocalCluster cluster(options);
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 10});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const std::vector<std::pair<DataFrame, DataFrame>> pairs{
      {gpu_trips.merge(gpu_names, {.how = "outer", .on = {"name"}, .npartitions = 3, .broadcast = false}),
       trips.merge(names, {.how = "outer", .on = {"name"}, .npartitions = 3, .broadcast = false})},
      {gpu_trips.merge(gpu_names, {.how = "left", .on = {"name"}}), trips.merge(names, {.how = "left", .on = {"name"}})},
      {gpu_trips.shuffle({"passenger_count"}, 4), trips.shuffle({"passenger_count"}, 4)},
      {gpu_trips.sort_values({"tip_amount", "passenger_count"}, false), trips.sort_values({"tip_amount", "passenger_count"}, false)}};
  for (const auto& [gpu, host] : pairs) {
    ASSERT_TRUE(gpu.on_device());
    auto local = host.compute(pool), remote = gpu.compute(client);
    EXPECT_EQ(testing::sorted_rows(remote), testing::sorted_rows(local)) << gpu.name();
  }
  auto order = pairs.back().first.compute(client);
  ASSERT_EQ(order->num_rows(), 6000);
  for (std::int64_t r = 1; r < order->num_rows(); ++r)
    ASSERT_GE(testing::number(order, "tip_amount", r - 1), testing::number(order, "tip_amount", r)) << r;
}

TEST(DataFrameCluster, AMalformedFileFailsItsTaskAndTheClusterLivesOn) {
  TempDir dir;
  dir.write("a.csv", trips_csv(100, 0));
  dir.write("b.csv", "passenger_count,tip_amount,name\n1,2,x\n3\n");
  auto df = read_csv(dir.file("*.csv"));
  LocalCluster cluster(tessera_test::processes_over_tcp());
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 10});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  try {
    df.compute(client);
    FAIL() << "expected the bad row to fail the task";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("b.csv, line 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_csv(dir.file("a.csv")).len(client), 100);
  EXPECT_EQ(cluster.worker_count(), 2u);
}

TEST(DataFrameCluster, IndexLocRepartitionDistinctAndTopNOnWorkerProcessesEqualTheThreadPool) {
  TempDir dir;
  for (int f = 0; f < 3; ++f) dir.write("t-" + std::to_string(f) + ".csv", trips_csv(2000, f));
  ReadCsvOptions o;
  o.assume_missing = true;
  o.blocksize = 20000;
  auto trips = read_csv(dir.file("t-*.csv"), o);
  ASSERT_GT(trips.npartitions(), 2);
  ThreadPoolExecutor pool(2);
  LocalCluster cluster(tessera_test::processes_over_tcp());
  Client client(cluster.client_address(), ClientOptions{.token = cluster.token(), .timeout = 10});
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  // The divisions are computed on the cluster (set_index runs its quantiles there).
  auto indexed = trips.set_index("tip_amount", {}, client);
  ASSERT_TRUE(indexed.known_divisions());
  auto counts = trips.groupby({"passenger_count"}).size().set_index("passenger_count", {.sorted = true}, client);
  auto by_count = trips.set_index("passenger_count", {}, client);
  auto joined = by_count.merge(counts, {.left_index = true, .right_index = true});
  auto frames = {indexed, indexed.loc(Literal{1.5}, Literal{3.0}), indexed.repartition({.npartitions = 2}),
                 trips.drop_duplicates({"name", "passenger_count"}), trips.nlargest(7, {"tip_amount", "passenger_count"}),
                 joined};
  for (const auto& df : frames) {
    auto local = df.compute(pool), remote = df.compute(client);
    EXPECT_EQ(remote->num_rows(), local->num_rows()) << df.explain();
    EXPECT_EQ(testing::sorted_rows(remote), testing::sorted_rows(local)) << df.explain();
  }
  EXPECT_EQ(joined.len(client), trips[trips["passenger_count"].notnull()].len(pool));
}

}  // namespace
}  // namespace tessera::dataframe
