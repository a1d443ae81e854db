// tls:// (issue 19): mutual TLS over the tcp:// code path. The tests make their own CA and
// certificates at run time (tests/support/tls_certs.hpp) and use real loopback sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include "comm/tls_context.hpp"
#include "comm/wire.hpp"
#include "comm_test_util.hpp"
#include "../support/tls_certs.hpp"
#include "tessera/comm/comm.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;
using tessera_test::TestPki;

namespace {

int port_of(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

int dial(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A TCP relay on loopback to `target_port` for one connection, keeping a copy of every byte the
// client sent: what an observer of the wire sees.
class Relay {
 public:
  explicit Relay(int target_port) : target_port_(target_port) {
    lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd_, 1) != 0)
      throw std::runtime_error("relay: cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    ::close(lfd_);
  }
  int port() const { return port_; }
  std::string captured() {
    std::lock_guard lk(mu_);
    return captured_;
  }

 private:
  void run() {
    pollfd lp{lfd_, POLLIN, 0};
    while (!stop_ && ::poll(&lp, 1, 50) == 0) {
    }
    if (stop_) return;
    const int c = ::accept(lfd_, nullptr, nullptr);
    const int s = dial(target_port_);
    if (c < 0 || s < 0) return;
    char buf[65536];
    while (!stop_) {
      pollfd p[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      bool done = false;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const auto k = ::recv(p[i].fd, buf, sizeof buf, 0);
        if (k <= 0) {
          done = true;
          break;
        }
        if (i == 0) {
          std::lock_guard lk(mu_);
          captured_.append(buf, static_cast<std::size_t>(k));
        }
        if (::send(p[1 - i].fd, buf, static_cast<std::size_t>(k), MSG_NOSIGNAL) != k) done = true;
      }
      if (done) break;
    }
    ::close(c);
    ::close(s);
  }

  int target_port_;
  int lfd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string captured_;
  std::thread thread_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed (apt-get install openssl)";
    pki_ = std::make_unique<TestPki>();
    pki_->make_ca("ca");
    pki_->make_ca("other-ca");
    server_ = pki_->make_cert("ca", "server");
    client_ = pki_->make_cert("ca", "client");
    stranger_ = pki_->make_cert("other-ca", "stranger");
  }
  CommOptions server_options() const {
    CommOptions o;
    o.security = server_;
    o.handshake_timeout = 2000ms;
    return o;
  }
  CommOptions client_options(const Security& s) const {
    CommOptions o;
    o.security = s;
    o.handshake_timeout = 2000ms;
    return o;
  }
  // The server still serves a good client (after a refusal).
  void expect_serves(const std::string& address) {
    auto c = connect(address, client_options(client_));
    Message m("ping");
    m.set("i", 42);
    c->send(std::move(m)).get();
    EXPECT_EQ(c->recv(5s).get<int>("i"), 42);
  }

  std::unique_ptr<TestPki> pki_;
  Security server_, client_, stranger_;
};

TEST_F(TlsTest, MutualTlsCarriesMessagesBothWays) {
  EchoServer server("tls://127.0.0.1:0", server_options());
  ASSERT_EQ(server.address().rfind("tls://", 0), 0u) << server.address();
  auto c = connect(server.address(), client_options(client_));
  EXPECT_EQ(c->transport(), "tls");
  EXPECT_EQ(c->peer_address().rfind("tls://127.0.0.1:", 0), 0u) << c->peer_address();
  // Small messages, then one large enough for the direct-read path (frames of 24 MiB and 3 bytes).
  for (int i = 0; i < 20; ++i) {
    Message m("echo");
    m.set("i", i);
    c->send(std::move(m), nullptr);
  }
  for (int i = 0; i < 20; ++i) EXPECT_EQ(c->recv(5s).get<int>("i"), i);
  const auto big = pattern_frame(std::size_t{24} << 20, 5), small = pattern_frame(3, 9);
  Message m("echo");
  m.add_frame(big);
  m.add_frame(small);
  c->send(std::move(m)).get();
  auto back = c->recv(20s);
  ASSERT_EQ(back.frames.size(), 2u);
  EXPECT_TRUE(same_bytes(back.frames[0], big));
  EXPECT_TRUE(same_bytes(back.frames[1], small));
  EXPECT_EQ(server.transports(), std::vector<std::string>{"tls"});
}

TEST_F(TlsTest, TokenProofRunsInsideTls) {
  auto so = server_options();
  so.token = "tls-and-token";
  EchoServer server("tls://127.0.0.1:0", so);
  auto good = client_options(client_);
  good.token = "tls-and-token";
  auto c = connect(server.address(), good);
  c->send(Message("echo")).get();
  EXPECT_EQ(c->recv(5s).op, "echo");
  auto bad = client_options(client_);
  bad.token = "another";
  EXPECT_THROW(connect(server.address(), bad), HandshakeError);
}

TEST_F(TlsTest, ClientWithoutCertificateIsRefusedAndServerGoesOn) {
  EchoServer server("tls://127.0.0.1:0", server_options());
  Security ca_only{client_.tls_ca_file, "", ""};
  const auto why = what([&] { connect(server.address(), client_options(ca_only))->recv(2s); });
  EXPECT_NE(why.find("TLS"), std::string::npos) << why;
  EXPECT_NE(server.wait_refusal().find("TLS refused"), std::string::npos);
  expect_serves(server.address());
}

TEST_F(TlsTest, CertificateFromAnotherCaIsRefusedBothWays) {
  EchoServer server("tls://127.0.0.1:0", server_options());
  // The client trusts only the other CA: it refuses the server's certificate.
  const auto why = what([&] { connect(server.address(), client_options(stranger_)); });
  EXPECT_NE(why.find("certificate verify failed"), std::string::npos) << why;
  // The client trusts our CA but presents the other CA's certificate: the server refuses it.
  Security mixed{client_.tls_ca_file, stranger_.tls_cert, stranger_.tls_key};
  const auto why2 = what([&] { connect(server.address(), client_options(mixed))->recv(2s); });
  EXPECT_NE(why2.find("TLS"), std::string::npos) << why2;
  expect_serves(server.address());
}

TEST_F(TlsTest, PlainTcpToTlsPortAndTlsToTcpPortAreRefusedClearly) {
  EchoServer server("tls://127.0.0.1:0", server_options());
  const auto plain = "tcp://127.0.0.1:" + std::to_string(port_of(server.address()));
  const auto why = what([&] { connect(plain, client_options({})); });
  EXPECT_NE(why.find("tls://"), std::string::npos) << why;
  EXPECT_NE(server.wait_refusal().find("TLS refused"), std::string::npos);
  expect_serves(server.address());

  EchoServer tcp_server("tcp://127.0.0.1:0", client_options({}));
  const auto tls_to_tcp = "tls://127.0.0.1:" + std::to_string(port_of(tcp_server.address()));
  auto o = client_options(client_);
  o.handshake_timeout = 1000ms;
  const auto why2 = what([&] { connect(tls_to_tcp, o); });
  EXPECT_NE(why2.find("handshake"), std::string::npos) << why2;
}

TEST_F(TlsTest, SilentPeerIsClosedAfterHandshakeTimeoutAndFreesItsSlot) {
  auto so = server_options();
  so.handshake_timeout = 300ms;
  so.max_connections = 2;
  EchoServer server("tls://127.0.0.1:0", so);
  const int port = port_of(server.address());
  // Two peers open TCP and never start TLS: they hold both slots...
  const int a = dial(port), b = dial(port);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  std::this_thread::sleep_for(100ms);
  auto o = client_options(client_);
  o.handshake_timeout = 500ms;
  EXPECT_THROW(connect(server.address(), o), CommError);
  // ...until the handshake deadline closes them.
  const auto start = std::chrono::steady_clock::now();
  pollfd p{a, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 3000), 1);
  char byte;
  EXPECT_EQ(::recv(a, &byte, 1, 0), 0);  // closed, nothing sent
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_NE(server.wait_refusal().find("no handshake"), std::string::npos);
  ::close(a);
  ::close(b);
  std::this_thread::sleep_for(400ms);
  expect_serves(server.address());
}

