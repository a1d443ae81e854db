// Issue 29: worker flag values that cannot work are refused at start, with exit status 105
// (CLI11's ValidationError, as every other bad flag value: docs/security.md) and a message that
// names the flag, before the worker waits for a scheduler or starts a thread. Real binaries.
#include <sys/wait.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "run_binary.hpp"
#include "distributed/data_store_limits.hpp"
#include "distributed/options_check.hpp"
#include "tessera/distributed/worker.hpp"

namespace {

using tessera_test::child_env;
using tessera_test::Children;
using tessera_test::read_text;

constexpr int kBadFlagExit = 105;  // CLI::ExitCodes::ValidationError

struct Binaries {
  std::string worker, cuda_worker;
  bool found = false;
  Binaries() {
    auto bin = tessera_test::build_bin_dir();
    worker = (bin / "tessera-worker").string();
    cuda_worker = (bin / "tessera-cuda-worker").string();
    found = std::filesystem::exists(worker) && std::filesystem::exists(cuda_worker);
  }
};

using Exit = tessera_test::BinaryExit;
using tessera_test::run_binary;

std::string describe(const Exit& e) {
  return e.status == -1 ? std::string("still running") : tessera_test::describe_status(e.status);
}

struct Case {
  std::vector<std::string> args;
  std::string expect;  // in the log
};

// Each case against both worker binaries: the worker would wait --death-timeout (60 s) for a
// scheduler file that never appears, so a refusal must come long before.
void expect_refused(const Binaries& bins, const std::vector<Case>& cases, bool cuda_worker_too = true) {
  tessera_test::TempDir dir;
  const std::string never = (dir.path() / "never.json").string();
  std::vector<std::string> binaries{bins.worker};
  if (cuda_worker_too) binaries.push_back(bins.cuda_worker);
  for (const std::string& binary : binaries) {
    for (const auto& c : cases) {
      std::vector<std::string> args = c.args;
      args.insert(args.end(), {"--scheduler-file", never});
      Exit e = run_binary(binary, args, 8);
      std::string what = std::filesystem::path(binary).filename().string();
      for (const auto& a : c.args) what += " " + a;
      EXPECT_TRUE(e.status != -1 && WIFEXITED(e.status) && WEXITSTATUS(e.status) == kBadFlagExit)
          << what << ": " << describe(e) << ", expected exit " << kBadFlagExit << "\n" << e.log;
      EXPECT_LT(e.seconds, 5) << what << " did not stop before starting";
      EXPECT_NE(e.log.find(c.expect), std::string::npos) << what << ": expected '" << c.expect << "' in\n" << e.log;
    }
  }
}

}  // namespace

TEST(WorkerFlags, TooManyThreadsAndBadResourcesOrDeviceLimitsExit105) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-worker / tessera-cuda-worker not built next to the tests";
  expect_refused(bins, {
                           {{"--nthreads", "100000"}, "--nthreads: at most 4096"},
                           {{"--resources", "GPU=abc"}, "--resources: invalid resources \"GPU=abc\""},
                           {{"--resources", "GPU"}, "--resources: invalid resources \"GPU\""},
                           {{"--device-memory-limit", "abc"}, "--device-memory-limit: invalid device memory limit"},
                       });
}

TEST(WorkerFlags, WorkerOptionsRefuseMoreThreadsThanTheBound) {
  tessera::distributed::WorkerOptions wo;
  wo.scheduler_address = "tcp://127.0.0.1:1";
  wo.nthreads = tessera::distributed::kMaxWorkerThreads + 1;
  try {
    tessera::distributed::Worker w(wo);
    ADD_FAILURE() << "a worker with " << wo.nthreads << " threads started";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nthreads (--nthreads) must be at most 4096"), std::string::npos) << e.what();
  }
}

// ---- memory limits a worker cannot live under (issue 29, item 8) ------------------------------------

TEST(WorkerFlags, MemoryLimitsBelowWhatAWorkerNeedsOrNotBytesExit105) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-worker / tessera-cuda-worker not built next to the tests";
  std::vector<Case> cases = {
      {{"--memory-limit", "10MB"}, "--memory-limit: memory limit \"10MB\" is 10000000 bytes, below the 128 MiB"},
      {{"--memory-limit", "1.5"}, "--memory-limit: invalid memory limit \"1.5\": a number of bytes must be whole"},
      {{"--memory-limit", "1000"}, "below the 128 MiB a worker needs"},
  };
  expect_refused(bins, cases);
  // "auto" is this machine's memory shared by the workers: too many of them leave each too little
  // (refused before any is started).
  if (tessera::distributed::system_memory() / 4096 < tessera::distributed::kMinWorkerMemoryLimit)
    expect_refused(bins, {{{"--memory-limit", "auto", "--nworkers", "4096"}, "for each of 4096 workers"}},
                   /*cuda_worker_too=*/false);
}

TEST(WorkerFlags, DasksFractionOfMemoryStaysAFraction) {
  const std::size_t total = std::size_t{16} << 30;
  EXPECT_EQ(tessera::distributed::parse_memory_limit("0.5", total), total / 2);
  EXPECT_EQ(tessera::distributed::parse_memory_limit("1", total), total);
  EXPECT_EQ(tessera::distributed::parse_memory_limit("1.5GB", total), 1'500'000'000u);
  EXPECT_EQ(tessera::distributed::parse_memory_limit("2e9", total), 2'000'000'000u);
  EXPECT_THROW(tessera::distributed::parse_memory_limit("1.5", total), tessera::Error);
  EXPECT_THROW(tessera::distributed::parse_memory_limit("2.5B", total), tessera::Error);
}

TEST(WorkerFlags, AWorkerItsNannyWouldKillAtRestRefusesToStartAndIsNotRestarted) {
  // A limit above the floor whose terminate threshold an idle worker already passes (here by a
  // tiny --memory-terminate-fraction; in life, a build whose libraries hold more than the
  // floor): the worker says so before it registers, so its nanny does not restart it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizer build: the worker leaves the check out (shadow memory counts in its resident size)";
#endif
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string(), token = "rest-token";
  Children kids;
  tessera_test::spawn_scheduler(kids, (tessera_test::build_bin_dir() / "tessera-scheduler").string(), sfile, token);
  ASSERT_TRUE(tessera_test::wait_until([&] { return std::filesystem::exists(sfile); }, 10));
  Exit e = run_binary(bins.worker,
                      {"--scheduler-file", sfile, "--token", token, "--nthreads", "1", "--memory-limit", "1GB",
                       "--memory-terminate-fraction", "0.01", "--log-level", "info"},
                      20);
  EXPECT_TRUE(e.status != -1 && WIFEXITED(e.status) && WEXITSTATUS(e.status) == 1) << describe(e) << "\n" << e.log;
  EXPECT_LT(e.seconds, 10) << e.log;
  EXPECT_NE(e.log.find("at rest (libraries loaded, no task run) and its nanny kills it past 10 MB"), std::string::npos)
      << e.log;
  EXPECT_NE(e.log.find("before it registered; not restarted"), std::string::npos) << e.log;
  EXPECT_EQ(e.log.find("restarting it in"), std::string::npos) << e.log;
}
