// Integration tests of the distributed runtime with worker processes: LocalCluster starting this
// test binary as its workers (tests/main.cpp calls tessera::init), workers killed, stopped and
// added, and the tessera-scheduler / tessera-worker binaries started as child processes.
// Every test checks that no process it started is left behind.
#include <atomic>
#include <cmath>
#include <csignal>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::child_env;
using tessera_test::spawn_scheduler;
using tessera_test::expect_exit_zero;
using tessera_test::expect_close;
using tessera_test::expect_no_workers_left;
using tessera_test::client_options;
using tessera_test::Clock;
using tessera_test::processes_with;
using tessera_test::read_text;
using tessera_test::seconds_since;
using tessera_test::wait_until;
using tessera_test::seed_expr;

// ---- task functions (they run in the worker processes) ------------------------------------------------

int pt_inc(int x) { return x + 1; }
int pt_pid() { return static_cast<int>(::getpid()); }

// The identity on a block, slowly: makes the seed workload last long enough to interfere with.
Block pt_slow(Block b) {
  std::this_thread::sleep_for(4ms);
  return b;
}

// A worker process LocalCluster started has TESSERA_PARENT_PID set to its parent's pid; never
// kill anything else (the test process itself when a thread worker runs this).
bool in_worker_process() {
  const char* p = std::getenv("TESSERA_PARENT_PID");
  return p && std::to_string(::getppid()) == p;
}
// n copies of the pid of the process that made it (so a test sees where it ran).
Block pt_make(int n) {
  return Block::from_values<double>(std::vector<double>(static_cast<std::size_t>(n), ::getpid()), {n});
}
double pt_sum(Block b) {
  double s = 0;
  for (double v : b.to_doubles()) s += v;
  return s;
}

