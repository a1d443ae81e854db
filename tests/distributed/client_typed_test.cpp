// The typed client API (submit of the function itself, TypedFuture, map over several sequences,
// typed gather), argument checks at submit and on the worker, readable wrong-type reads, a
// movable Client, and a library that leaves the host application's logging alone.
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "../support/message_of.hpp"
#include "cluster_fixture.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using tessera_test::message_of;
using tessera_test::processes_over_tcp;
using namespace tessera::distributed;
using tessera_test::client_options;

int typed_add_one(int x) { return x + 1; }
double typed_axpy(double a, double x, double y) { return a * x + y; }
std::string typed_label(std::string s, int n) { return s + "#" + std::to_string(n); }
double typed_block_sum(Block b) {
  double s = 0;
  for (double v : b.to_doubles()) s += v;
  return s;
}
std::int64_t typed_big(std::int64_t x) { return x; }
void typed_nothing(int) {}
const auto typed_twice = [](std::vector<int> v) {
  for (auto& x : v) x *= 2;
  return v;
};

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("client_typed.add_one", typed_add_one);
TESSERA_REGISTER_FUNCTION_AS("client_typed.axpy", typed_axpy);
TESSERA_REGISTER_FUNCTION_AS("client_typed.label", typed_label);
TESSERA_REGISTER_FUNCTION_AS("client_typed.block_sum", typed_block_sum);
TESSERA_REGISTER_FUNCTION_AS("client_typed.big", typed_big);
TESSERA_REGISTER_FUNCTION_AS("client_typed.nothing", typed_nothing);
TESSERA_REGISTER_FUNCTION_AS("client_typed.twice", typed_twice);

