// What docs/security.md promises about the handshake and the limits on what one peer may cost
// ("What the token protects", "What one peer may cost"), checked at the documented defaults and
// boundaries: the message limits, the 4 KiB hello body, the HMAC proof and its fresh nonces, the
// "server is full" notice (tcp:// and ucx://), the refusal log's count, the accept backoff and
// the 5 s handshake deadline. Real loopback sockets wherever a peer is involved.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../support/library_log.hpp"
#include "comm/log_limiter.hpp"
#include "comm/transports.hpp"
#include "comm/wire.hpp"
#include "comm_test_util.hpp"
#include "core/logging.hpp"
#include "distributed/util.hpp"
#include "tessera/comm/comm.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;

namespace {

const std::string kLimitsToken = "handshake-limits-token-0123456789abcdef";

// A plain socket to 127.0.0.1:port that records every byte the server sends; fd() < 0 when the
// process had no descriptor left for it.
class LimitsSocket {
 public:
  explicit LimitsSocket(int port) {
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
  ~LimitsSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  LimitsSocket(const LimitsSocket&) = delete;
  LimitsSocket& operator=(const LimitsSocket&) = delete;
  int fd() const { return fd_; }
  void write(const std::vector<std::uint8_t>& v) {
    std::size_t off = 0;
    while (fd_ >= 0 && off < v.size()) {
      const auto k = ::send(fd_, v.data() + off, v.size() - off, MSG_NOSIGNAL);
      if (k <= 0) return;  // the server may already have closed
      off += static_cast<std::size_t>(k);
    }
  }
  // Reads until n more bytes are kept in received(); false on close or timeout.
  bool read_exact(std::size_t n, std::chrono::milliseconds timeout = 2000ms) {
    const auto want = got_.size() + n;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (got_.size() < want && std::chrono::steady_clock::now() < deadline)
      if (!read_some(want - got_.size())) return false;
    return got_.size() >= want;
  }
  // Reads the listener's whole hello (fixed part and body) and returns its bytes.
  std::vector<std::uint8_t> read_hello() {
    const auto start = got_.size();
    if (!read_exact(wire::kHelloFixedBytes)) return {};
    std::uint32_t version = 0;
    const auto n = wire::decode_hello_fixed(got_.data() + start, version);
    if (!read_exact(n)) return {};
    return {got_.begin() + static_cast<std::ptrdiff_t>(start), got_.end()};
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
  bool read_some(std::size_t n) {
    if (fd_ < 0) return false;
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

using LimitsLog = tessera_test::LibraryLog;

template <class F>
bool limits_wait_until(F f, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

int limits_open_descriptors() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n - 3;  // ".", ".." and the directory's own descriptor
}

CommOptions limits_token_options(std::chrono::milliseconds handshake = 2000ms) {
  CommOptions o;
  o.token = kLimitsToken;
  o.handshake_timeout = handshake;
  return o;
}

void put_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// A hello's 12-byte fixed part claiming a body of n bytes.
std::vector<std::uint8_t> hello_prefix(std::uint32_t n) {
  std::vector<std::uint8_t> p;
  put_le(p, wire::kHelloMagic, 4);
  put_le(p, wire::kProtocolVersion, 4);
  put_le(p, n, 4);
  return p;
}

// What the listener's fixed-length preamble checks say, "" when it accepts.
std::string preamble_verdict(std::uint64_t header_bytes, const std::vector<std::uint64_t>& frames,
                             const CommOptions& o = {}) {
  const auto bytes = wire::encode_preamble(header_bytes, frames);
  const auto pre = wire::decode_preamble_fixed(bytes.data());
  if (auto why = comm::detail::check_preamble(pre, o); !why.empty()) return why;
  std::vector<std::uint64_t> lens;
  std::uint64_t total = 0;
  return comm::detail::read_frame_sizes(bytes.data(), pre, o, lens, total);
}

}  // namespace

// docs/security.md, the limits table: "message header | 64 MiB (max_header_bytes; the cluster's
// processes use 1 GiB)" and "one frame / one message / frames per message | 4 GiB / 16 GiB /
// 65,536". The other tests set limits of their own; these are the defaults every comm gets.
TEST(CommDefaults, MessageLimitsAre64MiBHeaders4GiBFrames16GiBMessagesAnd65536Frames) {
  const CommOptions o;
  EXPECT_EQ(o.max_header_bytes, std::size_t{64} << 20);
  EXPECT_EQ(o.max_frame_bytes, std::size_t{4} << 30);
  EXPECT_EQ(o.max_message_bytes, std::size_t{16} << 30);
  EXPECT_EQ(o.max_frames, 65536u);
  EXPECT_EQ(distributed::kClusterMaxHeaderBytes, std::size_t{1} << 30);

  // Frames per message: 65,536 pass, one more is refused (the sizes need not be read for it).
  EXPECT_EQ(preamble_verdict(0, std::vector<std::uint64_t>(65536, 1)), "");
  EXPECT_EQ(preamble_verdict(0, std::vector<std::uint64_t>(65537, 1)),
            "message declares 65537 frames; the limit is 65536");
  // The header: 64 MiB passes, one byte more does not.
  EXPECT_EQ(preamble_verdict(std::uint64_t{64} << 20, {}), "");
  EXPECT_EQ(preamble_verdict((std::uint64_t{64} << 20) + 1, {}),
            "message header of 67108865 bytes exceeds the limit of 67108864");
  // One frame: 4 GiB passes, one byte more does not.
  EXPECT_EQ(preamble_verdict(0, {std::uint64_t{4} << 30}), "");
  EXPECT_EQ(preamble_verdict(0, {(std::uint64_t{4} << 30) + 1}),
            "frame 0 of 4294967297 bytes exceeds the limit of 4294967296");
  // The whole message (header and frames): 16 GiB passes, one byte more does not.
  const std::vector<std::uint64_t> four_full_frames(4, std::uint64_t{4} << 30);
  EXPECT_EQ(preamble_verdict(0, four_full_frames), "");
  EXPECT_EQ(preamble_verdict(1, four_full_frames), "message of 17179869185 bytes exceeds the limit of 17179869184");
  // The cluster's 1 GiB header is above the default: a comm given it accepts what the default refuses.
  CommOptions cluster;
  cluster.max_header_bytes = distributed::kClusterMaxHeaderBytes;
  EXPECT_EQ(preamble_verdict(std::uint64_t{1} << 30, {}, cluster), "");
  EXPECT_NE(preamble_verdict((std::uint64_t{1} << 30) + 1, {}, cluster), "");
}

// Lines 167 and 196: "hello body | 4 KiB (kMaxHelloBody)"; "a claim above 4 KiB is refused at
// once". A stranger that claims one byte more must be closed at once, not after the 5 s
// deadline, and a claim of exactly 4 KiB must still be read (and accepted when it comes).
TEST(HandshakeLimits, AHelloClaimingMoreThanFourKiBIsRefusedAtOnceAndFourKiBIsRead) {
  EXPECT_EQ(wire::kMaxHelloBody, 4096u);
  std::uint32_t version = 0;
  const auto over = hello_prefix(4097), at = hello_prefix(4096);
  EXPECT_EQ(what([&] { wire::decode_hello_fixed(over.data(), version); }),
            "handshake of 4097 bytes exceeds the limit of 4096");
  EXPECT_THROW(wire::decode_hello_fixed(over.data(), version), ProtocolError);
  EXPECT_EQ(wire::decode_hello_fixed(at.data(), version), 4096u);

  CommOptions o;
  o.handshake_timeout = 5000ms;
  EchoServer server("tcp://127.0.0.1:0", o);
  {
    LimitsSocket claim(server.port());
    const auto start = std::chrono::steady_clock::now();
    claim.write(over);
    EXPECT_TRUE(claim.read_until_closed(2000ms));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms) << "a claim above 4 KiB waited for the deadline";
    const auto why = server.wait_refusal();
    EXPECT_NE(why.find("handshake of 4097 bytes exceeds the limit of 4096"), std::string::npos) << why;
  }
  {
    // Exactly 4 KiB: a hello whose name pads its body to 4096 bytes, sent in two parts.
    wire::Hello h;
    h.nonce = wire::make_nonce();
    auto bytes = wire::encode_hello(h);
    h.name.assign(4096 - (bytes.size() - wire::kHelloFixedBytes), 'n');
    bytes = wire::encode_hello(h);
    ASSERT_EQ(bytes.size(), wire::kHelloFixedBytes + 4096);
    LimitsSocket claim(server.port());
    claim.write(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + wire::kHelloFixedBytes));
    EXPECT_FALSE(claim.read_until_closed(500ms)) << "a claim of 4096 bytes was not waited for";
    claim.write(std::vector<std::uint8_t>(bytes.begin() + wire::kHelloFixedBytes, bytes.end()));
    EXPECT_TRUE(limits_wait_until([&] { return server.accepted() == 1; }, 2000ms))
        << "a hello body of exactly 4096 bytes was not accepted";
  }
}

// Lines 39-40: "proves the token with HMAC-SHA256 over both sides' random nonces ... and their
// roles, compared in constant time". A known-answer test against OpenSSL's HMAC: any change of
// key, label, framing or input would break interoperability or the binding of the nonces.
TEST(HandshakeProof, IsHmacSha256OverTheRoleAndBothHellosWithTheirNonces) {
  wire::Hello c, l;
  c.nonce = std::string(wire::kNonceBytes, 'c');
  c.flags = wire::kHelloProves;
  c.name = "connector";
  l.nonce = std::string(wire::kNonceBytes, 'l');
  l.flags = wire::kHelloProves;
  l.name = "listener";
  const auto a = wire::encode_hello(c), b = wire::encode_hello(l);
  const std::string token = "known-answer-token";

  auto reference = [&](const std::string& label, const std::vector<std::uint8_t>& x,
                       const std::vector<std::uint8_t>& y) {
    std::vector<std::uint8_t> data(label.begin(), label.end());
    data.push_back(0);
    put_le(data, x.size(), 8);
    data.insert(data.end(), x.begin(), x.end());
    data.insert(data.end(), y.begin(), y.end());
    std::vector<std::uint8_t> mac(EVP_MAX_MD_SIZE);
    unsigned int len = 0;
    HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), data.data(), data.size(), mac.data(), &len);
    mac.resize(len);
    return mac;
  };
  const auto as_connector = wire::handshake_proof(token, wire::Role::connector, a, b);
  const auto as_listener = wire::handshake_proof(token, wire::Role::listener, a, b);
  ASSERT_EQ(as_connector.size(), wire::kProofBytes);
  EXPECT_EQ(as_connector, reference("tessera handshake v2 connector", a, b));
  EXPECT_EQ(as_listener, reference("tessera handshake v2 listener", a, b));
  EXPECT_NE(as_connector, as_listener) << "the roles give the same proof: it could be reflected";

