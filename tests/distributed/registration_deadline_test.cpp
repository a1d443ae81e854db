// docs/security.md, "What one peer may cost": the scheduler's deadlines for a connection that has
// proved the token but not registered (--registration-timeout, SchedulerOptions::
// registration_timeout) or not spoken at all (first_message_timeout), and the 1 GiB header limit
// of the cluster's listeners. An in-process Scheduler and Worker, real sockets, fake peers that
// register (or not) as workers and nannies do.
#include <chrono>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>

#include "../support/library_log.hpp"
#include "cluster_fixture.hpp"
#include "comm/wire.hpp"
#include "core/logging.hpp"
#include "distributed/wire.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Clock;
using tessera_test::RawSocket;
using tessera_test::seconds_since;
using tessera_test::wait_until;

const std::string kDeadlineToken = "registration-deadline-test-token";

using DeadlineLog = tessera_test::LibraryLog;

SchedulerOptions deadline_scheduler(double registration_timeout) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kDeadlineToken;
  so.state.worker_ttl = 60;
  so.worker_silent = 0;  // fake workers send no heartbeats: no peer-gone notices in these tests
  so.registration_timeout = registration_timeout;
  return so;
}

comm::CommOptions deadline_comm() {
  comm::CommOptions co;
  co.token = kDeadlineToken;
  co.max_header_bytes = kClusterMaxHeaderBytes;
  co.connect_timeout = 3000ms;
  return co;
}

// An authenticated connection that asks one question (so it is past the first-message
// deadline) and never registers.
std::shared_ptr<comm::Comm> deadline_asker(const std::string& address) {
  auto c = comm::connect(address, deadline_comm());
  comm::Message ask(wire::kSchedulerInfo);
  ask.set("id", std::int64_t{1});
  c->send(std::move(ask)).get();
  c->recv(5000ms);  // the reply
  return c;
}

// A fake worker's registration over a real connection (as worker_identity_test.cpp's register_as).
std::shared_ptr<comm::Comm> deadline_register_worker(const std::string& scheduler, const std::string& address) {
  auto c = comm::connect(scheduler, deadline_comm());
  wire::WorkerHello hello;
  hello.add.address = address;
  hello.add.name = "fake-worker";
  hello.add.nthreads = 1;
  comm::Message m(wire::kRegisterWorker);
  m.set("worker", hello);
  c->send(std::move(m)).get();
  return c;
}

// A nanny's own connection, registered as src/distributed/nanny_link.cpp does (no reply comes).
std::shared_ptr<comm::Comm> deadline_register_nanny(const std::string& scheduler) {
  auto c = comm::connect(scheduler, deadline_comm());
  comm::Message m(wire::kRegisterNanny);
  m.set("pid", 424242);
  m.set("host", std::string("deadline-test-host"));
  c->send(std::move(m)).get();
  return c;
}

// True when the comm is still open at `until` (what arrives meanwhile is skipped); false as soon
// as it is closed.
bool open_until(comm::Comm& c, Clock::time_point until) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return !c.is_closed();
    try {
      c.recv(left);
    } catch (const comm::CommTimeoutError&) {
      return true;
    } catch (const comm::CommError&) {
      return false;
    }
  }
}

// Our hello, the peer's hello, our proof of the token, the peer's proof: a connection past the
// handshake on which raw bytes follow (as cluster_test.cpp's raw::handshake).
bool deadline_prove_token(RawSocket& s, const std::string& token) {
  namespace w = comm::wire;
  w::Hello h;
  h.nonce = w::make_nonce();
  h.flags |= w::kHelloProves;
  h.name = "raw-deadline-test";
  h.address = "tcp://127.0.0.1:1";
  h.transports = {"tcp"};
  const auto ours = w::encode_hello(h);
  if (!s.send_all(ours)) return false;
  std::vector<std::uint8_t> theirs(w::kHelloFixedBytes);
  if (!s.recv_exact(theirs.data(), theirs.size())) return false;
  std::uint32_t version = 0;
  const std::uint32_t n = w::decode_hello_fixed(theirs.data(), version);
  theirs.resize(theirs.size() + n);
  if (!s.recv_exact(theirs.data() + w::kHelloFixedBytes, n)) return false;
  if (!s.send_all(w::handshake_proof(token, w::Role::connector, ours, theirs))) return false;
  std::vector<std::uint8_t> proof(w::kProofBytes);
  return s.recv_exact(proof.data(), proof.size());
}

}  // namespace

