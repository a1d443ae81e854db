// docs/security.md, "Making a token" and "A weak token is warned about at start" (lines 63-80),
// for the bundled binaries: TESSERA_TOKEN=auto, the auto token printed once without a scheduler
// file, the token never in a log (at the most verbose level), and the weak-token warning of
// tessera-worker and tessera-cuda-worker given once, by the process whose command line was typed.
// Real processes.
#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/scheduler_file.hpp"
#include "distributed/token.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/client.hpp"

namespace {

using namespace std::chrono_literals;
using tessera::distributed::Client;
using tessera_test::Children;
using tessera_test::client_options;
using tessera_test::read_text;
using tessera_test::ScopedEnv;
using tessera_test::wait_until;


// Starts argv with its stderr in `log` and the current environment plus `env` (which, unlike
// spawn_logged's, need not carry TESSERA_PARENT_PID).
pid_t spawn_with_log(Children& kids, std::vector<std::string> argv, const std::filesystem::path& log,
                     const std::map<std::string, std::string>& env) {
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log.string() + "'"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  return kids.spawn(cmd, env);
}

bool is_token_hex(const std::string& s) {
  static const std::regex hex32("[0-9a-f]{32}");
  return std::regex_match(s, hex32);
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// What constructing a client throws ("" if it connects).
std::string connect_error(const std::string& address, const std::string& token) {
  try {
    Client c(address, client_options(token, 5));
    c.scheduler_info();
    c.close();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// What a bare handshake with exactly `token` (no "auto" meaning "none") throws ("" if it passes).
std::string handshake_error(const std::string& address, const std::string& token) {
  tessera::comm::CommOptions co;
  co.token = token;
  co.connect_timeout = std::chrono::milliseconds(3000);
  co.handshake_timeout = std::chrono::milliseconds(3000);
  try {
    tessera::comm::connect(address, co)->close();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const char* const kWeakWarning = "the token has at most about 52 bits of randomness (10 characters), fewer than 128";

}  // namespace

// U43 (line 63 and token.hpp): TESSERA_TOKEN=auto makes the scheduler generate the token, as
// --token auto does, and for a worker and a client "auto" means "no token of mine: take the
// scheduler file's". A scheduler that took "auto" literally as its token would let in anyone
// who types "auto"; one that wrote no token would let in anyone at all.
TEST(TokenBinaries, TesseraTokenAutoMakesOneThatWorkersAndClientsFindInTheSchedulerFile) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  ScopedEnv env_token("TESSERA_TOKEN", std::nullopt);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const auto slog = dir.path() / "scheduler.log", wlog = dir.path() / "worker.log";
  auto env = tessera_test::child_env();
  env["TESSERA_TOKEN"] = "auto";
  Children kids;
  spawn_with_log(kids, {bins.scheduler, "--port", "0", "--no-dashboard", "--scheduler-file", sfile, "--log-level", "warning"},
                 slog, env);
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10)) << read_text(slog);
  struct stat st {};
  ASSERT_EQ(::stat(sfile.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the file holds the cluster's secret";
  ASSERT_TRUE(wait_until([&] { return !tessera::distributed::scheduler_file_token(sfile).empty(); }, 5)) << read_text(sfile);
  const std::string token = tessera::distributed::scheduler_file_token(sfile);
  EXPECT_TRUE(is_token_hex(token)) << "\"" << token << "\"";
  EXPECT_EQ(read_text(slog).find("fewer than 128"), std::string::npos) << read_text(slog);
  const std::string address = tessera::distributed::read_scheduler_file(sfile, 5);

  // A worker with TESSERA_TOKEN=auto and no --token registers (it takes the file's token).
  spawn_with_log(kids, {bins.worker, "--scheduler-file", sfile, "--nthreads", "1", "--memory-limit", "0",
                        "--death-timeout", "10", "--log-level", "warning"},
                 wlog, env);
  {
    ScopedEnv auto_token("TESSERA_TOKEN", "auto");
    auto client = Client::from_scheduler_file(sfile, client_options("", 10));
    ASSERT_TRUE(client->wait_for_workers(1, 10s)) << read_text(wlog);
    EXPECT_EQ(client->scheduler_info().workers.size(), 1u);
    client->close();
  }
  // The token is what lets them in: "auto" itself, or another token, does not.
  EXPECT_NE(connect_error(address, "not-" + token), "") << "a wrong token was let in";
  EXPECT_NE(handshake_error(address, "auto"), "") << "the scheduler took \"auto\" literally as its token";
  EXPECT_NE(handshake_error(address, ""), "") << "the scheduler has no token";
  EXPECT_EQ(handshake_error(address, token), "");
}

// U44 (line 69): without --scheduler-file the auto token is printed once to stderr, as 32 hex
// digits, and it is the token the scheduler checks (a client given it gets in).
TEST(TokenBinaries, WithoutASchedulerFileTheAutoTokenIsPrintedOnceToStderr) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  ScopedEnv env_token("TESSERA_TOKEN", std::nullopt);
  tessera_test::TempDir dir;
  const auto slog = dir.path() / "scheduler.log";
  Children kids;
  const pid_t sched = spawn_with_log(
      kids, {bins.scheduler, "--port", "0", "--no-dashboard", "--token", "auto", "--log-level", "debug"}, slog,
      tessera_test::child_env());
  const std::regex listening("tessera-scheduler listening at (\\S+)");
  std::smatch m;
  std::string log;
  ASSERT_TRUE(wait_until(
      [&] {
        log = read_text(slog);
        return std::regex_search(log, m, listening);
      },
      10))
      << log;
  const std::string address = m[1];
  const std::regex printed("tessera-scheduler token \\(--token auto\\): ([0-9a-f]{32}) \\(give it to workers and clients "
                           "as TESSERA_TOKEN\\)");
  std::smatch t;
  ASSERT_TRUE(std::regex_search(log, t, printed)) << log;
  const std::string token = t[1];
  EXPECT_EQ(connect_error(address, token), "") << "the printed token does not let a client in";
  EXPECT_NE(handshake_error(address, "auto"), "") << "the scheduler took \"auto\" literally as its token";
  ::kill(sched, SIGTERM);
  tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
  log = read_text(slog);
  EXPECT_EQ(count_of(log, "tessera-scheduler token (--token auto): "), 1u) << log;
  EXPECT_EQ(count_of(log, token), 1u) << "printed once, and in no log line:\n" << log;
}

// U45 (line 70, "It is not logged"): at the most verbose level (trace, which includes debug),
// neither the scheduler nor a worker with its nanny and the nanny's link to the scheduler writes
// the token to its log, whether it came from --token auto (via the scheduler file) or from
// TESSERA_TOKEN. Logs are often collected where more people read them than the cluster trusts.
TEST(TokenBinaries, TheTokenIsInNoLogEvenAtTraceLevel) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  for (bool from_env : {false, true}) {
    ScopedEnv env_token("TESSERA_TOKEN", std::nullopt);
    tessera_test::TempDir dir;
    const std::string sfile = (dir.path() / "s.json").string();
    const auto slog = dir.path() / "scheduler.log", wlog = dir.path() / "worker.log";
    const std::string given = tessera::distributed::generate_token();
    auto env = tessera_test::child_env();
    if (from_env) env["TESSERA_TOKEN"] = given;
    Children kids;
    std::vector<std::string> sargv{bins.scheduler, "--port", "0", "--no-dashboard", "--scheduler-file", sfile,
                                   "--log-level", "trace"};
    if (!from_env) sargv.insert(sargv.end(), {"--token", "auto"});
    const pid_t sched = spawn_with_log(kids, sargv, slog, env);
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10)) << read_text(slog);
    std::string token = given;
    if (!from_env) {
      ASSERT_TRUE(wait_until([&] { return !tessera::distributed::scheduler_file_token(sfile).empty(); }, 5));
      token = tessera::distributed::scheduler_file_token(sfile);
    }
    ASSERT_TRUE(is_token_hex(token)) << token;
    // The worker under its nanny (the default): the nanny's link dials the scheduler too.
    const pid_t worker = spawn_with_log(kids, {bins.worker, "--scheduler-file", sfile, "--nthreads", "1",
                                               "--memory-limit", "0", "--death-timeout", "10", "--log-level", "trace"},
                                        wlog, env);
    auto client = Client::from_scheduler_file(sfile, client_options(token, 10));
    ASSERT_TRUE(client->wait_for_workers(1, 10s)) << read_text(wlog);
    client->close();
    ::kill(worker, SIGTERM);
    tessera_test::expect_exit_zero(kids, worker, "tessera-worker");
    ::kill(sched, SIGTERM);
    tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
    const char* how = from_env ? "TESSERA_TOKEN" : "--token auto";
    for (const auto& [who, path] : {std::pair{"scheduler", slog}, std::pair{"worker", wlog}}) {
      const std::string log = read_text(path);
      EXPECT_NE(log.find(" debug ["), std::string::npos) << how << ": the " << who << " logged nothing verbose:\n" << log;
      EXPECT_EQ(log.find(token), std::string::npos) << how << ": the " << who << "'s log has the token:\n" << log;
    }
  }
}

