// comm layer: tcp:// on 127.0.0.1 and inproc://. Every test ends in well under 2 s.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "comm/inbox.hpp"
#include "comm_test_util.hpp"
#include "../support/raw_socket.hpp"
#include "tessera/comm/comm.hpp"
#include "comm/wire.hpp"
#include "ops/task_serialize.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;

namespace {

using tessera_test::LoopbackSocket;


std::vector<std::uint8_t> good_hello() {
  wire::Hello h;
  h.nonce = wire::make_nonce();
  h.name = "raw";
  return wire::encode_hello(h);
}

class CommProtocol : public ::testing::TestWithParam<std::string> {
 protected:
  std::string listen_address() const { return GetParam() == "tcp" ? "tcp://127.0.0.1:0" : "inproc://"; }
};

}  // namespace

TEST_P(CommProtocol, RoundTripHeaderAndFrames) {
  EchoServer server(listen_address());
  auto comm = connect(server.address());
  EXPECT_EQ(comm->peer().transports.empty(), false);

  Task task{"x-1", "add", {KeyRef{"a"}, Value(Block::scalar(2.5))}, {}};
  task.annotations.resources["GPU"] = 1;
  Message msg("compute-task");
  msg.set("task", task).set("who", std::string("worker-1")).set("n", 42);
  const auto small = pattern_frame(3, 1), empty = pattern_frame(0, 2), big = pattern_frame(64 << 20, 3);
  msg.add_frame(small);
  msg.add_frame(empty);
  msg.add_frame(big);
  auto block = Block::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  msg.add_block("data", block);
  comm->send(msg).get();

  Message back = comm->recv(10s);  // 64 MiB echoed: seconds under ThreadSanitizer
  EXPECT_EQ(back.op, "compute-task");
  EXPECT_EQ(back.get<Task>("task").key, "x-1");
  EXPECT_EQ(back.get<Task>("task").annotations.resources.at("GPU"), 1);
  EXPECT_EQ(back.get<Task>("task").args.size(), 2u);
  EXPECT_EQ(back.get<std::string>("who"), "worker-1");
  EXPECT_EQ(back.get<int>("n"), 42);
  ASSERT_EQ(back.frames.size(), 4u);
  EXPECT_TRUE(same_bytes(back.frames[0], small));
  EXPECT_EQ(back.frames[1]->size(), 0u);
  EXPECT_TRUE(same_bytes(back.frames[2], big));
  const Block b = back.get_block("data");
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(b.to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  if (GetParam() == "inproc") {
    EXPECT_EQ(back.frames[2].get(), big.get()) << "inproc must hand frames over without copying";
  } else {
    EXPECT_NE(back.frames[2].get(), big.get());
  }
}

TEST_P(CommProtocol, ManyConcurrentConnections) {
  EchoServer server(listen_address());
  constexpr int kThreads = 8, kCommsPerThread = 4, kMessages = 20;
  EXPECT_EQ(concurrent_echoes(server.address(), kThreads, kCommsPerThread, kMessages, 1, 1500ms),
            kThreads * kCommsPerThread * kMessages);
  EXPECT_EQ(server.accepted(), kThreads * kCommsPerThread);
}

TEST_P(CommProtocol, TokenMismatchIsRefusedOnBothSides) {
  CommOptions server_opts;
  server_opts.token = "secret-a";
  EchoServer server(listen_address(), server_opts);
  CommOptions bad;
  bad.token = "secret-b";
  const auto client_error = what([&] { connect(server.address(), bad); });
  EXPECT_NE(client_error.find("token mismatch"), std::string::npos) << client_error;
  EXPECT_NE(server.wait_refusal().find("token mismatch"), std::string::npos);
  EXPECT_EQ(server.accepted(), 0);
  EXPECT_THROW(connect(server.address(), bad), HandshakeError);

  CommOptions good;
  good.token = "secret-a";
  auto comm = connect(server.address(), good);
  comm->send(Message("hi")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "hi");
}

TEST_P(CommProtocol, VersionMismatchIsRefusedOnBothSides) {
  EchoServer server(listen_address());
  CommOptions future;
  future.protocol_version = wire::kProtocolVersion + 1;
  future.name = "from-the-future";
  const auto client_error = what([&] { connect(server.address(), future); });
  EXPECT_NE(client_error.find("protocol version mismatch"), std::string::npos) << client_error;
  const auto server_error = server.wait_refusal();
  EXPECT_NE(server_error.find("protocol version mismatch"), std::string::npos) << server_error;
  EXPECT_NE(server_error.find("from-the-future"), std::string::npos) << server_error;
  EXPECT_EQ(server.accepted(), 0);
}

TEST_P(CommProtocol, CloseIsSeenByThePeerAndSendsAfterCloseFail) {
  EchoServer server(listen_address());
  auto comm = connect(server.address());
  std::promise<std::string> closed;
  auto peer = connect(server.address());
  peer->set_handlers([](Message) {}, [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const CommClosedError& ex) {
      closed.set_value(ex.what());
    } catch (const std::exception& ex) {
      closed.set_value(std::string("wrong type: ") + ex.what());
    }
  });
  comm->send(Message("last")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "last");
  comm->close();
  EXPECT_TRUE(comm->is_closed());
  EXPECT_THROW(comm->send(Message("too-late")).get(), CommClosedError);
  EXPECT_THROW(comm->recv(100ms), CommClosedError);
  // The server side of `comm` closes too.
  EXPECT_NE(server.wait_close().find("closed"), std::string::npos);
  peer->close();
  auto fut = closed.get_future();
  ASSERT_EQ(fut.wait_for(1s), std::future_status::ready);
  EXPECT_NE(fut.get().find("closed locally"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Comm, CommProtocol, ::testing::Values("tcp", "inproc"),
                         [](const auto& info) { return info.param; });

TEST(CommTcp, ListenerReportsTheBoundPort) {
  EchoServer server("tcp://127.0.0.1:0");
  EXPECT_EQ(server.address().rfind("tcp://127.0.0.1:", 0), 0u);
  EXPECT_GT(server.port(), 0);
  auto comm = connect(server.address());
  EXPECT_EQ(comm->peer_address(), server.address());
  EXPECT_EQ(comm->peer().address, server.address());
}

TEST(CommTcp, GarbageBytesCloseThatConnectionOnly) {
  EchoServer server("tcp://127.0.0.1:0");
  auto before = connect(server.address());  // an existing good connection must survive
  {
    LoopbackSocket raw(server.port());
    std::mt19937 rng(7);
    std::vector<std::uint8_t> junk(4096);
    for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
    junk[0] = 'G';  // not the hello magic, whatever the seed
    raw.write(junk);
    EXPECT_TRUE(raw.wait_closed(1500ms));
  }
  EXPECT_NE(server.wait_refusal().find("bad handshake magic"), std::string::npos);
  auto after = connect(server.address());
  after->send(Message("still-serving")).get();
  EXPECT_EQ(after->recv(1000ms).op, "still-serving");
  before->send(Message("old-one")).get();
  EXPECT_EQ(before->recv(1000ms).op, "old-one");
}

TEST(CommTcp, GarbageAfterHandshakeIsAProtocolError) {
  EchoServer server("tcp://127.0.0.1:0");
  LoopbackSocket raw(server.port());
  raw.write(good_hello());
  std::vector<std::uint8_t> junk(64, 0xAB);
  raw.write(junk);
  EXPECT_TRUE(raw.wait_closed(1500ms));
  const auto why = server.wait_close();
  EXPECT_NE(why.find("bad message magic"), std::string::npos) << why;
  EXPECT_NE(why.find("protocol error"), std::string::npos) << why;
}

TEST(CommTcp, OversizedDeclaredLengthsCloseTheConnection) {
  CommOptions opts;
  opts.max_frame_bytes = 1 << 20;
  EchoServer server("tcp://127.0.0.1:0", opts);
  {
    LoopbackSocket raw(server.port());
    raw.write(good_hello());
    raw.write(wire::encode_preamble(std::uint64_t{1} << 40, {}));  // a 1 TiB header
    EXPECT_TRUE(raw.wait_closed(1500ms));
  }
  const auto why = server.wait_close();
  EXPECT_NE(why.find("header of 1099511627776 bytes exceeds the limit"), std::string::npos) << why;
  {
    LoopbackSocket raw(server.port());
    raw.write(good_hello());
    raw.write(wire::encode_preamble(10, {16, std::uint64_t{2} << 20}));  // frame over 1 MiB
    EXPECT_TRUE(raw.wait_closed(1500ms));
  }
  auto comm = connect(server.address(), opts);
  Message m("fits");
  m.add_frame(pattern_frame(1 << 20, 5));
  comm->send(m).get();
  EXPECT_TRUE(same_bytes(comm->recv(1000ms).frames.at(0), m.frames[0]));
  // The sender refuses what its own limits forbid, before writing anything.
  Message too_big("too-big");
  too_big.add_frame(pattern_frame((1 << 20) + 1, 6));
  EXPECT_THROW(comm->send(too_big).get(), ProtocolError);
  EXPECT_FALSE(comm->is_closed());
}

TEST(CommTcp, PeerClosingMidMessageGivesACleanError) {
  EchoServer server("tcp://127.0.0.1:0");
  {
    LoopbackSocket raw(server.port());
    raw.write(good_hello());
    raw.write(wire::encode_preamble(0, {1 << 20}));
    std::vector<std::uint8_t> part(1000, 1);
    raw.write(part);
    std::this_thread::sleep_for(20ms);
  }  // closed here, 1000 of 1 MiB sent
  const auto why = server.wait_close();
  EXPECT_NE(why.find("middle of a message"), std::string::npos) << why;
  EXPECT_NE(why.find("1000 of 1048576"), std::string::npos) << why;
}

TEST(CommTcp, RecvOnAClosedPeerThrowsInsteadOfHanging) {
  std::shared_ptr<Comm> server_side;
  std::promise<void> accepted;
  auto listener = listen("tcp://127.0.0.1:0", [&](std::shared_ptr<Comm> c) {
    server_side = std::move(c);
    accepted.set_value();
  });
  auto comm = connect(listener->address());
  ASSERT_EQ(accepted.get_future().wait_for(1s), std::future_status::ready);
  server_side->send(Message("bye")).get();
  server_side->close();
  EXPECT_EQ(comm->recv(1000ms).op, "bye");  // what was sent before the close still arrives
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(comm->recv(1500ms), CommClosedError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);
  EXPECT_TRUE(comm->is_closed());
  EXPECT_NE(comm->close_reason().find("peer closed the connection"), std::string::npos);
}

TEST(CommTcp, ConnectToAClosedPortFailsFast) {
  int port = 0;
  {
    EchoServer gone("tcp://127.0.0.1:0");
    port = gone.port();
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto msg = what([&] { connect("tcp://127.0.0.1:" + std::to_string(port)); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  EXPECT_NE(msg.find("cannot connect to tcp://127.0.0.1:" + std::to_string(port)), std::string::npos) << msg;
  EXPECT_NE(msg.find("refused"), std::string::npos) << msg;
}

TEST(CommTcp, SilentPeerTimesOutTheHandshake) {
  CommOptions opts;
  opts.handshake_timeout = 100ms;
  EchoServer server("tcp://127.0.0.1:0", opts);
  LoopbackSocket raw(server.port());  // connects, never says hello
  EXPECT_TRUE(raw.wait_closed(1500ms));
  EXPECT_NE(server.wait_refusal().find("no handshake"), std::string::npos);
}

TEST(CommTcp, DeviceFramesAreRefused) {
  EchoServer server("tcp://127.0.0.1:0");
  auto comm = connect(server.address());
  static char fake[16];
  Message m("device");
  m.add_frame(Buffer::adopt(fake, sizeof fake, MemoryKind::Device, 0, [](void*, std::size_t) {}));
  const auto msg = what([&] { comm->send(m).get(); });
  EXPECT_NE(msg.find("device memory"), std::string::npos) << msg;
}

// The receive back-pressure bookkeeping of tcp:// and ucx://: what the owner has not taken
// counts against the limits, with what the transport is still taking in; what it took is
// forgotten, so the record stays short however many messages pass.
TEST(CommBacklog, CountsWhatTheOwnerHasNotTaken) {
  CommOptions o;
  o.max_queued_bytes = 100;
  o.max_queued_messages = 0;
  auto inbox = std::make_shared<tessera::comm::detail::Inbox>();
  tessera::comm::detail::Backlog backlog(o);
  for (int i = 0; i < 3; ++i) {
    inbox->push(Message("m"));
    backlog.pushed(40, *inbox);
  }
  EXPECT_TRUE(backlog.over(*inbox)) << "120 bytes waiting, limit 100";
  ASSERT_TRUE(inbox->pop(std::chrono::milliseconds(0)));
  ASSERT_TRUE(inbox->pop(std::chrono::milliseconds(0)));
  EXPECT_FALSE(backlog.over(*inbox)) << "40 bytes waiting";
  EXPECT_TRUE(backlog.over(*inbox, 1, 60)) << "40 waiting + 60 arriving";

  for (int i = 0; i < 10000; ++i) {
    inbox->push(Message("m"));
    backlog.pushed(1, *inbox);
    ASSERT_TRUE(inbox->pop(std::chrono::milliseconds(0)));
  }
  EXPECT_LE(backlog.recorded(), 64u) << "taken messages are forgotten";

  CommOptions by_count;
  by_count.max_queued_bytes = 0;
  by_count.max_queued_messages = 2;
  tessera::comm::detail::Backlog counted(by_count);
  auto inbox2 = std::make_shared<tessera::comm::detail::Inbox>();
  inbox2->push(Message("m"));
  counted.pushed(1, *inbox2);
  EXPECT_FALSE(counted.over(*inbox2));
  EXPECT_TRUE(counted.over(*inbox2, 1, 0)) << "one waiting + one arriving = the limit";
}

TEST(CommAddress, UnknownSchemeNamesTheSupportedOnes) {
  const auto msg = what([] { connect("carrier-pigeon://coop:1"); });
  EXPECT_NE(msg.find("unknown comm scheme 'carrier-pigeon'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tcp://"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inproc://"), std::string::npos) << msg;
  EXPECT_THROW(listen("carrier-pigeon://coop:1", [](std::shared_ptr<Comm>) {}), CommError);
  EXPECT_THROW(connect("no-scheme-here"), CommError);
  EXPECT_THROW(listen("tcp://127.0.0.1", [](std::shared_ptr<Comm>) {}), CommError);
  EXPECT_THROW(connect("inproc://nobody-listens-here"), CommError);
  std::promise<std::string> async_error;
  connect_async("bogus://x", {}, [&](std::shared_ptr<Comm>, std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      async_error.set_value(ex.what());
    }
  });
  EXPECT_NE(async_error.get_future().get().find("unknown comm scheme"), std::string::npos);
  const auto schemes = transport_schemes();
  EXPECT_EQ(schemes, (std::vector<std::string>{"inproc", "tcp", "tls", "ucx"}));
}

TEST(CommMessage, MissingOrMistypedFieldsAreProtocolErrors) {
  Message m("op");
  m.set("n", 1);
  EXPECT_THROW(m.get<int>("missing"), ProtocolError);
  EXPECT_THROW(m.get_block("n"), ProtocolError);
  EXPECT_THROW(m.get<Block>("n"), ProtocolError);
  Message decoded;
  const std::string header = encode_header(m);
  decode_header(header.data(), header.size(), decoded);
  EXPECT_EQ(decoded.get<int>("n"), 1);
  EXPECT_THROW(decode_header(header.data(), header.size() - 1, decoded), ProtocolError);
}
