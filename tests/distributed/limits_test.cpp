// Issue 19, limits and validation: flag values refused before anything starts, a spill directory
// checked at start, a live worker's address not taken over by another registration, and the
// records of departed clients freed. Real binaries, sockets and workers.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <future>
#include <map>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "run_binary.hpp"
#include "distributed/cli_values.hpp"
#include "distributed/options_check.hpp"
#include "distributed/wire.hpp"
#include "sim_cluster.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::child_env;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::read_text;
using tessera_test::wait_until;

// ---- durations ---------------------------------------------------------------------------------------

TEST(LimitsDurations, DaskFormsAreSeconds) {
  EXPECT_DOUBLE_EQ(parse_duration("10", "--x"), 10);
  EXPECT_DOUBLE_EQ(parse_duration("0.5", "--x"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("10s", "--x"), 10);
  EXPECT_DOUBLE_EQ(parse_duration("500ms", "--x"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("5 minutes", "--x"), 300);
  EXPECT_DOUBLE_EQ(parse_duration("2h", "--x"), 7200);
  EXPECT_DOUBLE_EQ(parse_duration("1.5M", "--x"), 90);  // case-insensitive: m is minutes, as Dask
  EXPECT_DOUBLE_EQ(parse_duration("250us", "--x"), 250e-6);
  EXPECT_DOUBLE_EQ(parse_duration("0", "--x"), 0);
}

TEST(LimitsDurations, BadFormsNameTheFlag) {
  for (const char* bad : {"", "s", "abc", "10x", "-1", "1e999", "nan", "inf", "1..2s"}) {
    try {
      parse_duration(bad, "--worker-ttl");
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--worker-ttl: invalid duration"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_positive_duration("0", "--heartbeat-interval"), Error);
  EXPECT_THROW(parse_positive_duration("0ms", "--heartbeat-interval"), Error);
  EXPECT_DOUBLE_EQ(parse_positive_duration("1ms", "--heartbeat-interval"), 1e-3);
}

TEST(LimitsOptions, SchedulerAndWorkerRefuseZeroIntervals) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.state.worker_ttl = 0;
  EXPECT_THROW(Scheduler{so}, Error);
  so.state.worker_ttl = 300;
  so.tick_interval = 0;
  EXPECT_THROW(Scheduler{so}, Error);
  WorkerOptions wo;
  wo.scheduler_address = "tcp://127.0.0.1:1";
  wo.heartbeat_interval = 0;
  try {
    Worker w(wo);
    ADD_FAILURE() << "a worker with heartbeat_interval 0 started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("heartbeat_interval"), std::string::npos) << e.what();
  }
}

// ---- the binaries ------------------------------------------------------------------------------------

struct Bins {
  std::string scheduler, worker;
  bool found = false;
  Bins() {
    auto bin = tessera_test::build_bin_dir();
    scheduler = (bin / "tessera-scheduler").string();
    worker = (bin / "tessera-worker").string();
    found = std::filesystem::exists(scheduler) && std::filesystem::exists(worker);
  }
};

using Exit = tessera_test::BinaryExit;
using tessera_test::run_binary;

bool failed(const Exit& e) { return e.status != -1 && WIFEXITED(e.status) && WEXITSTATUS(e.status) != 0; }

TEST(LimitsBinaries, BadFlagValuesExitNonZeroWithTheFlagNamed) {
  Bins bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  struct Case {
    bool scheduler;
    std::vector<std::string> args;
    std::string expect;
  };
  // A worker given a scheduler file that never appears would wait --death-timeout (60 s) for
  // it: a bad value must stop it long before.
  const std::vector<Case> cases = {
      {true, {"--worker-ttl", "0"}, "--worker-ttl: must be more than zero"},
      {true, {"--worker-ttl", "-5s"}, "--worker-ttl: invalid duration \"-5s\": negative"},
      {true, {"--worker-ttl", "ten"}, "--worker-ttl: invalid duration \"ten\""},
      {true, {"--idle-timeout", "5 fortnights"}, "--idle-timeout: invalid duration"},
      {true, {"--port", "70000"}, "--port"},
      {false, {"--heartbeat-interval", "0"}, "--heartbeat-interval: must be more than zero"},
      {false, {"--heartbeat-interval", "0ms"}, "--heartbeat-interval: must be more than zero"},
      {false, {"--nthreads", "0"}, "--nthreads: must be at least 1, got 0"},
      {false, {"--nthreads", "-3"}, "--nthreads: must be at least 1, got -3"},
      {false, {"--nworkers", "0"}, "--nworkers: must be at least 1, got 0"},
      {false, {"--memory-limit", "4XB"}, "--memory-limit: invalid memory limit \"4XB\": unknown unit"},
      {false, {"--memory-limit", "-1GB"}, "--memory-limit: invalid memory limit \"-1GB\": negative"},
      {false, {"--death-timeout", "soon"}, "--death-timeout: invalid duration"},
      {false, {"--device-memory-limit", "lots"}, "--device-memory-limit"},
  };
  tessera_test::TempDir dir;
  const std::string never = (dir.path() / "never.json").string();
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    if (c.scheduler) {
      args.insert(args.end(), {"--port", "0", "--no-dashboard"});
      if (c.args[0] == "--port") args.erase(args.end() - 3, args.end() - 1);
    } else {
      args.insert(args.end(), {"--scheduler-file", never});
    }
    auto start = tessera_test::Clock::now();
    Exit e = run_binary(c.scheduler ? bins.scheduler : bins.worker, args, 8);
    std::string what = (c.scheduler ? "tessera-scheduler" : "tessera-worker");
    for (const auto& a : c.args) what += " " + a;
    EXPECT_TRUE(failed(e)) << what << ": " << (e.status == -1 ? "still running" : tessera_test::describe_status(e.status))
                           << "\n" << e.log;
    EXPECT_LT(tessera_test::seconds_since(start), 5) << what << " did not stop before starting";
    EXPECT_NE(e.log.find(c.expect), std::string::npos) << what << ": expected '" << c.expect << "' in\n" << e.log;
  }
}

TEST(LimitsBinaries, GoodValuesWithUnitsRun) {
  Bins bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "limits-units-token";
  Children kids;
  tessera_test::spawn_scheduler(kids, bins.scheduler, sfile, token);
  pid_t w = kids.spawn({bins.worker, "--scheduler-file", sfile, "--token", token, "--nthreads", "1",
                        "--heartbeat-interval", "200ms", "--death-timeout", "10s", "--memory-limit", "1GiB",
                        "--local-directory", (dir.path() / "spill" / "deep").string(), "--log-level", "warning"},
                       child_env());
  auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
  ASSERT_TRUE(client->wait_for_workers(1, 10s));
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "spill" / "deep")) << "a missing directory is created";
  client->close();
  ::kill(w, SIGTERM);
  tessera_test::expect_exit_zero(kids, w, "tessera-worker");
}

