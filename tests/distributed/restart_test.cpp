// Client::restart (docs/nanny.md, "Restart on request"): a scheduler and worker processes under
// nannies (tessera-scheduler, tessera-worker, the nanny task plugin); a worker started
// --no-nanny, which is closed and reported; a stopped worker, which makes restart() fail in
// time naming it; and the in-process LocalCluster, whose thread workers cannot be restarted.
// Every test checks that no process it started is left behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "nanny_binaries.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::Clock;
using tessera_test::expect_exit_zero;
using tessera_test::parent_of;
using tessera_test::processes_with;
using tessera_test::read_text;
using tessera_test::seconds_since;
using tessera_test::spawn_logged;
using tessera_test::spawn_scheduler;
using tessera_test::wait_until;
using tessera_test::worker_argv;

// The worker pids by name, from the scheduler.
std::map<std::string, int> worker_pids(Client& client) {
  std::map<std::string, int> out;
  for (const auto& w : client.scheduler_info().workers) out[w.name] = w.pid;
  return out;
}

std::map<std::string, std::string> worker_addresses(Client& client) {
  std::map<std::string, std::string> out;
  for (const auto& w : client.scheduler_info().workers) out[w.name] = w.address;
  return out;
}

// The pid of the process that ran a task on the worker named `name`.
int pid_on(Client& client, const std::string& name) {
  SubmitOptions o;
  o.annotations = Annotations{};
  o.annotations->workers = {name};
  return client.submit_with(o, "nanny_plugin.pid", 0).result_as<int>(20s);
}

// A worker process named `name` (under a nanny unless `extra` says --no-nanny), logging to `log`.
pid_t spawn_named_worker(Children& kids, const tessera_test::NannyBinaries& bins, const std::string& sfile,
                         const std::string& token, const std::string& name, const std::filesystem::path& log,
                         std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--name", name, "--memory-limit", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return spawn_logged(kids, worker_argv(bins, sfile, token, args), log);
}

// SIGTERM to each nanny, then to the scheduler: each must exit 0.
void stop_cleanly(Children& kids, std::initializer_list<pid_t> nannies, pid_t sched) {
  for (pid_t n : nannies) {
    ::kill(n, SIGTERM);
    expect_exit_zero(kids, n, "tessera-worker (nanny)");
  }
  ::kill(sched, SIGTERM);
  expect_exit_zero(kids, sched, "tessera-scheduler");
}

// Continues a stopped process when the test ends, however it ends: a stopped worker's watchdog
// cannot end it when its nanny is killed.
struct ContinueOnExit {
  pid_t pid = 0;
  ~ContinueOnExit() {
    if (pid > 0) ::kill(pid, SIGCONT);
  }
};

void expect_restart_cancelled(const Future& f, const std::string& what) {
  EXPECT_EQ(f.status(), FutureStatus::Cancelled) << what;
  try {
    f.result(10s);
    ADD_FAILURE() << what << ": result() of a future from before the restart returned";
  } catch (const CancelledError& e) {
    EXPECT_NE(std::string(e.what()).find("restart"), std::string::npos) << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a CancelledError: " << e.what();
  }
}

