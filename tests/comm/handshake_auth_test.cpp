// The tcp:// handshake proves the token without sending it (issue 19): whatever a peer sends,
// or does not send, the bytes it gets back never hold the token; a wrong, missing or reflected
// proof is refused on both sides with a clear error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/wire.hpp"
#include "comm_test_util.hpp"
#include "tessera/comm/comm.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;

namespace {

const std::string kToken = "a-token-no-peer-may-ever-see-0123456789";

bool holds(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

// A plain socket to 127.0.0.1:port that records every byte the server sends.
class Peek {
 public:
  explicit Peek(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("raw connect failed");
    timeval tv{0, 20000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Peek() { ::close(fd_); }
  void write(const std::vector<std::uint8_t>& v) {
    std::size_t off = 0;
    while (off < v.size()) {
      const auto k = ::send(fd_, v.data() + off, v.size() - off, MSG_NOSIGNAL);
      if (k <= 0) return;
      off += static_cast<std::size_t>(k);
    }
  }
  // Reads exactly n more bytes (kept in received()); false on close or timeout.
  bool read_exact(std::size_t n, std::chrono::milliseconds timeout = 2000ms) {
    const auto want = got_.size() + n;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (got_.size() < want && std::chrono::steady_clock::now() < deadline)
      if (!read_some(want - got_.size())) return false;
    return got_.size() >= want;
  }
  // Reads until the server closes; true when it did within timeout.
  bool read_until_closed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline)
      if (!read_some(4096)) return closed_;
    return false;
  }
  const std::vector<std::uint8_t>& received() const { return got_; }

 private:
  // False once the connection has ended.
  bool read_some(std::size_t n) {
    std::vector<std::uint8_t> buf(n);
    const auto k = ::recv(fd_, buf.data(), n, 0);
    if (k > 0) got_.insert(got_.end(), buf.begin(), buf.begin() + k);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closed_ = true;
    return !closed_;
  }
  int fd_ = -1;
  bool closed_ = false;
  std::vector<std::uint8_t> got_;
};

std::vector<std::uint8_t> hello_with_proof_flag() {
  wire::Hello h;
  h.nonce = wire::make_nonce();
  h.flags = wire::kHelloProves;
  h.name = "raw";
  return wire::encode_hello(h);
}

CommOptions with_token(const std::string& token, std::chrono::milliseconds handshake = 300ms) {
  CommOptions o;
  o.token = token;
  o.handshake_timeout = handshake;
  return o;
}

}  // namespace

TEST(HandshakeAuth, ListenerNeverSendsItsTokenWhateverThePeerSends) {
  EchoServer server("tcp://127.0.0.1:0", with_token(kToken));
  {
    SCOPED_TRACE("a bare socket that sends nothing");
    Peek raw(server.port());
    EXPECT_TRUE(raw.read_until_closed(2000ms));
    EXPECT_FALSE(holds(raw.received(), kToken)) << "the listener sent its token to a silent socket";
    EXPECT_GE(raw.received().size(), wire::kHelloFixedBytes) << "its hello (with no token) still comes";
  }
  {
    SCOPED_TRACE("garbage");
    Peek raw(server.port());
    raw.write(std::vector<std::uint8_t>(100, 'G'));
    EXPECT_TRUE(raw.read_until_closed(2000ms));
    EXPECT_FALSE(holds(raw.received(), kToken));
  }
  {
    SCOPED_TRACE("a hello that claims a token, then a wrong proof");
    Peek raw(server.port());
    auto bytes = hello_with_proof_flag();
    bytes.resize(bytes.size() + wire::kProofBytes, 0x5a);
    raw.write(bytes);
    EXPECT_TRUE(raw.read_until_closed(2000ms));
    EXPECT_FALSE(holds(raw.received(), kToken));
  }
  EXPECT_EQ(server.accepted(), 0);
}

TEST(HandshakeAuth, ConnectorNeverSendsItsTokenToTheServerItDials) {
  // A listening socket that records what a Tessera client says, and says nothing back.
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  auto heard = std::async(std::launch::async, [lfd] {
    std::vector<std::uint8_t> got;
    const int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return got;
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    for (;;) {
      const auto k = ::recv(fd, buf, sizeof buf, 0);
      if (k <= 0) break;
      got.insert(got.end(), buf, buf + k);
    }
    ::close(fd);
    return got;
  });
  const auto error = what([&] { connect("tcp://127.0.0.1:" + std::to_string(port), with_token(kToken)); });
  const auto got = heard.get();
  ::close(lfd);
  EXPECT_NE(error.find("no handshake"), std::string::npos) << error;
  EXPECT_GE(got.size(), wire::kHelloFixedBytes) << "the client's hello never came";
  EXPECT_FALSE(holds(got, kToken)) << "the client sent its token to a server that proved nothing";
}

TEST(HandshakeAuth, WrongOrMissingTokenIsRefusedWithAClearErrorAndTheRightOneWorks) {
  EchoServer server("tcp://127.0.0.1:0", with_token(kToken, 2000ms));
  {
    const auto error = what([&] { connect(server.address(), with_token(kToken + "-not")); });
    EXPECT_NE(error.find("handshake token mismatch (the peer refused our proof: it holds another shared secret)"),
              std::string::npos)
        << error;
    EXPECT_NE(server.wait_refusal().find("token mismatch"), std::string::npos);
  }
  {
    const auto error = what([&] { connect(server.address(), with_token("")); });
    EXPECT_NE(error.find("token mismatch (the peer requires a token; we have none)"), std::string::npos) << error;
  }
  auto comm = connect(server.address(), with_token(kToken, 2000ms));
  comm->send(Message("hi")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "hi");
  EXPECT_EQ(server.accepted(), 1);

  // A server without a token refuses a client that demands one (it cannot prove it).
  EchoServer open_server("tcp://127.0.0.1:0");
  const auto error = what([&] { connect(open_server.address(), with_token(kToken)); });
  EXPECT_NE(error.find("token mismatch (we require a token; the peer has none)"), std::string::npos) << error;
  EXPECT_EQ(open_server.accepted(), 0);
}

TEST(HandshakeAuth, AStrangerReceivesNoProofToTestGuessesAgainst) {
  // Issue 29: the listener sent its own proof, an HMAC of the token over both hellos, before
  // checking the connector's, so anyone who connected could test token guesses offline (a
  // ten-character dictionary token fell in under a second). The connector proves first now: a
  // peer that does not know the token gets the listener's hello (a nonce, its name and
  // address) and then the close, whatever it sends. The peer answers in the listener's own
  // protocol version, so that no version check stops the handshake before the proofs.
  EchoServer server("tcp://127.0.0.1:0", with_token(kToken, 300ms));
  auto stranger = [&](const char* what, bool send_hello, bool send_proof) {
    SCOPED_TRACE(what);
    Peek raw(server.port());
    ASSERT_TRUE(raw.read_exact(wire::kHelloFixedBytes));
    std::uint32_t version = 0;
    const auto n = wire::decode_hello_fixed(raw.received().data(), version);
    ASSERT_TRUE(raw.read_exact(n));
    const auto theirs = wire::decode_hello_body(version, raw.received().data() + wire::kHelloFixedBytes, n);
    if (version == wire::kProtocolVersion) {
      EXPECT_TRUE(theirs.flags & wire::kHelloProves) << "it has a token";
    }
    if (send_hello) {
      wire::Hello h;
      h.version = version;
      h.nonce = wire::make_nonce();
      h.flags = wire::kHelloProves;  // "I have a token; a proof follows"
      h.name = "stranger";
      auto bytes = wire::encode_hello(h);
      if (send_proof) bytes.resize(bytes.size() + wire::kProofBytes, 0x5a);
      raw.write(bytes);
    }
    EXPECT_TRUE(raw.read_until_closed(3000ms)) << "the listener did not close the connection";
    // After its hello, only the fixed refusal (the same for every token) may come.
    const std::vector<std::uint8_t> after(raw.received().begin() + static_cast<std::ptrdiff_t>(wire::kHelloFixedBytes + n),
                                          raw.received().end());
    const std::vector<std::uint8_t> refusal(wire::kProofRefused, wire::kProofRefused + wire::kProofBytes);
    EXPECT_TRUE(after.empty() || after == refusal)
        << after.size() << " bytes came after the listener's hello, not its fixed refusal: its proof, against which "
        << "guesses of the token can be tested";
    if (!send_proof) {
      EXPECT_TRUE(after.empty()) << "a peer that proved nothing was refused before it did";
    }
  };
  stranger("a hello claiming a token, then silence", true, false);
  stranger("a hello and a wrong proof", true, true);
  stranger("nothing at all", false, false);
  EXPECT_EQ(server.accepted(), 0);
  // A connector that knows the token still gets the listener's proof, and a comm.
  auto comm = connect(server.address(), with_token(kToken, 2000ms));
  comm->send(Message("proved")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "proved");
}

TEST(HandshakeAuth, TheConnectorsOwnProofSentBackIsRefused) {
  // Reflection: a server without the token that echoes the connector's proof back to it. The
  // roles in the MAC make the connector expect another value (the listener no longer sends a
  // proof first, so the connector's is the one a stranger could try to reflect).
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  auto mirror = std::async(std::launch::async, [lfd] {
    const int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return false;
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    auto recv_exact = [fd](std::uint8_t* p, std::size_t n) {
      while (n > 0) {
        const auto k = ::recv(fd, p, n, 0);
        if (k <= 0) return false;
        p += k;
        n -= static_cast<std::size_t>(k);
      }
      return true;
    };
    std::vector<std::uint8_t> fixed(wire::kHelloFixedBytes);
    bool ok = recv_exact(fixed.data(), fixed.size());
    std::uint32_t version = 0;
    std::vector<std::uint8_t> body(ok ? wire::decode_hello_fixed(fixed.data(), version) : 0);
    ok = ok && recv_exact(body.data(), body.size());
    wire::Hello h;  // in the connector's version, claiming a token
    h.version = version;
    h.nonce = wire::make_nonce();
    h.flags = wire::kHelloProves;
    h.name = "mirror";
    const auto ours = wire::encode_hello(h);
    ::send(fd, ours.data(), ours.size(), MSG_NOSIGNAL);
    std::vector<std::uint8_t> proof(wire::kProofBytes);
    ok = ok && recv_exact(proof.data(), proof.size());
    if (ok) ::send(fd, proof.data(), proof.size(), MSG_NOSIGNAL);  // its own proof, back
    std::uint8_t rest[64];
    while (::recv(fd, rest, sizeof rest, 0) > 0) {
    }
    ::close(fd);
    return ok;
  });
  const auto error = what([&] { connect("tcp://127.0.0.1:" + std::to_string(port), with_token(kToken, 2000ms)); });
  EXPECT_TRUE(mirror.get()) << "the connector did not send its hello and proof";
  ::close(lfd);
  EXPECT_NE(error.find("handshake token mismatch (the peer proved another shared secret)"), std::string::npos)
      << error;
}