int pt_suicide(int x) {
  if (!in_worker_process()) throw std::runtime_error("process_test.suicide: not in a worker process");
  std::raise(SIGKILL);
  return x;
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("process_test.inc", pt_inc);
TESSERA_REGISTER_FUNCTION_AS("process_test.pid", pt_pid);
TESSERA_REGISTER_FUNCTION_AS("process_test.slow", pt_slow);
TESSERA_REGISTER_FUNCTION_AS("process_test.suicide", pt_suicide);
TESSERA_REGISTER_FUNCTION_AS("process_test.make", pt_make);
TESSERA_REGISTER_FUNCTION_AS("process_test.sum", pt_sum);

namespace {

LocalClusterOptions process_options(int n_workers = 2, int threads = 1) {
  LocalClusterOptions o;
  o.processes = true;
  o.n_workers = n_workers;
  o.threads_per_worker = threads;
  o.timeout = 10;
  o.heartbeat_interval = 0.2;
  o.worker_ttl = 10;
  o.log_level = "error";  // killed peers make the survivors warn
  // These tests kill workers on purpose and count them: no nanny starting them again (that is
  // WorkersThatDieAreStartedAgain's).
  o.restart_dead_workers = false;
  return o;
}

// The same value, with a 4 ms task per chunk in between.
Array slow_seed_expr(std::int64_t n, std::int64_t c) {
  auto x = random::normal(0, 10.0, 1.0, {n, n}, {c, c});
  auto y = map_blocks("process_test.slow", {x}, DType::Float64);
  return ((y + 1)[{step(2), step(2)}]).sum();
}

// A future's value, waiting at most `seconds` (a test must fail, never hang).
template <typename T>
T get(const Future& f, double seconds = 10) {
  return tessera::detail::from_task_value<T>(f.result(std::chrono::duration<double>(seconds)));
}


// Computes expr on the client in another thread; returns nullopt (and closes the cluster, which
// ends the computation) when it takes longer than timeout.
struct AsyncCompute {
  std::future<double> result;
  AsyncCompute(Client& client, Array expr) {
    result = std::async(std::launch::async, [&client, expr] { return expr.compute(client).item(); });
  }
  std::optional<double> get(LocalCluster& cluster, std::chrono::seconds timeout) {
    if (result.wait_for(timeout) != std::future_status::ready) {
      cluster.close();  // the client loses the scheduler: compute() throws
      result.wait();
      return std::nullopt;
    }
    return result.get();
  }
};

// ---- 5, 9, 11 on worker processes -------------------------------------------------------------------

TEST(ClusterProcesses, SubmitSeedWorkloadInfoAndRun) {
  std::string address;
  {
    LocalCluster cluster(process_options(2));
    address = cluster.scheduler_address();
    Client client(cluster, client_options());
    ASSERT_TRUE(client.wait_for_workers(2, 5s));
    auto info = client.scheduler_info();
    ASSERT_EQ(info.workers.size(), 2u);
    const std::vector<int> worker_pids = cluster.worker_pids();
    std::set<int> pids, want(worker_pids.begin(), worker_pids.end());
    std::set<std::string> names;
    for (const auto& w : info.workers) {
      pids.insert(w.pid);
      names.insert(w.name);
      EXPECT_NE(w.pid, static_cast<int>(::getpid()));
      EXPECT_TRUE(tessera_test::process_alive(w.pid)) << w.pid;
      EXPECT_EQ(w.nthreads, 1);
      EXPECT_GT(w.ops, 10u);
    }
    EXPECT_EQ(pids, want);
    EXPECT_EQ(names, (std::set<std::string>{"worker-0", "worker-1"}));

    EXPECT_EQ(get<int>(client.submit("process_test.inc", 41)), 42);
    auto fs = client.map("process_test.inc", std::vector<int>{1, 2, 3, 4, 5, 6});
    auto vs = client.gather(fs);
    for (std::size_t i = 0; i < vs.size(); ++i) EXPECT_EQ(from_value<int>(vs[i]), static_cast<int>(i) + 2);
    // The tasks ran in the workers, not here.
    int pid = get<int>(client.submit("process_test.pid"));
    EXPECT_TRUE(want.count(pid)) << pid;

    expect_close(seed_expr(400, 100).compute(client).item(), seed_expr(400, 100).compute(local_executor("threads")).item());

    auto run = client.run("process_test.pid");
    ASSERT_EQ(run.size(), 2u);
    for (const auto& w : info.workers) {
      ASSERT_TRUE(run.count(w.address)) << w.address;
      EXPECT_EQ(from_value<int>(run[w.address]), w.pid);
    }
  }
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, SchedulerAsAProcess) {
  auto o = process_options(2);
  o.scheduler_process = true;
  std::string address;
  int sched_pid = 0;
  {
    LocalCluster cluster(o);
    address = cluster.scheduler_address();
    sched_pid = cluster.scheduler_pid();
    ASSERT_GT(sched_pid, 0);
    EXPECT_TRUE(tessera_test::process_alive(sched_pid));
    EXPECT_EQ(cluster.worker_count(), 2u);
    EXPECT_THROW(cluster.scheduler(), Error);
    Client client(cluster, client_options());
    EXPECT_EQ(get<int>(client.submit("process_test.inc", 1)), 2);
    expect_close(seed_expr(400, 100).compute(client).item(),
                 seed_expr(400, 100).compute(local_executor("threads")).item());
    // A worker killed: the scheduler process notices, and add_worker brings the count back.
    cluster.signal_worker(0, SIGKILL);
    EXPECT_TRUE(wait_until([&] { return cluster.worker_count() == 1; }, 5));
    client.close();
  }
  EXPECT_FALSE(tessera_test::process_alive(sched_pid)) << "the scheduler process outlived its LocalCluster";
  expect_no_workers_left(address);
}

// ---- 6. workers killed -------------------------------------------------------------------------------

TEST(ClusterProcesses, WorkerSigkilledDuringSeedWorkload) {
  LocalCluster cluster(process_options(2));
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  const double want = seed_expr(2000, 125).compute(local_executor("threads")).item();
  auto t0 = Clock::now();
  AsyncCompute run(client, slow_seed_expr(2000, 125));  // 256 chunks x 4 ms on 2 workers
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() > 0; }, 5));
  std::this_thread::sleep_for(150ms);
  const bool finished_before_kill = run.result.wait_for(0s) == std::future_status::ready;
  cluster.signal_worker(0, SIGKILL);
  auto got = run.get(cluster, 30s);
  ASSERT_TRUE(got.has_value()) << "the computation did not finish after a worker was killed";
  expect_close(*got, want);
  EXPECT_FALSE(finished_before_kill) << "the workload finished before the kill; make it longer";
  EXPECT_EQ(cluster.scheduler().workers().size(), 1u);
  RecordProperty("seconds", std::to_string(seconds_since(t0)));
  // The survivor keeps serving.
  EXPECT_EQ(get<int>(client.submit("process_test.inc", 1)), 2);
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, WorkerSigkilledRightAfterSubmit) {
  LocalCluster cluster(process_options(2));
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  const double want = seed_expr(2000, 250).compute(local_executor("threads")).item();
  AsyncCompute run(client, seed_expr(2000, 250));
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() > 0; }, 5, 1));
  cluster.signal_worker(1, SIGKILL);
  auto got = run.get(cluster, 30s);
  ASSERT_TRUE(got.has_value());
  expect_close(*got, want);
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, TaskThatKillsItsWorkerErrsWithKilledWorker) {
  LocalCluster cluster(process_options(3));
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  Future f = client.submit("process_test.suicide", 1);
  auto t0 = Clock::now();
  try {
    f.result(20s);
    FAIL() << "a task that kills every worker it runs on must err";
  } catch (const TaskError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("KilledWorker"), std::string::npos) << what;
    EXPECT_NE(what.find("died on 3 workers"), std::string::npos) << what;
    EXPECT_NE(what.find(f.key()), std::string::npos) << what;
  } catch (const std::exception& e) {
    FAIL() << "expected TaskError (KilledWorker), got: " << e.what();
  }
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_EQ(cluster.scheduler().workers().size(), 0u) << "each of the 3 workers ran it once";
  for (int pid : cluster.worker_pids()) EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(pid); }, 2));
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, WorkersThatDieAreStartedAgain) {
  // By default the cluster is its workers' nanny: a worker killed after it registered comes back
  // (a new process, the same name) and the cluster computes on; one that keeps dying is started
  // at most max_restarts_per_minute times a minute, then left dead.
  auto o = process_options(1);
  o.restart_dead_workers = true;
  o.max_restarts_per_minute = 2;
  LocalCluster cluster(o);
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  EXPECT_EQ(get<int>(client.submit("process_test.inc", 1)), 2);
  std::vector<int> pids{cluster.worker_pids().at(0)};
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("restart " + std::to_string(round + 1));
    cluster.signal_worker(0, SIGKILL);
    ASSERT_TRUE(wait_until([&] { return cluster.worker_pids().at(0) != pids.back(); }, 5)) << "not started again";
    pids.push_back(cluster.worker_pids().at(0));
    EXPECT_FALSE(tessera_test::process_alive(pids[pids.size() - 2]));
    ASSERT_TRUE(wait_until([&] {
      const auto w = cluster.scheduler().workers();
      return w.size() == 1 && w[0].name == "worker-0";
    }, 10)) << "the new process did not register as worker-0";
    EXPECT_EQ(get<int>(client.submit("process_test.inc", 10 + round)), 11 + round);
  }
  // A third death within the minute: past the cap, not started again.
  cluster.signal_worker(0, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().workers().empty(); }, 5));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(cluster.worker_pids().at(0), pids.back());
  EXPECT_FALSE(tessera_test::process_alive(pids.back()));
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, AddWorkerAfterAWorkerDied) {
  LocalCluster cluster(process_options(1));
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  EXPECT_EQ(get<int>(client.submit("process_test.inc", 1)), 2);
  cluster.signal_worker(0, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().workers().empty(); }, 5));
  // A task submitted while there is no worker waits for one.
  Future pending = client.submit("process_test.inc", 10);
  EXPECT_FALSE(pending.wait(0.2s));
  try {
    cluster.add_worker();
  } catch (const std::exception& e) {
    // Regression: wait_for_workers used to report any child that had died since the last reap
    // (here the killed worker 0) as the new worker failing to register.
    ADD_FAILURE() << "add_worker() after a worker died: " << e.what();
  }
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().workers().size() == 1; }, 5));
  EXPECT_EQ(get<int>(pending), 11);
  EXPECT_EQ(get<int>(client.submit("process_test.inc", 2)), 3);
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

