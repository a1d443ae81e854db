// Issue 29: a nanny that gives up restarting its worker (it died past the cap of restarts a
// minute) tells the scheduler through its link, and the tasks that needed that worker (no other
// worker can run them) err with the reason instead of waiting for ever. Real tessera-scheduler
// and tessera-worker processes; the test plays the OOM killer, SIGKILLing each new life of the
// worker once it runs, so that the nanny's cap (10 restarts a minute) is reached.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "nanny_binaries.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::read_text;
using tessera_test::spawn_logged;
using tessera_test::spawn_scheduler;
using tessera_test::wait_until;
using tessera_test::worker_argv;

constexpr int kRestartCap = 10;  // NannyOptions::max_restarts_per_minute's default

}  // namespace

TEST(NannyGiveUp, TasksThatNeededTheWorkerErrWithTheReason) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "give-up-token";
  const auto log = dir.path() / "worker.log";
  Children kids;
  spawn_scheduler(kids, bins.scheduler, sfile, token);
  spawn_logged(kids, worker_argv(bins, sfile, token, {"--memory-limit", "0", "--death-timeout", "20"}), log);
  auto client = Client::from_scheduler_file(sfile, client_options(token, 10));

  Future waiting;  // submitted to the last life: it runs there when that life is killed
  for (int life = 1; life <= kRestartCap + 1; ++life) {
    ASSERT_TRUE(client->wait_for_workers(1, 20s)) << "life " << life << " did not register\n" << read_text(log);
    // A task that ran proves the worker told its nanny it registered (a worker killed before
    // that counts as one that failed to start, which is not restarted); it finished, so the
    // kill below is not held against it.
    const int pid = client->submit("nanny_plugin.pid", life).result_as<int>(20s);
    if (life == kRestartCap + 1) {
      waiting = client->submit("nanny_plugin.sleep", 60);
      ASSERT_TRUE(wait_until([&] { return client->scheduler_info().workers.at(0).processing > 0; }, 10))
          << "the last task never started";
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_TRUE(wait_until([&] { return client->scheduler_info().workers.empty(); }, 10))
        << "the scheduler still lists killed life " << life;
  }
  ASSERT_TRUE(wait_until([&] { return read_text(log).find("giving up") != std::string::npos; }, 10))
      << read_text(log);
  const auto gave_up = tessera_test::Clock::now();
  try {
    waiting.result(20s);
    ADD_FAILURE() << "a task whose only worker was given up by its nanny finished";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("given up by its nanny"), std::string::npos) << what;
    EXPECT_NE(what.find("restarted " + std::to_string(kRestartCap) + " times"), std::string::npos) << what;
    EXPECT_NE(what.find("SIGKILL"), std::string::npos) << "the reason names how it last died: " << what;
    EXPECT_EQ(what.find("timed out"), std::string::npos) << what;
  }
  EXPECT_LT(tessera_test::seconds_since(gave_up), 5) << "the task erred only long after the nanny gave up";
}