// ---- the spill directory -----------------------------------------------------------------------------

TEST(LimitsSpillDirectory, RegularFileIsRefusedAtStart) {
  tessera_test::TempDir dir;
  const auto file = dir.path() / "not-a-dir";
  std::ofstream(file) << "x";
  try {
    check_spill_directory(file.string());
    ADD_FAILURE() << "a regular file was accepted as the spill directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a directory"), std::string::npos) << e.what();
  }
  WorkerOptions wo;
  wo.scheduler_address = "tcp://127.0.0.1:1";
  wo.local_directory = file.string();
  EXPECT_THROW(Worker{wo}, Error);

  Bins bins;
  if (!bins.found) GTEST_SKIP() << "tessera-worker not built next to the tests";
  // Before waiting for the scheduler file (which never comes).
  Exit e = run_binary(bins.worker, {"--scheduler-file", (dir.path() / "never.json").string(), "--local-directory",
                                    file.string()});
  EXPECT_TRUE(failed(e)) << e.log;
  EXPECT_NE(e.log.find("is not a directory"), std::string::npos) << e.log;
}

TEST(LimitsSpillDirectory, ReadOnlyDirectoryIsRefusedAtStart) {
  tessera_test::TempDir dir;
  const auto ro = dir.path() / "ro";
  std::filesystem::create_directories(ro);
  ASSERT_EQ(::chmod(ro.c_str(), 0555), 0);
  {
    // Root (or CAP_DAC_OVERRIDE) writes there anyway: then there is nothing to test.
    std::ofstream probe(ro / "can-i");
    if (probe) {
      probe.close();
      std::filesystem::remove(ro / "can-i");
      ::chmod(ro.c_str(), 0755);
      GTEST_SKIP() << "chmod does not stop this user from writing";
    }
  }
  try {
    check_spill_directory(ro.string());
    ADD_FAILURE() << "a read-only directory was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not writable"), std::string::npos) << e.what();
  }
  Bins bins;
  if (bins.found) {
    Exit e = run_binary(bins.worker, {"--scheduler-file", (dir.path() / "never.json").string(), "--local-directory",
                                      ro.string()});
    EXPECT_TRUE(failed(e)) << e.log;
    EXPECT_NE(e.log.find("is not writable"), std::string::npos) << e.log;
  }
  ::chmod(ro.c_str(), 0755);
}

