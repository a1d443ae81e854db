// The nanny (src/distributed/nanny.cpp, docs/nanny.md) and workers that lose their scheduler.
// NannyPolicy runs the Nanny class in this process over small bash children (restart, back-off
// cap, start failures, the grace period, the memory threshold); NannyBinaries and
// WorkerDeathTimeout start tessera-scheduler and tessera-worker, with a task plugin
// (tests/plugins/nanny_tasks.cpp) whose tasks crash or bloat their worker. Every test checks
// that no process it started is left behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/nanny.hpp"
#include "nanny_binaries.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::child_env;
using tessera_test::client_options;
using tessera_test::Clock;
using tessera_test::expect_exit_zero;
using tessera_test::process_alive;
using tessera_test::processes_with;
using tessera_test::read_text;
using tessera_test::seconds_since;
using tessera_test::spawn_scheduler;
using tessera_test::wait_until;
using tessera_test::only_worker_pid;
using tessera_test::parent_of;
using tessera_test::spawn_logged;
using tessera_test::worker_argv;
using Binaries = tessera_test::NannyBinaries;

// The pids a child script appended to `file`, one a line.
std::vector<int> pids_in(const std::filesystem::path& file) {
  std::vector<int> out;
  std::ifstream in(file);
  for (int p; in >> p;) out.push_back(p);
  return out;
}

// A bash child: writes its pid to `pids`, then runs `body`. `ready`: tells the nanny it registered.
NannyChild bash_child(const std::filesystem::path& pids, const std::string& body, bool ready = true) {
  NannyChild c;
  c.name = "script";
  std::string script = "echo $$ >> '" + pids.string() + "'; ";
  if (ready) script += "printf x >&\"$" + std::string(kNannyReadyFdEnv) + "\"; ";
  c.argv = {"/bin/bash", "-c", script + body};
  return c;
}

NannyOptions fast_options() {
  NannyOptions o;
  o.program = "nanny-test";
  o.first_backoff = 0.01;
  o.max_backoff = 0.05;
  o.stop_grace = 1;
  return o;
}

// Runs a nanny on a thread; its result within `seconds`, or nullopt (then it is stopped).
struct NannyRun {
  Nanny nanny;
  std::future<int> result;
  NannyRun(NannyOptions o, std::vector<NannyChild> c) : nanny(std::move(o), std::move(c)) {
    result = std::async(std::launch::async, [this] { return nanny.run(); });
  }
  std::optional<int> get(double seconds) {
    if (result.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) return std::nullopt;
    return result.get();
  }
  ~NannyRun() {
    if (result.valid()) {
      nanny.stop(SIGKILL);
      result.wait();
    }
  }
};

TEST(NannyPolicy, SignalNamesAndResidentMemory) {
  EXPECT_NE(signal_description(SIGSEGV).find("SIGSEGV"), std::string::npos) << signal_description(SIGSEGV);
  EXPECT_NE(signal_description(SIGKILL).find("SIGKILL"), std::string::npos);
  EXPECT_GT(process_rss(::getpid()), std::size_t{1} << 20);
  EXPECT_EQ(process_rss(-1), 0u);
}

TEST(NannyPolicy, RestartsAChildKilledBySignalThenStopsOnSigterm) {
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  NannyRun run(fast_options(), {bash_child(pids, "exec sleep 30")});
  ASSERT_TRUE(wait_until([&] { return pids_in(pids).size() == 1; }, 5));
  const int first = pids_in(pids)[0];
  ASSERT_TRUE(wait_until([&] { return run.nanny.pids()[0] == first; }, 5));
  ::kill(first, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return pids_in(pids).size() == 2; }, 5)) << "a killed child must be started again";
  const int second = pids_in(pids)[1];
  EXPECT_NE(second, first);
  EXPECT_EQ(run.nanny.restarts(), 1);
  ASSERT_TRUE(wait_until([&] { return run.nanny.pids()[0] == second; }, 5));
  run.nanny.stop(SIGTERM);
  auto rc = run.get(5);
  ASSERT_TRUE(rc.has_value()) << "the nanny did not stop";
  EXPECT_EQ(*rc, 0) << "a child that died of the signal passed on stopped cleanly";
  EXPECT_FALSE(process_alive(second));
  EXPECT_EQ(pids_in(pids).size(), 2u) << "nothing is restarted once stopping";
}