  // One byte of either nonce changes the proof, as does the token.
  auto flip_nonce = [](std::vector<std::uint8_t> hello) {
    hello[wire::kHelloFixedBytes + 4] ^= 1;  // the first byte of the nonce (after its length)
    return hello;
  };
  EXPECT_NE(wire::handshake_proof(token, wire::Role::connector, flip_nonce(a), b), as_connector);
  EXPECT_NE(wire::handshake_proof(token, wire::Role::connector, a, flip_nonce(b)), as_connector);
  EXPECT_NE(wire::handshake_proof(token + "x", wire::Role::connector, a, b), as_connector);
  // The boundary between the hellos is part of it: moving a byte from one to the other changes it.
  std::vector<std::uint8_t> a2(a.begin(), a.end() - 1), b2(b);
  b2.insert(b2.begin(), a.back());
  EXPECT_NE(wire::handshake_proof(token, wire::Role::connector, a2, b2), as_connector);

  EXPECT_TRUE(wire::proofs_equal(as_connector, wire::handshake_proof(token, wire::Role::connector, a, b)));
  EXPECT_FALSE(wire::proofs_equal(as_connector, as_listener));
  std::vector<std::uint8_t> shorter(as_connector.begin(), as_connector.end() - 1);
  EXPECT_FALSE(wire::proofs_equal(as_connector, shorter)) << "a prefix of the proof was taken for it";
  EXPECT_FALSE(wire::proofs_equal(shorter, as_connector));
}