TEST(LimitsSpillDirectory, SpillFailingAtRunTimeFailsTheTasksInsteadOfPausing) {
  // The directory was fine at start and is gone later (here: replaced by a file; in life, a
  // full disk): the worker cannot make room, so pausing would hold the client forever.
  tessera_test::TempDir dir;
  const auto root = dir.path() / "spill";
  LocalClusterOptions o;
  o.processes = false;
  o.n_workers = 1;
  o.threads_per_worker = 1;
  o.timeout = 10;
  o.memory_limit = "2MB";
  o.local_directory = root.string();
  LocalCluster cluster(o);
  Client client(cluster, client_options(cluster.token()));
  std::filesystem::remove_all(root);
  std::ofstream(root) << "not a directory any more";
  auto x = random::normal(5, 0.0, 1.0, {1000, 1000}, {100, 100});  // 8 MB in 80 kB chunks
  auto run = std::async(std::launch::async, [&] {
    const Array xp = x.persist(client);
    return xp.compute(client).to_doubles().size();
  });
  if (run.wait_for(20s) != std::future_status::ready) {
    ADD_FAILURE() << "the computation is still waiting 20 s later (the worker paused for good)";
    cluster.close();  // the client loses the scheduler: compute() throws
  }
  try {
    run.get();
    ADD_FAILURE() << "8 MB were held by a worker limited to 2 MB that cannot spill";
  } catch (const std::exception& e) {
    if (!::testing::Test::HasFailure()) {
      EXPECT_NE(std::string(e.what()).find("spilling to disk failed"), std::string::npos) << e.what();
    }
  }
}

// ---- worker identity ---------------------------------------------------------------------------------

TEST(LimitsIdentity, RegistrationForALiveWorkersAddressIsRefused) {
  LocalClusterOptions o;
  o.processes = false;
  o.n_workers = 1;
  o.threads_per_worker = 1;
  o.timeout = 10;
  o.heartbeat_interval = 0.1;
  o.token = "identity-token";
  LocalCluster cluster(o);
  Client client(cluster, client_options(o.token));
  ASSERT_TRUE(client.wait_for_workers(1, 5s));
  const std::string victim = client.scheduler_info().workers.at(0).address;

  comm::CommOptions co;
  co.token = o.token;
  auto c = comm::connect(cluster.scheduler_address(), co);
  wire::WorkerHello hello;
  hello.add.address = victim;
  hello.add.name = "impostor";
  hello.add.nthreads = 1;
  comm::Message m(wire::kRegisterWorker);
  m.set("worker", hello);
  c->send(std::move(m)).get();
  bool refused = false;
  std::string got, error;
  try {
    while (true) {
      auto r = c->recv(std::chrono::milliseconds(3000));
      got += r.op + " ";
      // The refusal says why (a registered reply with an error); an accepting one has a secret.
      if (r.op == wire::kRegistered && r.has("error")) error = r.get<std::string>("error");
      EXPECT_FALSE(r.has("secret")) << "the impostor was given the registration secret";
    }
  } catch (const comm::CommTimeoutError&) {
    refused = false;
  } catch (const comm::CommError&) {
    refused = true;
  }
  EXPECT_TRUE(refused) << "the impostor's connection was not closed: " << got;
  EXPECT_NE(error.find("belongs to a live worker"), std::string::npos) << got << error;
  c->close();

  // The real worker is still the one at that address, and works.
  auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 1u);
  EXPECT_EQ(info.workers[0].address, victim);
  ASSERT_NE(info.workers[0].name, "impostor") << "the impostor took the worker's place";
  auto x = random::normal(1, 0.0, 1.0, {100, 100}, {50, 50});
  tessera_test::expect_close(x.sum().compute(client).item(), x.sum().compute(local_executor("sync")).item());
}

// ---- records of departed clients ---------------------------------------------------------------------