// Line 182: "registered clients, workers and nannies are never closed by it". A deadline that
// closed workers or nannies would cut a cluster's own members off every 30 s; only the
// question-asking connection that never registered may go.
TEST(RegistrationDeadline, RegisteredWorkersAndNanniesAreNeverClosedByIt) {
  DeadlineLog log;
  Scheduler sched(deadline_scheduler(0.5));
  const auto t0 = Clock::now();
  auto worker = deadline_register_worker(sched.address(), "tcp://127.0.0.1:1");
  const auto reply = worker->recv(5000ms);
  ASSERT_EQ(reply.op, wire::kRegistered);
  ASSERT_FALSE(reply.has("error")) << reply.get<std::string>("error");
  auto nanny = deadline_register_nanny(sched.address());
  auto asker = deadline_asker(sched.address());

  ASSERT_TRUE(wait_until([&] { return asker->is_closed(); }, 3))
      << "a connection that only asked a question outlived a registration_timeout of 0.5 s";
  EXPECT_NE(log.text().find("did not register within 0.5 s"), std::string::npos) << log.text();
  // Four times the deadline after they were accepted, the registered ones are still open.
  EXPECT_TRUE(open_until(*worker, t0 + 2s)) << "the registration deadline closed a registered worker";
  EXPECT_TRUE(open_until(*nanny, t0 + 2s)) << "the registration deadline closed a registered nanny";
  EXPECT_EQ(sched.workers().size(), 1u);
  worker->close();
  nanny->close();
}

// Line 170: "`SchedulerOptions::registration_timeout`; 0 = never". The in-process option must
// work as the binary's flag does (the existing test uses only the flag), and 0 must turn it off
// for programs that want the old behaviour.
TEST(RegistrationDeadline, ZeroMeansNeverAndTheInProcessOptionCloses) {
  Scheduler never(deadline_scheduler(0));
  Scheduler half_second(deadline_scheduler(0.5));
  const auto t0 = Clock::now();
  auto kept = deadline_asker(never.address());
  auto closed = deadline_asker(half_second.address());
  ASSERT_TRUE(wait_until([&] { return closed->is_closed(); }, 2))
      << "registration_timeout = 0.5 did not close an unregistered connection within 2 s";
  EXPECT_GE(seconds_since(t0), 0.4) << "closed before its deadline";
  EXPECT_TRUE(open_until(*kept, t0 + 3s)) << "registration_timeout = 0 closed a connection that never registered";
  kept->close();
}

// Line 181: "closes every connection that has not registered ... logging it at most once a
// second with a count". A peer with the token can open such connections at will; each close
// must not cost a log line.
TEST(RegistrationDeadline, ClosingsAreLoggedAtMostOnceASecondWithACount) {
  DeadlineLog log;
  Scheduler sched(deadline_scheduler(0.3));
  std::vector<std::shared_ptr<comm::Comm>> askers;
  const auto t0 = Clock::now();
  for (int burst = 0; burst < 10; ++burst) {  // 30 connections over about 2 s
    for (int i = 0; i < 3; ++i) askers.push_back(deadline_asker(sched.address()));
    std::this_thread::sleep_until(t0 + (burst + 1) * 200ms);
  }
  ASSERT_TRUE(wait_until(
      [&] {
        for (auto& c : askers)
          if (!c->is_closed()) return false;
        return true;
      },
      3))
      << "not every unregistered connection was closed";
  const double span = seconds_since(t0);
  const int lines = log.count("did not register within 0.3 s");
  EXPECT_GE(lines, 2) << log.text();
  EXPECT_LE(lines, static_cast<int>(span) + 1) << "more than one line a second over " << span << " s:\n" << log.text();
  std::smatch m;
  const std::string text = log.text();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\((\d+) more not logged\))")))
      << "no line carries the count of closings left out:\n" << text;
  EXPECT_GE(std::stoi(m[1].str()), 1);
}