// Lines 45-46: "a proof seen on the network cannot be replayed (fresh nonces)". A peer that
// knows the token does one real handshake; an eavesdropper who replays its hello and proof on a
// new connection gets the fixed refusal, because the listener's new nonce is in the HMAC.
TEST(HandshakeLimits, AProofReplayedOnAnotherConnectionIsRefused) {
  EchoServer server("tcp://127.0.0.1:0", limits_token_options());
  wire::Hello mine;
  mine.nonce = wire::make_nonce();
  mine.flags = wire::kHelloProves;
  mine.name = "replayer";
  const auto my_hello = wire::encode_hello(mine);

  // The genuine handshake, which an observer records.
  LimitsSocket first(server.port());
  const auto l1 = first.read_hello();
  ASSERT_FALSE(l1.empty());
  auto sent = my_hello;
  const auto proof = wire::handshake_proof(kLimitsToken, wire::Role::connector, my_hello, l1);
  sent.insert(sent.end(), proof.begin(), proof.end());
  first.write(sent);
  ASSERT_TRUE(first.read_exact(wire::kProofBytes)) << "the listener did not answer a right proof";
  const std::vector<std::uint8_t> theirs(first.received().end() - wire::kProofBytes, first.received().end());
  EXPECT_EQ(theirs, wire::handshake_proof(kLimitsToken, wire::Role::listener, my_hello, l1));
  ASSERT_TRUE(limits_wait_until([&] { return server.accepted() == 1; }, 2000ms));

  // The replay: the same bytes on a second connection.
  LimitsSocket replay(server.port());
  const auto l2 = replay.read_hello();
  ASSERT_FALSE(l2.empty());
  EXPECT_NE(l2, l1) << "the listener's hello (its nonce) repeated";
  replay.write(sent);
  EXPECT_TRUE(replay.read_until_closed(2000ms)) << "the replayed proof was not refused";
  const std::vector<std::uint8_t> after(replay.received().begin() + static_cast<std::ptrdiff_t>(l2.size()),
                                        replay.received().end());
  EXPECT_EQ(after, std::vector<std::uint8_t>(wire::kProofRefused, wire::kProofRefused + wire::kProofBytes));
  const auto why = server.wait_refusal();
  EXPECT_NE(why.find("token mismatch"), std::string::npos) << why;
  EXPECT_EQ(server.accepted(), 1);

  // The same hello with a proof over the new listener's nonce is accepted: the nonce refused it.
  LimitsSocket fresh(server.port());
  const auto l3 = fresh.read_hello();
  ASSERT_FALSE(l3.empty());
  auto again = my_hello;
  const auto proof3 = wire::handshake_proof(kLimitsToken, wire::Role::connector, my_hello, l3);
  again.insert(again.end(), proof3.begin(), proof3.end());
  fresh.write(again);
  EXPECT_TRUE(fresh.read_exact(wire::kProofBytes));
  EXPECT_TRUE(limits_wait_until([&] { return server.accepted() == 2; }, 2000ms));
}