TEST_F(TlsTest, WireCarriesNoPlaintext) {
  const std::string secret = "tessera-known-key-7f3a91";
  auto send_through_relay = [&](const std::string& scheme, const CommOptions& so, const CommOptions& co) {
    EchoServer server(scheme + "://127.0.0.1:0", so);
    Relay relay(port_of(server.address()));
    auto c = connect(scheme + "://127.0.0.1:" + std::to_string(relay.port()), co);
    Message m("echo");
    m.set("key", secret);
    auto frame = Buffer::allocate_host(secret.size());
    std::memcpy(frame->data(), secret.data(), secret.size());
    m.add_frame(frame);
    c->send(std::move(m)).get();
    EXPECT_EQ(c->recv(5s).get<std::string>("key"), secret);
    c->close();
    return relay.captured();
  };
  // The capture works: over tcp:// the key is there in clear...
  const auto clear = send_through_relay("tcp", client_options({}), client_options({}));
  EXPECT_NE(clear.find(secret), std::string::npos);
  // ...and over tls:// it is not, though as many bytes went through.
  const auto sealed = send_through_relay("tls", server_options(), client_options(client_));
  EXPECT_GT(sealed.size(), 2 * secret.size());
  EXPECT_EQ(sealed.find(secret), std::string::npos);
}

