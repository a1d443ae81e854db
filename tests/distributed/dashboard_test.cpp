// The HTTP side of the dashboards (docs/dashboard.md): the Beast server on its own (idle and
// garbage clients, ports in use), the Prometheus text and JSON renderings, and a scheduler with
// two worker processes (the tessera-scheduler and tessera-worker binaries) read over real
// sockets while they hold a computation's results.
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster_fixture.hpp"
#include "http_client.hpp"
#include "distributed/dashboard.hpp"
#include "distributed/http_server.hpp"
#include "distributed/metrics.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::child_env;
using tessera_test::client_options;
using tessera_test::port_of;
using tessera_test::RawSocket;
using tessera_test::wait_until;

using tessera_test::http_exchange;
using tessera_test::http_get;
using tessera_test::parse_reply;
using tessera_test::read_until_closed;
using tessera_test::Reply;

// ---- Prometheus' text format, checked line by line ---------------------------------------------------

// Each sample as "name{labels}" -> value; throws on any line that is not a comment, a HELP or
// TYPE line, or a well-formed sample, and on a sample whose family has no TYPE line before it.
std::map<std::string, double> parse_prometheus(const std::string& text) {
  static const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? (\S+)$)");
  static const std::regex type(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  std::map<std::string, double> out;
  std::set<std::string> typed;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, type)) {
      typed.insert(m[1]);
      continue;
    }
    if (line[0] == '#') throw std::runtime_error("unknown comment line: " + line);
    if (!std::regex_match(line, m, sample)) throw std::runtime_error("not a sample line: " + line);
    if (!typed.count(m[1])) throw std::runtime_error("sample before its TYPE line: " + line);
    const std::string value = m[4];
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size()) throw std::runtime_error("bad value: " + line);
    auto space = line.rfind(' ');
    if (!out.emplace(line.substr(0, space), v).second) throw std::runtime_error("duplicate series: " + line);
  }
  return out;
}

double sample(const std::map<std::string, double>& m, const std::string& series) {
  auto it = m.find(series);
  if (it == m.end()) throw std::runtime_error("no series " + series);
  return it->second;
}

// ---- the HTTP server alone ------------------------------------------------------------------------------

HttpServerOptions local_server(double idle_timeout = 10) {
  HttpServerOptions o;
  o.address = "127.0.0.1:0";
  o.idle_timeout = idle_timeout;
  o.name = "test server";
  return o;
}

HttpResponse echo_path(const HttpRequest& r) {
  if (r.path == "/boom") throw std::runtime_error("the handler failed");
  HttpResponse res;
  res.body = r.method + " " + r.path;
  return res;
}

TEST(HttpAddress, ParsesDaskForms) {
  auto ep = parse_http_address(":8787", "10.1.2.3");
  EXPECT_EQ(ep.host, "10.1.2.3");
  EXPECT_EQ(ep.port, 8787);
  ep = parse_http_address("0.0.0.0:0", "127.0.0.1");
  EXPECT_EQ(ep.host, "0.0.0.0");
  EXPECT_EQ(ep.port, 0);
  ep = parse_http_address("http://localhost:9000/", "127.0.0.1");
  EXPECT_EQ(ep.host, "localhost");
  EXPECT_EQ(ep.port, 9000);
  ep = parse_http_address("[::1]:8000", "127.0.0.1");
  EXPECT_EQ(ep.host, "::1");
  EXPECT_EQ(ep.port, 8000);
  ep = parse_http_address("8788", "127.0.0.1");
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, 8788);
  for (const char* bad : {"", ":", "host:port", ":70000", ":-1", "::1:80", "[::1]", "[::1"})
    EXPECT_THROW(parse_http_address(bad, "127.0.0.1"), Error) << "'" << bad << "'";
}