TEST(Restart, NannyWorkersComeBackAsNewProcessesAndEveryFutureIsCancelled) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "restart-token";
  const auto log0 = dir.path() / "w0.log", log1 = dir.path() / "w1.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny0 = spawn_named_worker(kids, bins, sfile, token, "w0", log0);
    pid_t nanny1 = spawn_named_worker(kids, bins, sfile, token, "w1", log1);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    auto other = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s)) << read_text(log0) << read_text(log1);
    // From tasks: each worker told its nanny it registered (see nanny_test.cpp).
    const int old0 = pid_on(*client, "w0"), old1 = pid_on(*client, "w1");
    ASSERT_EQ(parent_of(old0), nanny0);
    ASSERT_EQ(parent_of(old1), nanny1);
    const auto old_addresses = worker_addresses(*client);

    const Array x = arange(0, 64, 1, 8, DType::Float64);
    const Array xp = (x * 2).persist(*client);
    Future done = client->submit("nanny_plugin.pid", 0);
    ASSERT_GT(done.result_as<int>(20s), 0);
    Future others = other->submit("nanny_plugin.pid", 1);
    ASSERT_GT(others.result_as<int>(20s), 0);
    std::atomic<int> callbacks{0};
    // A future still pending when the restart comes: its done callback fires, cancelled.
    Future pending = client->submit("nanny_plugin.sleep", 30);
    pending.add_done_callback([&](const Future& f) {
      if (f.status() == FutureStatus::Cancelled) ++callbacks;
    });
    ASSERT_GT(client->scheduler_info().tasks, 0u);

    const auto t0 = Clock::now();
    const RestartReport report = client->restart(60s);
    const double took = seconds_since(t0);
    EXPECT_EQ(report.workers, 2u);
    EXPECT_TRUE(report.closed.empty());
    std::set<std::string> restarted(report.restarted.begin(), report.restarted.end());
    EXPECT_EQ(restarted, (std::set<std::string>{old_addresses.at("w0"), old_addresses.at("w1")}));
    EXPECT_EQ(client->scheduler_info().tasks, 0u) << "every task forgotten";
    EXPECT_LT(took, 20.0) << "a restart asks, it does not wait out back-offs or a running task's end";
    std::cerr << "restart of 2 workers (one running a 30 s task) took " << took << " s\n";

    // Everything from before is cancelled, for every client, with the reason.
    expect_restart_cancelled(done, "a finished future");
    expect_restart_cancelled(others, "another client's future");
    expect_restart_cancelled(pending, "a pending future");
    EXPECT_TRUE(wait_until([&] { return callbacks.load() == 1; }, 5)) << "the pending future's done callback";
    try {
      (void)xp.sum().compute(*client);
      ADD_FAILURE() << "an array persisted before the restart still computed";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("restart"), std::string::npos) << e.what();
    }

    // New processes, children of the same nannies, and a cluster that computes.
    const auto info = client->scheduler_info();
    EXPECT_EQ(info.workers.size(), 2u);
    const auto pids = worker_pids(*client);
    ASSERT_EQ(pids.size(), 2u);
    EXPECT_NE(pids.at("w0"), old0);
    EXPECT_NE(pids.at("w1"), old1);
    EXPECT_EQ(parent_of(pids.at("w0")), nanny0);
    EXPECT_EQ(parent_of(pids.at("w1")), nanny1);
    EXPECT_FALSE(tessera_test::process_alive(old0));
    EXPECT_FALSE(tessera_test::process_alive(old1));
    EXPECT_EQ(pid_on(*client, "w0"), pids.at("w0"));
    EXPECT_DOUBLE_EQ((x * 2).sum().compute(*client).item<double>(), 2.0 * 63 * 64 / 2);
    EXPECT_DOUBLE_EQ((x * 2).persist(*client).sum().compute(*client).item<double>(), 2.0 * 63 * 64 / 2)
        << "the same keys persisted again";
    EXPECT_EQ(other->submit("nanny_plugin.pid", 2).result_as<int>(20s) > 0, true) << "the other client goes on";
    for (const auto& log : {log0, log1}) {
      const std::string text = read_text(log);
      EXPECT_NE(text.find("restarted on request"), std::string::npos) << text;
      EXPECT_EQ(text.find("restarting it in"), std::string::npos) << "not a death with a back-off\n" << text;
    }
    other->close();
    client->close();
    stop_cleanly(kids, {nanny0, nanny1}, sched);
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(Restart, SubmitsDuringARestartFinishOrAreCancelledNeverHang) {
  // Two threads submit and wait while the cluster restarts twice: each future finishes or is
  // cancelled for the restart; none waits out its 30 s timeout or fails otherwise.
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "busy-token";
  const auto log0 = dir.path() / "w0.log", log1 = dir.path() / "w1.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny0 = spawn_named_worker(kids, bins, sfile, token, "w0", log0);
    pid_t nanny1 = spawn_named_worker(kids, bins, sfile, token, "w1", log1);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s));
    pid_on(*client, "w0");
    pid_on(*client, "w1");
    std::atomic<bool> stop{false};
    std::atomic<int> finished{0}, cancelled{0};
    std::mutex mu;
    std::vector<std::string> failures;
    auto submitter = [&](int seed) {
      for (int i = 0; !stop; ++i) {
        try {
          Future f = client->submit("nanny_plugin.pid", seed * 100000 + i);
          if (f.result_as<int>(30s) > 0) ++finished;
        } catch (const CancelledError& e) {
          if (std::string(e.what()).find("restart") != std::string::npos) ++cancelled;
          else {
            std::lock_guard lock(mu);
            failures.push_back(e.what());
          }
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          failures.push_back(e.what());
        }
      }
    };
    std::thread a(submitter, 1), b(submitter, 2);
    std::this_thread::sleep_for(300ms);
    for (int round = 0; round < 2; ++round) {
      EXPECT_NO_THROW(client->restart(30s));
      std::this_thread::sleep_for(300ms);
    }
    stop = true;
    a.join();
    b.join();
    EXPECT_TRUE(failures.empty()) << failures.size() << " failed, the first: " << (failures.empty() ? std::string() : failures.front());
    EXPECT_GT(finished.load(), 0);
    std::cerr << finished << " finished, " << cancelled << " cancelled by the restarts\n";
    EXPECT_EQ(client->scheduler_info().workers.size(), 2u);
    client->close();
    stop_cleanly(kids, {nanny0, nanny1}, sched);
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(Restart, AWorkerWithoutANannyIsClosedAndReported) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "no-nanny-token";
  const auto log0 = dir.path() / "w0.log", log1 = dir.path() / "w1.log", log2 = dir.path() / "w2.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny0 = spawn_named_worker(kids, bins, sfile, token, "w0", log0);
    pid_t bare1 = spawn_named_worker(kids, bins, sfile, token, "w1", log1, {"--no-nanny"});
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s)) << read_text(log0) << read_text(log1);
    pid_on(*client, "w0");
    EXPECT_EQ(client->scheduler_info().workers.size(), 2u);
    for (const auto& w : client->scheduler_info().workers)
      EXPECT_EQ(w.extra.count("nanny"), w.name == "w0" ? 1u : 0u) << w.name << ": scheduler_info shows the nanny";

    // Waiting for as many workers as before: w1 never comes back, and the error says why.
    const auto t0 = Clock::now();
    try {
      client->restart(4s);
      ADD_FAILURE() << "restart() waited for a worker without a nanny and returned";
    } catch (const RestartError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("1 of 2 workers are back"), std::string::npos) << what;
      EXPECT_NE(what.find("no nanny"), std::string::npos) << what;
      EXPECT_NE(what.find("w1"), std::string::npos) << what;
      EXPECT_EQ(what.find("w0"), std::string::npos) << "w0 came back\n" << what;
    }
    EXPECT_GE(seconds_since(t0), 3.5);
    EXPECT_LT(seconds_since(t0), 9.0) << "answered at its timeout";
    expect_exit_zero(kids, bare1, "tessera-worker --no-nanny, closed by the restart");
    ASSERT_TRUE(client->wait_for_workers(1, 20s));

    // Without waiting: a report of what was closed and what restarted.
    pid_t bare2 = spawn_named_worker(kids, bins, sfile, token, "w2", log2, {"--no-nanny"});
    ASSERT_TRUE(client->wait_for_workers(2, 20s)) << read_text(log2);
    const auto before = worker_addresses(*client);
    const RestartReport report = client->restart(20s, /*wait_for_workers=*/false);
    EXPECT_EQ(report.closed, std::vector<std::string>{before.at("w2")});
    EXPECT_EQ(report.restarted, std::vector<std::string>{before.at("w0")});
    expect_exit_zero(kids, bare2, "tessera-worker --no-nanny, closed by the restart");
    ASSERT_TRUE(client->wait_for_workers(1, 20s));
    EXPECT_GT(pid_on(*client, "w0"), 0);
    client->close();
    stop_cleanly(kids, {nanny0}, sched);
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