// Lines 184-187: a tcp:// connection refused at the cap "is sent a 12-byte notice (TSRF, the
// version, the cap) ... so the client is told `the server is full: it has as many connections
// open as it allows (96, max_connections); try again later`".
TEST(HandshakeLimits, AConnectionOverTheCapIsToldTheServerIsFullAndTheCap) {
  CommOptions o;
  o.max_connections = 4;
  o.handshake_timeout = 5000ms;
  EchoServer server("tcp://127.0.0.1:0", o);
  std::vector<std::unique_ptr<LimitsSocket>> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(std::make_unique<LimitsSocket>(server.port()));
    // The listener's hello comes once it accepted: the slot is held.
    ASSERT_TRUE(holders.back()->read_exact(wire::kHelloFixedBytes)) << "connection " << i << " was not accepted";
  }
  {
    LimitsSocket fifth(server.port());
    EXPECT_TRUE(fifth.read_until_closed(2000ms));
    std::vector<std::uint8_t> notice;
    put_le(notice, 0x46525354, 4);  // "TSRF"
    put_le(notice, wire::kProtocolVersion, 4);
    put_le(notice, 4, 4);
    EXPECT_EQ(fifth.received(), notice) << fifth.received().size() << " bytes instead of the 12-byte notice";
  }
  const auto why = what([&] { connect(server.address()); });
  EXPECT_NE(why.find("the server is full: it has as many connections open as it allows (4, max_connections); try "
                     "again later"),
            std::string::npos)
      << why;
  EXPECT_THROW(connect(server.address()), HandshakeError);
}

