// docs/security.md, "The spill directory is checked at start" and what follows it: the spill
// directory checked when only a memory limit is set (the system temp directory) with its probe
// file removed, and a spill that fails at run time: logged once, cleared by a later success,
// after which a worker pauses again. The DataStore itself and an in-process Scheduler, Worker and
// Client over real sockets.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../support/library_log.hpp"
#include "cluster_fixture.hpp"
#include "core/logging.hpp"
#include "distributed/data_store.hpp"
#include "distributed/options_check.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
namespace fs = std::filesystem;
using tessera_test::client_options;
using tessera_test::ScopedEnv;
using tessera_test::TempDir;
using tessera_test::wait_until;

// A task's result of `bytes` bytes (float64 values), for a worker's memory accounting.
Block sf_block(int bytes) {
  std::vector<double> v(static_cast<std::size_t>(bytes) / sizeof(double), 1.5);
  return Block::from_values<double>(v, {static_cast<std::int64_t>(v.size())});
}

std::int64_t sf_count(Block b) { return b.size(); }

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("spill_failure_test.block", sf_block);
TESSERA_REGISTER_FUNCTION_AS("spill_failure_test.count", sf_count);

namespace {

using SpillLog = tessera_test::LibraryLog;

Value sf_bytes(std::size_t n, int fill) {
  std::vector<std::int32_t> v(n / 4, fill);
  return Value(Block::from_values<std::int32_t>(v, {static_cast<std::int64_t>(v.size())}));
}

std::vector<std::string> probes_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(".tessera-probe-", 0) == 0) out.push_back(e.path().string());
  return out;
}

const std::string kSpillToken = "spill-failure-test-token";

