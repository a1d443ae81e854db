// Issue 19, worker identity: the scheduler gives each worker registration a random secret; a
// registration for a live worker's address is accepted only with that secret (a reconnect), and
// refused with a clear error otherwise. Real sockets, an in-process scheduler and real workers
// (in this process and as processes).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/wire.hpp"
#include "distributed/worker_identity.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::client_options;
using tessera_test::wait_until;

const std::string kToken = "identity-test-token";

// A loopback port free now (bound and released), for a worker address a fake registers first.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

SchedulerOptions scheduler_options() {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = kToken;
  so.state.worker_ttl = 60;
  return so;
}

// A worker's registration over a real connection, as a fake worker (or an impostor) sends it.
std::shared_ptr<comm::Comm> register_as(const std::string& scheduler, const std::string& address,
                                        const std::string& name, const std::string& secret) {
  comm::CommOptions co;
  co.token = kToken;
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

// The registration reply (the first message: nothing else is sent before it).
comm::Message reply_of(comm::Comm& c) { return c.recv(std::chrono::milliseconds(5000)); }

// Whether the scheduler closes this connection within a few seconds (other messages skipped).
bool closed_by_scheduler(comm::Comm& c) {
  try {
    while (true) c.recv(std::chrono::milliseconds(3000));
  } catch (const comm::CommTimeoutError&) {
    return false;
  } catch (const comm::CommError&) {
    return true;
  }
}

TEST(WorkerIdentity, SecretsAreFreshAndComparedExactly) {
  const std::string a = new_registration_secret(), b = new_registration_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(registration_secret_matches(a, a));
  EXPECT_FALSE(registration_secret_matches(a, b));
  EXPECT_FALSE(registration_secret_matches(a, a.substr(0, 63)));
  EXPECT_FALSE(registration_secret_matches(a, ""));
  EXPECT_FALSE(registration_secret_matches("", "")) << "no secret handed out must match nothing";
}

TEST(WorkerIdentity, ReRegistrationWithTheSecretReplacesTheOldConnection) {
  Scheduler sched(scheduler_options());
  const std::string addr = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto first = register_as(sched.address(), addr, "first", "");
  auto r1 = reply_of(*first);
  ASSERT_EQ(r1.op, wire::kRegistered);
  ASSERT_FALSE(r1.has("error")) << r1.get<std::string>("error");
  ASSERT_TRUE(r1.has("secret"));
  const std::string secret = r1.get<std::string>("secret");
  EXPECT_EQ(secret.size(), 64u);

  // Without the secret, and with a wrong one: refused with why, closed; the first stays.
  for (const std::string& wrong : {std::string(), std::string(64, 'a')}) {
    auto impostor = register_as(sched.address(), addr, "impostor", wrong);
    auto r = reply_of(*impostor);
    EXPECT_EQ(r.op, wire::kRegistered);
    ASSERT_TRUE(r.has("error"));
    EXPECT_NE(r.get<std::string>("error").find("belongs to a live worker"), std::string::npos);
    EXPECT_NE(r.get<std::string>("error").find(wrong.empty() ? "without the secret" : "wrong secret"),
              std::string::npos)
        << r.get<std::string>("error");
    EXPECT_FALSE(r.has("secret"));
    EXPECT_TRUE(closed_by_scheduler(*impostor));
    impostor->close();
  }
  {
    Client client(sched.address(), client_options(kToken));
    auto info = client.scheduler_info();
    ASSERT_EQ(info.workers.size(), 1u);
    EXPECT_EQ(info.workers[0].name, "first");
  }

  // With the secret (the same worker reconnecting while its old connection looks alive): it
  // replaces the old registration, whose connection is closed, and gets a new secret.
  auto again = register_as(sched.address(), addr, "again", secret);
  auto r2 = reply_of(*again);
  ASSERT_EQ(r2.op, wire::kRegistered);
  ASSERT_FALSE(r2.has("error")) << r2.get<std::string>("error");
  ASSERT_TRUE(r2.has("secret"));
  EXPECT_NE(r2.get<std::string>("secret"), secret) << "a secret must not be handed out twice";
  EXPECT_TRUE(closed_by_scheduler(*first)) << "the replaced connection stayed open";
  {
    Client client(sched.address(), client_options(kToken));
    auto info = client.scheduler_info();
    ASSERT_EQ(info.workers.size(), 1u);
    EXPECT_EQ(info.workers[0].name, "again");
  }
  // The old secret is spent: it no longer proves anything.
  auto replay = register_as(sched.address(), addr, "replay", secret);
  auto r3 = reply_of(*replay);
  EXPECT_TRUE(r3.has("error")) << "an old secret was accepted again";
  EXPECT_TRUE(closed_by_scheduler(*replay));
  replay->close();
  again->close();
  first->close();
}

TEST(WorkerIdentity, ARealWorkerProvesItWithItsSecretAndComputes) {
  Scheduler sched(scheduler_options());
  const std::string addr = "tcp://127.0.0.1:" + std::to_string(free_port());
  // What the scheduler believes is this worker's earlier registration, still connected.
  auto old = register_as(sched.address(), addr, "old", "");
  auto r = reply_of(*old);
  ASSERT_FALSE(r.has("error"));
  const std::string secret = r.get<std::string>("secret");

  WorkerOptions wo;
  wo.scheduler_address = sched.address();
  wo.listen_address = addr;
  wo.token = kToken;
  wo.nthreads = 1;
  wo.heartbeat_interval = 0.1;
  wo.death_timeout = 5;
  try {
    Worker refused(wo);
    ADD_FAILURE() << "a worker without the secret took a live worker's address";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("refused this worker"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("belongs to a live worker"), std::string::npos) << e.what();
  }

  wo.registration_secret = secret;
  // The refused worker's listener lets go of the port asynchronously: try again for a while.
  std::unique_ptr<Worker> started;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!started) {
    try {
      started = std::make_unique<Worker>(wo);
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("Address already in use") == std::string::npos ||
          std::chrono::steady_clock::now() > deadline)
        throw;
      std::this_thread::sleep_for(50ms);
    }
  }
  Worker& w = *started;
  EXPECT_EQ(w.address(), addr);
  EXPECT_EQ(w.registration_secret().size(), 64u);
  EXPECT_NE(w.registration_secret(), secret);
  EXPECT_TRUE(closed_by_scheduler(*old));
  old->close();
  Client client(sched.address(), client_options(kToken));
  ASSERT_TRUE(client.wait_for_workers(1, 5s));
  auto x = random::normal(3, 0.0, 1.0, {100, 100}, {25, 25});
  tessera_test::expect_close((x * 2).sum().compute(client).item(), (x * 2).sum().compute(local_executor("sync")).item());
  auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 1u);
  EXPECT_EQ(info.workers[0].address, addr);
  EXPECT_NE(info.workers[0].name, "old");
}

