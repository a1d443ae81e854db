// The dashboards' live side (docs/dashboard.md): server-sent events from the HTTP server and the
// scheduler's /api/v1/events while a computation runs, the scheduler's own figures (tasks per
// second, event-loop latency), the workers' CPU and memory, a worker's own /status page and API,
// NVML (its absence here; a GPU machine's figures where there is one), and progress() for an
// Array and for a ProgressBar around a Client's persist().
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/fake_device.hpp"
#include "cluster_fixture.hpp"
#include "distributed/dashboard.hpp"
#include "distributed/http_server.hpp"
#include "distributed/metrics.hpp"
#include "distributed/nvml.hpp"
#include "distributed/process_cpu.hpp"
#include "http_client.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/distributed/progress.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::http_get;
using tessera_test::port_of;
using tessera_test::RawSocket;
using tessera_test::wait_until;

std::int64_t live_nap(std::int64_t x) {
  std::this_thread::sleep_for(15ms);
  return x + 1;
}
TESSERA_REGISTER_FUNCTION_AS("dashboard_live_test.nap", live_nap);

// A client of /api/v1/events: sends the GET, then hands out the events' data one by one.
class EventReader {
 public:
  EventReader(int port, const std::string& path) : socket_(port, 1.0) {
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n";
    if (!socket_.send_all(req.data(), req.size())) throw std::runtime_error("send failed");
  }
  // The response's head (status line and headers), once the first bytes came.
  const std::string& head() const { return head_; }
  // The next event's data, or "" when none came within timeout_s.
  std::string next(double timeout_s = 5) {
    auto deadline = tessera_test::Clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      if (head_.empty()) {
        if (auto end = buf_.find("\r\n\r\n"); end != std::string::npos) {
          head_ = buf_.substr(0, end);
          buf_ = buf_.substr(end + 4);
        }
      }
      // Each event is one chunk: "<size>\r\n" lines sit between them, never inside a data line.
      if (!head_.empty())
        if (auto d = buf_.find("data: "); d != std::string::npos)
          if (auto end = buf_.find("\n\n", d); end != std::string::npos) {
            std::string data = buf_.substr(d + 6, end - d - 6);
            buf_ = buf_.substr(end + 2);
            return data;
          }
      if (tessera_test::Clock::now() > deadline) return {};
      char b[65536];
      ssize_t r = ::recv(socket_.fd(), b, sizeof b, 0);
      if (r == 0) return {};
      if (r > 0) buf_.append(b, static_cast<std::size_t>(r));
    }
  }
  void close() { socket_.close(); }

 private:
  RawSocket socket_;
  std::string buf_, head_;
};

// ---- the HTTP server's events ---------------------------------------------------------------------------

TEST(HttpServerEvents, StreamsEventsUntilTheClientGoesAndServesOthersMeanwhile) {
  HttpServerOptions o;
  o.address = "127.0.0.1:0";
  std::atomic<int> produced{0};
  HttpServer server(o, [&](const HttpRequest& r) {
    HttpResponse res;
    if (r.path == "/events" || r.path == "/three") {
      res.event_interval = 0.05;
      if (r.path == "/three") res.max_events = 3;
      res.next_event = [&produced, n = std::make_shared<int>(0)] {
        ++produced;
        return "data: {\"n\": " + std::to_string((*n)++) + "}\n\n";
      };
    } else {
      res.body = "ok";
    }
    return res;
  });
  {
    EventReader events(server.port(), "/events");
    for (int want = 0; want < 4; ++want) {
      std::string data = events.next();
      ASSERT_FALSE(data.empty()) << "event " << want;
      EXPECT_EQ(nlohmann::json::parse(data)["n"].get<int>(), want);
    }
    EXPECT_NE(events.head().find("HTTP/1.1 200"), std::string::npos) << events.head();
    EXPECT_NE(events.head().find("text/event-stream"), std::string::npos) << events.head();
    EXPECT_NE(events.head().find("chunked"), std::string::npos) << events.head();
    // The stream holds no one up: the same server answers a plain request meanwhile.
    EXPECT_EQ(http_get(server.port(), "/health").body, "ok");
  }
  {
    // max_events: three events, the last chunk, and the server closes (EventSource reconnects).
    RawSocket s(server.port());
    const std::string req = "GET /three HTTP/1.1\r\nHost: localhost\r\n\r\n";
    ASSERT_TRUE(s.send_all(req.data(), req.size()));
    const std::string all = tessera_test::read_until_closed(s, 5);
    std::size_t n = 0;
    for (std::size_t p = 0; (p = all.find("data: ", p)) != std::string::npos; ++p) ++n;
    EXPECT_EQ(n, 3u) << all;
    EXPECT_NE(all.find("\r\n0\r\n\r\n"), std::string::npos) << "the chunked body's end";
    EXPECT_NE(all.find("Connection: close"), std::string::npos) << all;
  }
  // The client went: the server notices and stops producing for it.
  ASSERT_TRUE(wait_until(
      [&] {
        int before = produced;
        std::this_thread::sleep_for(200ms);
        return produced == before;
      },
      5))
      << "events still produced after the client closed";
  server.stop();
}