TEST_F(TlsTest, LengthsAreCheckedInsideTlsAsOverTcp) {
  // A peer with a good certificate that claims a 1 GiB header: closed with a protocol error
  // (the limit is checked before any allocation, after decryption), and the server goes on.
  auto so = server_options();
  so.max_header_bytes = std::size_t{1} << 20;
  EchoServer server("tls://127.0.0.1:0", so);
  namespace asio = boost::asio;
  asio::io_context io;
  auto ctx = tessera::comm::detail::tls_context(client_, /*for_listener=*/false);
  asio::ssl::stream<asio::ip::tcp::socket> tls(io, *ctx);
  asio::ip::tcp::resolver resolver(io);
  asio::connect(tls.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port_of(server.address()))));
  tls.handshake(asio::ssl::stream_base::client);
  wire::Hello h;
  h.nonce = wire::make_nonce();
  h.name = "raw tls";
  asio::write(tls, asio::buffer(wire::encode_hello(h)));
  std::array<std::uint8_t, wire::kHelloFixedBytes> fixed{};
  asio::read(tls, asio::buffer(fixed));
  std::uint32_t version = 0;
  std::vector<std::uint8_t> body(wire::decode_hello_fixed(fixed.data(), version));
  asio::read(tls, asio::buffer(body));
  asio::write(tls, asio::buffer(wire::encode_preamble(std::uint64_t{1} << 30, {})));
  const auto why = server.wait_close(3s);
  EXPECT_NE(why.find("protocol error"), std::string::npos) << why;
  EXPECT_NE(why.find("header"), std::string::npos) << why;
  expect_serves(server.address());
}

TEST_F(TlsTest, BadFilesAreToldAtStart) {
  const auto missing = what([&] { check_security({server_.tls_ca_file, pki_->path("nope.pem"), server_.tls_key}, true); });
  EXPECT_NE(missing.find("nope.pem"), std::string::npos) << missing;
  EXPECT_NE(missing.find("cannot be read"), std::string::npos) << missing;
  const auto mismatch = what([&] { check_security({server_.tls_ca_file, server_.tls_cert, client_.tls_key}, true); });
  EXPECT_NE(mismatch.find("does not belong"), std::string::npos) << mismatch;
  const auto not_pem = what([&] { check_security({server_.tls_key, server_.tls_cert, server_.tls_key}, true); });
  EXPECT_NE(not_pem.find("CA file"), std::string::npos) << not_pem;
  const auto no_cert = what([&] { check_security({server_.tls_ca_file, "", ""}, true); });
  EXPECT_NE(no_cert.find("--tls-cert"), std::string::npos) << no_cert;
  EXPECT_NO_THROW(check_security(server_, true));
  EXPECT_THROW(listen("tls://127.0.0.1:0", [](std::shared_ptr<Comm>) {}, client_options({})), CommError);
}

}  // namespace
