// A cluster over tls:// (issue 19): the tessera-scheduler and tessera-worker binaries with
// Dask's --tls-* flags, and a LocalCluster of worker processes with Security. Certificates are
// made at run time (tests/support/tls_certs.hpp); every process started is killed and reaped.
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "../support/tls_certs.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::child_env;
using tessera_test::client_options;
using tessera_test::expect_close;
using tessera_test::seed_expr;
using tessera_test::TestPki;
using tessera_test::wait_until;

Block tls_make(int n) { return Block::from_values<double>(std::vector<double>(static_cast<std::size_t>(n), 1.5), {n}); }
double tls_sum(Block b) {
  double s = 0;
  for (double v : b.to_doubles()) s += v;
  return s;
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("tls_cluster_test.make", tls_make);
TESSERA_REGISTER_FUNCTION_AS("tls_cluster_test.sum", tls_sum);

namespace {

std::vector<std::string> tls_flags(const comm::Security& s) {
  return {"--tls-ca-file", s.tls_ca_file, "--tls-cert", s.tls_cert, "--tls-key", s.tls_key};
}

ClientOptions tls_client(const std::string& token, const comm::Security& s) {
  auto o = client_options(token);
  o.security = s;
  return o;
}

// What constructing a client throws ("(no exception)" if it connects).
std::string refusal(const std::string& address, const ClientOptions& o) {
  try {
    Client c(address, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(TlsCluster, BinariesComputeOverTlsAndRefuseStrangers) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  const auto bin = tessera_test::build_bin_dir();
  const std::string scheduler_bin = (bin / "tessera-scheduler").string(), worker_bin = (bin / "tessera-worker").string();
  if (!std::filesystem::exists(scheduler_bin) || !std::filesystem::exists(worker_bin))
    GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  TestPki pki;
  pki.make_ca("ca");
  pki.make_ca("other-ca");
  const auto sched_sec = pki.make_cert("ca", "scheduler"), worker_sec = pki.make_cert("ca", "worker"),
             client_sec = pki.make_cert("ca", "client"), stranger = pki.make_cert("other-ca", "stranger");
  const std::string sfile = pki.path("s.json"), token = "tls-binaries-token";
  Children kids;
  std::vector<std::string> sargv{scheduler_bin, "--protocol", "tls", "--port", "0", "--scheduler-file", sfile,
                                 "--token", token, "--log-level", "error", "--no-dashboard"};
  for (auto& f : tls_flags(sched_sec)) sargv.push_back(f);
  const pid_t sched = kids.spawn(sargv, child_env());
  for (const char* name : {"a", "b"}) {
    // The workers learn tls:// from the scheduler file and listen on tls:// themselves.
    std::vector<std::string> wargv{worker_bin, "--scheduler-file", sfile, "--name", name, "--nthreads", "1",
                                   "--token", token, "--memory-limit", "0", "--death-timeout", "10",
                                   "--log-level", "error", "--no-nanny"};
    for (auto& f : tls_flags(worker_sec)) wargv.push_back(f);
    kids.spawn(wargv, child_env());
  }
  auto client = Client::from_scheduler_file(sfile, tls_client(token, client_sec));
  ASSERT_TRUE(client->wait_for_workers(2, 10s));
  const std::string address = client->scheduler_info().address;
  ASSERT_EQ(address.rfind("tls://", 0), 0u) << address;
  for (const auto& w : client->scheduler_info().workers) {
    EXPECT_EQ(w.address.rfind("tls://", 0), 0u) << w.address;
    EXPECT_EQ(w.extra.at("transports"), "tls");
    EXPECT_EQ(w.extra.at("comm"), "tls");
  }

  // The seed workload (64 chunks on two workers: partial sums move between them).
  expect_close(seed_expr(800, 100).compute(*client).item(), seed_expr(800, 100).compute(local_executor("sync")).item());
  EXPECT_TRUE(wait_until(
      [&] {
        std::size_t received = 0;
        for (const auto& w : client->scheduler_info().workers) received += w.bytes_received;
        return received > 0;
      },
      5))
      << "no worker fetched from the other";

  // Strangers are refused with a clear error, and the scheduler goes on.
  const auto no_cert = refusal(address, tls_client(token, {client_sec.tls_ca_file, "", ""}));
  EXPECT_NE(no_cert.find("TLS"), std::string::npos) << no_cert;
  const auto other_ca = refusal(address, tls_client(token, stranger));
  EXPECT_NE(other_ca.find("certificate verify failed"), std::string::npos) << other_ca;
  const auto plain = refusal("tcp://" + address.substr(6), client_options(token));
  EXPECT_NE(plain.find("tls://"), std::string::npos) << plain;
  const auto no_files = refusal(address, client_options(token));
  EXPECT_NE(no_files.find("CA file"), std::string::npos) << no_files;
  EXPECT_TRUE(kids.running(sched));
  auto again = Client(address, tls_client(token, client_sec));
  expect_close(seed_expr(400, 100).compute(again).item(), seed_expr(400, 100).compute(local_executor("sync")).item());
  again.close();
  client->close();
}

TEST(TlsCluster, FlagsAreCheckedAtStart) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  const auto scheduler_bin = (tessera_test::build_bin_dir() / "tessera-scheduler").string();
  if (!std::filesystem::exists(scheduler_bin)) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  TestPki pki;
  pki.make_ca("ca");
  const auto a = pki.make_cert("ca", "a"), b = pki.make_cert("ca", "b");
  const std::string log = pki.path("log.txt");
  auto run = [&](const std::vector<std::string>& extra) {
    Children kids;
    std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>" + log, scheduler_bin, "--protocol", "tls",
                                  "--port", "0", "--no-dashboard"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const pid_t pid = kids.spawn(argv, child_env());
    auto st = kids.wait_exit(pid, 10);
    EXPECT_TRUE(st.has_value() && WIFEXITED(*st) && WEXITSTATUS(*st) != 0) << "the scheduler must refuse to start";
    return tessera_test::read_text(log);
  };
  const auto missing = run({"--tls-ca-file", a.tls_ca_file, "--tls-cert", pki.path("nope.pem"), "--tls-key", a.tls_key});
  EXPECT_NE(missing.find("nope.pem"), std::string::npos) << missing;
  const auto mismatch = run({"--tls-ca-file", a.tls_ca_file, "--tls-cert", a.tls_cert, "--tls-key", b.tls_key});
  EXPECT_NE(mismatch.find("does not belong"), std::string::npos) << mismatch;
  const auto none = run({});
  EXPECT_NE(none.find("--tls-ca-file"), std::string::npos) << none;
}

TEST(TlsCluster, LocalClusterProcessesTransferOverTls) {
  if (!TestPki::available()) GTEST_SKIP() << "the openssl command is not installed";
  TestPki pki;
  pki.make_ca("ca");
  LocalClusterOptions o = tessera_test::processes_over_tcp();
  o.protocol = "tls";
  o.security = pki.make_cert("ca", "member");
  std::string address;
  {
    LocalCluster cluster(o);
    address = cluster.scheduler_address();
    EXPECT_EQ(address.rfind("tls://", 0), 0u) << address;
    Client client(address, tls_client(cluster.token(), o.security));
    ASSERT_TRUE(client.wait_for_workers(2, 10s));
    // A block made on worker-0 and summed on worker-1: one transfer between them, over TLS.
    SubmitOptions on0, on1;
    on0.annotations = Annotations{.workers = {"worker-0"}};
    on1.annotations = Annotations{.workers = {"worker-1"}};
    auto block = client.submit_with(on0, "tls_cluster_test.make", 100000);
    auto sum = client.submit_with(on1, "tls_cluster_test.sum", block);
    EXPECT_DOUBLE_EQ(sum.result_as<double>(), 150000.0);
    EXPECT_TRUE(wait_until(
        [&] {
          for (const auto& w : client.scheduler_info().workers)
            if (w.name == "worker-1" && w.bytes_received >= 800000) return true;
          return false;
        },
        5));
    client.close();
  }
  tessera_test::expect_no_workers_left(address);
}

}  // namespace