// ---- a scheduler and two workers, watched over /api/v1/events --------------------------------------------

struct LiveCluster {
  std::unique_ptr<Scheduler> sched;
  std::vector<std::unique_ptr<Worker>> workers;
  LiveCluster() {
    SchedulerOptions so;
    so.address = "tcp://127.0.0.1:0";
    so.dashboard_address = ":0";
    sched = std::make_unique<Scheduler>(so);
    for (int i = 0; i < 2; ++i) {
      WorkerOptions wo;
      wo.scheduler_address = sched->address();
      wo.name = "live-" + std::to_string(i);
      wo.nthreads = 2;
      wo.heartbeat_interval = 0.1;
      wo.dashboard_address = ":0";  // the worker's own page
      workers.push_back(std::make_unique<Worker>(wo));
    }
  }
};

TEST(DashboardEvents, PushChangingProgressBarsAndFiguresWhileAComputationRuns) {
  LiveCluster cluster;
  const int port = port_of(cluster.sched->dashboard_url());
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));

  EventReader events(port, "/api/v1/events");
  ASSERT_FALSE(events.next().empty()) << "an event at once, before anything runs";

  // 400 naps of 15 ms on four threads: 1.5 s, six events or so.
  std::vector<std::int64_t> xs(400);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<std::int64_t>(i);
  std::thread load([&] {
    auto fs = client.map(live_nap, xs);
    for (auto& f : fs) (void)f.result();
  });
  std::vector<nlohmann::json> seen;
  std::set<std::uint64_t> finished;
  std::set<std::string> bar_workers;
  std::size_t bars = 0;
  double best_rate = 0;
  // Until every bar came (the last ones may come after the futures are done).
  while (bars < xs.size() || seen.size() < 3) {
    std::string data = events.next();
    if (data.empty()) break;
    auto j = nlohmann::json::parse(data);
    finished.insert(j["progress"]["finished"].get<std::uint64_t>());
    best_rate = std::max(best_rate, j["progress"]["tasks_per_second"].get<double>());
    const auto& st = j["stream"];
    for (const auto& b : st["bars"]) {
      if (st["prefixes"][b[4].get<std::size_t>()] == "transfer") continue;  // result() fetching a result
      bar_workers.insert(st["workers"][b[0].get<std::size_t>()].get<std::string>());
      EXPECT_EQ(st["prefixes"][b[4].get<std::size_t>()], "dashboard_live_test.nap");
      EXPECT_LE(b[2].get<double>(), b[3].get<double>()) << "start before stop";
      ++bars;
    }
    EXPECT_LE(st["bars"].size(), kEventBars);
    seen.push_back(std::move(j));
  }
  load.join();
  ASSERT_GE(seen.size(), 3u) << "several events while the computation ran";
  EXPECT_GE(finished.size(), 3u) << "the finished count changed from event to event";
  EXPECT_EQ(bars, xs.size()) << "every task's bar arrived once (fewer than kEventBars per event)";
  EXPECT_EQ(bar_workers.size(), 2u) << "bars of both workers";
  EXPECT_GT(best_rate, 0) << "tasks per second while they ran";
  // The workers' figures travel with their heartbeats: CPU (the naps use little) and the
  // process's memory; no GPU fields without NVML.
  const auto& last = seen.back();
  ASSERT_EQ(last["workers"]["workers"].size(), 2u);
  for (const auto& w : last["workers"]["workers"]) {
    EXPECT_TRUE(w.contains("cpu")) << w.dump();
    EXPECT_GT(w["rss"].get<std::size_t>(), 1u << 20) << "a process holds more than a MiB";
    if (!gpu_usage("")) {
      EXPECT_FALSE(w.contains("gpu")) << "no NVML here: no GPU fields";
    }
  }
  EXPECT_GE(last["progress"]["event_loop_latency"].get<double>(), 0.0);
  events.close();

  // The scheduler's own figures in /metrics (its snapshot may be 0.2 s behind the stream).
  std::string metrics;
  wait_until(
      [&] {
        metrics = http_get(port, "/metrics").body;
        return metrics.find("tessera_scheduler_tasks_finished_total " + std::to_string(xs.size())) != std::string::npos;
      },
      5);
  for (const char* name : {"tessera_scheduler_tasks_finished_total", "tessera_scheduler_tasks_per_second",
                           "tessera_scheduler_event_loop_latency_seconds", "tessera_scheduler_clients 1"})
    EXPECT_NE(metrics.find(name), std::string::npos) << name << " in\n" << metrics;
  EXPECT_NE(metrics.find("tessera_scheduler_tasks_finished_total " + std::to_string(xs.size())), std::string::npos)
      << metrics;
}

