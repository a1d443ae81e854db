// The Scheduler object's start (src/distributed/scheduler.cpp): its listener accepts before the
// constructor returns, so a peer may register while the constructor still sets the scheduler up.
// The constructor wrote the address the replies carry without the lock the replies are built
// under; ThreadSanitizer (the tsan stage of scripts/test.sh) reported it when a client registered
// at once. Here clients hammer a port while a scheduler starts on it; under ThreadSanitizer the
// test fails on the old code.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "distributed/wire.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"

using namespace tessera;
using namespace std::chrono_literals;

namespace {

// A port that was free a moment ago (a listener on port 0, closed).
int free_port() {
  auto l = comm::listen("tcp://127.0.0.1:0", [](std::shared_ptr<comm::Comm>) {});
  const std::string a = l->address();
  l->stop();
  return std::stoi(a.substr(a.rfind(':') + 1));
}

}  // namespace

TEST(SchedulerStart, ClientsRegisteringWhileTheSchedulerStartsGetItsAddress) {
  for (int round = 0; round < 3; ++round) {
    const std::string address = "tcp://127.0.0.1:" + std::to_string(free_port());
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 2; ++i)
      clients.emplace_back([&] {
        while (!stop) {
          try {
            auto c = comm::connect(address);
            comm::Message hello(distributed::wire::kRegisterClient);
            hello.set("client", std::string("start-test"));
            c->send(std::move(hello)).get();
            const comm::Message reply = c->recv(5s);
            if (reply.op == distributed::wire::kRegistered &&
                reply.get<distributed::wire::ClusterInfo>("info").address == address)
              ++answered;
            c->close();
          } catch (const std::exception&) {
            std::this_thread::sleep_for(1ms);  // not listening yet
          }
        }
      });
    {
      distributed::SchedulerOptions o;
      o.address = address;
      distributed::Scheduler scheduler(o);
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (answered == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
      stop = true;
      for (auto& t : clients) t.join();
    }
    EXPECT_GT(answered.load(), 0) << "round " << round;
  }
}