TEST(WorkerIdentity, AnImpostorIsRefusedAndWorkerProcessesKeepWorking) {
  auto o = tessera_test::processes_over_tcp();
  o.token = kToken;
  LocalCluster cluster(o);
  Client client(cluster, client_options(kToken));
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const auto before = client.scheduler_info();
  for (int i = 0; i < 20; ++i) {  // many refusals: each answered, the log rate-limited
    auto impostor = register_as(cluster.scheduler_address(), before.workers.at(i % 2).address, "impostor", "");
    auto r = reply_of(*impostor);
    ASSERT_TRUE(r.has("error")) << "attempt " << i;
    EXPECT_TRUE(closed_by_scheduler(*impostor));
    impostor->close();
  }
  auto x = random::normal(5, 0.0, 1.0, {400, 400}, {50, 50});
  tessera_test::expect_close((x + 1).sum().compute(client).item(), (x + 1).sum().compute(local_executor("sync")).item());
  auto after = client.scheduler_info();
  ASSERT_EQ(after.workers.size(), 2u);
  for (const auto& w : after.workers) EXPECT_NE(w.name, "impostor");
  const auto pids = cluster.worker_pids();
  for (int pid : pids) EXPECT_EQ(::kill(pid, 0), 0) << "a real worker process exited";
}

}  // namespace
