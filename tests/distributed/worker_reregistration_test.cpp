// docs/security.md, "A worker's address is its identity, and a worker proves it": what a
// re-registration that replaces a worker does to its work (the state machine, SimCluster), the
// rate of the refusal log, and when the address is free again without the secret. An
// in-process Scheduler with fake workers over real sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../support/library_log.hpp"
#include "cluster_fixture.hpp"
#include "core/logging.hpp"
#include "distributed/wire.hpp"
#include "sim_cluster.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/scheduler_state.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera::distributed::testing::make_task;
using tessera::distributed::testing::SimCluster;
using tessera_test::Clock;
using tessera_test::wait_until;

const std::string kReregToken = "worker-reregistration-test-token";

using ReregLog = tessera_test::LibraryLog;

// A loopback port free now, for a worker address a fake registers under.
int rereg_free_port() {
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

std::string rereg_address() { return "tcp://127.0.0.1:" + std::to_string(rereg_free_port()); }

SchedulerOptions rereg_scheduler(double worker_ttl = 60) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kReregToken;
  so.state.worker_ttl = worker_ttl;
  so.worker_silent = 0;  // fake workers send no heartbeats
  return so;
}

// A worker's registration over a real connection (as worker_identity_test.cpp's register_as).
std::shared_ptr<comm::Comm> rereg_register(const std::string& scheduler, const std::string& address,
                                           const std::string& name, const std::string& secret = "") {
  comm::CommOptions co;
  co.token = kReregToken;
  auto c = comm::connect(scheduler, co);
  wire::WorkerHello hello;
  hello.add.address = address;
  hello.add.name = name;
  hello.add.nthreads = 1;
  comm::Message m(wire::kRegisterWorker);
  m.set("worker", hello);
  if (!secret.empty()) m.set("secret", secret);
  c->send(std::move(m)).get();
  return c;
}

comm::Message rereg_reply(comm::Comm& c) { return c.recv(5000ms); }

// The registration's error, "" when it was accepted (it then carries a secret).
std::string rereg_error(comm::Comm& c) {
  const auto r = rereg_reply(c);
  EXPECT_EQ(r.op, wire::kRegistered);
  if (r.has("error")) return r.get<std::string>("error");
  EXPECT_TRUE(r.has("secret"));
  return "";
}

// Whether the scheduler closes this connection within a few seconds (other messages skipped).
bool rereg_closed_by_scheduler(comm::Comm& c, std::chrono::milliseconds within = 3000ms) {
  const auto until = Clock::now() + within;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return c.is_closed();
    try {
      c.recv(left);
    } catch (const comm::CommTimeoutError&) {
      return false;
    } catch (const comm::CommError&) {
      return true;
    }
  }
}

std::vector<std::string> worker_names(const Scheduler& s) {
  std::vector<std::string> out;
  for (const auto& w : s.workers()) out.push_back(w.name);
  return out;
}

WorkerSummary rereg_summary(const SimCluster& c, const std::string& address) {
  for (const auto& w : c.sched.workers())
    if (w.address == address) return w;
  ADD_FAILURE() << "no worker " << address;
  return {};
}

}  // namespace

// Lines 317-319: "The old connection is then closed and the state machine replaces the worker
// (what it was processing or held is rescheduled: the new process may hold none of it)". A new
// process at the old address has an empty store; counting the old results on it would send
// its tasks inputs it does not have (SimCluster fails the test when a task runs without one).
TEST(WorkerReregistration, AReplacedWorkersTasksAndResultsAreRescheduled) {
  SchedulerConfig cfg = SimCluster::default_config();
  cfg.worker_ttl = 100;
  SimCluster c(cfg);
  c.add_worker("w1");
  c.add_worker("w2");
  std::vector<Task> tasks;
  std::vector<Key> a_keys, b_keys;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("a-" + std::to_string(i)));
    a_keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, a_keys);
  c.run();
  std::vector<Key> results_on_w1;
  for (const auto& k : a_keys)
    if (c.workers["w1"]->data.count(k)) results_on_w1.push_back(k);
  ASSERT_FALSE(results_on_w1.empty()) << "the test needs results on w1";
  c.workers["w1"]->hold = true;
  tasks.clear();
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(make_task("b-" + std::to_string(i), {"a-" + std::to_string(i)}));
    b_keys.push_back(tasks.back().key);
  }
  c.submit("client", tasks, b_keys);
  c.run();
  ASSERT_GT(rereg_summary(c, "w1").processing, 0u) << "the test needs tasks processing on w1";
  ASSERT_FALSE(c.workers["w1"]->held.empty());
  std::map<Key, int> attempts_before = c.attempts;

  // The same address registers again: a fresh process (an empty store, nothing held).
  c.add_worker("w1");
  c.run();
  c.check_all();
  bool replaced = false;
  for (const auto& l : c.logs) replaced |= l.message.find("w1 registered twice; replacing the old one") != std::string::npos;
  EXPECT_TRUE(replaced);
  EXPECT_EQ(c.sched.worker_count(), 2u);
  // Everything completes, with the values computed from scratch where the old results were.
  for (int round = 0; round < 5; ++round) {
    c.release_held("w1");
    c.release_held("w2");
    c.run();
  }
  c.check_all();
  for (const auto& k : b_keys) {
    EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
    EXPECT_EQ(c.value(k), std::optional<std::int64_t>(2)) << k;
  }
  for (const auto& k : a_keys) EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
  for (const auto& k : results_on_w1)
    EXPECT_GT(c.attempts[k], attempts_before[k]) << k << ", held by the old w1, was not computed again";
}