TEST(NannyPolicy, GivesUpPastTheRestartCap) {
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  auto o = fast_options();
  o.max_restarts_per_minute = 3;
  NannyRun run(o, {bash_child(pids, "kill -SEGV $$")});
  auto rc = run.get(10);
  ASSERT_TRUE(rc.has_value()) << "a child that always crashes must be given up";
  EXPECT_EQ(*rc, 1);
  EXPECT_EQ(run.nanny.restarts(), 3);
  EXPECT_EQ(pids_in(pids).size(), 4u) << "the first life and 3 restarts";
}

TEST(NannyPolicy, BacksOffBetweenRestarts) {
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  auto o = fast_options();
  o.max_restarts_per_minute = 4;
  o.first_backoff = 0.1;
  o.max_backoff = 10;
  const auto t0 = Clock::now();
  NannyRun run(o, {bash_child(pids, "exit 7")});
  auto rc = run.get(10);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 1);
  EXPECT_EQ(pids_in(pids).size(), 5u);
  EXPECT_GE(seconds_since(t0), 0.1 + 0.2 + 0.4 + 0.8 - 0.05) << "the delays double: 0.1, 0.2, 0.4, 0.8 s";
}

TEST(NannyPolicy, NotRestarted_StartFailureSchedulerGoneAndCleanExit) {
  tessera_test::TempDir dir;
  {
    const auto pids = dir.path() / "a";
    NannyRun run(fast_options(), {bash_child(pids, "exit 1", /*ready=*/false)});
    auto rc = run.get(5);
    ASSERT_TRUE(rc.has_value());
    EXPECT_EQ(*rc, 1) << "a child that dies before it registered failed to start";
    EXPECT_EQ(run.nanny.restarts(), 0);
    EXPECT_EQ(pids_in(pids).size(), 1u);
  }
  {
    const auto pids = dir.path() / "b";
    NannyRun run(fast_options(), {bash_child(pids, "exit " + std::to_string(kExitSchedulerGone))});
    auto rc = run.get(5);
    ASSERT_TRUE(rc.has_value());
    EXPECT_EQ(*rc, kExitSchedulerGone) << "a worker that gave up on its scheduler is not restarted";
    EXPECT_EQ(run.nanny.restarts(), 0);
  }
  {
    const auto pids = dir.path() / "c";
    NannyRun run(fast_options(), {bash_child(pids, "exit 0"), bash_child(pids, "exit 0")});
    auto rc = run.get(5);
    ASSERT_TRUE(rc.has_value());
    EXPECT_EQ(*rc, 0);
    EXPECT_EQ(run.nanny.restarts(), 0);
    EXPECT_EQ(pids_in(pids).size(), 2u);
  }
}

TEST(NannyPolicy, ARestartOnRequestIsAtOnceAndOutsideTheCap) {
  // Exit 4 (Client::restart asked the worker to restart): started again with no back-off, and
  // not counted against the cap: with a 5 s back-off and a cap of 1, two such exits in a row
  // still give three lives within a second.
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  auto o = fast_options();
  o.first_backoff = 5;
  o.max_backoff = 5;
  o.max_restarts_per_minute = 1;
  const auto t0 = Clock::now();
  NannyRun run(o, {bash_child(pids, "if [ $(wc -l < '" + pids.string() + "') -lt 3 ]; then exit " +
                                        std::to_string(kExitRestartRequested) + "; fi; exec sleep 30")});
  ASSERT_TRUE(wait_until([&] { return pids_in(pids).size() == 3; }, 5));
  EXPECT_LT(seconds_since(t0), 2.0) << "no back-off for a restart on request";
  EXPECT_EQ(run.nanny.requested_restarts(), 2);
  EXPECT_EQ(run.nanny.restarts(), 0) << "not counted as deaths";
  const int third = pids_in(pids)[2];
  ASSERT_TRUE(wait_until([&] { return run.nanny.pids()[0] == third; }, 5));
  run.nanny.stop(SIGTERM);
  EXPECT_EQ(run.get(5), std::optional<int>(0));
  for (int p : pids_in(pids)) EXPECT_FALSE(process_alive(p)) << p;
}