// Worker processes get PR_SET_PDEATHSIG (die_with_parent, src/distributed/cli.cpp), which fires
// when the *thread* that spawned them exits, not the process: a cluster made (or grown) on a
// short-lived thread must survive that thread.
TEST(ClusterProcesses, WorkersOutliveTheThreadThatCreatedTheCluster) {
  std::shared_ptr<LocalCluster> cluster;
  std::string error;
  std::thread([&] {
    try {
      cluster = std::make_shared<LocalCluster>(process_options(1));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  ASSERT_TRUE(cluster) << error;
  const std::string address = cluster->scheduler_address();
  const int pid = cluster->worker_pids().at(0);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(tessera_test::process_alive(pid)) << "worker process died with the thread that started it";
  EXPECT_EQ(cluster->scheduler().workers().size(), 1u)
      << "the scheduler lost the worker when the creating thread exited";
  if (cluster->scheduler().workers().size() == 1) {
    Client client(*cluster, client_options());
    EXPECT_EQ(get<int>(client.submit("process_test.inc", 1)), 2);
  }
  cluster->close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, WorkerAddedOnAnotherThreadOutlivesIt) {
  LocalCluster cluster(process_options(1));
  const std::string address = cluster.scheduler_address();
  std::string error;
  std::thread([&] {
    try {
      cluster.add_worker();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  EXPECT_TRUE(error.empty()) << error;
  ASSERT_EQ(cluster.worker_pids().size(), 2u);
  const int pid = cluster.worker_pids().at(1);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(tessera_test::process_alive(pid)) << "worker process died with the thread that started it";
  EXPECT_EQ(cluster.scheduler().workers().size(), 2u)
      << "the scheduler lost the worker when the thread that added it exited";
  cluster.close();
  expect_no_workers_left(address);
}

// ---- 15. heartbeat timeout ----------------------------------------------------------------------------

TEST(ClusterProcesses, StoppedWorkerIsRemovedAfterWorkerTtl) {
  auto o = process_options(2);
  o.worker_ttl = 1.5;
  o.heartbeat_interval = 0.2;
  LocalCluster cluster(o);
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  const double want = seed_expr(2000, 125).compute(local_executor("threads")).item();
  AsyncCompute run(client, slow_seed_expr(2000, 125));
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().task_count() > 0; }, 5));
  std::this_thread::sleep_for(150ms);
  auto stopped_at = Clock::now();
  cluster.signal_worker(1, SIGSTOP);
  const int stopped_pid = cluster.worker_pids().at(1);
  EXPECT_TRUE(wait_until([&] { return tessera_test::process_state(stopped_pid) == 'T'; }, 1));
  EXPECT_TRUE(wait_until([&] { return cluster.scheduler().workers().size() == 1; }, 5))
      << "the stopped worker was not removed after worker_ttl";
  double removed_after = seconds_since(stopped_at);
  EXPECT_GE(removed_after, 1.0) << "removed before worker_ttl";
  EXPECT_LT(removed_after, 3.5);
  if (run.result.wait_for(6s) != std::future_status::ready) {
    Client probe(cluster, client_options());
    auto info = probe.scheduler_info();
    std::string states;
    for (auto& [k, n] : info.task_states) states += k + "=" + std::to_string(n) + " ";
    for (auto& w : info.workers) states += "| " + w.name + " processing=" + std::to_string(w.processing);
    ADD_FAILURE() << "6 s after the stop the computation is stuck (scheduler: " << states
                  << "); see GatherFromStoppedPeerDoesNotHang";
  }
  auto got = run.get(cluster, 1s);
  // Clean up the stopped worker first (a stopped process ignores everything but SIGKILL).
  cluster.signal_worker(1, SIGKILL);
  ASSERT_TRUE(got.has_value()) << "the computation hung after the stopped worker was removed";
  expect_close(*got, want);
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

// The stopped-peer tests place an input on worker-1 and its dependent on worker-0 of a
// two-worker process cluster.
struct PeerPlacement {
  SubmitOptions on1, on0;
  int pid1 = 0;  // worker-1's process (0 when the scheduler does not list it)
  explicit PeerPlacement(Client& client) {
    on1.annotations = Annotations{.workers = {"worker-1"}, .allow_other_workers = true};
    on0.annotations = Annotations{.workers = {"worker-0"}};
    for (const auto& w : client.scheduler_info().workers)
      if (w.name == "worker-1") pid1 = w.pid;
  }
  // A value made on worker-1 (the restriction is only a preference: retried until it is
  // there); an invalid Future when ten tries landed elsewhere.
  Future make_on_1(Client& client, int n) const {
    for (int attempt = 0; attempt < 10; ++attempt) {
      Future f = client.submit_with(on1, "process_test.make", n + attempt);
      if (get<Block>(f).to_doubles().at(0) == pid1) return f;
    }
    return Future();
  }
};

TEST(ClusterProcesses, GatherFromStoppedPeerDoesNotHang) {
  // worker-0 fetches a value from worker-1 over a connection it already has, and worker-1 is
  // stopped (SIGSTOP: the socket stays open, nothing answers). After worker_ttl the scheduler
  // removes worker-1 and recomputes the value on worker-0; the dependent must then finish.
  auto o = process_options(2);
  o.worker_ttl = 1.0;
  o.heartbeat_interval = 0.2;
  LocalCluster cluster(o);
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  const PeerPlacement place(client);
  ASSERT_GT(place.pid1, 0);
  // Warm up: worker-0 opens its connection to worker-1.
  Future warm = place.make_on_1(client, 10);
  ASSERT_TRUE(warm.valid()) << "could not place a task on worker-1";
  EXPECT_GT(get<double>(client.submit_with(place.on0, "process_test.sum", warm)), 0.0);
  Future a = place.make_on_1(client, 1000);
  ASSERT_TRUE(a.valid()) << "could not place a task on worker-1";
  const double want = static_cast<double>(get<Block>(a).size()) * place.pid1;
  cluster.signal_worker(1, SIGSTOP);
  auto t0 = Clock::now();
  Future b = client.submit_with(place.on0, "process_test.sum", a);
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().workers().size() == 1; }, 4));
  bool done = b.wait(4s);
  EXPECT_TRUE(done) << "the dependent is stuck " << seconds_since(t0)
                    << " s after the stop: worker-0 waits forever for a get-data reply from the stopped peer, "
                       "and the recompute of its input waits behind that transfer";
  cluster.signal_worker(1, SIGKILL);  // also releases the stuck transfer
  if (!done) {
    bool after_kill = b.wait(5s);
    EXPECT_TRUE(after_kill) << "still stuck after the stopped worker was killed";
  }
  // Recomputed on worker-0 after the loss, or fetched: either way n values of some worker's pid.
  if (b.done()) { EXPECT_GT(get<double>(b), 0.0) << "expected about " << want; }
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, GatherFromAStoppedPeerWhileConnectingToItDoesNotWaitForTheHandshake) {
  // As above, but worker-0 has no connection to worker-1 yet when it is stopped: the fetch
  // opens one, the stopped process's kernel completes the TCP handshake, and the hello would
  // be answered never. The scheduler's word that worker-1 is gone must end that transfer
  // (and forget worker-1 for fetches still queued), not the hello's 5 s timeout: the CI once
  // saw a computation stuck past 6 s this way (StoppedWorkerIsRemovedAfterWorkerTtl).
  auto o = process_options(2);
  o.worker_ttl = 1.0;
  o.heartbeat_interval = 0.2;
  LocalCluster cluster(o);
  const std::string address = cluster.scheduler_address();
  Client client(cluster, client_options());
  const PeerPlacement place(client);
  ASSERT_GT(place.pid1, 0);
  Future a = place.make_on_1(client, 1000);
  ASSERT_TRUE(a.valid()) << "could not place a task on worker-1";
  cluster.signal_worker(1, SIGSTOP);
  Future b = client.submit_with(place.on0, "process_test.sum", a);  // worker-0 connects to worker-1 now
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().workers().size() == 1; }, 4));
  auto removed = Clock::now();
  // The hello's timeout (5 s, counted from the submit) would end the transfer about 4 s after
  // the removal; the scheduler's word ends it at once and the input is recomputed on worker-0.
  bool done = b.wait(2500ms);
  EXPECT_TRUE(done) << "the dependent is still waiting " << seconds_since(removed)
                    << " s after worker-1 was removed: the transfer that was connecting to it was not ended";
  cluster.signal_worker(1, SIGKILL);
  if (!done) {
    EXPECT_TRUE(b.wait(8s)) << "still stuck after the stopped worker was killed";
  }
  if (b.done()) { EXPECT_GT(get<double>(b), 0.0); }
  client.close();
  cluster.close();
  expect_no_workers_left(address);
}

