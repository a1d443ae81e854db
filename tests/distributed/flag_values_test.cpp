// docs/security.md, "Who can connect" and "Limits and validation": what the bundled binaries
// (tessera-scheduler, tessera-worker, tessera-cuda-worker) listen on by default, the defaults
// their --help shows, and the flag values they refuse before anything starts, with exit status
// exactly 105 (CLI11's ValidationError) and the flag named. Real processes.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/scheduler_state.hpp"

namespace {

using tessera_test::Children;
using tessera_test::read_text;
using tessera_test::wait_until;

constexpr int kFlagValueExit = 105;  // CLI::ExitCodes::ValidationError


// One run of a binary to its exit, keeping stdout (where --help goes) and stderr apart.
struct FlagRun {
  int status = -1;  // the wait status; -1: still running at the timeout (then killed)
  std::string out, err;
  double seconds = 0;
};

FlagRun run_flags(const std::string& binary, const std::vector<std::string>& args,
                  std::map<std::string, std::string> env = tessera_test::child_env(), double timeout_s = 8) {
  tessera_test::TempDir dir;
  const std::string out = (dir.path() / "stdout").string(), err = (dir.path() / "stderr").string();
  Children kids;  // kills it if it is still running
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" >'" + out + "' 2>'" + err + "'", binary};
  cmd.insert(cmd.end(), args.begin(), args.end());
  const auto start = tessera_test::Clock::now();
  const pid_t pid = kids.spawn(cmd, env);
  FlagRun r;
  if (auto st = kids.wait_exit(pid, timeout_s)) r.status = *st;
  r.seconds = tessera_test::seconds_since(start);
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

bool exited_with(const FlagRun& r, int code) {
  return r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == code;
}

std::string how_it_ended(const FlagRun& r) {
  return r.status == -1 ? std::string("still running") : tessera_test::describe_status(r.status);
}

struct FlagCase {
  std::vector<std::string> args;
  std::string expect;  // in stderr
};

// Every case must stop the binary at once with exit 105 and the flag's message. `tail` is added
// to every command line: for a worker a scheduler file that never appears, which it would
// otherwise wait --death-timeout (60 s) for.
void expect_exit_105(const std::string& binary, const std::vector<FlagCase>& cases, const std::vector<std::string>& tail,
                     const std::map<std::string, std::string>& env = tessera_test::child_env()) {
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), tail.begin(), tail.end());
    const FlagRun r = run_flags(binary, args, env);
    std::string what = std::filesystem::path(binary).filename().string();
    for (const auto& a : c.args) what += " " + a;
    EXPECT_TRUE(exited_with(r, kFlagValueExit))
        << what << ": " << how_it_ended(r) << ", expected exit " << kFlagValueExit << "\n" << r.err;
    EXPECT_LT(r.seconds, 5) << what << " did not stop before starting";
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << what << ": expected '" << c.expect << "' in\n" << r.err;
  }
}

// The line of `--help` output that describes `flag` ("" when none does).
std::string help_line(const std::string& help, const std::string& flag) {
  std::istringstream in(help);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    const std::string rest = line.substr(first);
    if (rest.rfind(flag + " ", 0) == 0) return rest;
  }
  return "";
}

// The first IPv4 address of this machine that is not loopback ("" when it has none).
std::string non_loopback_ipv4() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) found = text;
  }
  ::freeifaddrs(list);
  return found;
}

