// docs/security.md, "The dashboard cannot take the cluster's descriptors": the default cap of
// the dashboards' HTTP server (an eighth of RLIMIT_NOFILE, 16 to 512), the 503 at accept, and
// the refusal log (once per 10 s with a count). The HttpServer in this process, real sockets.
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../support/library_log.hpp"
#include "cluster_fixture.hpp"
#include "comm/log_limiter.hpp"
#include "core/logging.hpp"
#include "distributed/http_server.hpp"
#include "http_client.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::http_get;
using tessera_test::RawSocket;
using tessera_test::wait_until;

using HttpLimitsLog = tessera_test::LibraryLog;

// RLIMIT_NOFILE's soft limit set for one scope, and restored after.
class SoftDescriptorLimit {
 public:
  explicit SoftDescriptorLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit r = saved_;
    r.rlim_cur = soft;
    ok_ = (saved_.rlim_max == RLIM_INFINITY || soft <= saved_.rlim_max) && ::setrlimit(RLIMIT_NOFILE, &r) == 0;
  }
  ~SoftDescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  SoftDescriptorLimit(const SoftDescriptorLimit&) = delete;
  SoftDescriptorLimit& operator=(const SoftDescriptorLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

int open_descriptor_count() {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

HttpServerOptions limits_server(std::size_t max_connections = 0) {
  HttpServerOptions o;
  o.address = "127.0.0.1:0";
  o.name = "limits test server";
  o.max_connections = max_connections;
  return o;
}

HttpResponse limits_echo(const HttpRequest& r) {
  HttpResponse res;
  res.body = r.method + " " + r.path;
  return res;
}

}  // namespace

// Lines 228-230: the dashboards "serve at most an eighth of the descriptor limit at once (at
// least 16, at most 512; `HttpServerOptions::max_connections`)". The eighth is what keeps the
// cluster listener's three quarters and the process's own files free from idle browsers.
TEST(HttpServerLimits, TheDefaultCapIsAnEighthOfTheDescriptorLimitFrom16To512) {
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  const struct {
    rlim_t soft;
    std::size_t cap;
  } cases[] = {{120, 16}, {200, 25}, {1024, 128}, {4000, 500}, {8192, 512}};
  int tried = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE("RLIMIT_NOFILE " + std::to_string(c.soft));
    // The server needs a few descriptors of its own under the lowered limit.
    if (static_cast<rlim_t>(open_descriptor_count() + 16) > c.soft) continue;
    SoftDescriptorLimit limit(c.soft);
    if (!limit.ok()) continue;  // above the hard limit: not for this process to set
    ++tried;
    HttpServer server(limits_server(), limits_echo);
    EXPECT_EQ(server.max_connections(), c.cap);
  }
  EXPECT_GE(tried, 3) << "the hard descriptor limit (" << now.rlim_max << ") left too few cases to try";
  // A cap that is given is kept, whatever the limit.
  HttpServer given(limits_server(3), limits_echo);
  EXPECT_EQ(given.max_connections(), 3u);
}

// Lines 230-231: "one more connection is answered `503 Service Unavailable` and closed at accept,
// and refusals are logged once per 10 s". Tested before only through the scheduler binary; the
// workers' dashboards use the same class. A flood must cost neither descriptors nor log lines.
TEST(HttpServerLimits, OneMoreThanTheCapGets503AndRefusalsAreLoggedOnce) {
  HttpLimitsLog log;
  HttpServer server(limits_server(2), limits_echo);
  RawSocket idle1(server.port()), idle2(server.port());  // the two the cap allows, held open
  const auto r = http_get(server.port(), "/full");
  EXPECT_EQ(r.status, 503) << r.headers;
  EXPECT_NE(r.headers.find("Connection: close"), std::string::npos) << r.headers;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(http_get(server.port(), "/full").status, 503) << i;
  EXPECT_EQ(log.count("refused a connection: 2 are open, the limit"), 1)
      << "21 refusals within 10 s must give one log line:\n" << log.text();
  // A slot freed, the server serves again.
  idle1.close();
  EXPECT_TRUE(wait_until([&] { return http_get(server.port(), "/again").status == 200; }, 3));
  EXPECT_EQ(log.count("refused a connection"), 1) << log.text();
}

// Line 231: "... logged once per 10 s with a count": the limiter the HTTP server uses (with an
// interval of 10 s, src/distributed/http_server.cpp), on a made-up clock, since the count only
// shows 10 s later.
TEST(HttpServerLimits, TheRefusalLimiterLetsOneLineThroughPer10sWithTheCountLeftOut) {
  comm::detail::LogLimiter limiter(std::chrono::seconds(10));
  const auto t0 = comm::detail::LogLimiter::Clock::now();
  std::size_t left_out = 99;
  ASSERT_TRUE(limiter.allow(left_out, t0));
  EXPECT_EQ(left_out, 0u);
  for (int s = 1; s < 10; ++s) EXPECT_FALSE(limiter.allow(left_out, t0 + std::chrono::seconds(s))) << s;
  ASSERT_TRUE(limiter.allow(left_out, t0 + std::chrono::seconds(10)));
  EXPECT_EQ(left_out, 9u) << "the count of the refusals not logged since the last line";
  EXPECT_FALSE(limiter.allow(left_out, t0 + std::chrono::seconds(19)));
  ASSERT_TRUE(limiter.allow(left_out, t0 + std::chrono::seconds(20)));
  EXPECT_EQ(left_out, 1u);
}