TEST(NannyPolicy, WithoutRestartsACrashEndsTheChild) {
  // `--nworkers N --no-nanny`: the parent only starts, passes signals on and waits.
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  auto o = fast_options();
  o.restart = false;
  NannyRun run(o, {bash_child(pids, "kill -SEGV $$")});
  auto rc = run.get(5);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 1);
  EXPECT_EQ(run.nanny.restarts(), 0);
  EXPECT_EQ(pids_in(pids).size(), 1u);
}

TEST(NannyPolicy, SigkillAfterTheGracePeriod) {
  // A child that ignores SIGTERM (inherited across exec) is killed once stop_grace passed.
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  NannyRun run(fast_options(), {bash_child(pids, "trap '' TERM; exec sleep 30")});
  ASSERT_TRUE(wait_until([&] { return run.nanny.pids()[0] > 0 && pids_in(pids).size() == 1; }, 5));
  const int child = pids_in(pids)[0];
  ASSERT_TRUE(wait_until([&] { return read_text("/proc/" + std::to_string(child) + "/comm") == "sleep\n"; }, 5))
      << "past the trap: exec'd sleep";
  const auto t0 = Clock::now();
  run.nanny.stop(SIGTERM);
  auto rc = run.get(5);
  ASSERT_TRUE(rc.has_value()) << "the nanny must not wait for ever";
  EXPECT_EQ(*rc, 1) << "a child that had to be killed did not stop cleanly";
  EXPECT_GE(seconds_since(t0), 0.9);
  EXPECT_FALSE(process_alive(child));
}

TEST(NannyPolicy, RestartsAChildPastTheMemoryThreshold) {
  // Any process holds more than 0.95 of 4 KiB: each life is killed for memory, then given up.
  tessera_test::TempDir dir;
  const auto pids = dir.path() / "pids";
  auto c = bash_child(pids, "exec sleep 30");
  c.memory_limit = 4096;
  auto o = fast_options();
  o.max_restarts_per_minute = 2;
  o.memory_poll_interval = 0.05;
  NannyRun run(o, {c});
  auto rc = run.get(10);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 1);
  EXPECT_EQ(run.nanny.restarts(), 2);
  for (int p : pids_in(pids)) EXPECT_FALSE(process_alive(p)) << p;

  // With no limit (0) nothing is killed.
  const auto pids2 = dir.path() / "pids2";
  auto c2 = bash_child(pids2, "exec sleep 30");
  NannyRun run2(o, {c2});
  ASSERT_TRUE(wait_until([&] { return run2.nanny.pids()[0] > 0; }, 5));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(run2.nanny.restarts(), 0);
  run2.nanny.stop(SIGTERM);
  EXPECT_EQ(run2.get(5), std::optional<int>(0));
}

// ---- the binaries -----------------------------------------------------------------------------------

TEST(NannyBinaries, PoisonTaskErrsAfterAllowedFailuresAndTheWorkerComesBack) {
  // Regression (issue 19): a segfaulting task used to leave the cluster with no worker at all.
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "poison-token";
  const auto log = dir.path() / "worker.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny = spawn_logged(kids, worker_argv(bins, sfile, token, {"--memory-limit", "0", "--death-timeout", "10"}), log);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
    const int first = only_worker_pid(*client);
    ASSERT_GT(first, 0);
    EXPECT_NE(first, nanny) << "by default the worker runs in a child of tessera-worker";
    EXPECT_EQ(parent_of(first), nanny);

    Future poison = client->submit("nanny_plugin.segv", 1);
    try {
      poison.result(60s);
      ADD_FAILURE() << "a task that kills its worker must err";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("KilledWorker"), std::string::npos) << e.what();
    }
    // The nanny restarted the worker each time: the cluster still computes.
    ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
    const int now = client->submit("nanny_plugin.pid", 0).result_as<int>(20s);
    EXPECT_NE(now, first);
    EXPECT_EQ(parent_of(now), nanny);
    EXPECT_TRUE(kids.running(nanny));
    const std::string text = read_text(log);
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer catches the SIGSEGV, reports it and aborts (ASAN_OPTIONS abort_on_error).
    EXPECT_TRUE(text.find("died of SIGSEGV") != std::string::npos || text.find("died of SIGABRT") != std::string::npos)
        << text;
#else
    EXPECT_NE(text.find("died of SIGSEGV"), std::string::npos) << text;