// Whether a TCP connection to ip:port is accepted (a refused or failed connect: false).
bool accepts_tcp(const std::string& ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

// M1, docs/security.md line 10. The doc says the scheduler listens on "every interface" by
// default; the code (src/distributed/cli_scheduler.cpp, `host = "127.0.0.1"`;
// SchedulerOptions::address) and docs/deployment.md say 127.0.0.1. This test states what the
// code does, the safer default: a scheduler started without --host is reachable from this
// machine only. Line 10 is wrong.
TEST(FlagValues, TheSchedulerListensOnLoopbackOnlyWithoutHost) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  EXPECT_EQ(tessera::distributed::SchedulerOptions{}.address, "tcp://127.0.0.1:8786");
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), log = (dir.path() / "log").string();
  Children kids;
  const pid_t sched = kids.spawn({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log + "'", bins.scheduler, "--port", "0",
                                  "--no-dashboard", "--scheduler-file", sfile, "--log-level", "warning"},
                                 tessera_test::child_env());
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10)) << read_text(log);
  const std::string address = tessera::distributed::read_scheduler_file(sfile, 5);
  EXPECT_EQ(address.rfind("tcp://127.0.0.1:", 0), 0u) << address;
  const int port = tessera_test::port_of(address);
  ASSERT_GT(port, 0) << address;
  EXPECT_TRUE(accepts_tcp("127.0.0.1", port)) << "the scheduler does not listen on loopback";
  const std::string other = non_loopback_ipv4();
  if (!other.empty()) {
    EXPECT_FALSE(accepts_tcp(other, port)) << "the scheduler accepts connections on " << other
                                           << ", not only on loopback";
  }
  ::kill(sched, SIGTERM);
  tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
}

// M1 (the port, line 10), U51 (line 346: --worker-ttl default 300 s), and the defaults of lines
// 170 (--registration-timeout 30 s) and 336 (--worker-silent 5 s), as `tessera-scheduler --help`
// prints them: what an operator reads is what the scheduler does.
TEST(FlagValues, SchedulerHelpShowsTheDocumentedDefaults) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  const FlagRun r = run_flags(bins.scheduler, {"--help"});
  ASSERT_TRUE(exited_with(r, 0)) << how_it_ended(r) << "\n" << r.err;
  const std::map<std::string, std::string> defaults = {
      {"--host", "=127.0.0.1"},       {"--port", "=8786"},
      {"--worker-ttl", "=300s"},      {"--worker-silent", "=5s"},
      {"--registration-timeout", "=30s"},
  };
  for (const auto& [flag, shown] : defaults) {
    const std::string line = help_line(r.out, flag);
    ASSERT_FALSE(line.empty()) << flag << " is not in --help:\n" << r.out;
    const std::string head = line.substr(0, line.find("  "));  // "--flag TYPE=DEFAULT", before the description
    EXPECT_TRUE(head.ends_with(shown)) << flag << ": expected the default " << shown << " in '" << line << "'";
  }
  // The structs the binary fills agree (the library's defaults, for programs that embed it).
  EXPECT_EQ(tessera::distributed::SchedulerConfig{}.worker_ttl, 300);
  EXPECT_EQ(tessera::distributed::SchedulerOptions{}.worker_silent, 5);
  EXPECT_EQ(tessera::distributed::SchedulerOptions{}.registration_timeout, 30);
}

// U37, U38, U39, U41 (lines 264-276): every bad value the scheduler is given stops it with exit
// 105 (not merely non-zero: a supervisor tells a typo from a crash by it) and the flag named.
TEST(FlagValues, BadSchedulerValuesExitExactly105WithTheFlagNamed) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  expect_exit_105(bins.scheduler,
                  {
                      {{"--worker-ttl", "0"}, "--worker-ttl: must be more than zero"},
                      {{"--worker-ttl", "-5s"}, "--worker-ttl: invalid duration \"-5s\": negative"},
                      {{"--worker-ttl", "ten"}, "--worker-ttl: invalid duration \"ten\""},
                      {{"--idle-timeout", "5 fortnights"}, "--idle-timeout: invalid duration"},
                      {{"--idle-timeout", "-5"}, "--idle-timeout: invalid duration \"-5\": negative"},
                      {{"--worker-silent", "-1s"}, "--worker-silent: invalid duration \"-1s\": negative"},
                      {{"--worker-silent", "soon"}, "--worker-silent: invalid duration \"soon\""},
                      {{"--registration-timeout", "-1"}, "--registration-timeout: invalid duration \"-1\": negative"},
                      {{"--registration-timeout", "x"}, "--registration-timeout: invalid duration \"x\""},
                      {{"--port", "70000"}, "--port: Value 70000 not in range 0 to 65535"},
                      {{"--port", "-1"}, "--port: Value -1 not in range 0 to 65535"},
                  },
                  {"--no-dashboard"});
}

