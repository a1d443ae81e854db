// SLURMCluster on a real single-node SLURM (munged, slurmctld and slurmd started by
// slurm_single_node.sh in a scratch folder, stopped by their pid files after every test):
// worker jobs join and compute, scale(0) cancels them, adapt() follows queued work up and back
// down, and examples/slurm/tessera.sbatch runs unchanged. Skips with the reason where SLURM
// cannot start (not installed, not root).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "tessera/distributed/slurm_cluster.hpp"
#include "tessera/tessera.hpp"

#ifndef TESSERA_SOURCE_DIR
#error "tests/CMakeLists.txt defines TESSERA_SOURCE_DIR for this file"
#endif

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::wait_until;
namespace fs = std::filesystem;

int st_sleep(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("slurm_test.sleep", st_sleep);

namespace {

struct Shell {
  int rc = -1;
  std::string output;
};

// Runs a bash command, its stderr with its stdout.
Shell sh(const std::string& command) {
  Shell r;
  FILE* p = ::popen(("bash -c " + std::string("'") + command + "' 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

const std::string kScript = std::string(TESSERA_SOURCE_DIR) + "/tests/distributed/slurm_single_node.sh";

bool ended(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

std::string read_logs(const fs::path& dir) {
  std::string out;
  std::error_code ec;
  for (auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() == ".sh" || e.path().filename().string().starts_with("token"))
      continue;
    std::ifstream in(e.path());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    if (text.size() > 3000) text = text.substr(text.size() - 3000);
    out += "--- " + e.path().string() + "\n" + text + "\n";
  }
  return out;
}

// A single-node SLURM for one test; stopped (daemons by pid file, folder removed) in TearDown,
// whatever the test did.
class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-slurm-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Shell r = sh(kScript + " start " + dir_.string());
    if (r.rc == 77) GTEST_SKIP() << "SLURM cannot run here: " << r.output;
    ASSERT_EQ(r.rc, 0) << r.output;
    started_ = true;
    ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
#if defined(__SANITIZE_ADDRESS__)
    // sbatch passes this environment on to the jobs: this binary runs there as a worker or a
    // client, and LeakSanitizer's report on OpenSSL at exit would fail the job (as
    // Children::sanitizer_env does for the processes the other tests start).
    for (const auto& [k, v] : tessera_test::Children::sanitizer_env({})) ::setenv(k.c_str(), v.c_str(), 1);
#endif
  }
  void TearDown() override {
    if (!dir_.empty()) {
      Shell r = sh(kScript + " stop " + dir_.string());
      EXPECT_EQ(r.rc, 0) << r.output;
      EXPECT_FALSE(fs::exists(dir_));
    }
    ::unsetenv("SLURM_CONF");
  }
  std::string daemon_logs() const { return started_ ? read_logs(dir_ / "log") : std::string(); }
  SLURMClusterOptions options() const {
    SLURMClusterOptions o;
    o.host = "127.0.0.1";
    o.cores = 1;
    o.memory = "512MiB";
    o.walltime = "00:10:00";
    o.partition = "debug";
    o.log_directory = (dir_ / "jobs").string();
    o.job_extra_directives = {"--comment=tessera-test"};
    o.death_timeout = 10;
    return o;
  }
  std::vector<int> worker_pids(Client& client) {
    std::vector<int> pids;
    for (const auto& w : client.scheduler_info().workers) pids.push_back(w.pid);
    return pids;
  }
  fs::path dir_;
  bool started_ = false;
};

TEST_F(Slurm, JobsJoinComputeAndScaleToZeroCancelsThem) {
  SLURMCluster cluster(options());
  const std::string script = cluster.job_script();
  for (const char* want : {"#SBATCH --job-name=tessera-worker", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=512M",
                           "#SBATCH --time=00:10:00", "#SBATCH --partition=debug", "#SBATCH --comment=tessera-test",
                           "tessera-worker'", "'--death-timeout' '10'", "'--memory-limit' '512MiB'"})
    EXPECT_NE(script.find(want), std::string::npos) << want << " not in\n" << script;
  EXPECT_EQ(script.find(cluster.token()), std::string::npos) << "the token is in the job script";

  cluster.scale(2);
  EXPECT_EQ(cluster.jobs().size(), 2u);
  ClientOptions co;
  co.token = cluster.token();
  Client client(cluster.scheduler_address(), co);
  ASSERT_TRUE(client.wait_for_workers(2, 60s)) << read_logs(dir_ / "jobs") << daemon_logs();
  auto jobs = cluster.jobs();
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& j : jobs) EXPECT_EQ(j.state, "RUNNING");
  auto names = cluster.workers();
  std::sort(names.begin(), names.end());
  std::vector<std::string> registered;
  for (const auto& w : client.scheduler_info().workers) registered.push_back(w.name);
  std::sort(registered.begin(), registered.end());
  EXPECT_EQ(registered, names);

  auto expr = tessera_test::seed_expr(400, 100);
  double want = expr.compute().item();
  EXPECT_NEAR(expr.compute(client).item(), want, 1e-6 * std::abs(want));

  const auto pids = worker_pids(client);
  ASSERT_EQ(pids.size(), 2u);
  cluster.scale(0);
  EXPECT_TRUE(wait_until([&] { return cluster.jobs().empty(); }, 30));
  EXPECT_TRUE(wait_until([&] { return sh("squeue --noheader").output.empty(); }, 30)) << sh("squeue").output;
  for (int pid : pids) EXPECT_TRUE(wait_until([&] { return ended(pid); }, 20)) << "worker " << pid << " still runs";
  EXPECT_TRUE(wait_until([&] { return client.scheduler_info().workers.empty(); }, 20));
}

TEST_F(Slurm, AdaptScalesUpOnQueuedWorkAndBackDown) {
  SLURMClusterOptions o = options();
  // This test binary as the worker program: it registers slurm_test.sleep.
  auto cmd = default_worker_command();
  o.worker_command.clear();
  for (const auto& w : cmd) o.worker_command += (o.worker_command.empty() ? "" : " ") + w;
  SLURMCluster cluster(o);
  ClientOptions co;
  co.token = cluster.token();
  Client client(cluster.scheduler_address(), co);
  cluster.adapt(0, 2, 300ms);
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(cluster.jobs().empty()) << "jobs submitted with no work";

  // 40 tasks of 500 ms: 20 s of work, more than two workers finish in 5 s (the target stays
  // at 2 until less than 5 s of work is left).
  std::vector<Future> fs = client.map("slurm_test.sleep", std::vector<int>(40, 500));
  EXPECT_TRUE(wait_until([&] { return cluster.jobs().size() == 2; }, 20)) << cluster.jobs().size() << " jobs";
  EXPECT_TRUE(client.wait_for_workers(2, 60s)) << read_logs(dir_ / "jobs") << daemon_logs();
  for (auto& f : fs) ASSERT_TRUE(f.wait(60s)) << read_logs(dir_ / "jobs");
  for (auto& f : fs) EXPECT_EQ(f.result_as<int>(), 500);
  const auto pids = worker_pids(client);
  fs.clear();  // idle, nothing held: the target falls to 0 and adapt retires and cancels
  EXPECT_TRUE(wait_until([&] { return cluster.jobs().empty(); }, 30)) << cluster.jobs().size() << " jobs left";
  EXPECT_TRUE(wait_until([&] { return client.scheduler_info().workers.empty(); }, 20));
  for (int pid : pids) EXPECT_TRUE(wait_until([&] { return ended(pid); }, 20)) << "worker " << pid << " still runs";
  cluster.stop_adapt();
}

// The job script of examples/slurm, unchanged, with this binary's SlurmJobClient test as the
// client program (--nodes and --cpus-per-task on the command line: this cluster has one node of
// two CPUs).
// sbatch --wait under `timeout`: a job that hangs fails the test in 3 minutes instead of
// holding it for its time limit (TearDown cancels it).
TEST_F(Slurm, ExampleJobScriptRuns) {
  const fs::path bin = tessera_test::build_bin_dir();
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const fs::path out = dir_ / "example";
  fs::create_directories(out);
  Shell r = sh("cd " + out.string() + " && TESSERA_BIN=" + bin.string() +
               " TESSERA_SCHEDULER_HOST=127.0.0.1 TESSERA_WORKER_TIMEOUT=60 timeout 180 sbatch --wait --nodes=1 --cpus-per-task=2 "
               "--time=00:05:00 --output=" + (out / "job.out").string() + " " + TESSERA_SOURCE_DIR +
               "/examples/slurm/tessera.sbatch " + self + " --gtest_filter=SlurmJobClient.*");
  std::string log = read_logs(out);
  EXPECT_EQ(r.rc, 0) << r.output << log << daemon_logs();
  EXPECT_NE(log.find("1 workers registered"), std::string::npos) << log;
  EXPECT_NE(log.find("[  PASSED  ] 1 test"), std::string::npos) << log;
  EXPECT_NE(log.find("cluster stopped"), std::string::npos) << log;
  EXPECT_TRUE(wait_until([&] { return sh("squeue --noheader").output.empty(); }, 30)) << sh("squeue").output;
}

// Without SLURM: the job script of a GPU job, sizes for --mem, and a missing sbatch.
TEST(SLURMClusterScript, GpuJobsRunTheCudaWorkerWithTheirShareOfTheCores) {
  char tmpl[] = "/tmp/tessera-slurm-script-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  {
    SLURMClusterOptions o;
    o.host = "127.0.0.1";
    o.cores = 8;
    o.gpus = 4;
    o.memory = "64GB";
    o.account = "proj";
    o.job_name = "gpu-job";
    o.job_script_prologue = {"module load cuda"};
    o.worker_extra_args = {"--preload", "/shared/lib with space/libtasks.so"};
    o.log_directory = (dir / "logs").string();
    o.sbatch = (dir / "no-such-sbatch").string();
    SLURMCluster cluster(o);
    const std::string s = cluster.job_script();
    for (const char* want : {"#SBATCH --gres=gpu:4", "#SBATCH --cpus-per-task=8", "#SBATCH --mem=61036M",
                             "#SBATCH --account=proj", "#SBATCH --job-name=gpu-job", "module load cuda",
                             "tessera-cuda-worker'", "'--nthreads' '2'", "'--memory-limit' '64GB'",
                             "\"gpu-job-${SLURM_JOB_ID}\"", "'/shared/lib with space/libtasks.so'"})
      EXPECT_NE(s.find(want), std::string::npos) << want << " not in\n" << s;
    EXPECT_EQ(s.find("--partition"), std::string::npos);
    EXPECT_EQ(cluster.workers_per_job(), 4u);
    // The token file: only its owner reads it.
    bool found = false;
    for (auto& e : fs::directory_iterator(dir / "logs"))
      if (e.path().filename().string().starts_with("token")) {
        found = true;
        EXPECT_EQ(fs::status(e.path()).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
      }
    EXPECT_TRUE(found);
    try {
      cluster.scale(1);
      ADD_FAILURE() << "scale() with no sbatch did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no-such-sbatch"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(cluster.workers().empty());
  }
  EXPECT_EQ(slurm_memory("16GB"), "15259M");
  EXPECT_EQ(slurm_memory("512MiB"), "512M");
  EXPECT_EQ(slurm_memory("2GiB"), "2048M");
  EXPECT_THROW(slurm_memory("0.5"), Error);
  EXPECT_THROW(slurm_memory("lots"), Error);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// The client program of ExampleJobScriptRuns: runs inside the job (the script sets these
// variables), skips anywhere else.
TEST(SlurmJobClient, ComputesOnTheJobsCluster) {
  const char* file = std::getenv("TESSERA_SCHEDULER_FILE");
  const char* n = std::getenv("TESSERA_N_WORKERS");
  if (!file || !n) GTEST_SKIP() << "runs inside examples/slurm/tessera.sbatch (Slurm.ExampleJobScriptRuns)";
  ClientOptions co;
  if (const char* t = std::getenv("TESSERA_TOKEN")) co.token = t;
  auto client = Client::from_scheduler_file(file, co);
  ASSERT_TRUE(client->wait_for_workers(static_cast<std::size_t>(std::atoi(n)), 60s));
  auto expr = tessera_test::seed_expr(400, 100);
  double want = expr.compute().item();
  EXPECT_NEAR(expr.compute(*client).item(), want, 1e-6 * std::abs(want));
}

}  // namespace
