// What docs/security.md ("TLS (tls://)", and the connection cap) promises about tls:// settings
// and refusals, beyond tls_test.cpp: the TESSERA_TLS_* variables as defaults, one OpenSSL
// context per set of file names, the errors a client is told, a peer without a certificate from
// the CA learning nothing, TLS 1.2 at least and 1.3 when both ends have it. Certificates are made
// at run time (tests/support/tls_certs.hpp); raw peers speak TLS through Boost.Asio's SSL stream.
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <gtest/gtest.h>

#include "comm/tls_context.hpp"
#include "comm/wire.hpp"
#include "comm_test_util.hpp"
#include "../support/tls_certs.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/scheduler.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;
using tessera_test::TestPki;

namespace {

namespace basio = boost::asio;
using boost::system::error_code;

int tls_port_of(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// Sets (or, with nullopt, unsets) an environment variable for its lifetime.
class TlsEnvVar {
 public:
  TlsEnvVar(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) ::setenv(name_.c_str(), value->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ~TlsEnvVar() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  TlsEnvVar(const TlsEnvVar&) = delete;
  TlsEnvVar& operator=(const TlsEnvVar&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// The three variables at once.
struct TlsEnv {
  TlsEnv(const std::optional<std::string>& ca, const std::optional<std::string>& cert,
         const std::optional<std::string>& key)
      : ca_(std::make_unique<TlsEnvVar>("TESSERA_TLS_CA_FILE", ca)),
        cert_(std::make_unique<TlsEnvVar>("TESSERA_TLS_CERT", cert)),
        key_(std::make_unique<TlsEnvVar>("TESSERA_TLS_KEY", key)) {}
  explicit TlsEnv(const Security& s) : TlsEnv(s.tls_ca_file, s.tls_cert, s.tls_key) {}
  std::unique_ptr<TlsEnvVar> ca_, cert_, key_;
};

// A TLS client of its own (not Tessera's context): the CA it trusts, the certificate it shows
// (none when empty), and whatever `customize` does to its SSL_CTX. Synchronous calls, each with
// a timeout, on a private io_context.
class RawTls {
 public:
  using Stream = basio::ssl::stream<basio::ip::tcp::socket>;
  explicit RawTls(const Security& s, const std::function<void(SSL_CTX*)>& customize = {})
      : ctx_(basio::ssl::context::tls_client) {
    ctx_.load_verify_file(s.tls_ca_file);
    if (!s.tls_cert.empty()) {
      ctx_.use_certificate_chain_file(s.tls_cert);
      ctx_.use_private_key_file(s.tls_key, basio::ssl::context::pem);
    }
    ctx_.set_verify_mode(basio::ssl::verify_peer);
    if (customize) customize(ctx_.native_handle());
    stream_ = std::make_unique<Stream>(io_, ctx_);
  }
  ~RawTls() {
    error_code ignored;
    stream_->next_layer().close(ignored);
  }
  RawTls(const RawTls&) = delete;
  RawTls& operator=(const RawTls&) = delete;

  // TCP to 127.0.0.1:port, then the TLS handshake; its error (none: it completed).
  error_code handshake(int port, std::chrono::milliseconds timeout = 3000ms) {
    error_code ec;
    stream_->next_layer().connect({basio::ip::address_v4::loopback(), static_cast<unsigned short>(port)}, ec);
    if (ec) return ec;
    bool done = false;
    stream_->async_handshake(basio::ssl::stream_base::client, [&](error_code e) {
      ec = e;
      done = true;
    });
    if (!run(done, timeout)) return basio::error::timed_out;
    return ec;
  }
  // Application bytes until `want` are held in received(); the error that ended it, if any.
  error_code read(std::size_t want, std::chrono::milliseconds timeout = 2000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (got_.size() < want) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return basio::error::timed_out;
      std::array<std::uint8_t, 4096> buf{};
      bool done = false;
      error_code ec;
      std::size_t k = 0;
      stream_->async_read_some(basio::buffer(buf), [&](error_code e, std::size_t n) {
        ec = e;
        k = n;
        done = true;
      });
      if (!run(done, left)) return basio::error::timed_out;
      got_.insert(got_.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(k));
      if (ec) return ec;
    }
    return {};
  }
  // The listener's hello, read whole: its name; nullopt when it did not come.
  std::optional<std::string> read_hello_name() {
    if (read(wire::kHelloFixedBytes)) return std::nullopt;
    std::uint32_t version = 0;
    const auto n = wire::decode_hello_fixed(got_.data(), version);
    if (read(wire::kHelloFixedBytes + n)) return std::nullopt;
    return wire::decode_hello_body(version, got_.data() + wire::kHelloFixedBytes, n).name;
  }
  const std::vector<std::uint8_t>& received() const { return got_; }
  int version() { return SSL_version(stream_->native_handle()); }

 private:
  // Runs the io_context until `done` or timeout; on timeout the socket is closed and the
  // pending handler allowed to finish (it refers to the caller's locals). False on timeout.
  bool run(const bool& done, std::chrono::milliseconds timeout) {
    io_.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < deadline) io_.run_one_for(20ms);
    if (done) return true;
    error_code ignored;
    stream_->next_layer().close(ignored);
    io_.restart();
    while (!done) io_.run_one_for(20ms);
    return false;
  }
  basio::io_context io_;
  basio::ssl::context ctx_;
  std::unique_ptr<Stream> stream_;
  std::vector<std::uint8_t> got_;
};

class TlsSettings : public ::testing::Test {
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
  static CommOptions with(const Security& s, std::chrono::milliseconds handshake = 2000ms) {
    CommOptions o;
    o.security = s;
    o.handshake_timeout = handshake;
    return o;
  }
  // The server serves a good client.
  void expect_serves(const std::string& address) {
    auto c = connect(address, with(client_));
    Message m("ping");
    m.set("i", 7);
    c->send(std::move(m)).get();
    EXPECT_EQ(c->recv(5s).get<int>("i"), 7);
  }

  std::unique_ptr<TestPki> pki_;
  Security server_, client_, stranger_;
};

template <class F>
bool tls_wait_until(F f, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

bool bytes_hold(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

// docs/security.md lines 127-134 and 144-145: the flags default to TESSERA_TLS_CA_FILE,
// TESSERA_TLS_CERT and TESSERA_TLS_KEY; "fields left empty come from the variables". A field
// that is set is kept, so a flag (or option) wins over the variable.
TEST_F(TlsSettings, EmptyFieldsComeFromTheTesseraTlsVariables) {
  {
    TlsEnv env(server_);
    const auto filled = Security{}.with_env_defaults();
    EXPECT_EQ(filled.tls_ca_file, server_.tls_ca_file);
    EXPECT_EQ(filled.tls_cert, server_.tls_cert);
    EXPECT_EQ(filled.tls_key, server_.tls_key);
    const auto mixed = Security{"", client_.tls_cert, ""}.with_env_defaults();
    EXPECT_EQ(mixed.tls_ca_file, server_.tls_ca_file);
    EXPECT_EQ(mixed.tls_cert, client_.tls_cert) << "a field that is set was replaced by the variable";
    EXPECT_EQ(mixed.tls_key, server_.tls_key);
    const auto given = client_.with_env_defaults();
    EXPECT_EQ(given.tls_ca_file, client_.tls_ca_file);
    EXPECT_EQ(given.tls_cert, client_.tls_cert);
    EXPECT_EQ(given.tls_key, client_.tls_key);
  }
  TlsEnv none(std::nullopt, std::nullopt, std::nullopt);
  EXPECT_FALSE(Security{}.with_env_defaults().has_tls());
}

// The same through the C++ API (lines 143-145): a Scheduler and a Client whose
// SchedulerOptions::security and ClientOptions::security are empty meet over tls:// when only
// the variables are set, and neither starts over tls:// without them.
TEST_F(TlsSettings, ASchedulerAndAClientGivenOnlyTheVariablesMeetOverTls) {
  distributed::SchedulerOptions so;
  so.address = "tls://127.0.0.1:0";
  so.token = "tls-settings-token";
  distributed::ClientOptions co;
  co.token = so.token;
  co.timeout = 5;
  {
    TlsEnv env(server_);
    distributed::Scheduler scheduler(so);
    ASSERT_EQ(scheduler.address().rfind("tls://", 0), 0u) << scheduler.address();
    {
      distributed::Client client(scheduler.address(), co);
      EXPECT_TRUE(tls_wait_until([&] { return scheduler.client_count() == 1; }, 3000ms));
    }
    // Without the variables, the client has no CA file for it, and says so.
    TlsEnv none(std::nullopt, std::nullopt, std::nullopt);
    auto bare = co;
    bare.timeout = 1;
    const auto why = what([&] { distributed::Client client(scheduler.address(), bare); });
    EXPECT_NE(why.find("CA file"), std::string::npos) << why;
  }
  TlsEnv none(std::nullopt, std::nullopt, std::nullopt);
  const auto why = what([&] { distributed::Scheduler scheduler(so); });
  EXPECT_NE(why.find("tls://"), std::string::npos) << why;
  EXPECT_NE(why.find("CA file"), std::string::npos) << why;
}

// Line 148: "A process reads the files once (one OpenSSL context per set of file names)": the
// same names give the same context, and a file replaced afterwards is not read again (to rotate
// certificates, members are restarted), while the same bytes under new names are refused.
TEST_F(TlsSettings, TheFilesAreReadOncePerSetOfNames) {
  const auto first = comm::detail::tls_context(server_, true);
  EXPECT_EQ(comm::detail::tls_context(server_, true).get(), first.get());
  EXPECT_EQ(comm::detail::tls_context(Security{server_}, true).get(), first.get())
      << "a copy of the names is the same set";
  EXPECT_NE(comm::detail::tls_context(client_, true).get(), first.get());

  {
    std::ofstream garbage(server_.tls_cert, std::ios::trunc);
    garbage << "not a certificate\n";
  }
  std::filesystem::copy_file(server_.tls_cert, pki_->path("renamed.pem"));
  EXPECT_NO_THROW(check_security(server_, true)) << "the replaced certificate was read again";
  const auto renamed = what([&] {
    check_security({server_.tls_ca_file, pki_->path("renamed.pem"), server_.tls_key}, true);
  });
  EXPECT_NE(renamed.find("cannot be used"), std::string::npos) << renamed;
  // A listener made now still uses what was read first, and serves.
  EchoServer server("tls://127.0.0.1:0", with(server_));
  expect_serves(server.address());
}

// Lines 187-188: "A tls:// connection cannot be told before its TLS handshake and is closed as
// before (its error now names the limit among the causes)".
TEST_F(TlsSettings, AConnectionRefusedAtTheCapIsToldTheLimitIsAmongTheCauses) {
  auto so = with(server_, 5000ms);
  so.max_connections = 2;
  EchoServer server("tls://127.0.0.1:0", so);
  const int port = tls_port_of(server.address());
  std::vector<std::unique_ptr<RawTls>> holders;
  for (int i = 0; i < 2; ++i) {
    holders.push_back(std::make_unique<RawTls>(client_));
    ASSERT_FALSE(holders.back()->handshake(port)) << "holder " << i;
    // Its hello comes once the listener took the connection: the slot is held.
    ASSERT_FALSE(holders.back()->read(wire::kHelloFixedBytes)) << "holder " << i << " got no hello";
  }
  const auto why = what([&] { connect(server.address(), with(client_)); });
  EXPECT_NE(why.find("at its limit of connections"), std::string::npos) << why;
  holders.pop_back();  // a slot comes free once the listener sees the close
  std::shared_ptr<Comm> comm;
  EXPECT_TRUE(tls_wait_until(
      [&] {
        try {
          comm = connect(server.address(), with(client_));
          return true;
        } catch (const CommError&) {
          return false;
        }
      },
      4000ms))
      << "no slot came free after a holder left";
}

// Lines 150-151: "Errors a client sees: `TLS refused: certificate verify failed` (the server's
// certificate is not from its CA), `TLS refused: tlsv13 alert certificate required` (it
// presented none)". These words are what an operator searches for.
TEST_F(TlsSettings, AClientIsToldWhatTlsRefusedInTheDocumentedWords) {
  EchoServer server("tls://127.0.0.1:0", with(server_));
  const auto other_ca = what([&] { connect(server.address(), with(stranger_)); });
  EXPECT_NE(other_ca.find("TLS refused: certificate verify failed"), std::string::npos) << other_ca;
  const Security ca_only{client_.tls_ca_file, "", ""};
  const auto no_cert = what([&] { connect(server.address(), with(ca_only))->recv(2s); });
  EXPECT_NE(no_cert.find("TLS refused: tlsv13 alert certificate required"), std::string::npos) << no_cert;
  expect_serves(server.address());
}

// Lines 106-108: "a peer without a certificate from the CA is refused during the TLS
// handshake, before any hello, so it learns nothing, not even the listener's name". A raw TLS
// peer with a good certificate reads the name; one without, or with another CA's, reads no
// application byte at all.
TEST_F(TlsSettings, APeerWithoutACertificateFromTheCaLearnsNothingNotEvenTheName) {
  const std::string name = "secret-listener-name-5e1c";
  auto so = with(server_);
  so.name = name;
  {
    EchoServer server("tls://127.0.0.1:0", so);
    RawTls member(client_);
    ASSERT_FALSE(member.handshake(tls_port_of(server.address())));
    EXPECT_EQ(member.read_hello_name().value_or("(no hello)"), name)
        << "the control: a member reads the listener's hello";
  }
  auto stranger = [&](const char* what_it_is, const Security& s) {
    SCOPED_TRACE(what_it_is);
    EchoServer server("tls://127.0.0.1:0", so);
    RawTls peer(s);
    // TLS 1.3 may finish the client's side of the handshake before the server checks it.
    if (!peer.handshake(tls_port_of(server.address()))) {
      const auto ec = peer.read(1);
      EXPECT_TRUE(ec) << "the stream stayed open";
      EXPECT_NE(ec, basio::error::timed_out) << "the listener neither refused nor closed";
    }
    EXPECT_TRUE(peer.received().empty()) << peer.received().size() << " application bytes reached a stranger";
    EXPECT_FALSE(bytes_hold(peer.received(), name));
    const auto refusal = server.wait_refusal();
    EXPECT_NE(refusal.find("TLS refused"), std::string::npos) << refusal;
    EXPECT_EQ(server.accepted(), 0);
  };
  stranger("no certificate", Security{client_.tls_ca_file, "", ""});
  stranger("a certificate from another CA", Security{client_.tls_ca_file, stranger_.tls_cert, stranger_.tls_key});
}

// Line 101: "TLS 1.2 at least, TLS 1.3 when both ends have it". A client that can do 1.3 gets
// 1.3; one limited to 1.2 still connects, over 1.2; one limited to 1.1 is refused.
TEST_F(TlsSettings, TlsOneThreeWhenBothEndsHaveItAndOneTwoAtLeast) {
  EchoServer server("tls://127.0.0.1:0", with(server_));
  const int port = tls_port_of(server.address());
  {
    RawTls modern(client_);
    ASSERT_FALSE(modern.handshake(port));
    EXPECT_EQ(modern.version(), TLS1_3_VERSION);
    EXPECT_TRUE(modern.read_hello_name().has_value()) << "no hello over TLS 1.3";
  }
  {
    RawTls older(client_, [](SSL_CTX* c) { SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION); });
    const auto ec = older.handshake(port);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(older.version(), TLS1_2_VERSION);
    EXPECT_TRUE(older.read_hello_name().has_value()) << "no hello over TLS 1.2";
  }
  EchoServer fresh("tls://127.0.0.1:0", with(server_));
  RawTls old(client_, [](SSL_CTX* c) {
    SSL_CTX_set_security_level(c, 0);  // so that this client may offer TLS 1.1 at all
    SSL_CTX_set_cipher_list(c, "DEFAULT:@SECLEVEL=0");
    SSL_CTX_set_min_proto_version(c, TLS1_1_VERSION);
    SSL_CTX_set_max_proto_version(c, TLS1_1_VERSION);
  });
  const auto ec = old.handshake(tls_port_of(fresh.address()));
  ASSERT_TRUE(ec) << "a TLS 1.1 client was let in";
  if (ec.message().find("no protocols available") != std::string::npos)
    GTEST_SKIP() << "this OpenSSL cannot offer TLS 1.1 at all: " << ec.message();
  const auto refusal = fresh.wait_refusal();
  EXPECT_NE(refusal.find("TLS refused"), std::string::npos) << refusal;
  EXPECT_EQ(fresh.accepted(), 0);
}

}  // namespace