TEST(LimitsRecords, DepartedClientsRecordsAreFreed) {
  LocalClusterOptions o;
  o.processes = false;
  o.n_workers = 1;
  o.threads_per_worker = 1;
  o.timeout = 10;
  LocalCluster cluster(o);
  const std::size_t before = cluster.scheduler().client_count();
  for (int i = 0; i < 20; ++i) {
    Client c(cluster, client_options(cluster.token()));
    auto x = random::normal(i, 0.0, 1.0, {40, 40}, {20, 20});
    EXPECT_TRUE(std::isfinite(x.sum().compute(c).item()));
    EXPECT_GE(cluster.scheduler().client_count(), before + 1);
    c.close();
  }
  EXPECT_TRUE(wait_until([&] { return cluster.scheduler().client_count() == before; }, 5))
      << "client records: " << cluster.scheduler().client_count() << ", before " << before;
  // A slot freed is reused by the next client, which works.
  Client again(cluster, client_options(cluster.token()));
  auto y = random::normal(7, 0.0, 1.0, {40, 40}, {20, 20});
  tessera_test::expect_close(y.sum().compute(again).item(), y.sum().compute(local_executor("sync")).item());
}

TEST(LimitsRecords, StateFreesDepartedClientsAndReusesTheirSlots) {
  SchedulerState s{SchedulerConfig{}};
  for (int round = 0; round < 100; ++round) {
    const std::string name = "client-" + std::to_string(round);
    s.handle(AddClient{name});
    EXPECT_EQ(s.client_count(), 1u);
    s.handle(RemoveClient{name});
    EXPECT_EQ(s.client_count(), 0u) << "round " << round;
  }
}

// ---- a stopped (silent) worker -------------------------------------------------------------------------

TEST(LimitsSilentWorker, GetsNoNewTasksUntilHeardFromAgain) {
  SchedulerConfig cfg = tessera::distributed::testing::SimCluster::default_config();
  cfg.worker_ttl = 100;
  cfg.worker_silent = 1;
  tessera::distributed::testing::SimCluster c(cfg);
  c.add_worker("w1");
  c.add_worker("w2");
  c.to_scheduler(Heartbeat{"w1", 2.0, 0});
  c.tick(2.0);  // w2 last heard of at 0
  c.run();
  std::vector<Task> tasks;
  std::vector<Key> keys;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(tessera::distributed::testing::make_task("s-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  c.check_all();
  EXPECT_EQ(c.clients["client"].in_memory.size(), 10u);
  EXPECT_TRUE(c.workers["w2"]->executed.empty()) << "a silent worker was given new tasks";
  EXPECT_EQ(c.sched.worker_count(), 2u) << "silent is not removed: that is worker_ttl's";
  // Heard from again: it takes tasks again.
  c.to_scheduler(Heartbeat{"w2", 2.5, 0});
  c.to_scheduler(Heartbeat{"w1", 2.5, 0});
  c.run();
  c.workers["w1"]->hold = true;  // w1 keeps the next one busy, so w2 gets some
  tasks.clear();
  keys.clear();
  for (int i = 0; i < 4; ++i) {
    tasks.push_back(tessera::distributed::testing::make_task("t-" + std::to_string(i)));
    keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, keys);
  c.run();
  c.release_held("w1");
  c.run();
  c.release_held("w1");
  c.run();
  EXPECT_FALSE(c.workers["w2"]->executed.empty()) << "a worker heard from again got no tasks";
  bool logged = false;
  for (const auto& l : c.logs) logged |= l.message.find("no new tasks until it is heard from") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(LimitsSilentWorker, ComputationCompletesWhileAWorkerIsStopped) {
  // worker_ttl is long: without worker_silent (5 s), half the tasks would go to the stopped
  // worker and wait for the whole minute.
  auto o = tessera_test::processes_over_tcp();
  o.worker_ttl = 60;
  LocalCluster cluster(o);
  Client client(cluster, client_options(cluster.token()));
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const int stopped_pid = cluster.worker_pids().at(1);
  cluster.signal_worker(1, SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return tessera_test::process_state(stopped_pid) == 'T'; }, 2));
  std::this_thread::sleep_for(6s);  // past the 5 s of SchedulerOptions::worker_silent
  auto x = random::normal(11, 0.0, 1.0, {400, 400}, {50, 50});
  const double want = (x + 1).sum().compute(local_executor("sync")).item();
  auto run = std::async(std::launch::async, [&] { return (x + 1).sum().compute(client).item(); });
  const bool done = run.wait_for(15s) == std::future_status::ready;
  // A stopped process ignores everything but SIGKILL; its tasks then go to the other worker.
  cluster.signal_worker(1, SIGKILL);
  EXPECT_TRUE(done) << "the computation waited for the stopped worker";
  tessera_test::expect_close(run.get(), want);
}

}  // namespace
