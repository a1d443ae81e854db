// Issue 29: `tessera-scheduler --token auto` makes a token from the OS random source and puts it
// in its scheduler file (mode 0600), where workers and clients given the file and no token find
// it; a token with less than 128 bits of randomness is warned about at start. Real binaries.
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/scheduler_file.hpp"
#include "distributed/token.hpp"
#include "nanny_binaries.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::read_text;
using tessera_test::spawn_logged;
using tessera_test::wait_until;

bool hex_digits(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isxdigit(c) || std::isupper(c)) return false;
  return !s.empty();
}

}  // namespace

TEST(TokenStrength, EstimateIsLengthTimesTheAlphabetsBits) {
  EXPECT_EQ(token_bits(""), 0);
  EXPECT_NEAR(token_bits("password12"), 10 * std::log2(36.0), 1e-9);  // lower case and digits
  EXPECT_NEAR(token_bits("Pass-word"), 9 * std::log2(26.0 + 26 + 33), 1e-9);
  const std::string generated = generate_token();
  EXPECT_EQ(generated.size(), 32u);
  EXPECT_TRUE(hex_digits(generated)) << generated;
  EXPECT_NE(generated, generate_token());
  EXPECT_GE(token_bits(generated), kMinTokenBits);
  EXPECT_NE(weak_token_warning("password12").find("fewer than 128"), std::string::npos);
  EXPECT_NE(weak_token_warning("0123456789abcdef").find("fewer than 128"), std::string::npos) << "64 bits of hex";
  EXPECT_EQ(weak_token_warning(generated), "");
  EXPECT_EQ(weak_token_warning(""), "") << "no token: nothing to guess (and nothing protected; said elsewhere)";
}

TEST(TokenAuto, TheSchedulersFileCarriesItToWorkersAndClientsWithoutOne) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::ScopedEnv no_env_token("TESSERA_TOKEN", std::nullopt);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const auto slog = dir.path() / "scheduler.log", wlog = dir.path() / "worker.log";
  Children kids;
  spawn_logged(kids,
               {bins.scheduler, "--port", "0", "--no-dashboard", "--scheduler-file", sfile, "--token", "auto",
                "--log-level", "warning"},
               slog);
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10)) << read_text(slog);
  struct stat st {};
  ASSERT_EQ(::stat(sfile.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the file holds the cluster's secret: its owner's only";
  const std::string token = scheduler_file_token(sfile);
  EXPECT_EQ(token.size(), 32u) << read_text(sfile);
  EXPECT_TRUE(hex_digits(token)) << token;
  EXPECT_EQ(read_text(slog).find(token), std::string::npos) << "the token is not logged";
  EXPECT_EQ(read_text(slog).find("fewer than 128"), std::string::npos) << read_text(slog);

  // A worker and a client with no token of their own.
  spawn_logged(kids, {bins.worker, "--scheduler-file", sfile, "--nthreads", "1", "--preload", bins.plugin,
                      "--memory-limit", "0", "--log-level", "warning"},
               wlog);
  auto client = Client::from_scheduler_file(sfile, client_options("", 10));
  ASSERT_TRUE(client->wait_for_workers(1, 20s)) << read_text(wlog);
  EXPECT_GT(client->submit("nanny_plugin.pid", 0).result_as<int>(20s), 0);
  // The token is what lets them in: another is refused.
  EXPECT_THROW(Client::from_scheduler_file(sfile, client_options("not-" + token, 5)), std::exception);
}

TEST(TokenAuto, AWeakTokenIsWarnedAboutAtStart) {
  tessera_test::NannyBinaries bins;
  NEED_BINARIES(bins);
  tessera_test::TempDir dir;
  Children kids;
  auto started_with = [&](const std::string& token, const std::string& name) {
    const std::string sfile = (dir.path() / (name + ".json")).string();
    const auto log = dir.path() / (name + ".log");
    spawn_logged(kids,
                 {bins.scheduler, "--port", "0", "--no-dashboard", "--scheduler-file", sfile, "--token", token,
                  "--log-level", "warning"},
                 log);
    EXPECT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10)) << read_text(log);
    return read_text(log);
  };
  const std::string weak = started_with("password12", "weak");
  EXPECT_NE(weak.find("the token has at most about 52 bits of randomness (10 characters), fewer than 128"),
            std::string::npos)
      << weak;
  const std::string strong = started_with(generate_token(), "strong");
  EXPECT_EQ(strong.find("fewer than 128"), std::string::npos) << strong;
}