TEST(ClusterProcesses, WorkerResumedAfterTtlRemovalIsNotLeftAGhost) {
  // A worker removed for silence (worker_ttl) that wakes up again must either register again or
  // go away; it must not stay connected, heartbeating and unused, with its process running.
  auto o = process_options(2);
  o.worker_ttl = 1.0;
  o.heartbeat_interval = 0.2;
  LocalCluster cluster(o);
  const std::string address = cluster.scheduler_address();
  const int pid = cluster.worker_pids().at(1);
  cluster.signal_worker(1, SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return cluster.scheduler().workers().size() == 1; }, 4));
  cluster.signal_worker(1, SIGCONT);
  bool back_or_gone = wait_until(
      [&] { return cluster.scheduler().workers().size() == 2 || !tessera_test::process_alive(pid); }, 2.5);
  EXPECT_TRUE(back_or_gone) << "the resumed worker (pid " << pid
                            << ") is still running and connected, but the scheduler no longer knows it";
  cluster.signal_worker(1, SIGKILL);
  cluster.close();
  expect_no_workers_left(address);
}

// ---- 14. the tessera-scheduler and tessera-worker binaries ----------------------------------------------

struct Binaries {
  std::string scheduler, worker;
  bool found = false;
  Binaries() {
    auto bin = tessera_test::build_bin_dir();
    scheduler = (bin / "tessera-scheduler").string();
    worker = (bin / "tessera-worker").string();
    found = std::filesystem::exists(scheduler) && std::filesystem::exists(worker);
  }
};