// A stopped worker that no nanny can kill (here --no-nanny: nothing kills it) makes restart()
// fail at its timeout, naming it. With a nanny it is killed and restarted (the next test).
TEST(Restart, AStoppedWorkerWithoutANannyMakesItFailInTimeNamingIt) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "stopped-token";
  const auto log0 = dir.path() / "w0.log", log1 = dir.path() / "w1.log";
  {
    Children kids;
    ContinueOnExit resume;  // after kids in the declaration: continued before they are killed
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny0 = spawn_named_worker(kids, bins, sfile, token, "w0", log0);
    pid_t bare1 = spawn_named_worker(kids, bins, sfile, token, "w1", log1, {"--no-nanny"});
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s));
    pid_on(*client, "w0");
    const int stopped = pid_on(*client, "w1");
    ASSERT_EQ(stopped, bare1);
    Future f = client->submit("nanny_plugin.pid", 0);
    ASSERT_GT(f.result_as<int>(20s), 0);

    resume.pid = stopped;
    ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
    const auto t0 = Clock::now();
    try {
      client->restart(3s);
      ADD_FAILURE() << "restart() with a stopped worker returned";
    } catch (const RestartError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("did not leave"), std::string::npos) << what;
      EXPECT_NE(what.find("w1"), std::string::npos) << what;
      EXPECT_NE(what.find("pid " + std::to_string(stopped)), std::string::npos) << what;
    }
    const double took = seconds_since(t0);
    EXPECT_GE(took, 2.9);
    EXPECT_LT(took, 6.0) << "the error comes at the timeout, not after";
    std::cerr << "restart with a stopped worker failed after " << took << " s (timeout 3 s)\n";
    expect_restart_cancelled(f, "a future from before the failed restart");

    // Continued, it reads the close it was sent and exits 0, or, having seen its connection
    // closed first, counts the scheduler as lost and registers again; w0 came back either way.
    ::kill(stopped, SIGCONT);
    resume.pid = 0;
    EXPECT_TRUE(client->wait_for_workers(1, 30s));
    EXPECT_GT(pid_on(*client, "w0"), 0);
    client->close();
    ::kill(bare1, SIGTERM);  // if it is still running (it may be exiting already: then SIGTERM's default)
    const auto st = kids.wait_exit(bare1, 8);
    ASSERT_TRUE(st.has_value()) << "the continued --no-nanny worker did not end";
    EXPECT_TRUE((WIFEXITED(*st) && WEXITSTATUS(*st) == 0) || (WIFSIGNALED(*st) && WTERMSIG(*st) == SIGTERM))
        << describe_status(*st);
    stop_cleanly(kids, {nanny0}, sched);
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 5));
}

