// Issue 29: authenticated connections that never register (they ask a question, or nothing) held
// the scheduler's connection cap for ever and locked new clients out, and a client refused at the
// cap was told "the peer closed the connection (a tls:// address reached with tcp://?)". Now a
// connection that has not registered within --registration-timeout is closed, and one refused at
// the cap is told the server is full. A real tessera-scheduler under a small descriptor limit
// (its cap is three quarters of it), real connections with the token.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/wire.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/scheduler.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::read_text;
using tessera_test::wait_until;

constexpr int kDescriptors = 128;                 // the scheduler's RLIMIT_NOFILE
constexpr int kCap = kDescriptors / 4 * 3;        // its max_connections
const std::string kToken = "f3a1c2d4e5b6978812345678abcdef01";

comm::CommOptions with_token() {
  comm::CommOptions co;
  co.token = kToken;
  co.max_header_bytes = kClusterMaxHeaderBytes;
  co.connect_timeout = 2000ms;
  co.handshake_timeout = 2000ms;
  return co;
}

// An authenticated connection that asks one question (so it is past the first-message deadline)
// and never registers.
std::shared_ptr<comm::Comm> idle_asker(const std::string& address) {
  auto c = comm::connect(address, with_token());
  comm::Message ask(wire::kSchedulerInfo);
  ask.set("id", std::int64_t{1});
  c->send(std::move(ask)).get();
  c->recv(5000ms);  // the reply
  return c;
}

}  // namespace

TEST(RegistrationTimeout, IdleConnectionsThatNeverRegisterAreClosedAndAFullServerSaysSo) {
  const auto scheduler = (tessera_test::build_bin_dir() / "tessera-scheduler").string();
  if (!std::filesystem::exists(scheduler)) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), log = (dir.path() / "scheduler.log").string();
  Children kids;
  kids.spawn({"/bin/sh", "-c",
              "ulimit -n " + std::to_string(kDescriptors) + " && exec \"$0\" \"$@\" 2>'" + log + "'", scheduler,
              "--port", "0", "--no-dashboard", "--scheduler-file", sfile, "--token", kToken,
              "--registration-timeout", "3s", "--log-level", "warning"},
             tessera_test::child_env());
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10)) << read_text(log);
  const std::string address = read_scheduler_file(sfile);

  // A client that registered before: it is not closed by the deadline.
  auto early = std::make_unique<Client>(address, client_options(kToken, 10));

  // Every other connection the cap allows, held by peers that never register.
  std::vector<std::shared_ptr<comm::Comm>> idle;
  for (int i = 0; i < kCap; ++i) {
    try {
      idle.push_back(idle_asker(address));
    } catch (const std::exception&) {
      break;  // the cap: the client above holds one
    }
  }
  ASSERT_GE(static_cast<int>(idle.size()), kCap - 2) << read_text(log);

  // Full: a new client is refused, and told why.
  try {
    Client late(address, client_options(kToken, 5));
    ADD_FAILURE() << "a client connected past the cap of " << kCap;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the server is full"), std::string::npos) << what;
    EXPECT_EQ(what.find("tls://"), std::string::npos) << "a full server is not a TLS mix-up: " << what;
  }

  // The deadline frees the cap: a client connects again without anyone leaving.
  const auto t0 = tessera_test::Clock::now();
  std::unique_ptr<Client> back;
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          back = std::make_unique<Client>(address, client_options(kToken, 5));
          return true;
        } catch (const std::exception&) {
          return false;
        }
      },
      10, 200))
      << "still locked out " << tessera_test::seconds_since(t0) << " s later\n"
      << read_text(log);
  EXPECT_TRUE(wait_until([&] { return std::all_of(idle.begin(), idle.end(), [](auto& c) { return c->is_closed(); }); },
                         5))
      << "connections that never registered are still open";
  EXPECT_NE(read_text(log).find("did not register within 3 s (--registration-timeout)"), std::string::npos)
      << read_text(log);
  // Registered clients stay, past the deadline.
  EXPECT_EQ(early->scheduler_info().address, address);
  EXPECT_EQ(back->scheduler_info().address, address);
}