namespace {

LocalClusterOptions threads_over(const std::string& protocol) {
  LocalClusterOptions o;
  o.processes = false;
  o.protocol = protocol;
  o.n_workers = 2;
  o.threads_per_worker = 1;
  o.timeout = 10;
  o.heartbeat_interval = 0.1;
  return o;
}

// The typed round trip, the same on every kind of cluster.
void expect_typed_round_trip(Client& client) {
  TypedFuture<int> f = client.submit(typed_add_one, 10);
  const int eleven = f.result();
  EXPECT_EQ(eleven, 11);
  EXPECT_EQ(client.submit(typed_axpy, 2.0, 3.0, 4.0).result(), 10.0);
  // Arguments convert as in a call: a string literal to std::string, an int to int64_t.
  EXPECT_EQ(client.submit(typed_label, "x", 3).result(), "x#3");
  EXPECT_EQ(client.submit(typed_big, 7).result(), 7);
  EXPECT_EQ(client.submit(typed_block_sum, Block::from_values<double>({1, 2, 3}, {3})).result(), 6.0);
  EXPECT_EQ(client.submit(typed_twice, std::vector<int>{1, 2}).result(), (std::vector<int>{2, 4}));
  client.submit(typed_nothing, 1).result();  // void: waits, returns nothing

  // Typed futures as arguments, and as untyped Futures.
  auto g = client.submit(typed_add_one, client.submit(typed_add_one, 1));
  EXPECT_EQ(g.result(), 3);
  Future untyped = g;
  EXPECT_EQ(untyped.result_as<int>(), 3);
  EXPECT_EQ(client.submit(typed_add_one, untyped).result(), 4);

  // map over one and over several sequences; typed gather.
  std::vector<TypedFuture<int>> fs = client.map(typed_add_one, std::vector<int>{1, 2, 3});
  EXPECT_EQ(client.gather(fs), (std::vector<int>{2, 3, 4}));
  auto axpys = client.map(typed_axpy, std::vector<double>{1, 2}, std::vector<double>{10, 20}, std::vector<double>{5, 6});
  EXPECT_EQ(client.gather(axpys), (std::vector<double>{15, 46}));
  auto labels = client.map(typed_label, std::vector<std::string>{"a", "b"}, std::vector<int>{1, 2});
  EXPECT_EQ(client.gather(labels), (std::vector<std::string>{"a#1", "b#2"}));
  // map by name over several sequences.
  auto by_name = client.map("client_typed.axpy", std::vector<double>{1}, std::vector<double>{2}, std::vector<double>{3});
  EXPECT_EQ(by_name.at(0).result_as<double>(), 5.0);
  EXPECT_THROW(client.map(typed_label, std::vector<std::string>{"a"}, std::vector<int>{1, 2}), Error);

  // The exact int64 above 2^53 comes back exactly through a typed future and through item<T>.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  EXPECT_EQ(client.submit(typed_big, big).result(), big);
}

TEST(ClientTyped, RoundTripOnWorkerProcessesOverTcp) {
  LocalCluster cluster(processes_over_tcp());
  Client client(cluster, client_options(cluster.token(), 10));
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  expect_typed_round_trip(client);
}

TEST(ClientTyped, RoundTripOnThreadWorkersInProcess) {
  LocalCluster cluster(threads_over("inproc"));
  Client client(cluster, client_options(cluster.token()));
  expect_typed_round_trip(client);
}

// ---- argument checks -------------------------------------------------------------------------------------

TEST(ClientTyped, WrongArgumentTypeOrCountThrowsAtSubmit) {
  LocalCluster cluster(threads_over("tcp"));
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  // Before: a std::string given to int add_one returned 2, and 2.5 returned 1, with no error.
  EXPECT_THROW(client.submit("client_typed.add_one", std::string("x")), SignatureError);
  std::string what = message_of([&] { client.submit("client_typed.add_one", std::string("x")); });
  EXPECT_NE(what.find("client_typed.add_one"), std::string::npos) << what;
  EXPECT_NE(what.find("argument 1"), std::string::npos) << what;
  EXPECT_NE(what.find("expects int"), std::string::npos) << what;
  EXPECT_NE(what.find("given std::string"), std::string::npos) << what;

  what = message_of([&] { client.submit("client_typed.add_one", 2.5); });
  EXPECT_NE(what.find("argument 1 expects int, given double"), std::string::npos) << what;

  what = message_of([&] { client.submit("client_typed.label", std::string("a"), 2.0); });
  EXPECT_NE(what.find("client_typed.label: argument 2 expects int, given double"), std::string::npos) << what;

  what = message_of([&] { client.submit("client_typed.add_one", 1, 2); });
  EXPECT_NE(what.find("client_typed.add_one takes 1 argument (int), given 2 (int, int)"), std::string::npos)
      << what;
  EXPECT_THROW(client.submit("client_typed.add_one"), SignatureError);

  // map and submit_with check every call the same way; a typed future of the wrong type too.
  EXPECT_THROW(client.map("client_typed.add_one", std::vector<double>{1.0}), SignatureError);
  EXPECT_THROW(client.submit_with({}, "client_typed.add_one", std::string("x")), SignatureError);
  auto text = client.submit(typed_label, "a", 1);
  what = message_of([&] { client.submit("client_typed.add_one", text); });
  EXPECT_NE(what.find("argument 1 expects int, given std::string"), std::string::npos) << what;

  // Nothing was sent: the cluster still works.
  EXPECT_EQ(client.submit("client_typed.add_one", 1).result_as<int>(), 2);
}

TEST(ClientTyped, WorkerChecksArgumentsTheClientCouldNotSee) {
  LocalCluster cluster(threads_over("tcp"));
  Client client(cluster.scheduler_address(), client_options(cluster.token()));
  // An untyped Future's type is unknown at submit: the worker checks before the call.
  Future text = client.submit("client_typed.label", std::string("a"), 1);
  Future bad = client.submit("client_typed.add_one", text);
  std::string what = message_of([&] { bad.result(); });
  EXPECT_NE(what.find("client_typed.add_one: argument 1 expects int, given std::string"), std::string::npos)
      << what;
}

TEST(ClientTyped, ResultReadAsTheWrongTypeSaysSoInWords) {
  LocalCluster cluster(threads_over("inproc"));
  Client client(cluster, client_options(cluster.token()));
  Future f = client.submit("client_typed.add_one", 1);
  EXPECT_THROW(f.result_as<std::string>(), SerializationError);
  std::string what = message_of([&] { f.result_as<std::string>(); });
  EXPECT_NE(what.find("the result of " + f.key() + " holds int, read as std::string"), std::string::npos) << what;
  EXPECT_EQ(what.find("Failed to read"), std::string::npos) << what;
  what = message_of([&] { f.result_as<Block>(); });
  EXPECT_NE(what.find("holds int, read as tessera::Block"), std::string::npos) << what;
  what = message_of([&] { client.submit("client_typed.block_sum", Block::scalar(1.0)).result_as<std::int64_t>(); });
  EXPECT_NE(what.find("holds double, read as long"), std::string::npos) << what;
  // The right type still reads.
  EXPECT_EQ(f.result_as<int>(), 2);
}

TEST(ClientTyped, UnregisteredFunctionIsNamedAtSubmit) {
  LocalCluster cluster(threads_over("inproc"));
  Client client(cluster, client_options(cluster.token()));
  auto unregistered = [](int x) { return x; };
  std::string what = message_of([&] { client.submit(unregistered, 1); });
  EXPECT_NE(what.find("not registered"), std::string::npos) << what;
}

// ---- a movable Client ----------------------------------------------------------------------------------

TEST(ClientTyped, ClientMovesAndTheMovedFromOneSaysItIsEmpty) {
  LocalCluster cluster(threads_over("inproc"));
  Client a(cluster, client_options(cluster.token()));
  auto f = a.submit(typed_add_one, 1);
  const std::string address = a.address();

  Client b(std::move(a));
  EXPECT_TRUE(b.valid());
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested
  EXPECT_EQ(b.address(), address);
  EXPECT_EQ(f.result(), 2);  // futures made before the move keep working
  EXPECT_EQ(b.submit(typed_add_one, 2).result(), 3);
  std::string what = message_of([&] { a.submit(typed_add_one, 1); });
  EXPECT_NE(what.find("empty"), std::string::npos) << what;
  EXPECT_NE(what.find("moved"), std::string::npos) << what;
  EXPECT_THROW(a.address(), comm::CommClosedError);
  EXPECT_THROW(a.scheduler_info(), comm::CommClosedError);
  a.close();  // closing an empty client is harmless

  // Assignment: the target's own connection is closed, then it takes over.
  Client c(cluster, client_options(cluster.token()));
  auto held = c.submit(typed_add_one, 5);
  EXPECT_EQ(held.result(), 6);
  c = std::move(b);
  EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.submit(typed_add_one, 3).result(), 4);
  EXPECT_THROW(held.result(), comm::CommClosedError);  // c's old connection is closed
  EXPECT_THROW(b.gather(std::vector<Future>{}), comm::CommClosedError);