// What the client sees of a task that failed, "" when it finished.
std::string failure_of(const Future& f) {
  try {
    f.result(10s);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

// Lines 308-309: "The store logs the spill failure once; a later successful spill clears it".
// A disk that stays full must not log a line per put; once the disk works again the failure
// must not stick (the worker reads spill_error() to decide whether it may pause).
TEST(SpillFailure, TheStoreLogsAFailureOnceAndALaterSpillClearsIt) {
  TempDir dir;
  const fs::path in_the_way = dir.path() / "in-the-way";
  std::ofstream(in_the_way) << "a regular file where the spill directory's parent should be";
  DataStoreOptions o;
  o.memory_limit = 1000;  // spill above 600 bytes, paused above 800
  o.target = 0.6;
  o.pause = 0.8;
  o.directory = (in_the_way / "spill").string();
  SpillLog log;
  DataStore s(o);
  for (int i = 0; i < 20; ++i) s.put("k" + std::to_string(i), sf_bytes(200, i));
  EXPECT_FALSE(s.spill_error().empty()) << "20 puts over the target did not fail to spill";
  EXPECT_EQ(s.stats().spilled, 0u);
  EXPECT_EQ(log.count("spilling to disk failed, keeping the data in memory"), 1)
      << "a failing spill must be logged once, not once per put:\n" << log.text();
  EXPECT_TRUE(s.paused());

  // The disk works again: the next put spills, and the failure is forgotten.
  fs::remove(in_the_way);
  fs::create_directories(in_the_way);
  s.put("after", sf_bytes(200, 99));
  EXPECT_EQ(s.spill_error(), "") << "a successful spill did not clear the failure";
  EXPECT_GT(s.stats().spilled, 0u);
  EXPECT_LE(s.memory_bytes(), 600u);
  EXPECT_FALSE(s.paused()) << "spilling made room, yet the store is still above its pause threshold";
  EXPECT_EQ(log.count("spilling to disk failed"), 1) << log.text();
  for (int i = 0; i < 20; ++i) {
    auto v = s.get("k" + std::to_string(i));
    ASSERT_TRUE(v.has_value()) << i;
    EXPECT_EQ(v->block().to_doubles().at(0), static_cast<double>(i));
  }
}

// Lines 303-309: "While the last spill failed, the worker does not pause; a result that would
// leave it above its pause threshold ... is dropped and its task fails ...; a later successful
// spill clears it and pausing works again." A worker paused for good would hold its clients
// forever; one that never paused again would run out of memory once the disk is back.
TEST(SpillFailure, AWorkerRunsOnWhileSpillingFailsAndPausesAgainOnceASpillWorks) {
  TempDir dir;
  const fs::path spill = dir.path() / "spill";
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kSpillToken;
  Scheduler sched(so);
  WorkerOptions wo;
  wo.scheduler_address = sched.address();
  wo.token = kSpillToken;
  wo.nthreads = 1;
  wo.heartbeat_interval = 0.05;
  wo.death_timeout = 5;
  wo.memory_limit = 4'000'000;
  wo.memory_target = 0.9;  // a result above 3.6 MB goes straight to disk
  wo.memory_pause = 0.4;   // paused above 1.6 MB
  wo.memory_spill = 0;     // the store's own thresholds: the process is far above 4 MB anyway
  wo.local_directory = spill.string();
  Worker worker(wo);  // the directory is fine at start
  Client client(sched.address(), client_options(kSpillToken, 10));
  ASSERT_TRUE(client.wait_for_workers(1, 5s));

  // The directory goes (in life: the disk fills up).
  fs::remove_all(spill);
  std::ofstream(spill) << "not a directory any more";
  const auto big = client.submit("spill_failure_test.block", 4'000'000);
  EXPECT_NE(failure_of(big).find("spilling to disk failed"), std::string::npos) << failure_of(big);
  std::vector<Future> held;
  for (int i = 0; i < 3; ++i) {  // 1.5 MB: below the pause threshold, held
    held.push_back(client.submit("spill_failure_test.block", 500'000 + i * 8));
    EXPECT_EQ(failure_of(held.back()), "") << i;
  }
  const auto over = client.submit("spill_failure_test.block", 500'000 + 3 * 8);  // 2 MB: above it
  const std::string why = failure_of(over);
  EXPECT_NE(why.find("cannot hold the result of"), std::string::npos) << why;
  EXPECT_NE(why.find("its memory is above the pause threshold and spilling to disk failed"), std::string::npos)
      << why;
  EXPECT_FALSE(worker.stats().paused) << "the worker paused although spilling fails";
  // Not paused: the next task runs.
  EXPECT_EQ(failure_of(client.submit("spill_failure_test.block", 8)), "") << "the worker stopped running tasks";
  EXPECT_FALSE(worker.stats().paused);
  EXPECT_EQ(worker.stats().spilled, 0u);

  // The disk works again: a result over the target is spilled (and so the failure cleared) ...
  fs::remove(spill);
  fs::create_directories(spill);
  const auto big_again = client.submit("spill_failure_test.block", 4'000'000);
  ASSERT_EQ(failure_of(big_again), "");
  EXPECT_EQ(worker.stats().spilled, 1u);
  EXPECT_EQ(big_again.result(10s).block().size(), 500'000);
  // ... and pausing works again: a result that leaves it above its pause threshold is kept, and
  // the worker pauses.
  held.push_back(client.submit("spill_failure_test.block", 500'000 + 4 * 8));
  EXPECT_EQ(failure_of(held.back()), "") << "a result above the pause threshold was dropped after spilling worked again";
  EXPECT_TRUE(wait_until([&] { return worker.stats().paused; }, 3))
      << "the worker did not pause above its pause threshold once spilling worked again ("
      << worker.stats().memory_bytes << " bytes in memory)";
  // Its memory freed, it resumes.
  held.clear();
  EXPECT_TRUE(wait_until([&] { return !worker.stats().paused; }, 5)) << worker.stats().memory_bytes << " bytes in memory";
  EXPECT_EQ(failure_of(client.submit("spill_failure_test.block", 16)), "");
}

// Lines 304-305: "While the last spill failed, the worker does not pause". Data fetched from a
// peer can take a worker above its pause threshold without a result to drop; paused then, it
// would wait for spilling to make room, which never comes, and hold its task (and the client)
// for good. It runs the task instead, which fails for the result it cannot hold.
TEST(SpillFailure, AFetchAboveThePauseThresholdDoesNotPauseAWorkerWhoseSpillFailed) {
  TempDir dir;
  const fs::path spill = dir.path() / "spill";
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kSpillToken;
  Scheduler sched(so);
  WorkerOptions wo;
  wo.scheduler_address = sched.address();
  wo.token = kSpillToken;
  wo.nthreads = 1;
  wo.heartbeat_interval = 0.05;
  wo.death_timeout = 5;
  wo.name = "peer";
  Worker peer(wo);  // no memory limit
  wo.name = "limited";
  wo.memory_limit = 4'000'000;
  wo.memory_target = 0.9;  // spills above 3.6 MB
  wo.memory_pause = 0.4;   // paused above 1.6 MB
  wo.memory_spill = 0;     // the store's own thresholds: the process is far above 4 MB anyway
  wo.local_directory = spill.string();
  Worker limited(wo);
  Client client(sched.address(), client_options(kSpillToken, 10));
  ASSERT_TRUE(client.wait_for_workers(2, 5s));
  auto on = [](const std::string& worker) {
    SubmitOptions o;
    o.annotations = Annotations{};
    o.annotations->workers = {worker};
    return o;
  };

  fs::remove_all(spill);
  std::ofstream(spill) << "not a directory any more";
  const auto big = client.submit_with(on("limited"), "spill_failure_test.block", 4'000'000);
  ASSERT_NE(failure_of(big).find("spilling to disk failed"), std::string::npos) << "the test needs a failed spill";
  const auto remote = client.submit_with(on("peer"), "spill_failure_test.block", 2'000'000);
  ASSERT_EQ(failure_of(remote), "");
  // 2 MB fetched: above the pause threshold, below the spill target.
  const auto counted = client.submit_with(on("limited"), "spill_failure_test.count", remote);
  const std::string why = failure_of(counted);
  EXPECT_NE(why.find("cannot hold the result of"), std::string::npos)
      << "the task did not run on the worker above its pause threshold: " << why;
  EXPECT_FALSE(limited.stats().paused) << "the worker paused although spilling fails";
  EXPECT_GE(limited.stats().memory_bytes, 2'000'000u) << "the fetched data is still held";
  EXPECT_EQ(limited.stats().spilled, 0u);
}

// Lines 298-300: "When `--local-directory` is given (or a worker has a memory limit, and so may
// spill to the system temp directory), it is created if missing and a probe file is written and
// removed in it". A worker with a memory limit and a broken temp directory would otherwise learn
// it at its first spill, with its memory already full.
TEST(SpillFailure, AMemoryLimitAloneHasTheTempDirectoryChecked) {
  TempDir dir;
  const fs::path file = dir.path() / "tmpdir-is-a-file";
  std::ofstream(file) << "x";
  WorkerOptions wo;
  wo.scheduler_address = "tcp://127.0.0.1:1";  // nothing listens: a worker that passes the checks fails on connect
  wo.death_timeout = 0;
  wo.local_directory = "";
  {
    ScopedEnv tmpdir("TMPDIR", file.string());
    wo.memory_limit = std::size_t{1} << 30;
    try {
      Worker w(wo);
      ADD_FAILURE() << "a worker started with a memory limit and a temp directory that is a file";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("spill directory"), std::string::npos) << what;
      EXPECT_NE(what.find("ot a directory"), std::string::npos) << what;
    }
    wo.memory_limit = 0;  // no limit: never spills, so the temp directory is not its business
    try {
      Worker w(wo);
      ADD_FAILURE() << "a worker connected to a port nothing listens on";
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()).find("spill directory"), std::string::npos) << e.what();
    }
  }
  // A temp directory that works: checked with a probe, and the probe removed.
  const fs::path tmp = dir.path() / "tmp";
  fs::create_directories(tmp);
  ScopedEnv tmpdir("TMPDIR", tmp.string());
  wo.memory_limit = std::size_t{1} << 30;
  try {
    Worker w(wo);
    ADD_FAILURE() << "a worker connected to a port nothing listens on";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find("spill directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(tmp)) << "the check left something in the temp directory";
}

TEST(SpillFailure, TheStartCheckCreatesAMissingDirectoryAndRemovesItsProbe) {
  TempDir dir;
  const fs::path missing = dir.path() / "a" / "b";
  check_spill_directory(missing.string());
  ASSERT_TRUE(fs::is_directory(missing)) << "a missing spill directory was not created";
  EXPECT_TRUE(probes_in(missing).empty()) << "the probe file was left behind";
  EXPECT_TRUE(fs::is_empty(missing));
  // Again on the existing directory, with a file of the user's in it: only the probe goes.
  std::ofstream(missing / "mine") << "kept";
  check_spill_directory(missing.string());
  EXPECT_TRUE(probes_in(missing).empty());
  EXPECT_TRUE(fs::exists(missing / "mine"));
}
