// A client whose scheduler stops answering (SIGSTOP: the TCP connection stays open) or dies
// learns it within 15 s: its pending futures err and a result() without a timeout returns
// (issue 29, item 5; before, result() waited for ever on a stopped scheduler).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <string>

#include "cluster_fixture.hpp"
#include "nanny_binaries.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using tessera::distributed::Client;
using tessera_test::Children;
using Binaries = tessera_test::NannyBinaries;

int liveness_inc(int x) { return x + 1; }

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("client_liveness.inc", liveness_inc);

namespace {

// What result() of a task that no worker will run (the cluster has none) ends with, and after how
// long, once `stop` has been done to the scheduler; the scheduler is killed when 25 s pass first.
struct Ending {
  bool returned = false;
  double seconds = 0;
  std::string error;
};

template <typename Stop>
Ending result_after(Stop stop, double scheduler_timeout) {
  Binaries bins;
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "liveness-token";
  Children kids;
  pid_t sched = tessera_test::spawn_scheduler(kids, bins.scheduler, sfile, token);
  auto options = tessera_test::client_options(token, 10);
  options.scheduler_timeout = scheduler_timeout;
  auto client = Client::from_scheduler_file(sfile, options);
  auto f = client->submit("client_liveness.inc", 1);
  stop(sched);
  const auto start = tessera_test::Clock::now();
  auto waiting = std::async(std::launch::async, [&]() -> std::string {
    try {
      f.result();
      return "no error";
    } catch (const std::exception& e) {
      return e.what();
    }
  });
  Ending out;
  out.returned = waiting.wait_for(25s) == std::future_status::ready;
  out.seconds = tessera_test::seconds_since(start);
  if (!out.returned) {
    // Ends the wait the old way (the connection closes), so that the test can fail, not hang.
    ::kill(sched, SIGKILL);
    ::kill(sched, SIGCONT);
  }
  out.error = waiting.get();
  ::kill(sched, SIGCONT);
  ::kill(sched, SIGKILL);
  kids.wait_exit(sched, 5);
  return out;
}

TEST(ClientLiveness, AStoppedSchedulerEndsAResultWithoutTimeoutWithin15s) {
  Binaries bins;
  NEED_BINARIES(bins);
  Ending e = result_after([](pid_t s) { ::kill(s, SIGSTOP); }, 10);
  ASSERT_TRUE(e.returned) << "result() still waiting on a stopped scheduler after " << e.seconds << " s";
  EXPECT_LE(e.seconds, 15.0);
  EXPECT_GE(e.seconds, 8.0) << "given up before its 10 s";  // the timeout is what ended it
  EXPECT_NE(e.error.find("lost the scheduler"), std::string::npos) << e.error;
  EXPECT_NE(e.error.find("answered nothing for"), std::string::npos) << e.error;
}

TEST(ClientLiveness, AKilledSchedulerEndsAResultAtOnce) {
  Binaries bins;
  NEED_BINARIES(bins);
  Ending e = result_after([](pid_t s) { ::kill(s, SIGKILL); }, 10);
  ASSERT_TRUE(e.returned) << "result() still waiting on a killed scheduler after " << e.seconds << " s";
  EXPECT_LE(e.seconds, 5.0);  // the connection closes: no timeout to wait out
  EXPECT_NE(e.error.find("lost the scheduler"), std::string::npos) << e.error;
}

TEST(ClientLiveness, ABusyButAnsweringSchedulerIsNotGivenUp) {
  // A short timeout against a scheduler that answers: the probes keep the session, and the task
  // (no worker) stays pending rather than erring.
  Binaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "liveness-token";
  Children kids;
  pid_t sched = tessera_test::spawn_scheduler(kids, bins.scheduler, sfile, token);
  auto options = tessera_test::client_options(token, 10);
  options.scheduler_timeout = 2.5;
  auto client = Client::from_scheduler_file(sfile, options);
  auto f = client->submit("client_liveness.inc", 1);
  EXPECT_FALSE(f.wait(6s));
  EXPECT_EQ(f.status(), tessera::distributed::FutureStatus::Pending);
  EXPECT_NO_THROW(client->scheduler_info());
  client->close();
  ::kill(sched, SIGTERM);
  tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
}

}  // namespace