#endif
    EXPECT_NE(text.find("restarting it in"), std::string::npos) << text;
    client->close();
    client.reset();

    ::kill(nanny, SIGTERM);
    expect_exit_zero(kids, nanny, "tessera-worker (nanny) after SIGTERM");
    EXPECT_TRUE(wait_until([&] { return !process_alive(now); }, 3)) << "the worker must stop with its nanny";
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(NannyBinaries, SigkilledWorkerIsRestartedAndAStoppedOneKilledOnStop) {
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "sigkill-token";
  const auto log = dir.path() / "worker.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny = spawn_logged(kids, worker_argv(bins, sfile, token, {"--memory-limit", "0", "--death-timeout", "10"}), log);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
    // The pid from a task, not from the scheduler's list: the scheduler lists the worker as soon
    // as it sends the registration reply, but the worker tells its nanny only once it has read
    // that reply (and before it runs any task). Killed in between (CI under AddressSanitizer
    // did), it counts as a worker that never started, and is rightly not restarted.
    const int first = client->submit("nanny_plugin.pid", 0).result_as<int>(20s);
    ASSERT_GT(first, 0);
    ASSERT_EQ(first, only_worker_pid(*client));
    ::kill(first, SIGKILL);
    int second = 0;
    ASSERT_TRUE(wait_until(
        [&] {
          second = only_worker_pid(*client);
          return second > 0 && second != first;
        },
        15, 50))
        << read_text(log);
    EXPECT_EQ(parent_of(second), nanny);
    EXPECT_NE(read_text(log).find("died of SIGKILL"), std::string::npos) << read_text(log);
    EXPECT_EQ(client->submit("nanny_plugin.pid", 0).result_as<int>(20s), second);
    client->close();
    client.reset();

    // A worker that cannot take the signal (stopped) is killed after the grace period.
    ::kill(second, SIGSTOP);
    const auto t0 = Clock::now();
    ::kill(nanny, SIGTERM);
    auto st = kids.wait_exit(nanny, 15);
    ASSERT_TRUE(st.has_value()) << "the nanny must not wait for a stopped worker for ever";
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 1) << tessera_test::describe_status(*st);
    EXPECT_GE(seconds_since(t0), 4.0) << "SIGKILL only after the grace period";
    EXPECT_TRUE(wait_until([&] { return !process_alive(second); }, 3));
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(NannyBinaries, WorkerPastTheMemoryTerminateFractionIsRestarted) {
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "memory-token";
  const auto log = dir.path() / "worker.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny = spawn_logged(
        kids, worker_argv(bins, sfile, token, {"--memory-limit", "300MB", "--memory-terminate-fraction", "0.9"}), log);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
    const int first = only_worker_pid(*client);
    Future hog = client->submit("nanny_plugin.hog", 400);
    EXPECT_THROW(hog.result(90s), std::exception) << "a task past the threshold each time must err (KilledWorker)";
    const std::string text = read_text(log);
    EXPECT_NE(text.find("passed 0.9 of its memory limit"), std::string::npos) << text;
    ASSERT_TRUE(client->wait_for_workers(1, 15s)) << text;
    const int now = client->submit("nanny_plugin.pid", 0).result_as<int>(20s);
    EXPECT_NE(now, first);
    EXPECT_EQ(parent_of(now), nanny);
    client->close();
    client.reset();
    ::kill(nanny, SIGTERM);
    expect_exit_zero(kids, nanny, "tessera-worker (nanny)");
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(NannyBinaries, ApplicationAsItsOwnWorkerRunsUnderANanny) {
  // `app --tessera-worker ADDRESS` (tessera::init): the nanny is the application, and so is its
  // worker (this test binary again, with its registered functions).
  LocalClusterOptions so;
  so.n_workers = 0;
  so.log_level = "error";
  LocalCluster cluster(so);
  const std::string address = cluster.scheduler_address();
  {
    Children kids;
    auto env = child_env();
    env["TESSERA_TOKEN"] = cluster.token();
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    pid_t nanny = kids.spawn({self, "--tessera-worker", address, "--name", "app", "--nthreads", "1", "--memory-limit",
                              "0", "--log-level", "error"},
                             env);
    Client client(cluster, client_options(cluster.token(), 10));
    ASSERT_TRUE(client.wait_for_workers(1, 20s));
    const int worker = only_worker_pid(client);
    EXPECT_NE(worker, nanny);
    EXPECT_EQ(parent_of(worker), nanny);
    EXPECT_EQ(client.submit("process_test.pid").result_as<int>(20s), worker);
    client.close();
    ::kill(nanny, SIGTERM);
    expect_exit_zero(kids, nanny, "app --tessera-worker (nanny)");
    EXPECT_TRUE(wait_until([&] { return !process_alive(worker); }, 3));
  }
  cluster.close();
  EXPECT_TRUE(wait_until([&] { return processes_with(address + " ").empty(); }, 3));
}