TEST(DashboardEvents, EachEventCarriesAtMostKEventBarsAndSaysHowManyItSkipped) {
  TaskStreamPage page;
  page.newest = 3;
  for (std::uint64_t i = 1; i <= 3; ++i)
    page.entries.push_back({i, "k" + std::to_string(i), i == 2 ? "b" : "a", i == 3 ? "w2" : "w1", 0, 1.00004, 2.0, 8});
  auto j = nlohmann::json::parse(compact_bars_json(page, 7));
  EXPECT_EQ(j["skipped"], 7);
  EXPECT_EQ(j["workers"], nlohmann::json({"w1", "w2"}));
  EXPECT_EQ(j["prefixes"], nlohmann::json({"a", "b"}));
  ASSERT_EQ(j["bars"].size(), 3u);
  EXPECT_EQ(j["bars"][2], nlohmann::json({1, 0, 1.0, 2.0, 0})) << "indices into the tables, times to 0.1 ms";
}

// ---- a worker's own page ---------------------------------------------------------------------------------

TEST(WorkerDashboardPage, ServesItsStatusPageRunningTasksAndCpu) {
  LiveCluster cluster;
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const int wport = port_of(cluster.workers[0]->dashboard_url());
  auto page = http_get(wport, "/status");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("text/html"), std::string::npos);
  EXPECT_NE(page.body.find("id=\"w-running\""), std::string::npos);

  std::vector<std::int64_t> xs(200);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<std::int64_t>(i);
  auto fs = client.map(live_nap, xs);
  // While the naps run, the worker's API lists what its threads run.
  bool saw_running = false;
  EventReader events(wport, "/api/v1/events");
  for (int i = 0; i < 40 && !saw_running; ++i) {
    std::string data = events.next();
    ASSERT_FALSE(data.empty());
    auto j = nlohmann::json::parse(data);
    for (const auto& t : j["running"]) {
      EXPECT_EQ(t["prefix"], "dashboard_live_test.nap");
      saw_running = true;
    }
    EXPECT_LE(j["running"].size(), 2u) << "two threads run at most two tasks";
  }
  EXPECT_TRUE(saw_running) << "a running task seen on the worker's page";
  for (auto& f : fs) (void)f.result();
  auto w = nlohmann::json::parse(http_get(wport, "/api/v1/worker").body);
  EXPECT_EQ(w["name"], "live-0");
  EXPECT_EQ(w["nthreads"], 2);
  EXPECT_GT(w["rss"].get<std::size_t>(), 0u);
  EXPECT_TRUE(w.contains("cpu"));
  const std::string metrics = http_get(wport, "/metrics").body;
  EXPECT_NE(metrics.find("tessera_worker_cpu_percent"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tessera_worker_memory_bytes{type=\"unmanaged\"}"), std::string::npos) << metrics;
  if (!gpu_usage("")) {
    EXPECT_EQ(metrics.find("tessera_gpu_"), std::string::npos) << "no NVML: no GPU metrics";
  }
}

// ---- NVML and /proc --------------------------------------------------------------------------------------