  // A client in a container, moved around.
  std::vector<Client> clients;
  clients.push_back(std::move(c));
  EXPECT_EQ(clients[0].submit(typed_add_one, 9).result(), 10);
}

// ---- logging -----------------------------------------------------------------------------------------------

// A done callback that throws makes the library log an error: it must go to the library's own
// logger, not to the application's default logger.
TEST(ClientTyped, HostApplicationLoggingIsLeftAlone) {
  // Loading the library did not replace spdlog's default logger (its default is named "").
  EXPECT_EQ(spdlog::default_logger()->name(), "") << "the library replaced spdlog's default logger";

  std::ostringstream captured;
  auto mine = std::make_shared<spdlog::logger>("host-app", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  mine->set_level(spdlog::level::trace);
  auto before = spdlog::default_logger();
  spdlog::set_default_logger(mine);
  const auto global_level = spdlog::get_level();
  struct Restore {
    std::shared_ptr<spdlog::logger> logger;
    ~Restore() { spdlog::set_default_logger(logger); }
  } restore{before};

  {
    LocalCluster cluster(threads_over("tcp"));
    Client client(cluster.scheduler_address(), client_options(cluster.token()));
    auto f = client.submit(typed_add_one, 1);
    EXPECT_EQ(f.result(), 2);
    f.add_done_callback([](const Future&) { throw std::runtime_error("callback boom"); });
    EXPECT_NEAR(tessera_test::seed_expr(200, 50).compute(client).item(),
                tessera_test::seed_expr(200, 50).compute(local_executor("sync")).item(), 1e-6);
  }

  EXPECT_EQ(spdlog::default_logger(), mine);
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::trace);
  EXPECT_EQ(spdlog::get_level(), global_level);
  EXPECT_EQ(captured.str().find("callback boom"), std::string::npos) << captured.str();
  EXPECT_EQ(captured.str(), "") << "the library wrote to the application's logger";
}

}  // namespace