// Line 169: "first whole message after the handshake | scheduler: 5 s (`first_message_timeout`);
// elsewhere none". The default is what a deployment gets; a worker must not drop a peer's idle
// connection (peers keep theirs open between fetches).
TEST(RegistrationDeadline, TheSchedulersFirstMessageDeadlineIs5sAndAWorkersListenerHasNone) {
  DeadlineLog log(spdlog::level::debug);  // the comm layer says why it closed at debug level
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kDeadlineToken;  // every other option at its default
  Scheduler sched(so);
  WorkerOptions wo;
  wo.scheduler_address = sched.address();
  wo.token = kDeadlineToken;
  wo.nthreads = 1;
  wo.heartbeat_interval = 0.1;
  wo.death_timeout = 5;
  Worker worker(wo);

  auto to_scheduler = comm::connect(sched.address(), deadline_comm());
  auto to_worker = comm::connect(worker.address(), deadline_comm());
  const auto t0 = Clock::now();
  try {
    to_scheduler->recv(8000ms);
    ADD_FAILURE() << "the scheduler sent a message to a peer that said nothing";
  } catch (const comm::CommTimeoutError&) {
    ADD_FAILURE() << "the scheduler kept a connection that sent nothing for 8 s";
  } catch (const comm::CommError&) {
  }
  const double took = seconds_since(t0);
  EXPECT_GE(took, 4.5) << "closed before the 5 s default";
  EXPECT_LE(took, 7.0) << "closed long after the 5 s default";
  EXPECT_TRUE(wait_until([&] { return log.count("no message within 5000 ms of the handshake") >= 1; }, 2))
      << log.text();
  EXPECT_TRUE(open_until(*to_worker, t0 + 7s)) << "a worker's listener closed a peer that only had not spoken yet";
  to_worker->close();
}

// Line 171: "message header | 64 MiB (`max_header_bytes`; the cluster's processes use 1 GiB)".
// A cluster sends large graphs in one header; the scheduler and a worker must take what the
// 64 MiB default refuses, and still refuse past 1 GiB.
TEST(RegistrationDeadline, SchedulerAndWorkerListenersTakeHeadersUpTo1GiB) {
  SchedulerOptions so = deadline_scheduler(30);
  Scheduler sched(so);
  WorkerOptions wo;
  wo.scheduler_address = sched.address();
  wo.token = kDeadlineToken;
  wo.nthreads = 1;
  wo.heartbeat_interval = 0.1;
  wo.death_timeout = 5;
  Worker worker(wo);
  for (const auto& [who, address] : {std::pair{"scheduler", sched.address()}, std::pair{"worker", worker.address()}}) {
    SCOPED_TRACE(who);
    const int port = tessera_test::port_of(address);
    auto announce = [&](std::uint64_t header_bytes) {
      auto s = std::make_unique<RawSocket>(port);
      EXPECT_TRUE(deadline_prove_token(*s, kDeadlineToken));
      EXPECT_TRUE(s->send_all(comm::wire::encode_preamble(header_bytes, {})));
      timeval tv{0, 50 * 1000};  // short reads from here on: closed_by_peer polls with them
      ::setsockopt(s->fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      return s;
    };
    auto over_default = announce(std::uint64_t{100} << 20);  // 100 MiB: over CommOptions' 64 MiB
    auto at_limit = announce(kClusterMaxHeaderBytes);          // exactly 1 GiB
    auto over_limit = announce(kClusterMaxHeaderBytes + 1);
    const auto t0 = Clock::now();
    EXPECT_TRUE(over_limit->closed_by_peer(1.0)) << "a header of 1 GiB + 1 byte was not refused at once";
    EXPECT_LT(seconds_since(t0), 1.0);
    EXPECT_FALSE(over_default->closed_by_peer(0.5)) << "a 100 MiB header was refused: the 64 MiB default is in effect";
    EXPECT_FALSE(at_limit->closed_by_peer(0.1)) << "a header of exactly 1 GiB was refused";
  }
}