// U46 (lines 73-77): tessera-worker, run from a command line (no TESSERA_PARENT_PID), warns
// about a weak token exactly once (its nanny does; the nanny's child, which has a parent pid,
// does not repeat it); started as someone's child it does not warn; a strong token is not warned
// about; and the warning does not repeat the token.
TEST(TokenBinaries, TesseraWorkerWarnsAboutAWeakTokenOnceFromTheCommandLine) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  ScopedEnv env_token("TESSERA_TOKEN", std::nullopt);
  ScopedEnv no_parent("TESSERA_PARENT_PID", std::nullopt);  // as from a shell (the trap of child_env())
  tessera_test::TempDir dir;
  const std::string never = (dir.path() / "never.json").string();
  // --death-timeout 0: the scheduler file never appears, and the worker gives up at once.
  auto run = [&](const std::string& token, const std::map<std::string, std::string>& env, const std::string& name) {
    Children kids;
    const auto log = dir.path() / (name + ".log");
    const pid_t pid = spawn_with_log(kids, {bins.worker, "--token", token, "--scheduler-file", never, "--death-timeout",
                                            "0", "--memory-limit", "0", "--log-level", "info"},
                                     log, env);
    const auto st = kids.wait_exit(pid, 8);
    EXPECT_TRUE(st.has_value()) << name << ": still running";
    return read_text(log);
  };
  const std::string typed = run("password12", {}, "typed");
  EXPECT_EQ(count_of(typed, std::string("tessera-worker: ") + kWeakWarning), 1u) << typed;
  EXPECT_NE(typed.find("does not exist"), std::string::npos) << "the nanny's child ran too:\n" << typed;
  EXPECT_EQ(typed.find("password12"), std::string::npos) << "the warning repeats the token:\n" << typed;
  const std::string child = run("password12", tessera_test::child_env(), "child");
  EXPECT_EQ(child.find("fewer than 128"), std::string::npos) << child;
  EXPECT_NE(child.find("does not exist"), std::string::npos) << child;
  const std::string strong = run(tessera::distributed::generate_token(), {}, "strong");
  EXPECT_EQ(strong.find("fewer than 128"), std::string::npos) << strong;
}