// A nanny'd worker too stopped to read the restart request: the scheduler asks its nanny
// (through the nanny's own connection) to kill it past the grace period, the nanny starts it
// again, and restart() succeeds within its timeout (before: RestartError naming it).
TEST(Restart, AStoppedWorkerIsKilledByItsNannyAndComesBack) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "killed-token";
  const auto log0 = dir.path() / "w0.log", log1 = dir.path() / "w1.log";
  {
    Children kids;
    ContinueOnExit resume;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny0 = spawn_named_worker(kids, bins, sfile, token, "w0", log0);
    pid_t nanny1 = spawn_named_worker(kids, bins, sfile, token, "w1", log1);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(2, 20s));
    const int old0 = pid_on(*client, "w0");
    const int stopped = pid_on(*client, "w1");
    ASSERT_EQ(parent_of(stopped), nanny1);
    const Array x = arange(0, 64, 1, 8, DType::Float64);
    Future f = client->submit("nanny_plugin.pid", 0);
    ASSERT_GT(f.result_as<int>(20s), 0);

    resume.pid = stopped;
    ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
    const auto t0 = Clock::now();
    RestartReport report;
    try {
      report = client->restart(20s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "restart() with a stopped worker under a nanny failed: " << e.what() << "\n" << read_text(log1);
    }
    const double took = seconds_since(t0);
    std::cerr << "restart with a stopped worker, killed by its nanny, took " << took << " s\n";
    EXPECT_LT(took, 10.0) << "killed after the grace period (3 s), not at the timeout";
    EXPECT_GE(took, 2.5) << "a worker is given its grace period first";
    EXPECT_EQ(report.workers, 2u);
    resume.pid = 0;
    EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(stopped); }, 3))
        << "the stopped worker is gone (killed and reaped by its nanny)";
    expect_restart_cancelled(f, "a future from before the restart");

    const auto pids = worker_pids(*client);
    ASSERT_EQ(pids.size(), 2u);
    EXPECT_NE(pids.at("w1"), stopped);
    EXPECT_NE(pids.at("w0"), old0);
    EXPECT_EQ(parent_of(pids.at("w1")), nanny1) << "started again by the same nanny";
    EXPECT_EQ(pid_on(*client, "w1"), pids.at("w1"));
    EXPECT_DOUBLE_EQ((x * 2).sum().compute(*client).item<double>(), 2.0 * 63 * 64 / 2);
    const std::string text = read_text(log1);
    EXPECT_NE(text.find("killed for a restart"), std::string::npos) << text;
    EXPECT_EQ(text.find("restarting it in"), std::string::npos) << "not a death with a back-off\n" << text;
    client->close();
    stop_cleanly(kids, {nanny0, nanny1}, sched);
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 5));
}