TEST(HttpServer, ServesGetAndHeadAndRefusesOtherMethods) {
  HttpServer server(local_server(), echo_path);
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()));
  auto r = http_get(server.port(), "/a/b?x=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /a/b") << "the query is not part of the path";
  r = http_get(server.port(), "/a", "HEAD");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "") << "HEAD has no body";
  EXPECT_NE(r.headers.find("Content-Length: 7"), std::string::npos) << r.headers;
  r = http_get(server.port(), "/a", "POST");
  EXPECT_EQ(r.status, 405);
  EXPECT_NE(r.headers.find("Allow: GET, HEAD"), std::string::npos) << r.headers;
  r = http_get(server.port(), "/boom");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("the handler failed"), std::string::npos) << r.body;
}

TEST(HttpServer, KeepsAConnectionAliveForSeveralRequests) {
  HttpServer server(local_server(), echo_path);
  RawSocket s(server.port());
  ASSERT_TRUE(s.send_all(std::string("GET /one HTTP/1.1\r\nHost: x\r\n\r\n") +
                         "GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string raw = read_until_closed(s);
  EXPECT_NE(raw.find("GET /one"), std::string::npos) << raw;
  EXPECT_NE(raw.find("GET /two"), std::string::npos) << raw;
}

TEST(HttpServer, GarbageGets400AndTheServerGoesOn) {
  HttpServer server(local_server(), echo_path);
  const char tls_hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n";
  auto r = http_exchange(server.port(), std::string(tls_hello, sizeof tls_hello - 1));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("bad request"), std::string::npos) << r.body;
  r = http_exchange(server.port(), "GET /x HTTP/1.1\r\nHost x\r\n\r\n");
  EXPECT_EQ(r.status, 400) << "a header line without a colon";
  r = http_exchange(server.port(), "GET nopath HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.status, 400) << "a target that is not a path";
  // Far more than the limit: answered (the server reads no further) and the server goes on.
  r = http_exchange(server.port(), "GET / HTTP/1.1\r\nX-Big: " + std::string(1024 * 1024, 'a') + "\r\n\r\n");
  EXPECT_EQ(r.status, 431) << "a header over the limit";
  // And a peer that vanishes mid-request.
  {
    RawSocket s(server.port());
    ASSERT_TRUE(s.send_all(std::string("GET / HTTP/1.1\r\nHo")));
  }
  EXPECT_EQ(http_get(server.port(), "/still").body, "GET /still");
}

TEST(HttpServer, AfterAnErrorAnswerTheServerReadsWhatTheClientStillSends) {
  // The server answers 431 part way through a header; the client, still sending, must neither
  // be reset (EPIPE here) nor lose the answer: the server drains before it closes.
  HttpServer server(local_server(), echo_path);
  RawSocket s(server.port());
  ASSERT_TRUE(s.send_all("GET / HTTP/1.1\r\nX-Big: " + std::string(1024 * 1024, 'a')));
  std::this_thread::sleep_for(200ms);  // the answer is sent meanwhile
  EXPECT_TRUE(s.send_all(std::string(64 * 1024, 'a') + "\r\n\r\n")) << "reset by the server";
  EXPECT_EQ(parse_reply(read_until_closed(s)).status, 431);
}

TEST(HttpServer, SilentClientIsDroppedAfterTheIdleTimeoutWithoutBlockingOthers) {
  HttpServer server(local_server(0.3), echo_path);
  RawSocket silent(server.port());
  RawSocket half(server.port());
  ASSERT_TRUE(half.send_all(std::string("GET /half HTTP/1.1\r\nHost")));
  // Served while both hold connections open.
  EXPECT_EQ(http_get(server.port(), "/other").body, "GET /other");
  auto t0 = tessera_test::Clock::now();
  EXPECT_TRUE(silent.closed_by_peer(3)) << "a client that sends nothing is dropped";
  EXPECT_TRUE(half.closed_by_peer(3)) << "a client that stops half way is dropped";
  EXPECT_LT(tessera_test::seconds_since(t0), 2.5);
  EXPECT_EQ(http_get(server.port(), "/after").body, "GET /after");
}

TEST(HttpServer, PortInUseFallsBackToAFreePortUnlessTurnedOff) {
  HttpServer first(local_server(), echo_path);
  HttpServerOptions o = local_server();
  o.address = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second(o, echo_path);
  EXPECT_NE(second.port(), first.port());
  EXPECT_EQ(http_get(second.port(), "/s").body, "GET /s");
  o.fallback_to_free_port = false;
  EXPECT_THROW(HttpServer(o, echo_path), Error);
}

TEST(HttpServer, StopClosesTheListenerAndOpenConnections) {
  auto server = std::make_unique<HttpServer>(local_server(), echo_path);
  const int port = server->port();
  RawSocket open(port);
  server->stop();
  EXPECT_TRUE(open.closed_by_peer(2));
  EXPECT_THROW(RawSocket{port}, std::runtime_error) << "nothing listens after stop()";
  server->stop();  // idempotent
  EXPECT_EQ(server->port(), port);
}

// ---- renderings ------------------------------------------------------------------------------------------

wire::ClusterInfo two_workers_info() {
  wire::ClusterInfo ci;
  ci.address = "tcp://127.0.0.1:1";
  ci.tasks = 7;
  ci.task_states = {{"memory", 4}, {"processing", 2}, {"waiting", 1}};
  for (int i = 0; i < 2; ++i) {
    wire::WorkerInfo w;
    w.summary.address = "tcp://127.0.0.1:" + std::to_string(100 + i);
    w.summary.name = "w" + std::to_string(i);
    w.summary.nthreads = 2 + i;
    w.summary.memory_limit = 1000;
    w.summary.has_what = 2;
    w.summary.paused = i == 1;
    w.pid = 40 + i;
    w.extra["dashboard"] = "http://127.0.0.1:" + std::to_string(200 + i);
    ci.workers.push_back(w);
  }
  return ci;
}

TEST(DashboardMetrics, SchedulerTextHasDaskNamesAndEveryState) {
  SchedulerSnapshot s{two_workers_info(), 3};
  auto m = parse_prometheus(scheduler_metrics_text(s));
  EXPECT_EQ(sample(m, "tessera_scheduler_workers"), 2);
  EXPECT_EQ(sample(m, "tessera_scheduler_clients"), 3);
  EXPECT_EQ(sample(m, "tessera_scheduler_worker_threads"), 5);
  EXPECT_EQ(sample(m, "tessera_scheduler_workers_paused"), 1);
  EXPECT_EQ(sample(m, "tessera_scheduler_tasks{state=\"memory\"}"), 4);
  EXPECT_EQ(sample(m, "tessera_scheduler_tasks{state=\"processing\"}"), 2);
  EXPECT_EQ(sample(m, "tessera_scheduler_tasks{state=\"waiting\"}"), 1);
  for (const char* zero : {"released", "no-worker", "queued", "erred"})
    EXPECT_EQ(sample(m, std::string("tessera_scheduler_tasks{state=\"") + zero + "\"}"), 0) << zero;
  EXPECT_EQ(m.count("tessera_scheduler_tasks{state=\"forgotten\"}"), 0u) << "forgotten tasks are gone";
}

TEST(DashboardMetrics, WorkerTextHasMemoryAndTransfers) {
  WorkerSnapshot w;
  w.nthreads = 4;
  w.stats.memory_bytes = 800;
  w.stats.spilled_bytes = 200;
  w.stats.fetches = 3;
  w.stats.fetched_bytes = 30;
  w.stats.served_requests = 5;
  w.stats.served_bytes = 50;
  w.task_states = {{"memory", 6}, {"executing", 1}};
  w.transfer_incoming_count = 2;
  auto m = parse_prometheus(worker_metrics_text(w));
  EXPECT_EQ(sample(m, "tessera_worker_threads"), 4);
  EXPECT_EQ(sample(m, "tessera_worker_tasks{state=\"memory\"}"), 6);
  EXPECT_EQ(sample(m, "tessera_worker_tasks{state=\"executing\"}"), 1);
  EXPECT_EQ(sample(m, "tessera_worker_memory_bytes{type=\"managed\"}"), 800);
  EXPECT_EQ(sample(m, "tessera_worker_memory_bytes{type=\"spilled\"}"), 200);
  EXPECT_EQ(sample(m, "tessera_worker_transfer_incoming_count"), 2);
  EXPECT_EQ(sample(m, "tessera_worker_transfer_incoming_count_total"), 3);
  EXPECT_EQ(sample(m, "tessera_worker_transfer_incoming_bytes_total"), 30);
  EXPECT_EQ(sample(m, "tessera_worker_transfer_outgoing_count_total"), 5);
  EXPECT_EQ(sample(m, "tessera_worker_transfer_outgoing_bytes_total"), 50);
}

TEST(DashboardMetrics, JsonApiListsWorkersAndEveryTaskState) {
  auto ci = two_workers_info();
  auto workers = nlohmann::json::parse(workers_json(ci));
  ASSERT_EQ(workers["num_workers"], 2);
  ASSERT_EQ(workers["workers"].size(), 2u);
  EXPECT_EQ(workers["workers"][1]["name"], "w1");
  EXPECT_EQ(workers["workers"][1]["nthreads"], 3);
  EXPECT_EQ(workers["workers"][1]["paused"], true);
  EXPECT_EQ(workers["workers"][1]["pid"], 41);
  EXPECT_EQ(workers["workers"][0]["extra"]["dashboard"], "http://127.0.0.1:200");
  auto tasks = nlohmann::json::parse(tasks_json(ci));
  EXPECT_EQ(tasks["total"], 7);
  EXPECT_EQ(tasks["states"]["memory"], 4);
  EXPECT_EQ(tasks["states"]["queued"], 0);
  EXPECT_EQ(tasks["states"].size(), 7u);
}

TEST(DashboardMetrics, SnapshotsAreTakenAtMostOncePerInterval) {
  int taken = 0;
  SnapshotCache<int> cache([&] { return ++taken; }, 0.3);
  EXPECT_EQ(cache.get(), 1);
  EXPECT_EQ(cache.get(), 1);
  EXPECT_EQ(cache.get(), 1);
  std::this_thread::sleep_for(350ms);
  EXPECT_EQ(cache.get(), 2);
}

// ---- the scheduler's dashboard in this process --------------------------------------------------------

TEST(SchedulerDashboard, InProcessSchedulerServesAndStops) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.dashboard_address = ":0";
  auto sched = std::make_unique<Scheduler>(so);
  const std::string url = sched->dashboard_url();
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url << ": ':port' listens on the scheduler's host";
  const int port = port_of(url);
  EXPECT_EQ(http_get(port, "/health").body, "ok");
  auto m = parse_prometheus(http_get(port, "/metrics").body);
  EXPECT_EQ(sample(m, "tessera_scheduler_workers"), 0);
  EXPECT_EQ(sample(m, "tessera_scheduler_clients"), 0);
  sched->stop();
  EXPECT_THROW(RawSocket{port}, std::runtime_error) << "the dashboard stops with the scheduler";
  SchedulerOptions none;
  none.address = "tcp://127.0.0.1:0";
  EXPECT_EQ(Scheduler(none).dashboard_url(), "") << "no dashboard unless asked for";
}

// ---- a scheduler and two worker processes -------------------------------------------------------------------

struct Binaries {
  std::string scheduler, worker;
  bool found = false;
  Binaries() {
    auto bin = tessera_test::build_bin_dir();
    scheduler = (bin / "tessera-scheduler").string();
    worker = (bin / "tessera-worker").string();
    found = std::filesystem::exists(scheduler) && std::filesystem::exists(worker);
  }
};

TEST(DashboardCluster, MetricsAndApiOfASchedulerWithTwoWorkerProcesses) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  const std::string token = "dashboard-token";
  {
    Children kids;  // kills and reaps every process when the test leaves, failed or not
    kids.spawn({bins.scheduler, "--port", "0", "--scheduler-file", sfile, "--token", token, "--log-level", "warning",
                "--dashboard-address", "127.0.0.1:0"},
               child_env());
    for (int i = 0; i < 2; ++i)
      kids.spawn({bins.worker, "--scheduler-file", sfile, "--nthreads", "1", "--token", token, "--memory-limit", "0",
                  "--name", "dw-" + std::to_string(i), "--death-timeout", "10", "--log-level", "warning",
                  "--dashboard-address", ":0"},
                 child_env());
    const int port = tessera_test::dashboard_port_from(sfile);
    ASSERT_GT(port, 0) << tessera_test::read_text(sfile);
    auto client = Client::from_scheduler_file(sfile, client_options(token));
    ASSERT_TRUE(client->wait_for_workers(2, 10s));

    // A computation, then results held: 16 chunks of 100 x 100 float64 stay on the workers.
    tessera_test::expect_close(tessera_test::seed_expr(400, 100).compute(*client).item(),
                               tessera_test::seed_expr(400, 100).compute(local_executor("sync")).item());
    auto x = random::normal(5, 0.0, 1.0, {400, 400}, {100, 100});
    Array y = (x + 1).persist(*client);
    const double chunk_bytes = 100 * 100 * 8;

    // /metrics: Prometheus text with both workers, this client, and the 16 results in memory.
    std::map<std::string, double> m;
    ASSERT_TRUE(wait_until(
        [&] {
          m = parse_prometheus(http_get(port, "/metrics").body);
          return sample(m, "tessera_scheduler_tasks{state=\"memory\"}") == 16 &&
                 sample(m, "tessera_scheduler_tasks{state=\"processing\"}") == 0;
        },
        10, 100))
        << "tasks in memory: " << sample(m, "tessera_scheduler_tasks{state=\"memory\"}");
    EXPECT_EQ(sample(m, "tessera_scheduler_workers"), 2);
    EXPECT_EQ(sample(m, "tessera_scheduler_clients"), 1);
    EXPECT_EQ(sample(m, "tessera_scheduler_worker_threads"), 2);
    EXPECT_EQ(sample(m, "tessera_scheduler_tasks{state=\"erred\"}"), 0);

    // /api/v1/workers and /api/v1/tasks against scheduler_info().
    auto info = client->scheduler_info();
    auto workers = nlohmann::json::parse(http_get(port, "/api/v1/workers").body);
    ASSERT_EQ(workers["num_workers"].get<std::size_t>(), info.workers.size());
    ASSERT_EQ(workers["workers"].size(), 2u);
    std::set<std::string> names;
    std::vector<int> worker_ports;
    for (const auto& w : workers["workers"]) {
      const auto* wi = tessera_test::find_worker(info, w["name"].get<std::string>());
      ASSERT_NE(wi, nullptr) << w.dump();
      names.insert(wi->name);
      EXPECT_EQ(w["address"], wi->address);
      EXPECT_EQ(w["nthreads"], wi->nthreads);
      EXPECT_EQ(w["pid"], wi->pid);
      EXPECT_EQ(w["host"], wi->host);
      EXPECT_EQ(w["memory_limit"], wi->memory_limit);
      EXPECT_EQ(w["keys"], wi->keys);
      EXPECT_EQ(w["ops"], wi->ops);
      EXPECT_EQ(w["extra"]["dashboard"], wi->extra.at("dashboard"));
      worker_ports.push_back(port_of(wi->extra.at("dashboard")));
    }
    EXPECT_EQ(names, (std::set<std::string>{"dw-0", "dw-1"}));
    auto tasks = nlohmann::json::parse(http_get(port, "/api/v1/tasks").body);
    EXPECT_EQ(tasks["total"], info.tasks);
    for (const auto& [state, n] : info.task_states) EXPECT_EQ(tasks["states"][state], n) << state;
    EXPECT_EQ(tasks["states"]["memory"], 16);

    // Each worker's own /metrics: together they hold the 16 chunks, and the client's fetches
    // of the seed workload's result went out as transfers.
    for (int wp : worker_ports) {
      ASSERT_GT(wp, 0);
      EXPECT_EQ(http_get(wp, "/health").body, "ok");
      EXPECT_EQ(http_get(wp, "/api/v1/workers").status, 404) << "workers serve /metrics and /health only";
    }
    double held = 0, managed = 0, spilled = 0, threads = 0, sent = 0, sent_bytes = 0;
    auto read_workers = [&] {
      held = managed = spilled = threads = sent = sent_bytes = 0;
      for (int wp : worker_ports) {
        auto wm = parse_prometheus(http_get(wp, "/metrics").body);
        threads += sample(wm, "tessera_worker_threads");
        held += sample(wm, "tessera_worker_tasks{state=\"memory\"}");
        managed += sample(wm, "tessera_worker_memory_bytes{type=\"managed\"}");
        spilled += sample(wm, "tessera_worker_memory_bytes{type=\"spilled\"}");
        sent += sample(wm, "tessera_worker_transfer_outgoing_count_total");
        sent_bytes += sample(wm, "tessera_worker_transfer_outgoing_bytes_total");
      }
      return held == 16;  // the seed workload's values may still be on their way out
    };
    EXPECT_TRUE(wait_until(read_workers, 10, 100)) << "values held by the workers: " << held;
    EXPECT_EQ(threads, 2);
    EXPECT_EQ(spilled, 0);
    EXPECT_EQ(managed, 16 * chunk_bytes);
    EXPECT_GE(sent, 1);
    EXPECT_GT(sent_bytes, 0);

    // /health, a 404 that names the path, garbage, and a silent client next to a real one.
    auto h = http_get(port, "/health");
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(h.body, "ok");
    auto nf = http_get(port, "/no/such/page");
    EXPECT_EQ(nf.status, 404);
    EXPECT_NE(nf.body.find("/no/such/page"), std::string::npos) << nf.body;
    EXPECT_NE(nf.body.find("/metrics"), std::string::npos) << "the 404 lists the endpoints: " << nf.body;
    RawSocket silent(port);
    const char garbage[] = "\x00\x01\x02garbage\r\n\r\n";
    EXPECT_EQ(http_exchange(port, std::string(garbage, sizeof garbage - 1)).status, 400);
    EXPECT_EQ(http_get(port, "/health").body, "ok") << "served while a client sits silent";

    // Releasing the results shows in the next snapshots.
    y = Array();
    EXPECT_TRUE(wait_until(
        [&] { return nlohmann::json::parse(http_get(port, "/api/v1/tasks").body)["states"]["memory"] == 0; }, 10,
        100));
    client->close();
    EXPECT_TRUE(wait_until(
        [&] { return sample(parse_prometheus(http_get(port, "/metrics").body), "tessera_scheduler_clients") == 0; },
        10, 100));
  }
  EXPECT_TRUE(wait_until([&] { return tessera_test::processes_with(dir.str()).empty(); }, 3));
}

TEST(DashboardCluster, SchedulerBinaryServesByDefaultAndNotWithNoDashboard) {
  Binaries bins;
  if (!bins.found) GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  Children kids;
  const std::string on = (dir.path() / "on.json").string(), off = (dir.path() / "off.json").string();
  // The default :8787, or a free port with a warning when another program has it.
  kids.spawn({bins.scheduler, "--port", "0", "--scheduler-file", on, "--log-level", "error"}, child_env());
  kids.spawn({bins.scheduler, "--port", "0", "--scheduler-file", off, "--log-level", "error", "--no-dashboard"},
             child_env());
  const int port = tessera_test::dashboard_port_from(on);
  ASSERT_GT(port, 0);
  EXPECT_EQ(http_get(port, "/health").body, "ok");
  EXPECT_EQ(tessera_test::dashboard_port_from(off), 0) << tessera_test::read_text(off);
}

}  // namespace
