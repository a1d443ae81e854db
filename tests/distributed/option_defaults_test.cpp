// docs/security.md's stated defaults, checked where a program gets them: the option structs, the
// scheduler binary's --help, the token estimate's character classes, and the random token a
// LocalCluster makes for itself.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/token.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/distributed/scheduler_options.hpp"
#include "tessera/distributed/scheduler_state.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::ScopedEnv;
using tessera_test::TempDir;

// `binary args...` with stdout and stderr kept (CLI11 prints --help to stdout); the exit status
// or -1 when it was still running after timeout_s (then killed).
struct DefaultsRun {
  int status = -1;
  std::string output;
};

DefaultsRun run_with_output(const std::string& binary, const std::vector<std::string>& args, double timeout_s = 10) {
  TempDir dir;
  const std::string out = (dir.path() / "output").string();
  Children kids;
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" >'" + out + "' 2>&1", binary};
  cmd.insert(cmd.end(), args.begin(), args.end());
  const pid_t pid = kids.spawn(cmd, tessera_test::child_env());
  DefaultsRun r;
  if (auto st = kids.wait_exit(pid, timeout_s)) r.status = *st;
  r.output = tessera_test::read_text(out);
  return r;
}

bool is_lower_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

LocalClusterOptions one_thread_in_process() {
  LocalClusterOptions o;
  o.processes = false;
  o.n_workers = 1;
  o.threads_per_worker = 1;
  o.timeout = 10;
  return o;
}

}  // namespace

// Lines 75-76: the estimate's classes "(lower case 26, upper case 26, digits 10, other printable
// 33, other bytes 128)". TokenStrength checks lower+digits and upper+lower+punctuation only; a
// binary token (non-ASCII bytes) and upper case alone must count as documented, or the warning
// threshold moves.
TEST(OptionDefaults, TokenEstimateCountsOtherBytesAs128AndUpperCaseAloneAs26) {
  EXPECT_DOUBLE_EQ(token_bits("\xff\xfe"), 2 * std::log2(128.0));
  EXPECT_DOUBLE_EQ(token_bits("ABC"), 3 * std::log2(26.0));
  EXPECT_DOUBLE_EQ(token_bits(std::string("\x01\x7f", 2)), 2 * std::log2(128.0)) << "control bytes are other bytes";
  EXPECT_DOUBLE_EQ(token_bits("a\xff"), 2 * std::log2(26.0 + 128.0));
  EXPECT_DOUBLE_EQ(token_bits("Z9"), 2 * std::log2(26.0 + 10.0));
  // 19 bytes of the 128 class: 133 bits, no warning; 18: 126 bits, warned about.
  EXPECT_EQ(weak_token_warning(std::string(19, '\x80')), "");
  EXPECT_NE(weak_token_warning(std::string(18, '\x80')), "");
}

// Line 15: "`LocalCluster` always makes a random one", and line 71: "`LocalCluster` makes one
// the same way" (as --token auto: 128 bits as 32 hex digits). A cluster without a token is open
// to anyone who can connect; one with a fixed or shared token is open to other clusters' users.
TEST(OptionDefaults, LocalClusterMakesARandomTokenOfItsOwn) {
  ScopedEnv no_env_token("TESSERA_TOKEN", std::nullopt);
  LocalCluster first(one_thread_in_process());
  LocalCluster second(one_thread_in_process());
  EXPECT_EQ(first.token().size(), 32u) << first.token();
  EXPECT_TRUE(is_lower_hex(first.token())) << first.token();
  EXPECT_TRUE(is_lower_hex(second.token())) << second.token();
  EXPECT_NE(first.token(), second.token()) << "two clusters got the same token";
  // The token is enforced: a client without it is refused, one with it gets in.
  EXPECT_THROW(Client(first.scheduler_address(), client_options("", 5)), std::exception);
  EXPECT_THROW(Client(first.scheduler_address(), client_options(second.token(), 5)), std::exception);
  Client with(first.scheduler_address(), client_options(first.token(), 5));
  EXPECT_EQ(with.scheduler_info().workers.size(), 1u);
  // A token that is given is kept.
  auto o = one_thread_in_process();
  o.token = "given-token-for-this-cluster";
  LocalCluster given(o);
  EXPECT_EQ(given.token(), "given-token-for-this-cluster");
}

// The defaults docs/security.md states, where a program that builds the servers itself gets
// them: line 170 (registration 30 s), lines 336 and 346 (worker_silent 5 s, SchedulerConfig's 0
// meaning "take SchedulerOptions'", worker_ttl 300 s), line 243 (the client's 10 s), line 166
// (handshake 5 s), lines 168-172 (the connection, header and frame limits; the cluster's 1 GiB).
TEST(OptionDefaults, TheOptionStructsHaveTheDocumentedDefaults) {
  const SchedulerOptions so;
  EXPECT_DOUBLE_EQ(so.registration_timeout, 30);
  EXPECT_DOUBLE_EQ(so.worker_silent, 5);
  EXPECT_DOUBLE_EQ(so.state.worker_ttl, 300);
  EXPECT_DOUBLE_EQ(so.state.worker_silent, 0) << "0: SchedulerOptions::worker_silent applies";
  const SchedulerConfig cfg;
  EXPECT_DOUBLE_EQ(cfg.worker_ttl, 300);
  EXPECT_DOUBLE_EQ(cfg.worker_silent, 0);
  const ClientOptions co;
  EXPECT_DOUBLE_EQ(co.scheduler_timeout, 10);
  const comm::CommOptions comm_options;
  EXPECT_EQ(comm_options.handshake_timeout, 5000ms);
  EXPECT_EQ(comm_options.first_message_timeout, 0ms) << "none outside the scheduler";
  EXPECT_EQ(comm_options.max_connections, 0u) << "0: three quarters of RLIMIT_NOFILE";
  EXPECT_EQ(comm_options.max_header_bytes, std::size_t{64} << 20);
  EXPECT_EQ(comm_options.max_frame_bytes, std::size_t{4} << 30);
  EXPECT_EQ(comm_options.max_message_bytes, std::size_t{16} << 30);
  EXPECT_EQ(comm_options.max_frames, 65536u);
  EXPECT_EQ(kClusterMaxHeaderBytes, std::size_t{1} << 30);
}

// The same defaults as tessera-scheduler shows and applies them (lines 10, 170, 336, 346): an
// operator reads --help, and a default changed in the struct but not in the flag would differ.
TEST(OptionDefaults, SchedulerHelpShowsTheDocumentedDefaults) {
  const auto binary = (tessera_test::build_bin_dir() / "tessera-scheduler").string();
  if (!std::filesystem::exists(binary)) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  const DefaultsRun r = run_with_output(binary, {"--help"});
  ASSERT_TRUE(r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.output;
  for (const char* pattern : {R"(--port [^\n]*=8786\b)", R"(--worker-ttl [^\n]*=300s\b)", R"(--worker-silent [^\n]*=5s\b)",
                              R"(--registration-timeout [^\n]*=30s\b)"})
    EXPECT_TRUE(std::regex_search(r.output, std::regex(pattern))) << pattern << " not in:\n" << r.output;
}