// The nanny's link survives its scheduler: with the scheduler SIGKILLed and started again (a new
// port, in the same scheduler file), the nanny dials again and registers with the new one, which
// can then have it kill a stopped worker for a restart.
TEST(Restart, ANannyReachesASchedulerStartedAgainAndStillKillsAStoppedWorker) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "again-token";
  const auto log1 = dir.path() / "w1.log";
  {
    Children kids;
    ContinueOnExit resume;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny1 = spawn_named_worker(kids, bins, sfile, token, "w1", log1, {"--death-timeout", "30"});
    {
      auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
      ASSERT_TRUE(client->wait_for_workers(1, 20s)) << read_text(log1);
    }
    ::kill(sched, SIGKILL);
    ASSERT_TRUE(kids.wait_exit(sched, 5).has_value());
    std::filesystem::remove(sfile);  // the killed scheduler's address
    std::this_thread::sleep_for(500ms);
    pid_t sched2 = spawn_scheduler(kids, bins.scheduler, sfile, token);
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10));
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 20s)) << read_text(log1);
    const int stopped = pid_on(*client, "w1");
    ASSERT_EQ(parent_of(stopped), nanny1);

    resume.pid = stopped;
    ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
    const auto t0 = Clock::now();
    try {
      EXPECT_EQ(client->restart(20s).workers, 1u);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "restart() after the scheduler came back: " << e.what() << "\n" << read_text(log1);
    }
    EXPECT_LT(seconds_since(t0), 10.0);
    resume.pid = 0;
    EXPECT_TRUE(wait_until([&] { return !tessera_test::process_alive(stopped); }, 3));
    const int now_pid = pid_on(*client, "w1");
    EXPECT_NE(now_pid, stopped);
    EXPECT_EQ(parent_of(now_pid), nanny1);
    client->close();
    stop_cleanly(kids, {nanny1}, sched2);
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 5));
}

