// docs/security.md, "A worker's address is its identity" (line 324) and "A client learns that its
// scheduler stopped" (lines 242-245), for the bundled binaries: a tessera-worker refused because
// a live worker holds its address exits 1 (its nanny does not restart it), and a client left with
// the default ClientOptions::scheduler_timeout gives up on a SIGSTOPped tessera-scheduler within
// 15 s. Real processes and sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/wire.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::read_text;

int refused_test_inc(int x) { return x + 1; }

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("worker_refused_test.inc", refused_test_inc);

namespace {

const std::string kRefusedToken = "worker-refused-token";


// A loopback port free now (bound and released).
int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// A fake worker's registration at `address` over a real connection (as worker_identity_test.cpp's
// register_as), kept open so that the scheduler counts that worker as live.
std::shared_ptr<comm::Comm> register_fake_worker(const std::string& scheduler, const std::string& address,
                                                 const std::string& name) {
  comm::CommOptions co;
  co.token = kRefusedToken;
  auto c = comm::connect(scheduler, co);
  wire::WorkerHello hello;
  hello.add.address = address;
  hello.add.name = name;
  hello.add.nthreads = 1;
  comm::Message m(wire::kRegisterWorker);
  m.set("worker", hello);
  c->send(std::move(m)).get();
  return c;
}

}  // namespace

// U50 (line 324): tessera-worker started on a fixed --worker-port whose address a live worker
// holds is refused by the scheduler; it exits 1 with the scheduler's reason (a supervisor sees a
// failure, not a clean exit 0 as before issue 19), under its nanny too, which does not restart
// it; and the live worker keeps its place.
TEST(WorkerRefused, ATesseraWorkerOnALiveWorkersAddressExits1AndIsNotRestarted) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kRefusedToken;
  so.state.worker_ttl = 60;
  Scheduler sched(so);
  const int port = free_loopback_port();
  ASSERT_GT(port, 0);
  const std::string addr = "tcp://127.0.0.1:" + std::to_string(port);
  auto live = register_fake_worker(sched.address(), addr, "live");
  {
    auto reply = live->recv(5000ms);
    ASSERT_FALSE(reply.has("error")) << "the fake worker was refused";
  }
  const std::string reason = "the scheduler at " + sched.address() + " refused this worker: worker address " + addr +
                             " belongs to a live worker; registration without the secret it was given refused";
  tessera_test::TempDir dir;
  for (bool nanny : {false, true}) {
    const auto log = dir.path() / (nanny ? "nanny.log" : "no-nanny.log");
    std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log.string() + "'", bins.worker,
                                  sched.address(), "--host", "127.0.0.1", "--worker-port", std::to_string(port),
                                  "--token", kRefusedToken, "--nthreads", "1", "--memory-limit", "0",
                                  "--death-timeout", "5", "--log-level", "info"};
    if (!nanny) argv.push_back("--no-nanny");
    Children kids;
    const pid_t pid = kids.spawn(argv, tessera_test::child_env());
    const auto st = kids.wait_exit(pid, 10);
    const char* what = nanny ? "under its nanny" : "--no-nanny";
    const std::string text = read_text(log);
    ASSERT_TRUE(st.has_value()) << what << ": still running 10 s later\n" << text;
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 1) << what << ": " << tessera_test::describe_status(*st) << "\n"
                                                         << text;
    EXPECT_NE(text.find(reason), std::string::npos) << what << ": expected '" << reason << "' in\n" << text;
    if (nanny) {
      EXPECT_NE(text.find("not restarted"), std::string::npos) << text;
      EXPECT_EQ(text.find("restarting it"), std::string::npos) << "the nanny restarted a refused worker:\n" << text;
    }
  }
  Client client(sched.address(), tessera_test::client_options(kRefusedToken));
  const auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 1u);
  EXPECT_EQ(info.workers[0].address, addr);
  EXPECT_EQ(info.workers[0].name, "live") << "the refused worker took the live one's place";
  client.close();
  live->close();
}

// U36 (lines 242-245): with scheduler_timeout left at its default (10 s, not set by the test as
// ClientLiveness does), a result() without a timeout on a SIGSTOPped scheduler process (its TCP
// connection stays open) returns within 15 s, and not before about 10 s, with the documented
// error naming the scheduler's address and the default.
TEST(WorkerRefused, AClientWithTheDefaultSchedulerTimeoutGivesUpOnAStoppedScheduler) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  EXPECT_EQ(ClientOptions{}.scheduler_timeout, 10);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), log = (dir.path() / "scheduler.log").string();
  const std::string token = "5f0c3e1a9b7d42e68a1c0f3b2d4e6a8c";  // 128 bits: no weak-token warning
  Children kids;
  const pid_t sched = kids.spawn({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log + "'", bins.scheduler, "--port", "0",
                                  "--no-dashboard", "--scheduler-file", sfile, "--token", token, "--log-level", "warning"},
                                 tessera_test::child_env());
  ClientOptions options;  // every default but the token and the wait to connect
  options.token = token;
  options.timeout = 10;
  auto client = Client::from_scheduler_file(sfile, options);
  const std::string address = client->scheduler_info().address;
  auto f = client->submit("worker_refused_test.inc", 1);  // no worker: it stays pending
  ASSERT_EQ(::kill(sched, SIGSTOP), 0);
  const auto start = tessera_test::Clock::now();
  auto waiting = std::async(std::launch::async, [&]() -> std::string {
    try {
      f.result();
      return "no error";
    } catch (const std::exception& e) {
      return e.what();
    }
  });
  const bool returned = waiting.wait_for(20s) == std::future_status::ready;
  const double seconds = tessera_test::seconds_since(start);
  if (!returned) ::kill(sched, SIGKILL);  // closes the connection, so the wait ends and the test fails, not hangs
  const std::string error = waiting.get();
  ::kill(sched, SIGCONT);
  ::kill(sched, SIGKILL);
  kids.wait_exit(sched, 5);
  ASSERT_TRUE(returned) << "result() still waiting on a stopped scheduler after " << seconds << " s";
  EXPECT_LE(seconds, 15.0);
  EXPECT_GE(seconds, 8.0) << "given up before the default 10 s";  // the last answer came up to ~1 s before the stop
  EXPECT_NE(error.find("lost the scheduler at " + address + ": it answered nothing for 1"), std::string::npos) << error;
  EXPECT_NE(error.find("(ClientOptions::scheduler_timeout 10.0 s;"), std::string::npos) << error;
  client.reset();
}
