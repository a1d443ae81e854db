// SSHCluster (src/distributed/ssh_cluster.cpp).
//
// - SSHClusterWrapper*: the remote command's wrapper run by /bin/sh here (what sshd would run): the
//   token from stdin, the environment, the exit status, and SIGTERM when stdin closes.
// - SSHClusterLocal*: SSHCluster end to end on this machine with a stand-in `ssh` that runs the
//   remote command with /bin/sh (no sshd needed): the cluster works, scale(), a worker that cannot
//   start is reported with its last lines, a host whose nvidia-smi lists GPUs gets
//   tessera-cuda-worker, close() leaves nothing.
// - SSHClusterHosts*: three "hosts" (network namespaces on a bridge, tests/distributed/
//   netns_hosts.hpp), a real sshd in each, the real ssh client: the scheduler on host 0, workers
//   on hosts 1 and 2; the seed workload and a worker-to-worker transfer across hosts over tcp://
//   and ucx://; and the partition test (a host's link cut mid-computation). Root only.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_fixture.hpp"
#include "netns_hosts.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/ssh_cluster.hpp"
#include "tessera/tessera.hpp"

using namespace std::chrono_literals;
using tessera::distributed::Client;
using tessera::distributed::ClientOptions;
using tessera::distributed::Future;
using tessera::distributed::SSHCluster;
using tessera::distributed::SSHClusterOptions;
using tessera::distributed::SubmitOptions;

namespace {

using Clock = std::chrono::steady_clock;

std::filesystem::path plugin_path() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libtessera_ssh_tasks.so";
}

bool binaries_built() {
  auto bin = tessera_test::build_bin_dir();
  return std::filesystem::exists(bin / "tessera-scheduler") && std::filesystem::exists(bin / "tessera-worker") &&
         std::filesystem::exists(plugin_path());
}