TEST(Nvml, WithoutTheLibraryThereAreNoFiguresAndNoFields) {
  EXPECT_EQ(Nvml::open("libnvidia-ml-not-here.so.1"), nullptr);
  // A library without NVML's functions is refused too (the C library has none of them).
  EXPECT_EQ(Nvml::open("libc.so.6"), nullptr);
  WorkerSnapshot w;
  w.usage.cpu = 12;
  const std::string text = worker_metrics_text(w);
  EXPECT_EQ(text.find("tessera_gpu_"), std::string::npos) << text;
  EXPECT_NE(text.find("tessera_worker_cpu_percent 12"), std::string::npos) << text;
  EXPECT_EQ(nlohmann::json::parse(worker_status_json(w)).count("gpu"), 0u);
  wire::ClusterInfo info;
  info.workers.emplace_back();
  EXPECT_EQ(nlohmann::json::parse(workers_json(info))["workers"][0].count("gpu"), 0u);
  // With figures (as NVML gives them), the fields and Dask's metric names appear.
  w.usage.gpu_name = "Test GPU";
  w.usage.gpu_utilization = 40;
  w.usage.gpu_memory_used = 1 << 20;
  w.usage.gpu_memory_total = 1 << 30;
  const std::string with = worker_metrics_text(w);
  EXPECT_NE(with.find("tessera_gpu_utilization 40"), std::string::npos) << with;
  EXPECT_NE(with.find("tessera_gpu_memory_used_bytes 1048576"), std::string::npos) << with;
  EXPECT_NE(with.find("tessera_gpu_memory_total_bytes 1073741824"), std::string::npos) << with;
  EXPECT_EQ(with.find("_bytes_per_second"), std::string::npos) << "throughput NVML did not give is absent: " << with;
  EXPECT_EQ(nlohmann::json::parse(worker_status_json(w))["gpu"].count("pcie_tx"), 0u);
  w.usage.gpu_pcie_rx = 0;  // known and zero: shown, unlike unknown
  EXPECT_NE(worker_metrics_text(w).find("tessera_gpu_pcie_rx_bytes_per_second 0"), std::string::npos);
  EXPECT_EQ(worker_metrics_text(w).find("tessera_gpu_pcie_tx_bytes_per_second"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(worker_status_json(w))["gpu"]["name"], "Test GPU");
}

// NVML's side of a machine with GPUs, from tests/plugins/fake_nvml.cpp (two fake GPUs; one whose
// nvmlInit fails), so the path with figures runs here too.
TEST(Nvml, ReadsEachGpuByItsUuidFromAStandIn) {
  const auto dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  const std::string two = (dir / "libtessera_fake_nvml_2.so").string();
  if (!std::filesystem::exists(two)) GTEST_SKIP() << two << " is not built";
  EXPECT_EQ(Nvml::open((dir / "libtessera_fake_nvml_fail.so").string()), nullptr) << "nvmlInit_v2 failed";
  auto nvml = Nvml::open(two);
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->device_count(), 2u);
  auto second = nvml->usage("GPU-00000000-0000-0000-0000-000000000001");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name, "Fake GPU 1");
  EXPECT_EQ(second->utilization, 41);
  EXPECT_EQ(second->memory_total, 32ull << 30);
  EXPECT_EQ(second->memory_used, 0u);
  auto unknown = nvml->usage("GPU-not-there", 0);
  ASSERT_TRUE(unknown.has_value()) << "an unknown UUID falls back to the index";
  EXPECT_EQ(unknown->name, "Fake GPU 0");
  EXPECT_FALSE(nvml->usage("", 5).has_value()) << "no GPU 5";

  // Throughput: PCIe as NVML gives it (KiB/s, here in bytes/s); NVLink from its counters' growth
  // between two readings, so absent at the first; GPU 1 has no NVLink (NOT_SUPPORTED): absent.
  // A fresh handle: readings (above: GPU 0 by index) are kept per handle and GPU.
  nvml = Nvml::open(two);
  ASSERT_NE(nvml, nullptr);
  auto first = nvml->usage("GPU-00000000-0000-0000-0000-000000000000");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->pcie_tx, 1024.0 * 3000);
  EXPECT_EQ(first->pcie_rx, 1024.0 * 2000);
  EXPECT_EQ(first->nvlink_tx, -1) << "one reading gives no rate";
  auto next = nvml->usage("GPU-00000000-0000-0000-0000-000000000000");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->nvlink_tx, 8.0 * 1024 * 1024) << "4096 KiB in 0.5 s";
  EXPECT_EQ(next->nvlink_rx, 2.0 * 1024 * 1024) << "1024 KiB in 0.5 s";
  for (int i = 0; i < 2; ++i) {
    auto one = nvml->usage("GPU-00000000-0000-0000-0000-000000000001");
    ASSERT_TRUE(one.has_value());
    EXPECT_EQ(one->pcie_tx, 1024.0 * 3001);
    EXPECT_EQ(one->nvlink_tx, -1) << "NOT_SUPPORTED: absent, not zero";
    EXPECT_EQ(one->nvlink_rx, -1);
  }
  // A driver without nvmlDeviceGetPcieThroughput / nvmlDeviceGetFieldValues: the rest still works.
  const std::string old_driver = (dir / "libtessera_fake_nvml_old.so").string();
  if (!std::filesystem::exists(old_driver)) GTEST_SKIP() << old_driver << " is not built";
  auto old = Nvml::open(old_driver);
  ASSERT_NE(old, nullptr) << "the throughput functions are optional";
  for (int i = 0; i < 2; ++i) {
    auto u = old->usage("", 0);
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->name, "Fake GPU 0");
    EXPECT_EQ(u->pcie_tx, -1);
    EXPECT_EQ(u->pcie_rx, -1);
    EXPECT_EQ(u->nvlink_tx, -1);
    EXPECT_EQ(u->nvlink_rx, -1);
  }
}