// A LocalCluster with processes is its workers' nanny for restart(): each worker exits 4 and
// the cluster starts it again at once, same name and options (before, it was closed and not
// started again, and restart() failed at its timeout: "0 of 2 workers are back").
TEST(Restart, AProcessLocalClusterStartsItsWorkersAgain) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  LocalClusterOptions o;
  o.processes = true;
  o.n_workers = 2;
  o.threads_per_worker = 1;
  o.timeout = 20;
  o.heartbeat_interval = 0.2;
  o.preload = {bins.plugin};
  o.log_level = "error";
  std::vector<int> old;
  {
    LocalCluster cluster(o);
    Client client(cluster, client_options(cluster.token(), 10));
    ASSERT_TRUE(client.wait_for_workers(2, 20s));
    old = cluster.worker_pids();
    ASSERT_EQ(old.size(), 2u);
    const std::set<int> old_set(old.begin(), old.end());
    EXPECT_TRUE(old_set.count(pid_on(client, "worker-0")));
    const Array x = arange(0, 64, 1, 8, DType::Float64);
    const Array xp = (x * 2).persist(client);
    Future f = client.submit("nanny_plugin.pid", 0);
    ASSERT_GT(f.result_as<int>(20s), 0);

    const auto t0 = Clock::now();
    RestartReport report;
    ASSERT_NO_THROW(report = client.restart(20s));
    const double took = seconds_since(t0);
    std::cerr << "restart of a process LocalCluster's 2 workers took " << took << " s\n";
    EXPECT_LT(took, 10.0);
    EXPECT_EQ(report.workers, 2u);
    EXPECT_EQ(report.restarted.size(), 2u);
    EXPECT_TRUE(report.closed.empty());

    expect_restart_cancelled(f, "a future from before the restart");
    try {
      (void)xp.sum().compute(client);
      ADD_FAILURE() << "an array persisted before the restart still computed";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("restart"), std::string::npos) << e.what();
    }
    const auto now_pids = cluster.worker_pids();
    ASSERT_EQ(now_pids.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_NE(now_pids[i], old[i]) << "worker " << i << " is a new process";
      EXPECT_FALSE(tessera_test::process_alive(old[i])) << "old worker " << i;
      EXPECT_EQ(parent_of(now_pids[i]), ::getpid()) << "started again by the cluster";
    }
    const auto pids = worker_pids(client);
    ASSERT_EQ(pids.size(), 2u) << "two workers back, under the same names";
    EXPECT_EQ(pids.at("worker-0"), now_pids[0]);
    EXPECT_EQ(pids.at("worker-1"), now_pids[1]);
    EXPECT_EQ(pid_on(client, "worker-1"), now_pids[1]);
    EXPECT_DOUBLE_EQ((x * 2).sum().compute(client).item<double>(), 2.0 * 63 * 64 / 2);
    client.close();
  }
  for (int pid : old) EXPECT_FALSE(tessera_test::process_alive(pid));
}

TEST(Restart, AnInProcessLocalClusterIsRefusedWithNothingChanged) {
  LocalClusterOptions o;
  o.n_workers = 2;
  o.processes = false;
  LocalCluster cluster(o);
  Client client(cluster, client_options(cluster.token(), 10));
  Future f = client.submit("process_test.pid");
  ASSERT_EQ(f.result_as<int>(20s), ::getpid());
  const auto t0 = Clock::now();
  try {
    client.restart(30s);
    ADD_FAILURE() << "restart() of thread workers returned";
  } catch (const RestartError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in the scheduler's process"), std::string::npos) << what;
    EXPECT_NE(what.find("worker-0"), std::string::npos) << what;
    EXPECT_NE(what.find("Nothing was restarted"), std::string::npos) << what;
  }
  EXPECT_LT(seconds_since(t0), 5.0) << "refused at once, not at the timeout";
  EXPECT_EQ(f.status(), FutureStatus::Finished);
  EXPECT_EQ(f.result_as<int>(20s), ::getpid()) << "nothing was forgotten";
  EXPECT_EQ(client.scheduler_info().workers.size(), 2u);
}

}  // namespace