// The binaries die with this process even if it is killed (die_with_parent in cli.cpp), as
// LocalCluster's do (child_env); the Children guard kills and reaps them when a test fails.

TEST(ClusterBinaries, SchedulerAndWorkerWithSchedulerFile) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "binaries-token";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t worker = kids.spawn({bins.worker, "--scheduler-file", sfile, "--nthreads", "1", "--token", token,
                               "--memory-limit", "0", "--death-timeout", "10", "--log-level", "warning"},
                              child_env());
    auto client = Client::from_scheduler_file(sfile, client_options(token));
    ASSERT_TRUE(client->wait_for_workers(1, 10s));
    auto info = client->scheduler_info();
    ASSERT_EQ(info.workers.size(), 1u);
    // By default the worker runs in a child of the process started, its nanny (docs/nanny.md).
    EXPECT_NE(info.workers[0].pid, worker);
    {
      std::ifstream stat("/proc/" + std::to_string(info.workers[0].pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      std::istringstream rest(line.substr(line.rfind(')') + 2));
      char state = 0;
      int ppid = 0;
      rest >> state >> ppid;
      EXPECT_EQ(ppid, worker) << "the worker's parent is its nanny";
    }
    EXPECT_EQ(info.workers[0].nthreads, 1);

    auto x = random::normal(3, 0.0, 1.0, {300, 300}, {100, 100});
    expect_close((x + 1).sum().compute(*client).item(), (x + 1).sum().compute(local_executor("threads")).item());
    expect_close(seed_expr(400, 100).compute(*client).item(), seed_expr(400, 100).compute(local_executor("sync")).item());
    // The generic worker has none of the tests' functions.
    EXPECT_THROW(client->submit("process_test.inc", 1), UnknownOperationError);
    client->close();
    client.reset();

    ::kill(worker, SIGTERM);
    expect_exit_zero(kids, worker, "tessera-worker");
    EXPECT_TRUE(kids.running(sched)) << "the scheduler must outlive its worker";
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
    EXPECT_FALSE(std::filesystem::exists(sfile)) << "the scheduler removes its file when it stops";
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(ClusterBinaries, WorkerNWorkers2RegistersTwoWorkers) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "nworkers-token";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t parent = kids.spawn({bins.worker, "--scheduler-file", sfile, "--nworkers", "2", "--nthreads", "1",
                               "--token", token, "--memory-limit", "0", "--death-timeout", "10", "--log-level",
                               "warning"},
                              child_env());
    auto client = Client::from_scheduler_file(sfile, client_options(token));
    ASSERT_TRUE(client->wait_for_workers(2, 10s));
    auto info = client->scheduler_info();
    ASSERT_EQ(info.workers.size(), 2u);
    std::set<std::string> names;
    std::set<int> pids;
    for (const auto& w : info.workers) {
      names.insert(w.name);
      pids.insert(w.pid);
      EXPECT_NE(w.pid, parent) << "--nworkers 2 runs each worker in its own child process";
    }
    EXPECT_EQ(names, (std::set<std::string>{"worker-0", "worker-1"}));
    EXPECT_EQ(pids.size(), 2u);
    expect_close(seed_expr(400, 100).compute(*client).item(), seed_expr(400, 100).compute(local_executor("sync")).item());
    client->close();
    client.reset();

    // Stopping the scheduler closes the workers, and with them the --nworkers parent.
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
    expect_exit_zero(kids, parent, "tessera-worker --nworkers 2");
    for (int pid : pids) EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(pid); }, 3)) << pid;
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(ClusterBinaries, SigtermToNWorkersParentStopsItsWorkers) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "nworkers-term-token";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t parent = kids.spawn({bins.worker, "--scheduler-file", sfile, "--nworkers", "2", "--nthreads", "1",
                               "--token", token, "--memory-limit", "0", "--log-level", "warning"},
                              child_env());
    auto client = Client::from_scheduler_file(sfile, client_options(token));
    ASSERT_TRUE(client->wait_for_workers(2, 10s));
    std::set<int> pids;
    for (const auto& w : client->scheduler_info().workers) pids.insert(w.pid);
    ::kill(parent, SIGTERM);
    expect_exit_zero(kids, parent, "tessera-worker --nworkers 2");
    for (int pid : pids) EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(pid); }, 3)) << pid;
    EXPECT_TRUE(wait_until([&] { return client->scheduler_info().workers.empty(); }, 3))
        << "workers that left must be gone from the scheduler";
    client->close();
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(ClusterBinaries, SigtermWithLibraryThreads) {
  // SIGTERM must close the binaries cleanly (exit 0, scheduler file removed), and a worker the
  // scheduler closes must exit 0, although threads started before main() (libopenblas's pool,
  // forced here with OPENBLAS_NUM_THREADS=2) and the parent watchdog do not block the signals.
  // Regression test: with sigwait() on blocked signals those threads took SIGTERM (and the
  // SIGUSR1 the binaries sent themselves) and the processes died of them.
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "sigterm-token";
  {
    Children kids;
    auto env = child_env();
    env["OPENBLAS_NUM_THREADS"] = "2";  // an OpenBLAS pool thread even on a one-core machine
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token, "warning", env);
    auto worker_argv = std::vector<std::string>{bins.worker, "--scheduler-file", sfile, "--nthreads", "1",
                                                "--token", token, "--memory-limit", "0", "--log-level", "warning"};
    pid_t w1 = kids.spawn(worker_argv, env);
    pid_t w2 = kids.spawn(worker_argv, env);
    auto client = Client::from_scheduler_file(sfile, client_options(token));
    ASSERT_TRUE(client->wait_for_workers(2, 10s));
    client->close();
    // (Not at once: see SigtermRightAfterRegistration for the moment right after registering.)
    std::this_thread::sleep_for(200ms);
    ::kill(w1, SIGTERM);  // SIGTERM to a worker
    expect_exit_zero(kids, w1, "tessera-worker after SIGTERM");
    ::kill(sched, SIGTERM);  // SIGTERM to the scheduler, which closes w2
    expect_exit_zero(kids, sched, "tessera-scheduler after SIGTERM");
    expect_exit_zero(kids, w2, "tessera-worker closed by its scheduler");
    EXPECT_FALSE(std::filesystem::exists(sfile)) << "the scheduler removes its file when it stops";
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(ClusterBinaries, SigtermRightAfterRegistration) {
  // A worker is visible to clients as soon as it registers; a SIGTERM from then on must close it
  // cleanly (the scheduler then does not count it as a failure of the tasks it ran). Likewise a
  // scheduler whose file exists. Here SIGTERM follows the registration (and the file) at once.
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string token = "early-sigterm-token";
  Children kids;
  int unclean_workers = 0, unclean_schedulers = 0;
  std::string last;
  for (int round = 0; round < 25; ++round) {
    const std::string sfile = (dir.path() / ("s" + std::to_string(round) + ".json")).string();
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token, "error");
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 5, 1));
    auto client = Client::from_scheduler_file(sfile, client_options(token));
    pid_t worker = kids.spawn({bins.worker, "--scheduler-file", sfile, "--nthreads", "1", "--token", token,
                               "--memory-limit", "0", "--log-level", "error"},
                              child_env());
    ASSERT_TRUE(wait_until([&] { return client->scheduler_info().workers.size() == 1; }, 10, 0));
    ::kill(worker, SIGTERM);
    auto st = kids.wait_exit(worker, 5);
    ASSERT_TRUE(st.has_value());
    if (!(WIFEXITED(*st) && WEXITSTATUS(*st) == 0)) {
      ++unclean_workers;
      last = "worker " + tessera_test::describe_status(*st);
    }
    client->close();
    client.reset();
    // A scheduler signalled as soon as its file appears.
    const std::string sfile2 = (dir.path() / ("t" + std::to_string(round) + ".json")).string();
    pid_t sched2 = spawn_scheduler(kids, bins.scheduler, sfile2, token, "error");
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile2); }, 5, 0));
    ::kill(sched2, SIGTERM);
    st = kids.wait_exit(sched2, 5);
    ASSERT_TRUE(st.has_value());
    if (!(WIFEXITED(*st) && WEXITSTATUS(*st) == 0)) {
      ++unclean_schedulers;
      last = "scheduler " + tessera_test::describe_status(*st);
    }
    ::kill(sched, SIGTERM);
    kids.wait_exit(sched, 5);
  }
  EXPECT_EQ(unclean_workers, 0) << "workers that died of a SIGTERM sent right after they registered (last: " << last
                                << ")";
  EXPECT_EQ(unclean_schedulers, 0) << "schedulers that died of a SIGTERM sent right after their file appeared";
}