// NVDashboard's figures end to end: a GPU worker (the fake device, tests/support) whose NVML is
// the stand-in reports PCIe and NVLink throughput with its heartbeat; the scheduler's
// /api/v1/workers and the worker's own /metrics and /api/v1/worker show exactly those figures.
TEST(Nvml, AGpuWorkersThroughputReachesTheApiAndMetrics) {
  const auto dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  const std::string two = (dir / "libtessera_fake_nvml_2.so").string();
  if (!std::filesystem::exists(two)) GTEST_SKIP() << two << " is not built";
  tessera_test::ScopedEnv nvml_library("TESSERA_NVML_LIBRARY", two);  // before any worker thread reads it
  tessera_test::ScopedFakeDevice fake;  // the worker's GPU 0: the stand-in NVML's GPU 0 by UUID
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.dashboard_address = ":0";
  Scheduler sched(so);
  WorkerOptions wo;
  wo.scheduler_address = sched.address();
  wo.name = "nvml-gpu";
  wo.heartbeat_interval = 0.1;
  wo.dashboard_address = ":0";
  Worker worker(wo);
  const int port = port_of(sched.dashboard_url());
  const int wport = port_of(worker.dashboard_url());

  nlohmann::json gpu;
  ASSERT_TRUE(wait_until(
      [&] {
        auto j = nlohmann::json::parse(http_get(port, "/api/v1/workers").body);
        if (j["workers"].size() != 1 || !j["workers"][0].contains("gpu")) return false;
        gpu = j["workers"][0]["gpu"];
        return gpu.contains("nvlink_tx");  // from the second heartbeat on
      },
      10, 50))
      << gpu.dump();
  EXPECT_EQ(gpu["name"], "Fake GPU 0");
  EXPECT_EQ(gpu["utilization"], 40);
  EXPECT_EQ(gpu["pcie_tx"].get<double>(), 3072000.0);
  EXPECT_EQ(gpu["pcie_rx"].get<double>(), 2048000.0);
  EXPECT_EQ(gpu["nvlink_tx"].get<double>(), 8388608.0);
  EXPECT_EQ(gpu["nvlink_rx"].get<double>(), 2097152.0);

  auto own = nlohmann::json::parse(http_get(wport, "/api/v1/worker").body);
  ASSERT_TRUE(own.contains("gpu")) << own.dump();
  EXPECT_EQ(own["gpu"]["pcie_tx"].get<double>(), 3072000.0);
  const std::string metrics = http_get(wport, "/metrics").body;
  for (const char* line : {"tessera_gpu_pcie_tx_bytes_per_second 3072000", "tessera_gpu_pcie_rx_bytes_per_second 2048000",
                           "tessera_gpu_nvlink_tx_bytes_per_second 8388608",
                           "tessera_gpu_nvlink_rx_bytes_per_second 2097152", "tessera_gpu_utilization 40"})
    EXPECT_NE(metrics.find(std::string("\n") + line + "\n"), std::string::npos) << line << " in\n" << metrics;
  // The scheduler's page has the columns its script fills from these fields.
  const std::string page = http_get(port, "/status").body;
  EXPECT_NE(page.find("<th>PCIe tx / rx</th>"), std::string::npos);
  EXPECT_NE(page.find("<th>NVLink tx / rx</th>"), std::string::npos);
  worker.close();
}