// Line 184: "A tcp:// or ucx:// connection refused at the cap is sent a 12-byte notice". A
// ucx:// listener is the TCP listener under another scheme, so this runs without UCX too.
TEST(HandshakeLimits, AUcxListenerAtItsCapSendsTheSameNotice) {
  CommOptions o;
  o.max_connections = 1;
  o.handshake_timeout = 5000ms;
  EchoServer server("ucx://127.0.0.1:0", o);
  ASSERT_EQ(server.address().rfind("ucx://", 0), 0u) << server.address();
  LimitsSocket holder(server.port());
  ASSERT_TRUE(holder.read_exact(wire::kHelloFixedBytes));
  {
    LimitsSocket second(server.port());
    EXPECT_TRUE(second.read_until_closed(2000ms));
    ASSERT_EQ(second.received().size(), 12u);
    std::uint32_t version = 0;
    EXPECT_EQ(what([&] { wire::decode_hello_fixed(second.received().data(), version); }),
              "the server is full: it has as many connections open as it allows (1, max_connections); try again later");
  }
  const auto why = what([&] { connect(server.address(), o); });
  EXPECT_NE(why.find("the server is full"), std::string::npos) << why;
  EXPECT_NE(why.find("(1, max_connections)"), std::string::npos) << why;
}

// Line 174: "refused connections in the log | one line a second per listener, then a count of
// those left out". The mechanism: LogLimiter, also behind the scheduler's registration and
// identity refusals; here with a made-up clock.
TEST(CommLogLimiter, OneEventPerIntervalThenTheCountOfThoseLeftOut) {
  using Clock = comm::detail::LogLimiter::Clock;
  comm::detail::LogLimiter limiter(std::chrono::seconds(1));
  const Clock::time_point t0{};  // the clock's epoch: the first event is logged whatever the time
  std::size_t more = 99;
  ASSERT_TRUE(limiter.allow(more, t0));
  EXPECT_EQ(more, 0u);
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(limiter.allow(more, t0 + i * 100ms)) << i;
  EXPECT_FALSE(limiter.allow(more, t0 + 999ms));
  ASSERT_TRUE(limiter.allow(more, t0 + 1000ms));
  EXPECT_EQ(more, 6u) << "the line after the interval must count those left out";
  EXPECT_FALSE(limiter.allow(more, t0 + 1500ms));
  ASSERT_TRUE(limiter.allow(more, t0 + 10s));
  EXPECT_EQ(more, 1u);
  ASSERT_TRUE(limiter.allow(more, t0 + 12s));
  EXPECT_EQ(more, 0u) << "the count starts again after each line";
}

// The same promise on a real listener: 40 refusals in a burst, then one more after a second.
// Every refusal is accounted for: each line counts itself and those it says were left out.
TEST(HandshakeLimits, RefusalLogLinesCountTheRefusalsLeftOut) {
  EchoServer server("tcp://127.0.0.1:0");
  LimitsLog log;
  auto garbage = [&] {
    LimitsSocket raw(server.port());
    raw.write(std::vector<std::uint8_t>(16, 'G'));
    EXPECT_TRUE(raw.read_until_closed(1000ms));
  };
  for (int i = 0; i < 40; ++i) garbage();
  std::this_thread::sleep_for(1100ms);  // the interval: the next refusal is logged
  garbage();
  const std::vector<std::string> needles{server.address() + " refused a connection"};
  const std::regex count_re(R"(\((\d+) more refusals not logged\))");
  auto accounted = [&] {
    int n = 0;
    for (const auto& line : log.lines(needles)) {
      std::smatch m;
      n += 1 + (std::regex_search(line, m, count_re) ? std::stoi(m[1]) : 0);
    }
    return n;
  };
  EXPECT_TRUE(limits_wait_until([&] { return accounted() == 41; }, 2000ms)) << accounted() << " refusals accounted for";
  const auto lines = log.lines(needles);
  ASSERT_FALSE(lines.empty());
  EXPECT_LE(lines.size(), 3u) << "41 refusals over about 1.5 s gave " << lines.size() << " lines";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(lines.back(), m, count_re)) << "the last line has no count: " << lines.back();
  EXPECT_GE(std::stoi(m[1]), 1);
}