// U37, U39, U40, U41 (lines 264-276): the same for tessera-worker, before it waits for its
// scheduler file.
TEST(FlagValues, BadWorkerValuesExitExactly105WithTheFlagNamed) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  tessera_test::TempDir dir;
  expect_exit_105(bins.worker,
                  {
                      {{"--heartbeat-interval", "0"}, "--heartbeat-interval: must be more than zero"},
                      {{"--heartbeat-interval", "0ms"}, "--heartbeat-interval: must be more than zero"},
                      {{"--heartbeat-interval", "-1"}, "--heartbeat-interval: invalid duration \"-1\": negative"},
                      {{"--heartbeat-interval", "soon"}, "--heartbeat-interval: invalid duration \"soon\""},
                      {{"--death-timeout", "soon"}, "--death-timeout: invalid duration \"soon\""},
                      {{"--death-timeout", "-1"}, "--death-timeout: invalid duration \"-1\": negative"},
                      {{"--nthreads", "0"}, "--nthreads: must be at least 1, got 0"},
                      {{"--nthreads", "-3"}, "--nthreads: must be at least 1, got -3"},
                      {{"--nthreads", "1.5"}, "--nthreads: '1.5' is not a whole number"},
                      {{"--nthreads", "abc"}, "--nthreads: 'abc' is not a whole number"},
                      {{"--nworkers", "0"}, "--nworkers: must be at least 1, got 0"},
                      {{"--nworkers", "-1"}, "--nworkers: must be at least 1, got -1"},
                      {{"--nworkers", "2.5"}, "--nworkers: '2.5' is not a whole number"},
                      {{"--memory-limit", "4XB"}, "--memory-limit: invalid memory limit \"4XB\": unknown unit"},
                      {{"--memory-limit", "-1GB"}, "--memory-limit: invalid memory limit \"-1GB\": negative"},
                      {{"--device-memory-limit", "lots"}, "--device-memory-limit: invalid device memory limit"},
                      {{"--worker-port", "70000"}, "--worker-port: Value 70000 not in range 0 to 65535"},
                      {{"--worker-port", "-1"}, "--worker-port: Value -1 not in range 0 to 65535"},
                  },
                  {"--scheduler-file", (dir.path() / "never.json").string()});
}

// U40, U37 (lines 271 and 278): tessera-cuda-worker checks thread counts and durations the same
// way. CUDA_VISIBLE_DEVICES set explicitly: it needs no GPU to get that far.
TEST(FlagValues, BadCudaWorkerValuesExitExactly105WithTheFlagNamed) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  tessera_test::TempDir dir;
  auto env = tessera_test::child_env();
  env["CUDA_VISIBLE_DEVICES"] = "0";
  expect_exit_105(bins.cuda_worker,
                  {
                      {{"--nthreads", "1.5"}, "--nthreads: '1.5' is not a whole number"},
                      {{"--nthreads", "abc"}, "--nthreads: 'abc' is not a whole number"},
                      {{"--nthreads", "0"}, "--nthreads: must be at least 1, got 0"},
                      {{"--heartbeat-interval", "0"}, "--heartbeat-interval: must be more than zero"},
                      {{"--death-timeout", "-1"}, "--death-timeout: invalid duration \"-1\": negative"},
                  },
                  {"--scheduler-file", (dir.path() / "never.json").string()}, env);
}