// U46 (lines 73-77): tessera-cuda-worker warns once, under its own name, and the worker it
// starts (a child with a parent pid) does not. CUDA_VISIBLE_DEVICES set: no GPU needed.
TEST(TokenBinaries, TesseraCudaWorkerWarnsAboutAWeakTokenOnce) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  ScopedEnv env_token("TESSERA_TOKEN", std::nullopt);
  ScopedEnv no_parent("TESSERA_PARENT_PID", std::nullopt);
  tessera_test::TempDir dir;
  const auto log = dir.path() / "cuda.log";
  Children kids;
  const pid_t pid = spawn_with_log(kids, {bins.cuda_worker, "--token", "password12", "--scheduler-file",
                                          (dir.path() / "never.json").string(), "--death-timeout", "0",
                                          "--memory-limit", "0", "--log-level", "info"},
                                   log, {{"CUDA_VISIBLE_DEVICES", "0"}});
  const auto st = kids.wait_exit(pid, 8);
  EXPECT_TRUE(st.has_value()) << "still running";
  const std::string text = read_text(log);
  EXPECT_EQ(count_of(text, std::string("tessera-cuda-worker: ") + kWeakWarning), 1u) << text;
  EXPECT_EQ(count_of(text, "fewer than 128"), 1u) << "its worker repeated the warning:\n" << text;
  EXPECT_NE(text.find("does not exist"), std::string::npos) << "its worker did not run:\n" << text;
}