// Lines 322-323: the scheduler "closes the connection and logs the refusal at most once a second
// with the count of those left out". Anyone with the token can cause refusals at will; they must
// not fill the disk, and the count says how many there were.
TEST(WorkerReregistration, RefusalsAreLoggedAtMostOnceASecondWithTheCount) {
  ReregLog log;
  Scheduler sched(rereg_scheduler());
  const std::string addr = rereg_address();
  auto real = rereg_register(sched.address(), addr, "real");
  ASSERT_EQ(rereg_error(*real), "");
  const auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) {
    auto impostor = rereg_register(sched.address(), addr, "impostor");
    EXPECT_NE(rereg_error(*impostor).find("belongs to a live worker"), std::string::npos) << "attempt " << i;
    EXPECT_TRUE(rereg_closed_by_scheduler(*impostor)) << "attempt " << i;
  }
  const double burst = tessera_test::seconds_since(t0);
  const int burst_lines = log.count("belongs to a live worker");
  EXPECT_GE(burst_lines, 1);
  EXPECT_LE(burst_lines, static_cast<int>(burst) + 1) << "20 refusals in " << burst << " s:\n" << log.text();
  std::this_thread::sleep_for(1100ms);  // past the limiter's interval: the next refusal is logged
  auto last = rereg_register(sched.address(), addr, "impostor");
  EXPECT_NE(rereg_error(*last).find("belongs to a live worker"), std::string::npos);
  ASSERT_TRUE(wait_until([&] { return log.count("belongs to a live worker") == burst_lines + 1; }, 2)) << log.text();
  const std::string text = log.text();
  std::smatch m;
  const std::string last_line = text.substr(text.rfind("belongs to a live worker"));
  ASSERT_TRUE(std::regex_search(last_line, m, std::regex(R"(\((\d+) more refusals not logged\))")))
      << "the line after the burst carries no count:\n" << text;
  const int left_out = std::stoi(m[1].str());
  if (burst_lines == 1) EXPECT_EQ(left_out, 19) << text;
  else EXPECT_GE(left_out, 1) << text;
  EXPECT_EQ(worker_names(sched), std::vector<std::string>{"real"});
  real->close();
}

// Lines 328-329: "The address is free without a secret once the old worker's connection closed".
// A worker started again after a clean exit or a crash must not be refused for ever.
TEST(WorkerReregistration, TheAddressIsFreeWithoutASecretOnceTheOldConnectionClosed) {
  Scheduler sched(rereg_scheduler());
  const std::string addr = rereg_address();
  auto old = rereg_register(sched.address(), addr, "old");
  ASSERT_EQ(rereg_error(*old), "");
  {
    auto early = rereg_register(sched.address(), addr, "early");  // while the old one is connected
    EXPECT_NE(rereg_error(*early).find("without the secret"), std::string::npos);
  }
  old->close();
  ASSERT_TRUE(wait_until([&] { return sched.workers().empty(); }, 3)) << "the closed worker is still registered";
  auto fresh = rereg_register(sched.address(), addr, "fresh");
  EXPECT_EQ(rereg_error(*fresh), "") << "refused although the old worker's connection closed";
  EXPECT_EQ(worker_names(sched), std::vector<std::string>{"fresh"});
  fresh->close();
}

// Lines 328-329: the address is free once "the TTL removed it". A worker cut off without its
// connection closing (and so removed by worker_ttl) must be able to come back as a new worker.
TEST(WorkerReregistration, TheAddressIsFreeWithoutASecretOnceTheTtlRemovedIt) {
  Scheduler sched(rereg_scheduler(/*worker_ttl=*/1));
  const std::string addr = rereg_address();
  auto old = rereg_register(sched.address(), addr, "old");
  ASSERT_EQ(rereg_error(*old), "");
  // No heartbeat: removed after 1 s, and its connection closed by the scheduler.
  ASSERT_TRUE(wait_until([&] { return sched.workers().empty(); }, 4)) << "the TTL did not remove the worker";
  EXPECT_TRUE(rereg_closed_by_scheduler(*old)) << "the removed worker's connection stayed open";
  auto fresh = rereg_register(sched.address(), addr, "fresh");
  EXPECT_EQ(rereg_error(*fresh), "") << "refused although the TTL removed the old worker";
  EXPECT_EQ(worker_names(sched), std::vector<std::string>{"fresh"});
  fresh->close();
}

// Lines 328-329: the address is free once "it said it is leaving (a worker that unregisters may
// be replaced at once)". A worker closing on purpose while its successor starts at the same
// --worker-port must not have the successor refused.
TEST(WorkerReregistration, AWorkerThatSaidItIsLeavingMayBeReplacedAtOnce) {
  ReregLog log;
  Scheduler sched(rereg_scheduler());
  const std::string addr = rereg_address();
  auto old = rereg_register(sched.address(), addr, "old");
  ASSERT_EQ(rereg_error(*old), "");
  old->send(comm::Message(wire::kUnregister)).get();
  // A question on the same connection: its answer comes after the unregister was handled.
  comm::Message ask(wire::kSchedulerInfo);
  ask.set("id", std::int64_t{7});
  old->send(std::move(ask)).get();
  ASSERT_EQ(old->recv(5000ms).op, wire::kReply);
  ASSERT_FALSE(old->is_closed());
  auto successor = rereg_register(sched.address(), addr, "successor");
  EXPECT_EQ(rereg_error(*successor), "") << "a worker that said it is leaving was not replaced";
  EXPECT_TRUE(wait_until([&] { return log.count("registered again while leaving") == 1; }, 2)) << log.text();
  EXPECT_EQ(worker_names(sched), std::vector<std::string>{"successor"});
  old->close();
  // The old connection's close must not remove its successor.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(worker_names(sched), std::vector<std::string>{"successor"});
  successor->close();
}