template <class F>
bool wait_until(F f, double seconds) {
  auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

// A process other than pgrep's own shell has `text` on its command line.
bool running_with(const std::string& text) {
  // "[x]yz" matches "xyz" but not the pattern itself on pgrep's command line.
  return tessera_test::run_command("pgrep -f '[" + text.substr(0, 1) + "]" + text.substr(1) + "'").status == 0;
}

// The sanitizers' options for the processes the tests start over ssh, which do not inherit this
// environment: under AddressSanitizer they check for leaks with the same options and lsan.supp
// as the test (one file system for every "host").
std::map<std::string, std::string> sanitizer_env(std::map<std::string, std::string> env = {}) {
#if defined(__SANITIZE_ADDRESS__)
  for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"})
    if (const char* v = std::getenv(name); v && *v && !env.count(name)) env[name] = v;
#endif
  return env;
}

// sanitizer_env() as a prefix for a shell command ("" without AddressSanitizer).
std::string sanitizer_prefix() {
  std::string out;
  for (const auto& [k, v] : sanitizer_env()) out += k + "=" + tessera::distributed::shell_quote(v) + " ";
  return out;
}

bool process_alive(int pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// Runs the wrapper for `argv` under /bin/sh with a pipe as stdin; the token line written first.
struct WrapperRun {
  pid_t pid = -1;
  int in = -1;
  std::filesystem::path out;
  WrapperRun(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& token, const std::filesystem::path& out_file)
      : out(out_file) {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    const std::string cmd = tessera::distributed::ssh_remote_command(argv, env);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[0], 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const char* args[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    EXPECT_EQ(::posix_spawn(&pid, "/bin/sh", &fa, nullptr, const_cast<char**>(args), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[0]);
    in = p[1];
    const std::string line = token + "\n";
    EXPECT_EQ(::write(in, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  ~WrapperRun() {
    if (in >= 0) ::close(in);
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  std::optional<int> wait(double seconds) {
    auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (Clock::now() < deadline) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }
  std::string output() const {
    std::ifstream f(out);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
};

// A stand-in for ssh: runs the last argument (the remote command) with /bin/sh here, with
// `path_first` (when given) first in PATH, as a remote host's own programs.
std::string write_local_ssh(const std::filesystem::path& dir, const std::string& path_first = "") {
  auto path = dir / "local-ssh";
  std::ofstream(path) << "#!/bin/sh\n"
                         "# ssh's options are ignored; the remote command is the last argument.\n"
                         "for last; do :; done\n"
                      << (path_first.empty() ? "" : "PATH=" + path_first + ":$PATH; export PATH\n")
                      << "exec /bin/sh -c \"$last\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path.string();
}

}  // namespace

// ---- the wrapper ------------------------------------------------------------------------------------

TEST(SSHClusterWrapper, QuotesWordsForTheShell) {
  using tessera::distributed::shell_quote;
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  tessera_test::TempDir dir;
  // A word with spaces, quotes, $ and a newline arrives unchanged as one argument.
  const std::string odd = "a b 'c' \"d\" $HOME `x` \\ \n e";
  WrapperRun run({"/bin/sh", "-c", "printf '%s|' \"$@\"", "sh", odd, ""}, {}, "t", dir.path() / "out");
  EXPECT_EQ(run.wait(10), std::optional<int>(0));
  EXPECT_EQ(run.output(), odd + "||");
}

TEST(SSHClusterWrapper, TokenFromStdinEnvironmentAndExitStatus) {
  tessera_test::TempDir dir;
  WrapperRun run({"/bin/sh", "-c", "echo \"token=$TESSERA_TOKEN var=$MY_VAR\"; exit 7"},
                 {{"MY_VAR", "x y"}}, "s3cret", dir.path() / "out");
  EXPECT_EQ(run.wait(10), std::optional<int>(7)) << run.output();
  EXPECT_EQ(run.output(), "token=s3cret var=x y\n");
  EXPECT_THROW(tessera::distributed::ssh_remote_command({"true"}, {{"BAD NAME", "1"}}), tessera::Error);
  // The token is not on the command line that ps would show.
  EXPECT_EQ(tessera::distributed::ssh_remote_command({"true"}, {}).find("s3cret"), std::string::npos);
}

TEST(SSHClusterWrapper, ClosingStdinSendsSigterm) {
  tessera_test::TempDir dir;
  const auto pidfile = dir.path() / "pid";
  // The program records its pid, says so on SIGTERM and exits 5.
  WrapperRun run({"/bin/sh", "-c", "echo $$ > " + pidfile.string() + "; trap 'echo got TERM; exit 5' TERM; "
                                    "while :; do sleep 0.05; done"},
                 {}, "t", dir.path() / "out");
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(pidfile) && std::filesystem::file_size(pidfile) > 0; }, 10));
  EXPECT_FALSE(run.wait(0.3).has_value()) << "the program runs while stdin is open";
  ::close(run.in);
  run.in = -1;
  EXPECT_EQ(run.wait(10), std::optional<int>(5)) << run.output();
  EXPECT_NE(run.output().find("got TERM"), std::string::npos);
}

TEST(SSHClusterWrapper, AProgramIgnoringSigtermIsKilled10SecondsLater) {
  tessera_test::TempDir dir;
  const auto pidfile = dir.path() / "pid";
  WrapperRun run({"/bin/sh", "-c", "echo $$ > " + pidfile.string() + "; trap '' TERM; while :; do sleep 0.05; done"}, {},
                 "t", dir.path() / "out");
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(pidfile) && std::filesystem::file_size(pidfile) > 0; }, 10));
  ::close(run.in);
  run.in = -1;
  const auto t0 = Clock::now();
  EXPECT_FALSE(run.wait(8).has_value()) << "still running 8 s after SIGTERM";
  EXPECT_EQ(run.wait(10), std::optional<int>(128 + SIGKILL));
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GT(waited, 9.5);
  EXPECT_LT(waited, 30.0);  // 100 polls of 0.1 s, slower on a loaded machine
}

// ---- end to end with a local stand-in for ssh ---------------------------------------------------

TEST(SSHClusterLocal, RunsTasksScalesAndClosesEverything) {
  if (!binaries_built()) GTEST_SKIP() << "tessera-scheduler, tessera-worker or libtessera_ssh_tasks.so not built";
  tessera_test::TempDir dir;
  SSHClusterOptions o;
  o.hosts = {"127.0.0.1", "127.0.0.1", "127.0.0.1"};
  o.connect.ssh_program = write_local_ssh(dir.path());
  o.scheduler.port = 0;
  o.scheduler.dashboard_address = "";
  o.worker.nthreads = 1;
  o.worker.memory_limit = "0";
  o.worker.worker_kind = "cpu";
  o.worker.preload = {plugin_path().string()};
  o.worker.local_directory = dir.path().string();
  o.remote_env = sanitizer_env();
  o.log_level = "info";
  o.timeout = 60;
  std::vector<int> pids;
  {
    SSHCluster cluster(o);
    EXPECT_EQ(cluster.scheduler_address().rfind("tcp://127.0.0.1:", 0), 0u) << cluster.scheduler_address();
    EXPECT_EQ(cluster.workers(), (std::vector<std::string>{"127.0.0.1-0", "127.0.0.1-1"}));
    EXPECT_EQ(cluster.registered_workers(), 2u);
    Client client(cluster.scheduler_address(), ClientOptions{.token = cluster.token()});
    Future a = client.submit("ssh_plugin.slow_inc", 1, 0);
    EXPECT_EQ(client.submit("ssh_plugin.slow_inc", a, 0).result_as<int>(30s), 3);
    for (const auto& p : cluster.processes()) pids.push_back(p.ssh_pid);
    // The scheduler logged each worker's registration (info level): the output comes back.
    EXPECT_TRUE(wait_until([&] {
      for (const auto& l : cluster.logs(0))
        if (l.find("add worker") != std::string::npos) return true;
      return false;
    }, 10));

    cluster.scale(3);
    EXPECT_EQ(cluster.workers().size(), 3u);
    EXPECT_TRUE(wait_until([&] { return cluster.registered_workers() == 3; }, 30));
    cluster.scale(1);
    EXPECT_EQ(cluster.workers().size(), 1u);
    // A worker stopped by scale leaves the scheduler (it unregisters on SIGTERM).
    EXPECT_TRUE(wait_until([&] { return cluster.registered_workers() == 1; }, 30));
    EXPECT_EQ(client.submit("ssh_plugin.slow_inc", 41, 0).result_as<int>(30s), 42);
    client.close();
    cluster.close();
    for (const auto& p : cluster.processes()) EXPECT_FALSE(p.running) << p.name;
  }
  for (int pid : pids) EXPECT_FALSE(process_alive(pid)) << pid;
  // No remote program is left: nothing runs with this test's folder on its command line.
  EXPECT_TRUE(wait_until([&] { return !running_with(dir.path().string()); }, 15))
      << tessera_test::run_command("pgrep -af " + dir.path().string()).output;
}

TEST(SSHClusterLocal, AWorkerThatCannotStartIsReportedWithItsLastLines) {
  if (!binaries_built()) GTEST_SKIP() << "tessera-scheduler, tessera-worker or libtessera_ssh_tasks.so not built";
  tessera_test::TempDir dir;
  SSHClusterOptions o;
  o.hosts = {"127.0.0.1", "127.0.0.1"};
  o.connect.ssh_program = write_local_ssh(dir.path());
  o.scheduler.port = 0;
  o.scheduler.dashboard_address = "";
  o.worker.worker_kind = "cpu";
  o.worker.preload = {(dir.path() / "no-such-library.so").string()};  // dlopen fails: exit 1
  o.scheduler.extra_args = {"--scheduler-file", (dir.path() / "scheduler.json").string()};
  o.remote_env = sanitizer_env();
  o.timeout = 30;
  try {
    SSHCluster cluster(o);
    FAIL() << "the cluster started with a worker that cannot";
  } catch (const tessera::Error& e) {
    const std::string what = e.what();
    std::cout << "[ error ] " << what << "\n";
    EXPECT_NE(what.find("worker 127.0.0.1-0 on 127.0.0.1 exited with code 1 before it registered"), std::string::npos)
        << what;
    EXPECT_NE(what.find("no-such-library.so"), std::string::npos) << "its last lines are quoted: " << what;
  }
  // The scheduler it had started is gone too.
  EXPECT_TRUE(wait_until([&] { return !running_with(dir.path().string()); }, 15));
}

TEST(SSHClusterLocal, AHostWithGpusGetsTesseraCudaWorker) {
  if (!binaries_built() || !std::filesystem::exists(tessera_test::build_bin_dir() / "tessera-cuda-worker"))
    GTEST_SKIP() << "tessera binaries or libtessera_ssh_tasks.so not built";
  tessera_test::TempDir dir;
  // The "remote" host's nvidia-smi lists two GPUs; its workers are told CUDA_VISIBLE_DEVICES=0,1
  // (an explicit list starts its workers even where no GPU is, docs/deployment.md).
  const auto bin = dir.path() / "bin";
  std::filesystem::create_directories(bin);
  std::ofstream(bin / "nvidia-smi") << "#!/bin/sh\n[ \"$1\" = -L ] || exit 2\n"
                                       "echo 'GPU 0: Stand-in (UUID: GPU-0)'\necho 'GPU 1: Stand-in (UUID: GPU-1)'\n";
  std::filesystem::permissions(bin / "nvidia-smi", std::filesystem::perms::owner_all);
  SSHClusterOptions o;
  o.hosts = {"127.0.0.1", "127.0.0.1", "localhost"};
  o.connect.ssh_program = write_local_ssh(dir.path(), bin.string());
  o.scheduler.port = 0;
  o.scheduler.dashboard_address = "";
  o.worker.nthreads = 1;
  o.worker.memory_limit = "0";
  o.worker.preload = {plugin_path().string()};
  o.worker.local_directory = dir.path().string();
  o.worker.worker_kind_per_host = {{"localhost", "cpu"}};  // the second host: a plain worker, no probe
  o.remote_env = sanitizer_env({{"CUDA_VISIBLE_DEVICES", "0,1"}});
  o.timeout = 60;
  {
    SSHCluster cluster(o);
    EXPECT_EQ(cluster.worker_kinds(), (std::map<std::string, std::string>{{"127.0.0.1", "cuda"}, {"localhost", "cpu"}}));
    Client client(cluster.scheduler_address(), ClientOptions{.token = cluster.token()});
    std::set<std::string> names;
    for (const auto& w : client.scheduler_info().workers) {
      names.insert(w.name);
      if (w.name.find("-gpu") != std::string::npos) {
        EXPECT_EQ(w.resources.at("GPU"), 1.0) << w.name;
      }
    }
    EXPECT_EQ(names, (std::set<std::string>{"127.0.0.1-0-gpu0", "127.0.0.1-0-gpu1", "localhost-0"}));
    EXPECT_EQ(cluster.registered_workers(), 3u);
    client.close();
  }
  EXPECT_TRUE(wait_until([&] { return !running_with(dir.path().string()); }, 15));
}

TEST(SSHClusterLocal, OptionsAreCheckedFirst) {
  SSHClusterOptions o;
  o.hosts = {"only-one"};
  EXPECT_THROW(SSHCluster{o}, tessera::Error);
  o.hosts = {"127.0.0.1", "127.0.0.1"};
  o.connect.ssh_program = "/nonexistent/ssh";
  EXPECT_THROW(SSHCluster{o}, tessera::Error);
}

// ---- across namespaced hosts --------------------------------------------------------------------

namespace {

struct Hosts {
  tessera_test::TempDir dir;
  std::unique_ptr<tessera_test::NetnsHosts> net;
  Hosts() {
    net = std::make_unique<tessera_test::NetnsHosts>(3);
    net->start_sshd(dir.path());
  }
  SSHClusterOptions options(const std::string& protocol) const {
    SSHClusterOptions o;
    o.hosts = {net->address(0), net->address(1), net->address(2)};
    o.connect.identity_file = net->identity_file();
    o.connect.user = "root";
    o.connect.ssh_options = {"-F", net->ssh_config()};
    o.scheduler.port = 8786;
    o.scheduler.dashboard_address = "";
    o.scheduler.protocol = protocol;
    o.worker.protocol = protocol;
    o.worker.nthreads = 1;
    o.worker.memory_limit = "0";
    o.worker.preload = {plugin_path().string()};
    o.worker.death_timeout = 20;
    o.log_level = "info";
    o.log_lines = 1000;  // the UCX test looks for a worker's connection line
    o.remote_env = sanitizer_env();
    o.timeout = 60;
    return o;
  }
};

#define NEED_HOSTS()                                                                              \
  if (!binaries_built()) GTEST_SKIP() << "tessera binaries or libtessera_ssh_tasks.so not built"; \
  if (auto why = tessera_test::NetnsHosts::unavailable(); !why.empty()) GTEST_SKIP() << why

std::string worker_on(const tessera::distributed::SchedulerInfo& info, const std::string& ip) {
  for (const auto& w : info.workers)
    if (w.address.find("://" + ip + ":") != std::string::npos) return w.name;
  return {};
}

// The seed workload and a Block made on host 1 and read on host 2.
void seed_and_transfer(SSHCluster& cluster, const tessera_test::NetnsHosts& net, const std::string& scheme) {
  EXPECT_EQ(cluster.scheduler_address(), scheme + "://" + net.address(0) + ":8786");
  Client client(cluster.scheduler_address(), ClientOptions{.token = cluster.token()});
  auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 2u);
  const std::string w1 = worker_on(info, net.address(1)), w2 = worker_on(info, net.address(2));
  ASSERT_FALSE(w1.empty()) << "a worker listens on host 1's address";
  ASSERT_FALSE(w2.empty()) << "a worker listens on host 2's address";
  EXPECT_EQ(w1, net.address(1) + "-0");
  EXPECT_EQ(w2, net.address(2) + "-0");
  EXPECT_EQ(cluster.worker_kinds().at(net.address(1)), "cpu") << "no nvidia-smi on these hosts";

  // Seed 004: (x + 1)[::2, ::2].sum() over normal(10, 1), against the local executor.
  auto x = tessera::random::normal(0, 10.0, 1.0, {2000, 2000}, {500, 500});
  auto y = (x + 1)[{tessera::step(2), tessera::step(2)}].sum();
  const double local = y.compute(tessera::local_executor("sync")).item();
  const double remote = y.compute(client).item();
  EXPECT_NEAR(remote, local, 1e-9 * std::abs(local));
  EXPECT_NEAR(remote, 1000.0 * 1000.0 * 11.0, 1000.0 * 1000.0 * 0.01);

  // 8 MB made on host 1, summed on host 2: it crosses the hosts' link.
  const int n = 1 << 20;
  SubmitOptions on1, on2;
  on1.annotations = tessera::Annotations{.workers = {w1}};
  on2.annotations = tessera::Annotations{.workers = {w2}};
  Future block = client.submit_with(on1, "ssh_plugin.block", n);
  Future sum = client.submit_with(on2, "ssh_plugin.block_sum", block);
  EXPECT_DOUBLE_EQ(sum.result_as<double>(60s), double(n) * double(n - 1) / 2);
  EXPECT_TRUE(wait_until([&] {
    for (const auto& w : client.scheduler_info().workers)
      if (w.name == w2) return w.bytes_received >= std::size_t(n) * 8;
    return false;
  }, 10)) << "host 2's worker fetched the block from host 1's";
  client.close();
}

}  // namespace

TEST(SSHClusterHosts, SeedWorkloadAndTransferAcrossHostsOverTcp) {
  NEED_HOSTS();
  Hosts hosts;
  std::vector<int> host_pids;
  {
    SSHCluster cluster(hosts.options("tcp"));
    seed_and_transfer(cluster, *hosts.net, "tcp");
    // The processes run in the hosts' namespaces: the scheduler on host 0, a worker (nanny and
    // child) on each of hosts 1 and 2, beside their sshd.
    EXPECT_GE(hosts.net->pids(1).size(), 3u);
    cluster.close();
  }
  // close() stopped every remote process: only the sshd is left in each namespace.
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(wait_until([&] { return hosts.net->pids(i).size() == 1; }, 15))
        << "host " << i << " still runs " << hosts.net->pids(i).size() << " processes";
}

TEST(SSHClusterHosts, SeedWorkloadAndTransferAcrossHostsOverUcx) {
  NEED_HOSTS();
  // UCX's TCP transport over the veth links: the hosts share this machine's memory, so its
  // shared-memory transports would otherwise carry the data without crossing a link.
  struct TcpOnly {
    TcpOnly() { ::setenv("UCX_TLS", "tcp", 1); }
    ~TcpOnly() { ::unsetenv("UCX_TLS"); }
  } tcp_only;
  if (!tessera::comm::ucx_status().available) GTEST_SKIP() << "no UCX here: " << tessera::comm::ucx_status().reason;
  Hosts hosts;
  auto o = hosts.options("ucx");
  o.remote_env["UCX_TLS"] = "tcp";
  SSHCluster cluster(o);
  seed_and_transfer(cluster, *hosts.net, "ucx");
  bool over_ucx = false;
  const auto procs = cluster.processes();
  for (std::size_t i = 0; i < procs.size(); ++i)
    if (procs[i].name == hosts.net->address(2) + "-0")
      for (const auto& l : cluster.logs(i))
        if (l.find("ucx://" + hosts.net->address(1) + ":") != std::string::npos &&
            l.find("over ucx (tcp") != std::string::npos && !over_ucx) {
          over_ucx = true;
          std::cout << "[ ucx ] host 2's worker: " << l << "\n";
        }
  EXPECT_TRUE(over_ucx) << "host 2's worker logged its connection to host 1's worker over UCX's tcp transport";
  cluster.close();
}

TEST(SSHClusterHosts, AWorkerWhoseSshClientDiesStopsOnItsHost) {
  NEED_HOSTS();
  Hosts hosts;
  SSHCluster cluster(hosts.options("tcp"));
  Client client(cluster.scheduler_address(), ClientOptions{.token = cluster.token()});
  const auto procs = cluster.processes();
  int ssh_pid = 0;
  for (const auto& p : procs)
    if (p.name == hosts.net->address(1) + "-0") ssh_pid = p.ssh_pid;
  ASSERT_GT(ssh_pid, 0);
  ASSERT_GE(hosts.net->pids(1).size(), 3u) << "sshd, its session and the worker run on host 1";
  // As when the client's machine dies: the ssh client goes without a word. The session's
  // stdin closes on host 1, the wrapper sends SIGTERM, the worker leaves the scheduler cleanly.
  const auto t0 = Clock::now();
  ::kill(ssh_pid, SIGKILL);
  EXPECT_TRUE(wait_until([&] { return hosts.net->pids(1).size() == 1; }, 20))
      << "host 1 still runs " << hosts.net->pids(1).size() << " processes";
  EXPECT_TRUE(wait_until([&] { return worker_on(client.scheduler_info(), hosts.net->address(1)).empty(); }, 10));
  std::cout << "[ ssh died ] host 1 was clean " << std::chrono::duration<double>(Clock::now() - t0).count()
            << " s after its ssh client was killed\n";
  EXPECT_TRUE(wait_until([&] { return cluster.workers().size() == 1; }, 10));
  EXPECT_EQ(client.submit("ssh_plugin.slow_inc", 1, 0).result_as<int>(30s), 2) << "the other worker still works";
}

TEST(SSHClusterHosts, TesseraSshStartsTheClusterAndStopsItOnSigterm) {
  NEED_HOSTS();
  const auto program = tessera_test::build_bin_dir() / "tessera-ssh";
  if (!std::filesystem::exists(program)) GTEST_SKIP() << "tessera-ssh not built";
  Hosts hosts;
  const auto out = hosts.dir.path() / "tessera-ssh.out";
  const auto err = hosts.dir.path() / "tessera-ssh.err";
  std::vector<std::string> argv{program.string(), hosts.net->address(0), hosts.net->address(1), hosts.net->address(2),
                                "--ssh-username", "root", "--ssh-port", "22", "--ssh-private-key",
                                hosts.net->identity_file(), "--ssh-option",
                                "UserKnownHostsFile=" + (hosts.dir.path() / "known_hosts").string(), "--ssh-option",
                                "StrictHostKeyChecking=yes", "--nthreads", "1", "--memory-limit", "1GB",
                                "--scheduler-port", "8786", "--dashboard-address", "", "--worker-kind", "cpu",
                                "--preload", plugin_path().string()};
  for (const auto& [k, v] : sanitizer_env()) argv.insert(argv.end(), {"--remote-env", k + "=" + v});
  std::vector<std::string> env_strings;
  const auto extra = sanitizer_env();
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    if (!extra.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : extra) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  struct Reap {
    pid_t pid;
    ~Reap() {
      if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reap{pid};
  auto read = [](const std::filesystem::path& f) {
    std::ifstream in(f);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string expected = "tcp://" + hosts.net->address(0) + ":8786\n";
  ASSERT_TRUE(wait_until([&] { return read(out) == expected; }, 60)) << read(out) << read(err);
  EXPECT_NE(read(err).find("TESSERA_TOKEN="), std::string::npos) << read(err);
  EXPECT_GE(hosts.net->pids(2).size(), 3u);
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_TRUE(wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 40)) << read(err);
  reap.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read(err);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(wait_until([&] { return hosts.net->pids(i).size() == 1; }, 15)) << "host " << i;
}

TEST(SSHClusterHosts, TheSshClusterExampleRunsTheSeedOnTheHosts) {
  NEED_HOSTS();
  const auto program = tessera_test::build_bin_dir().parent_path() / "examples" / "ssh_cluster";
  if (!std::filesystem::exists(program)) GTEST_SKIP() << "examples/ssh_cluster not built";
  Hosts hosts;
  const std::string cmd = program.string() + " " + hosts.net->address(0) + " " + hosts.net->address(1) + " " +
                          hosts.net->address(2) + " --user root --identity " + hosts.net->identity_file() +
                          " --ssh-option UserKnownHostsFile=" + (hosts.dir.path() / "known_hosts").string() +
                          " --ssh-option StrictHostKeyChecking=yes --nthreads 1 --n 2000 --chunk 500";
  auto r = tessera_test::run_command(sanitizer_prefix() + "timeout 120 " + cmd);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("scheduler tcp://" + hosts.net->address(0) + ":8786, workers: " + hosts.net->address(1) +
                          "-0 " + hosts.net->address(2) + "-0"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(x + 1)[::2, ::2].sum() = "), std::string::npos) << r.output;
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(wait_until([&] { return hosts.net->pids(i).size() == 1; }, 15)) << "host " << i;
}

TEST(SSHClusterHosts, APartitionedWorkerIsDeclaredDeadAndItsWorkRedone) {
  NEED_HOSTS();
  Hosts hosts;
  auto o = hosts.options("tcp");
  o.scheduler.worker_ttl = 5;  // seconds without a heartbeat before a worker is removed
  SSHCluster cluster(o);
  Client client(cluster.scheduler_address(), ClientOptions{.token = cluster.token()});
  const std::string cut = worker_on(client.scheduler_info(), hosts.net->address(2));
  ASSERT_FALSE(cut.empty());
  // 12 tasks of 0.5 s on two one-thread workers, then their sum: about 3 s of work.
  std::vector<Future> parts;
  for (int i = 0; i < 12; ++i) parts.push_back(client.submit("ssh_plugin.slow_inc", i, 500));
  Future total = parts[0];
  for (int i = 1; i < 12; ++i) total = client.submit("ssh_plugin.add", total, parts[static_cast<std::size_t>(i)]);
  // Wait until host 2's worker holds results (so they must be recomputed), then cut its link.
  ASSERT_TRUE(wait_until([&] {
    for (const auto& w : client.scheduler_info().workers)
      if (w.name == cut) return w.keys >= 1;
    return false;
  }, 30));
  const auto t_cut = Clock::now();
  hosts.net->set_link(2, false);
  ASSERT_TRUE(wait_until([&] { return worker_on(client.scheduler_info(), hosts.net->address(2)).empty(); }, 60))
      << "the scheduler still lists the cut-off worker after 60 s";
  const double dead_after = std::chrono::duration<double>(Clock::now() - t_cut).count();
  std::cout << "[ partition ] the cut-off worker was removed " << dead_after << " s after its link went down"
            << " (worker_ttl 5 s)\n";
  EXPECT_LT(dead_after, 5 + 3.0) << "removed within worker_ttl plus a few ticks";
  // 1 + 2 + ... + 12.
  EXPECT_EQ(total.result_as<int>(120s), 78);
  const double total_after = std::chrono::duration<double>(Clock::now() - t_cut).count();
  std::cout << "[ partition ] the right value came back " << total_after << " s after the cut\n";
  // The ssh session to the cut host ends too (ServerAliveInterval 5 x 3), and the cluster
  // no longer counts that worker.
  EXPECT_TRUE(wait_until([&] { return cluster.workers().size() == 1; }, 40));
  client.close();
  cluster.close();
}
