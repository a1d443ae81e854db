// docs/security.md, "TLS (tls://)" (lines 141-147): tessera-worker and tessera-cuda-worker check
// their TLS files at start and stop with the file and the reason (as tessera-scheduler does,
// TlsCluster.FlagsAreCheckedAtStart), so do an in-process Scheduler and Worker, and a worker given
// a tls:// scheduler on its command line listens on tls:// itself. Certificates are made at run
// time (tests/support/tls_certs.hpp); real processes and sockets.
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "../support/tls_certs.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::read_text;
using tessera_test::ScopedEnv;
using tessera_test::TestPki;


// No TESSERA_TLS_* from the environment of whoever runs the tests: the flags are all there is.
struct NoTlsEnv {
  ScopedEnv ca{"TESSERA_TLS_CA_FILE", std::nullopt}, cert{"TESSERA_TLS_CERT", std::nullopt},
      key{"TESSERA_TLS_KEY", std::nullopt};
};

std::vector<std::string> tls_args(const std::string& ca, const std::string& cert, const std::string& key) {
  return {"--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key};
}

struct TlsRun {
  int status = -1;  // -1: still running at the timeout (then killed)
  std::string log;  // stderr
  double seconds = 0;
};

TlsRun run_tls_binary(const std::string& binary, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env, double timeout_s = 8) {
  tessera_test::TempDir dir;
  const std::string log = (dir.path() / "stderr").string();
  Children kids;
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log + "'", binary};
  cmd.insert(cmd.end(), args.begin(), args.end());
  const auto start = tessera_test::Clock::now();
  const pid_t pid = kids.spawn(cmd, env);
  TlsRun r;
  if (auto st = kids.wait_exit(pid, timeout_s)) r.status = *st;
  r.seconds = tessera_test::seconds_since(start);
  r.log = read_text(log);
  return r;
}

// What a handshake with `co` to `address` throws ("" if it passes).
std::string tls_handshake_error(const std::string& address, comm::CommOptions co) {
  co.connect_timeout = 3000ms;
  co.handshake_timeout = 3000ms;
  try {
    comm::connect(address, co)->close();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// U47 (lines 146-147): a TLS file that cannot be read, a key that is not the certificate's, a
// CA file that holds no certificate, or no CA file at all stop tessera-worker and
// tessera-cuda-worker at once with exit 1, the file and the reason, before they dial anything
// (a mistake found at the first connection would look like a network fault). The worker does so
// also when tls:// comes from --protocol and its scheduler file has not appeared yet.
TEST(TlsBinaries, WorkerBinariesRefuseBadTlsFilesAtStartWithTheFileAndTheReason) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  NoTlsEnv no_env;
  TestPki pki;
  pki.make_ca("ca");
  const auto a = pki.make_cert("ca", "a"), b = pki.make_cert("ca", "b");
  const std::string nope = pki.path("nope.pem"), garbage = pki.path("garbage.pem");
  { std::ofstream(garbage) << "not a certificate\n"; }
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expect;  // each in the log
  };
  const std::string sched = "tls://127.0.0.1:1";  // nothing listens there: the check comes first
  const std::vector<Case> cases = {
      {{sched, "--tls-ca-file", a.tls_ca_file, "--tls-cert", nope, "--tls-key", a.tls_key},
       {"TLS certificate '" + nope + "' cannot be read"}},
      {{sched, "--tls-ca-file", a.tls_ca_file, "--tls-cert", a.tls_cert, "--tls-key", b.tls_key},
       {"TLS key '" + b.tls_key + "' does not belong to the certificate '" + a.tls_cert + "'"}},
      {{sched, "--tls-ca-file", garbage, "--tls-cert", a.tls_cert, "--tls-key", a.tls_key},
       {"TLS CA file '" + garbage + "'", "holds no usable certificate"}},
      {{sched}, {"tls:// needs a CA file (--tls-ca-file"}},
  };
  auto env = tessera_test::child_env();
  env["CUDA_VISIBLE_DEVICES"] = "0";  // tessera-cuda-worker needs no GPU for this
  for (const std::string& binary : {bins.worker, bins.cuda_worker}) {
    const std::string name = std::filesystem::path(binary).filename().string();
    for (const auto& c : cases) {
      const TlsRun r = run_tls_binary(binary, c.args, env);
      std::string what = name;
      for (const auto& x : c.args) what += " " + x;
      EXPECT_TRUE(r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1)
          << what << ": " << (r.status == -1 ? "still running" : tessera_test::describe_status(r.status)) << "\n"
          << r.log;
      EXPECT_LT(r.seconds, 5) << what;
      EXPECT_NE(r.log.find(name + ": "), std::string::npos) << what << ": the program is not named\n" << r.log;
      for (const auto& e : c.expect) EXPECT_NE(r.log.find(e), std::string::npos) << what << ": expected '" << e << "' in\n" << r.log;
    }
  }
  // --protocol tls with a scheduler file that never comes: checked before the worker waits for it.
  std::vector<std::string> args{"--protocol", "tls", "--scheduler-file", pki.path("never.json")};
  for (const auto& x : tls_args(a.tls_ca_file, a.tls_cert, b.tls_key)) args.push_back(x);
  const TlsRun r = run_tls_binary(bins.worker, args, env);
  EXPECT_TRUE(r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.log;
  EXPECT_LT(r.seconds, 5) << "it waited for the scheduler file first";
  EXPECT_NE(r.log.find("does not belong"), std::string::npos) << r.log;
}

// U47 (lines 143-147): a program that builds a Scheduler or Worker itself gets the same check at
// construction: tessera::Error naming who, tls://, the file and the reason.
TEST(TlsBinaries, InProcessSchedulerAndWorkerRefuseBadTlsFilesAtStart) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  NoTlsEnv no_env;
  TestPki pki;
  pki.make_ca("ca");
  const auto a = pki.make_cert("ca", "a"), b = pki.make_cert("ca", "b");
  const comm::Security missing{a.tls_ca_file, pki.path("nope.pem"), a.tls_key};
  const comm::Security mismatched{a.tls_ca_file, a.tls_cert, b.tls_key};
  SchedulerOptions so;
  so.address = "tls://127.0.0.1:0";
  for (const auto& [bad, reason] : {std::pair{missing, std::string("cannot be read")},
                                    std::pair{mismatched, std::string("does not belong")}}) {
    so.security = bad;
    try {
      Scheduler s(so);
      ADD_FAILURE() << "a scheduler on tls:// started with bad files";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("scheduler on tls://: ", 0), 0u) << what;
      EXPECT_NE(what.find(reason), std::string::npos) << what;
    }
    WorkerOptions wo;
    wo.scheduler_address = "tls://127.0.0.1:1";  // never dialled: the check comes first
    wo.security = bad;
    wo.death_timeout = 0;
    const auto start = tessera_test::Clock::now();
    try {
      Worker w(wo);
      ADD_FAILURE() << "a worker on tls:// started with bad files";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("worker on tls://: ", 0), 0u) << what;
      EXPECT_NE(what.find(reason), std::string::npos) << what;
    }
    EXPECT_LT(tessera_test::seconds_since(start), 2);
  }
  so.security = a;
  EXPECT_NO_THROW(Scheduler{so}) << "good files are accepted";
}