// U38 (line 270, "0 means never"): 0 is a valid --worker-silent and --registration-timeout, not
// a refused value: the scheduler starts with them and writes its file.
TEST(FlagValues, ZeroWorkerSilentAndRegistrationTimeoutStartTheScheduler) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), log = (dir.path() / "log").string();
  Children kids;
  const pid_t sched = kids.spawn({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log + "'", bins.scheduler, "--port", "0",
                                  "--no-dashboard", "--scheduler-file", sfile, "--worker-silent", "0",
                                  "--registration-timeout", "0", "--log-level", "warning"},
                                 tessera_test::child_env());
  EXPECT_TRUE(wait_until([&] { return std::filesystem::exists(sfile) || !kids.running(sched); }, 10));
  ASSERT_TRUE(kids.running(sched)) << "the scheduler stopped:\n" << read_text(log);
  EXPECT_TRUE(std::filesystem::exists(sfile)) << read_text(log);
  ::kill(sched, SIGTERM);
  tessera_test::expect_exit_zero(kids, sched, "tessera-scheduler");
}

// U39 (line 270, "0 means ... do not wait"): --death-timeout 0 is accepted (not 105) and means
// the worker does not wait for a scheduler file that is not there: it exits 1 at once saying so,
// under its nanny (the default) and without.
TEST(FlagValues, ZeroDeathTimeoutGivesUpAtOnceOnAMissingSchedulerFile) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  tessera_test::TempDir dir;
  const std::string never = (dir.path() / "never.json").string();
  for (bool nanny : {true, false}) {
    std::vector<std::string> args{"--scheduler-file", never, "--death-timeout", "0", "--memory-limit", "0"};
    if (!nanny) args.push_back("--no-nanny");
    const FlagRun r = run_flags(bins.worker, args);
    const char* what = nanny ? "under its nanny" : "--no-nanny";
    EXPECT_TRUE(exited_with(r, 1)) << what << ": " << how_it_ended(r) << "\n" << r.err;
    EXPECT_LT(r.seconds, 3) << what << ": it waited";
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << what << ":\n" << r.err;
  }
}

// U42 (line 302): a spill directory that is a regular file stops the worker at start with exit
// status exactly 1 (a start-up failure, not a flag-value 105), before it waits for a scheduler;
// tessera-cuda-worker checks it the same way.
TEST(FlagValues, ASpillDirectoryThatIsAFileExitsExactly1) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  tessera_test::TempDir dir;
  const auto file = dir.path() / "not-a-dir";
  std::ofstream(file) << "x";
  const std::vector<std::string> args{"--scheduler-file", (dir.path() / "never.json").string(), "--local-directory",
                                      file.string()};
  auto env = tessera_test::child_env();
  env["CUDA_VISIBLE_DEVICES"] = "0";
  for (const std::string& binary : {bins.worker, bins.cuda_worker}) {
    const FlagRun r = run_flags(binary, args, env);
    EXPECT_TRUE(exited_with(r, 1)) << binary << ": " << how_it_ended(r) << "\n" << r.err;
    EXPECT_LT(r.seconds, 5) << binary;
    EXPECT_NE(r.err.find("spill directory " + file.string() + " (--local-directory) is not a directory"),
              std::string::npos)
        << binary << ":\n" << r.err;
  }
}

// U42 (line 302): a directory the worker cannot write stops it with exit 1 and "is not writable".
TEST(FlagValues, AReadOnlySpillDirectoryExitsExactly1) {
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  tessera_test::TempDir dir;
  const auto ro = dir.path() / "ro";
  std::filesystem::create_directories(ro);
  ASSERT_EQ(::chmod(ro.c_str(), 0555), 0);
  {
    std::ofstream probe(ro / "can-i");
    if (probe) {
      probe.close();
      std::filesystem::remove(ro / "can-i");
      ::chmod(ro.c_str(), 0755);
      GTEST_SKIP() << "chmod 0555 does not stop this user (root?) from writing";
    }
  }
  const FlagRun r =
      run_flags(bins.worker, {"--scheduler-file", (dir.path() / "never.json").string(), "--local-directory", ro.string()});
  ::chmod(ro.c_str(), 0755);
  EXPECT_TRUE(exited_with(r, 1)) << how_it_ended(r) << "\n" << r.err;
  EXPECT_NE(r.err.find("is not writable"), std::string::npos) << r.err;
}