// Checked on a machine with NVIDIA's driver: the figures of GPU 0 agree with discovery's.
TEST(Nvml, ReportsTheGpuOfAMachineWithTheDriver) {
  auto nvml = Nvml::open();
  if (!nvml) GTEST_SKIP() << "libnvidia-ml.so.1 cannot be loaded or initialised here (no NVIDIA driver)";
  if (nvml->device_count() == 0) GTEST_SKIP() << "NVML sees no GPU";
  auto found = discover_gpus();
  ASSERT_FALSE(found.gpus.empty()) << found.detail;
  auto u = nvml->usage(found.gpus[0].uuid);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->name, found.gpus[0].name);
  EXPECT_EQ(u->memory_total, found.gpus[0].total_memory);
  EXPECT_GT(u->memory_total, 0u);
  EXPECT_LE(u->memory_used, u->memory_total);
  EXPECT_GE(u->utilization, 0);
  EXPECT_LE(u->utilization, 100);
  auto by_index = nvml->usage("", 0);
  ASSERT_TRUE(by_index.has_value());
  EXPECT_EQ(by_index->memory_total, u->memory_total);
  auto shared = gpu_usage(found.gpus[0].uuid);
  ASSERT_TRUE(shared.has_value()) << "the dashboards' NVML opens too";
  EXPECT_EQ(shared->name, u->name);
  // Throughput where this driver and board give it (NVLink needs two readings): a rate, not
  // garbage; printed so a GPU run shows what the driver answered.
  auto again = nvml->usage(found.gpus[0].uuid);
  ASSERT_TRUE(again.has_value());
  for (double rate : {again->pcie_tx, again->pcie_rx, again->nvlink_tx, again->nvlink_rx}) {
    EXPECT_GE(rate, -1.0);
    EXPECT_LT(rate, 4e12) << "bytes per second beyond any link";
  }
  std::printf("NVML on %s: PCIe tx %.0f rx %.0f, NVLink tx %.0f rx %.0f bytes/s (-1: not given)\n", u->name.c_str(),
              again->pcie_tx, again->pcie_rx, again->nvlink_tx, again->nvlink_rx);
}

TEST(ProcessCpu, ParsesProcStatAndSeesABusyThread) {
  // comm may hold spaces and parentheses; utime 250 and stime 50 ticks are fields 14 and 15.
  const std::string line = "42 (a (b) c) R 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0";
  auto s = cpu_seconds_from_stat(line);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(*s, 300.0 / static_cast<double>(::sysconf(_SC_CLK_TCK)), 1e-9);
  EXPECT_FALSE(cpu_seconds_from_stat("garbage").has_value());
  EXPECT_FALSE(cpu_seconds_from_stat("1 (x) R 1 2").has_value());

  ProcessCpu cpu;
  auto until = std::chrono::steady_clock::now() + 400ms;
  volatile std::uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  const double busy = cpu.sample();
  // One thread spinning: about 100 %, less when the machine's other work takes the core.
  EXPECT_GT(busy, 30) << busy;
  EXPECT_LT(busy, 100.0 * std::thread::hardware_concurrency() + 20) << busy;
  EXPECT_GT(resident_bytes(), 1u << 20);
}

// ---- progress for arrays ---------------------------------------------------------------------------------

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

TEST(ArrayProgress, DrawsTheBarOverAnArraysChunksAndForAProgressBarAroundPersist) {
  LiveCluster cluster;
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  Array x = random::normal(5, 0.0, 1.0, {400, 400}, {100, 100}) * 2 + 1;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ProgressBarOptions po;
  po.fd = fds[1];
  po.width = 20;
  auto chunks = progress(client, x, po);
  EXPECT_EQ(chunks.size(), 16u) << "one future per chunk";
  for (auto& f : chunks) EXPECT_EQ(f.status(), FutureStatus::Finished);
  {
    // Dask's `with ProgressBar(): x.persist()`, on a Client.
    ProgressBar bar(po);
    Array y = (x + 1).persist(client);
    EXPECT_EQ(y.shape(), x.shape());
  }
  ::close(fds[1]);
  const std::string drawn = read_all(fds[0]);
  ::close(fds[0]);
  const std::string full = "[" + std::string(20, '#') + "] | 100% Completed |";
  std::size_t lines = 0;
  for (std::size_t p = 0; (p = drawn.find(full, p)) != std::string::npos; p += full.size()) ++lines;
  EXPECT_EQ(lines, 2u) << "a finished bar for progress() and one for the ProgressBar:\n" << drawn;
  EXPECT_EQ(drawn.back(), '\n');
}

}  // namespace