// Line 175: "failed accept (out of descriptors) | retried after 50 ms doubling to 1 s; one log
// line per 10 s". The first line says 50 ms; after 3.3 s of failures a doubling without a cap
// would wait 3 s more, a cap of 1 s at most 1 s, so the listener serves again within 2 s of
// the descriptors coming back.
TEST(HandshakeLimits, AFailedAcceptIsRetriedAfter50msAndTheBackoffStopsAtOneSecond) {
  CommOptions o;
  o.handshake_timeout = 20000ms;  // the accepted peers keep their descriptors throughout
  EchoServer server("tcp://127.0.0.1:0", o);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  LimitsLog log;
  const std::vector<std::string> needles{"accept on " + server.address() + " failed"};
  std::vector<std::unique_ptr<LimitsSocket>> peers;
  std::chrono::steady_clock::time_point restored;
  {
    struct Restore {
      rlimit lim;
      bool done = false;
      void now() {
        if (!done) ::setrlimit(RLIMIT_NOFILE, &lim);
        done = true;
      }
      ~Restore() { now(); }
    } restore{old};
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(limits_open_descriptors() + 8);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    // The peers' sockets and the accepted ones use the descriptors up; a connection left in the
    // backlog then makes every accept fail with EMFILE.
    for (int i = 0; i < 32; ++i) {
      auto r = std::make_unique<LimitsSocket>(server.port());
      if (r->fd() >= 0) peers.push_back(std::move(r));
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(limits_wait_until([&] { return !log.lines(needles).empty(); }, 2000ms))
        << "accept never failed: the test did not run out of descriptors";
    std::this_thread::sleep_for(3300ms);  // failing all along: the backoff grows to its cap
    restore.now();
    restored = std::chrono::steady_clock::now();
  }
  const auto lines = log.lines(needles);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("retrying in 50 ms"), std::string::npos) << lines.front();
  EXPECT_EQ(lines.size(), 1u) << "more than one line in 3.3 s of failures (the interval is 10 s)";
  std::shared_ptr<Comm> comm;
  const auto why = what([&] { comm = connect(server.address()); });
  const auto waited = std::chrono::steady_clock::now() - restored;
  ASSERT_TRUE(comm) << why;
  EXPECT_LT(waited, 2000ms) << "the listener served again only after "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                            << " ms: its backoff went past 1 s";
  comm->send(Message("back")).get();
  EXPECT_EQ(comm->recv(2000ms).op, "back");
}

// Line 166: "a hello and (with a token) a proof must arrive within | 5 s (handshake_timeout) |
// every connection". With default options on both ends: a listener closes a socket that says
// nothing, and a connector gives up on a server that says nothing, both after 5 s.
TEST(CommDefaults, AHandshakeThatNeverComesIsGivenUpAfterFiveSecondsOnBothEnds) {
  EXPECT_EQ(CommOptions{}.handshake_timeout, 5000ms);
  // A listening socket that never accepts: the connector's TCP connect completes in its backlog.
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_lfd{lfd};
  const auto silent_server = "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port));

  EchoServer server("tcp://127.0.0.1:0");
  const auto start = std::chrono::steady_clock::now();
  auto dialled = std::async(std::launch::async, [&] {
    const auto why = what([&] { connect(silent_server); });
    return std::make_pair(why, std::chrono::steady_clock::now() - start);
  });
  LimitsSocket silent(server.port());
  EXPECT_TRUE(silent.read_until_closed(8000ms));
  const auto listener_took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(listener_took, 4500ms);
  EXPECT_LE(listener_took, 7000ms);
  const auto refusal = server.wait_refusal(2000ms);
  EXPECT_NE(refusal.find("no handshake from"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("within 5000 ms"), std::string::npos) << refusal;

  const auto [why, connector_took] = dialled.get();
  EXPECT_NE(why.find("no handshake from"), std::string::npos) << why;
  EXPECT_NE(why.find("within 5000 ms"), std::string::npos) << why;
  EXPECT_GE(connector_took, 4500ms);
  EXPECT_LE(connector_took, 7000ms);
}
