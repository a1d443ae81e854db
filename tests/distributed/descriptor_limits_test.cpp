// The dashboard cannot take the cluster's file descriptors (issue 29, item 6): before, 1,100 idle
// HTTP connections to a scheduler under `ulimit -n 1024` made its cluster listener's accept fail
// and a client with the right token could not connect. Now the dashboard has its own cap (an
// eighth of the limit), the cluster listener keeps its three quarters, and the servers raise
// their soft descriptor limit to the hard one at start.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.hpp"
#include "distributed/scheduler_file.hpp"
#include "http_client.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using tessera::distributed::Client;
using tessera_test::Children;

std::string scheduler_binary() { return (tessera_test::build_bin_dir() / "tessera-scheduler").string(); }

// A process's soft and hard "Max open files" (/proc/PID/limits); {0, 0} when unreadable.
std::pair<long, long> open_file_limits(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream rest(line.substr(14));
    long soft = 0, hard = 0;
    rest >> soft >> hard;
    return {soft, hard};
  }
  return {0, 0};
}

std::size_t open_descriptors(pid_t pid) {
  std::error_code ec;
  std::size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// Starts tessera-scheduler through sh with `ulimit_args` (e.g. "-n 1024") applied first; exec
// keeps the pid, so the pid returned is the scheduler's.
pid_t spawn_limited_scheduler(Children& kids, const std::string& ulimit_args, const std::string& sfile,
                              const std::string& token) {
  return kids.spawn({"/bin/sh", "-c", "ulimit " + ulimit_args + " && exec \"$0\" \"$@\"", scheduler_binary(), "--port",
                     "0", "--scheduler-file", sfile, "--token", token, "--log-level", "warning",
                     "--dashboard-address", "127.0.0.1:0"},
                    tessera_test::child_env());
}

TEST(DescriptorLimits, IdleDashboardConnectionsLeaveTheClusterListenerItsDescriptors) {
  if (!std::filesystem::exists(scheduler_binary())) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  // This process holds the 1,100 connections itself.
  rlimit own{};
  ::getrlimit(RLIMIT_NOFILE, &own);
  if (own.rlim_max != RLIM_INFINITY && own.rlim_max < 1400) GTEST_SKIP() << "the hard descriptor limit is under 1400";
  const rlimit was = own;
  own.rlim_cur = own.rlim_max == RLIM_INFINITY ? 4096 : std::min<rlim_t>(own.rlim_max, 4096);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &own), 0);

  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "descriptor-token";
  Children kids;
  pid_t sched = spawn_limited_scheduler(kids, "-n 1024", sfile, token);
  const int port = tessera_test::dashboard_port_from(sfile);
  ASSERT_GT(port, 0) << tessera_test::read_text(sfile);

  std::vector<std::unique_ptr<tessera_test::RawSocket>> idle;
  for (int i = 0; i < 1100; ++i) {
    try {
      idle.push_back(std::make_unique<tessera_test::RawSocket>(port));
    } catch (const std::runtime_error&) {
      // a refused or failed connect: counted by the size check below
    }
  }
  EXPECT_GE(idle.size(), 1000u) << "the kernel queues connections the server has not accepted yet";
  // The scheduler accepts up to its dashboard cap (1024 / 8 = 128) and refuses the rest at once.
  std::this_thread::sleep_for(2s);
  const std::size_t held = open_descriptors(sched);
  EXPECT_LT(held, 400u) << "the scheduler holds " << held << " descriptors for idle dashboard connections";

  // A client with the token connects and is answered, while every idle connection is still open.
  {
    auto client = Client::from_scheduler_file(sfile, tessera_test::client_options(token, 10));
    EXPECT_EQ(client->scheduler_info().workers.size(), 0u);
    client->close();
  }
  // One more dashboard request while the cap is held: refused with 503, not left hanging.
  EXPECT_EQ(tessera_test::http_get(port, "/health").status, 503);

  idle.clear();
  EXPECT_TRUE(tessera_test::wait_until(
      [&] {
        try {
          return tessera_test::http_get(port, "/health").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      15, 200))
      << "the dashboard does not answer again once the idle connections are gone";
  ::kill(sched, SIGTERM);
  tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
  ::setrlimit(RLIMIT_NOFILE, &was);
}

TEST(DescriptorLimits, ServersRaiseTheirSoftLimitToTheHardOne) {
  if (!std::filesystem::exists(scheduler_binary())) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  rlimit own{};
  ::getrlimit(RLIMIT_NOFILE, &own);
  if (own.rlim_max != RLIM_INFINITY && own.rlim_max <= 256) GTEST_SKIP() << "the hard descriptor limit is 256 or less";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "descriptor-token";
  Children kids;
  pid_t sched = spawn_limited_scheduler(kids, "-S -n 256", sfile, token);
  ASSERT_GT(tessera_test::dashboard_port_from(sfile), 0);  // started: past its main's first steps
  auto [soft, hard] = open_file_limits(sched);
  EXPECT_GT(soft, 256) << "the scheduler's soft limit was left at what the shell set";
  EXPECT_EQ(soft, hard);

  // A worker under its nanny (the default): both processes raise theirs.
  const std::string worker = (tessera_test::build_bin_dir() / "tessera-worker").string();
  pid_t nanny = kids.spawn({"/bin/sh", "-c", "ulimit -S -n 256 && exec \"$0\" \"$@\"", worker, "--scheduler-file", sfile,
                            "--token", token, "--nthreads", "1", "--memory-limit", "0", "--log-level", "warning"},
                           tessera_test::child_env());
  auto client = tessera::distributed::Client::from_scheduler_file(sfile, tessera_test::client_options(token, 10));
  ASSERT_TRUE(client->wait_for_workers(1, std::chrono::seconds(20)));
  const int worker_pid = client->scheduler_info().workers.at(0).pid;
  EXPECT_NE(worker_pid, nanny) << "expected the worker to run under its nanny";
  for (pid_t p : {nanny, static_cast<pid_t>(worker_pid)}) {
    auto [s, h] = open_file_limits(p);
    EXPECT_GT(s, 256) << "pid " << p << ": the soft limit was left at what the shell set";
    EXPECT_EQ(s, h) << "pid " << p;
  }
  client->close();
  ::kill(nanny, SIGTERM);
  tessera_test::expect_exit_zero(kids, nanny, "tessera-worker (nanny)", 15);
  ::kill(sched, SIGTERM);
  tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
}

}  // namespace