// ---- workers that lose the scheduler ----------------------------------------------------------------

TEST(WorkerDeathTimeout, ExitsNonZeroWhenTheSchedulerDoesNotComeBack) {
  // Regression (issue 19): a worker used to exit 0 at once when its scheduler died, so no
  // supervisor restarted it. Now it waits --death-timeout, then exits 3; its nanny with it.
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "gone-token";
  const auto log = dir.path() / "worker.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t nanny = spawn_logged(kids, worker_argv(bins, sfile, token, {"--memory-limit", "0", "--death-timeout", "2"}), log);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
    const int worker = only_worker_pid(*client);
    client.reset();
    ::kill(sched, SIGKILL);
    const auto t0 = Clock::now();
    auto st = kids.wait_exit(nanny, 20);
    ASSERT_TRUE(st.has_value()) << read_text(log);
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == kExitSchedulerGone)
        << tessera_test::describe_status(*st) << "\n" << read_text(log);
    EXPECT_GE(seconds_since(t0), 1.5) << "it waits --death-timeout first";
    EXPECT_NE(read_text(log).find("did not come back within 2 s"), std::string::npos) << read_text(log);
    EXPECT_FALSE(process_alive(worker));
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(WorkerDeathTimeout, ReconnectsToASchedulerStartedAgain) {
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "again-token";
  const auto log = dir.path() / "worker.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t worker = spawn_logged(
        kids, worker_argv(bins, sfile, token, {"--no-nanny", "--memory-limit", "0", "--death-timeout", "30"}), log);
    {
      auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
      ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
      EXPECT_EQ(only_worker_pid(*client), worker) << "--no-nanny: the worker is this process";
    }
    ::kill(sched, SIGKILL);
    ASSERT_TRUE(kids.wait_exit(sched, 5).has_value());
    std::filesystem::remove(sfile);  // the killed scheduler's address
    std::this_thread::sleep_for(500ms);
    EXPECT_TRUE(kids.running(worker)) << "a worker waits for its scheduler\n" << read_text(log);
    pid_t sched2 = spawn_scheduler(kids, bins.scheduler, sfile, token);
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10));
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 20s)) << read_text(log);
    EXPECT_EQ(only_worker_pid(*client), worker);
    EXPECT_EQ(client->submit("nanny_plugin.pid", 0).result_as<int>(20s), worker);
    client->close();
    client.reset();
    ::kill(worker, SIGTERM);
    expect_exit_zero(kids, worker, "tessera-worker");
    ::kill(sched2, SIGTERM);
    expect_exit_zero(kids, sched2, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

TEST(WorkerDeathTimeout, AStoppedSchedulerDoesNotHangWorkers) {
  // Regression (issue 19): with its scheduler SIGSTOPped a worker waited for ever. Now the
  // scheduler answering nothing for --death-timeout counts as lost, and the worker gives up.
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "stopped-token";
  const auto log = dir.path() / "worker.log";
  {
    Children kids;
    pid_t sched = spawn_scheduler(kids, bins.scheduler, sfile, token);
    pid_t worker = spawn_logged(
        kids, worker_argv(bins, sfile, token, {"--no-nanny", "--memory-limit", "0", "--death-timeout", "2"}), log);
    {
      auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
      ASSERT_TRUE(client->wait_for_workers(1, 15s)) << read_text(log);
      client->close();
    }
    ::kill(sched, SIGSTOP);
    auto st = kids.wait_exit(worker, 20);
    ::kill(sched, SIGCONT);
    ASSERT_TRUE(st.has_value()) << "the worker hangs on a stopped scheduler\n" << read_text(log);
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == kExitSchedulerGone)
        << tessera_test::describe_status(*st) << "\n" << read_text(log);
    EXPECT_NE(read_text(log).find("answered nothing for"), std::string::npos) << read_text(log);
    ::kill(sched, SIGTERM);
    expect_exit_zero(kids, sched, "tessera-scheduler");
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(dir.str()).empty(); }, 3));
}

}  // namespace
