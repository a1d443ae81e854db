// What a peer that connects and does little may cost a listener (issue 19): a cap on
// connections, a deadline for the first message, accept failures (EMFILE) that back off and
// log once per interval, refusals logged at a bounded rate. Real sockets throughout.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include "comm/wire.hpp"
#include "comm_test_util.hpp"
#include "core/logging.hpp"
#include "tessera/comm/comm.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;

namespace {

// A socket to 127.0.0.1:port; fd() < 0 when no descriptor was left for it.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    timeval tv{0, 20000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Raw() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void write(const std::vector<std::uint8_t>& v) {
    if (fd_ >= 0) [[maybe_unused]] auto k = ::send(fd_, v.data(), v.size(), MSG_NOSIGNAL);
  }
  void say_hello() {
    wire::Hello h;
    h.nonce = wire::make_nonce();
    h.name = "raw";
    write(wire::encode_hello(h));
  }
  // True when the server closed the connection within timeout (what it sent is skipped).
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      const auto k = ::recv(fd_, buf, sizeof buf, 0);
      if (k == 0) return true;
      if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
};

// Copies the library's log lines while alive.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    library_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = library_logger()->sinks();
    for (auto it = sinks.begin(); it != sinks.end(); ++it)
      if (*it == sink_) {
        sinks.erase(it);
        break;
      }
  }
  int count(const std::string& needle) {
    library_logger()->flush();
    const std::string text = out_.str();
    int n = 0;
    for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

template <class F>
bool wait_until(F f, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

int open_descriptors() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n - 3;  // ".", ".." and the directory's own descriptor
}

}  // namespace

TEST(ListenerLimits, ConnectionsOverTheCapAreClosedAtOnce) {
  CommOptions opts;
  opts.max_connections = 4;
  opts.handshake_timeout = 5000ms;
  EchoServer server("tcp://127.0.0.1:0", opts);
  std::vector<std::unique_ptr<Raw>> silent;
  for (int i = 0; i < 4; ++i) silent.push_back(std::make_unique<Raw>(server.port()));
  std::this_thread::sleep_for(100ms);  // all four accepted and in their handshake
  {
    Raw fifth(server.port());
    EXPECT_TRUE(fifth.closed_within(1000ms)) << "a fifth connection waited instead of being closed at the cap";
  }
  EXPECT_THROW(connect(server.address()), HandshakeError);
  silent.pop_back();  // one slot comes free once the listener sees the close (or its timeout)
  silent.front()->say_hello();
  ASSERT_TRUE(wait_until([&] { return server.accepted() == 1; }, 2000ms));
  silent.pop_back();
  std::shared_ptr<Comm> comm;
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          comm = connect(server.address());
          return true;
        } catch (const CommError&) {
          return false;
        }
      },
      6000ms))
      << "no slot came free after peers closed";
  comm->send(Message("in")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "in");
}

TEST(ListenerLimits, AnAcceptedPeerThatNeverSpeaksIsClosed) {
  CommOptions opts;
  opts.first_message_timeout = 200ms;
  EchoServer server("tcp://127.0.0.1:0", opts);
  Raw idle(server.port());
  idle.say_hello();
  EXPECT_TRUE(idle.closed_within(2000ms)) << "an idle connection was kept after its handshake";
  const auto why = server.wait_close();
  EXPECT_NE(why.find("no message within 200 ms of the handshake"), std::string::npos) << why;

  auto comm = connect(server.address(), opts);  // the deadline is the listener's, not ours
  comm->send(Message("first")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "first");
  std::this_thread::sleep_for(400ms);
  comm->send(Message("later")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "later") << "a comm that spoke in time was closed";
}

TEST(ListenerLimits, RefusalsAreLoggedAtABoundedRate) {
  EchoServer server("tcp://127.0.0.1:0");
  LogCapture log;
  for (int i = 0; i < 40; ++i) {
    Raw garbage(server.port());
    garbage.write(std::vector<std::uint8_t>(16, 'G'));
    EXPECT_TRUE(garbage.closed_within(1000ms));
  }
  const int lines = log.count("refused a connection");
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, 3) << "40 refusals in well under a second gave " << lines << " log lines";
}

TEST(ListenerLimits, AcceptFailuresBackOffAndAreLoggedOncePerInterval) {
  CommOptions opts;
  opts.handshake_timeout = 5000ms;
  EchoServer server("tcp://127.0.0.1:0", opts);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  LogCapture log;
  std::vector<std::unique_ptr<Raw>> peers;
  {
    // Few descriptors left: the peers' sockets and the accepted ones use them up, and the
    // connections still waiting in the backlog make accept fail with EMFILE.
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(open_descriptors() + 8);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    struct Restore {
      rlimit lim;
      ~Restore() { ::setrlimit(RLIMIT_NOFILE, &lim); }
    } restore{old};
    for (int i = 0; i < 32; ++i) {
      auto r = std::make_unique<Raw>(server.port());
      if (r->fd() >= 0) peers.push_back(std::move(r));
      std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(1500ms);
  }
  const int lines = log.count("accept on");
  EXPECT_GE(lines, 1) << "accept never failed: the test did not run out of descriptors";
  EXPECT_LE(lines, 2) << "accept failures for 1.5 s gave " << lines << " log lines";
  peers.clear();
  // With descriptors back, the listener serves again.
  std::shared_ptr<Comm> comm;
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          comm = connect(server.address());
          return true;
        } catch (const CommError&) {
          return false;
        }
      },
      8000ms));
  comm->send(Message("back")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "back");
}