// The environment variables the binaries and the client read: a client with no token takes
// TESSERA_TOKEN, and a bad TESSERA_LOG_LEVEL or TESSERA_CPU_AFFINITY stops a binary with a message
// that names the value, while CPUs the system refuses only leave a worker unpinned.
TEST(ClusterBinaries, EnvironmentVariablesAreReadAndBadValuesNamed) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "env-token";
  Children kids;
  // Runs a binary with its stderr in `log`; its exit status.
  const std::string log = (dir.path() / "log").string();
  auto run = [&](const std::string& binary, std::vector<std::string> args, std::map<std::string, std::string> env) {
    std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log + "'", binary};
    cmd.insert(cmd.end(), args.begin(), args.end());
    for (const auto& [k, v] : child_env()) env[k] = v;
    return kids.spawn(cmd, env);
  };
  auto exit_status = [&](pid_t pid) {
    auto st = kids.wait_exit(pid, 10);
    return st ? *st : -1;
  };
  {
    pid_t bad = run(bins.scheduler, {"--port", "0"}, {{"TESSERA_LOG_LEVEL", "bogus"}});
    const int st = exit_status(bad);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << tessera_test::describe_status(st);
    EXPECT_NE(read_text(log).find("unknown level 'bogus'"), std::string::npos) << read_text(log);
  }
  pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10));
  {
    tessera_test::ScopedEnv unset("TESSERA_TOKEN", std::nullopt);
    EXPECT_THROW(Client::from_scheduler_file(sfile, client_options("", 5)), std::exception)
        << "no token at all must be refused by a scheduler that has one";
    tessera_test::ScopedEnv set("TESSERA_TOKEN", token);
    auto client = Client::from_scheduler_file(sfile, client_options("", 5));
    EXPECT_TRUE(client->scheduler_info().workers.empty());
    client->close();
  }
  {
    pid_t bad = run(bins.worker, {"--scheduler-file", sfile, "--token", token}, {{"TESSERA_CPU_AFFINITY", "3-1"}});
    const int st = exit_status(bad);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << tessera_test::describe_status(st);
    EXPECT_NE(read_text(log).find("TESSERA_CPU_AFFINITY: invalid CPU list \"3-1\""), std::string::npos)
        << read_text(log);
  }
  {
    // A CPU this machine lacks: a warning, and the worker runs unpinned.
    pid_t w = run(bins.worker, {"--scheduler-file", sfile, "--token", token, "--log-level", "warning"},
                  {{"TESSERA_CPU_AFFINITY", "65000"}});
    auto client = Client::from_scheduler_file(sfile, client_options(token, 5));
    EXPECT_TRUE(client->wait_for_workers(1, 10s)) << read_text(log);
    EXPECT_NE(read_text(log).find("cannot pin this process to CPUs 65000"), std::string::npos) << read_text(log);
    client->close();
    ::kill(w, SIGTERM);
    expect_exit_zero(kids, w, "tessera-worker left unpinned");
  }
  ::kill(sched, SIGTERM);
  expect_exit_zero(kids, sched, "tessera-scheduler");
}

}  // namespace