// U48 (lines 141-142): a worker given a tls:// scheduler on its command line (not through the
// scheduler file, which TlsCluster.BinariesComputeOverTlsAndRefuseStrangers covers) listens on
// tls:// itself, so that transfers between workers are encrypted too: the address it registers
// is tls://, a TLS handshake with it passes, and a plain tcp:// one fails.
TEST(TlsBinaries, AWorkerGivenATlsSchedulerOnTheCommandLineListensOnTls) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  tessera_test::ServerBinaries bins;
  TESSERA_NEED_SERVER_BINARIES(bins);
  NoTlsEnv no_env;
  TestPki pki;
  pki.make_ca("ca");
  const auto sched_sec = pki.make_cert("ca", "scheduler"), worker_sec = pki.make_cert("ca", "worker"),
             client_sec = pki.make_cert("ca", "client");
  const std::string token = "tls-command-line-token";
  SchedulerOptions so;
  so.address = "tls://127.0.0.1:0";
  so.security = sched_sec;
  so.token = token;
  Scheduler sched(so);
  ASSERT_EQ(sched.address().rfind("tls://127.0.0.1:", 0), 0u) << sched.address();

  const auto log = pki.dir() / "worker.log";
  Children kids;
  std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log.string() + "'", bins.worker,
                                sched.address(), "--no-nanny", "--nthreads", "1", "--token", token, "--memory-limit",
                                "0", "--death-timeout", "10", "--log-level", "warning"};
  for (const auto& x : tls_args(worker_sec.tls_ca_file, worker_sec.tls_cert, worker_sec.tls_key)) argv.push_back(x);
  kids.spawn(argv, tessera_test::child_env());
  ClientOptions co = tessera_test::client_options(token, 10);
  co.security = client_sec;
  Client client(sched.address(), co);
  ASSERT_TRUE(client.wait_for_workers(1, 10s)) << read_text(log);
  const auto info = client.scheduler_info();
  ASSERT_EQ(info.workers.size(), 1u);
  const std::string waddr = info.workers[0].address;
  ASSERT_EQ(waddr.rfind("tls://", 0), 0u) << waddr;
  EXPECT_EQ(info.workers[0].extra.at("comm"), "tls");

  comm::CommOptions over_tls;
  over_tls.token = token;
  over_tls.security = client_sec;
  EXPECT_EQ(tls_handshake_error(waddr, over_tls), "") << "the worker's listener does not speak TLS";
  comm::CommOptions over_tcp;
  over_tcp.token = token;
  EXPECT_NE(tls_handshake_error("tcp://" + waddr.substr(6), over_tcp), "")
      << "the worker's listener accepted a plain tcp:// handshake";
  client.close();
}

// U48 (lines 141-145), in process: a Worker whose scheduler_address is tls:// and whose
// listen_address is the default tcp:// one listens on tls:// (options_check.cpp rewrites it;
// worker_options.hpp still says such a worker "is refused", which is not what the code does).
TEST(TlsBinaries, AnInProcessWorkerWithATlsSchedulerListensOnTlsByDefault) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  NoTlsEnv no_env;
  TestPki pki;
  pki.make_ca("ca");
  const auto sched_sec = pki.make_cert("ca", "scheduler"), worker_sec = pki.make_cert("ca", "worker");
  SchedulerOptions so;
  so.address = "tls://127.0.0.1:0";
  so.security = sched_sec;
  so.token = "tls-in-process-token";
  Scheduler sched(so);
  WorkerOptions wo;
  ASSERT_EQ(wo.listen_address.rfind("tcp://", 0), 0u) << "the default listen address changed: " << wo.listen_address;
  wo.scheduler_address = sched.address();
  wo.security = worker_sec;
  wo.token = so.token;
  wo.nthreads = 1;
  wo.heartbeat_interval = 0.1;
  wo.death_timeout = 5;
  wo.gpu = GpuPolicy::Off;
  Worker w(wo);
  EXPECT_EQ(w.address().rfind("tls://127.0.0.1:", 0), 0u) << w.address();
  comm::CommOptions plain;
  plain.token = so.token;
  EXPECT_NE(tls_handshake_error("tcp://" + w.address().substr(6), plain), "");
}
