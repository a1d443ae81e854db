// The task stream (docs/dashboard.md): the scheduler's ring of finished tasks, its JSON at
// /api/v1/task-stream and /api/v1/progress, Client::get_task_stream, performance reports, the
// /status page's HTML, and distributed::progress drawing into a pipe.
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster_fixture.hpp"
#include "distributed/dashboard.hpp"
#include "distributed/metrics.hpp"
#include "distributed/task_stream_ring.hpp"
#include "distributed/wire.hpp"
#include "tessera/comm/comm.hpp"
#include "http_client.hpp"
#include "tessera/distributed/performance_report.hpp"
#include "tessera/distributed/progress.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::http_get;
using tessera_test::port_of;
using tessera_test::wait_until;

// Long enough that the two threads of a worker overlap and the bars have a measurable width.
std::int64_t ts_nap(std::int64_t x) {
  std::this_thread::sleep_for(20ms);
  return x + 1;
}
TESSERA_REGISTER_FUNCTION_AS("task_stream_test.nap", ts_nap);
std::int64_t ts_add(std::int64_t a, std::int64_t b) { return a + b; }
TESSERA_REGISTER_FUNCTION_AS("task_stream_test.add", ts_add);
// A block of n doubles (n * 8 bytes): results whose size the task stream must report.
Block ts_block(std::int64_t n) {
  return Block::from_values(std::vector<double>(static_cast<std::size_t>(n), 1.0), {n});
}
TESSERA_REGISTER_FUNCTION_AS("task_stream_test.block", ts_block);
// Raises for multiples of 3 after its nap: some futures of a map err, the rest finish.
std::int64_t ts_nap_or_raise(std::int64_t x) {
  std::this_thread::sleep_for(20ms);
  if (x % 3 == 0) throw std::runtime_error("task_stream_test.nap_or_raise: " + std::to_string(x));
  return x;
}
TESSERA_REGISTER_FUNCTION_AS("task_stream_test.nap_or_raise", ts_nap_or_raise);

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// A scheduler serving its dashboard and two in-process workers of `threads` threads each.
struct StreamCluster {
  std::unique_ptr<Scheduler> sched;
  std::vector<std::unique_ptr<Worker>> workers;
  explicit StreamCluster(int threads) {
    SchedulerOptions so;
    so.address = "tcp://127.0.0.1:0";
    so.dashboard_address = ":0";
    sched = std::make_unique<Scheduler>(so);
    for (int i = 0; i < 2; ++i) {
      WorkerOptions wo;
      wo.scheduler_address = sched->address();
      wo.name = "ts-" + std::to_string(i);
      wo.nthreads = threads;
      wo.heartbeat_interval = 0.1;
      workers.push_back(std::make_unique<Worker>(wo));
    }
  }
};

TEST(TaskStreamRing, KeepsTheNewestAndPagesBySince) {
  TaskStreamRing ring(3);
  EXPECT_EQ(ring.newest(), 0u);
  EXPECT_TRUE(ring.since(0, 10).entries.empty());
  for (int i = 1; i <= 5; ++i) ring.push("k" + std::to_string(i), "op", "tcp://w", i % 2, i, i + 0.5, 8);
  EXPECT_EQ(ring.newest(), 5u);
  EXPECT_EQ(ring.size(), 3u);
  auto all = ring.since(0, 10);
  ASSERT_EQ(all.entries.size(), 3u);
  EXPECT_EQ(all.dropped, 2u) << "ids 1 and 2 fell out of a ring of 3";
  EXPECT_EQ(all.entries.front().id, 3u);
  EXPECT_EQ(all.entries.front().key, "k3");
  EXPECT_EQ(all.entries.back().key, "k5");
  EXPECT_EQ(all.entries.back().thread, 1);
  EXPECT_DOUBLE_EQ(all.entries.back().stop, 5.5);
  auto page = ring.since(3, 1);
  ASSERT_EQ(page.entries.size(), 1u);
  EXPECT_EQ(page.entries[0].key, "k4");
  EXPECT_EQ(page.dropped, 0u);
  EXPECT_TRUE(ring.since(5, 10).entries.empty());
  EXPECT_TRUE(ring.since(0, 0).entries.empty());
  EXPECT_EQ(ring.since(0, 0).newest, 5u);
  TaskStreamRing none(0);
  none.push("k", "op", "w", 0, 0, 1, 0);
  EXPECT_TRUE(none.since(0, 10).entries.empty());
}

// push() names the worker whose last entry it let go (the scheduler frees its clock offset).
TEST(TaskStreamRing, NamesTheWorkerWhoseLastEntryLeft) {
  TaskStreamRing ring(3);
  EXPECT_EQ(ring.push("a", "p", "w1", 0, 0, 1, 0), "");
  EXPECT_EQ(ring.push("b", "p", "w2", 0, 0, 1, 0), "");
  EXPECT_EQ(ring.push("c", "p", "w1", 0, 0, 1, 0), "");
  EXPECT_EQ(ring.worker_count(), 2u);
  EXPECT_EQ(ring.push("d", "p", "w3", 0, 0, 1, 0), "") << "w1 still has c";
  EXPECT_EQ(ring.entries_of("w1"), 1u);
  EXPECT_EQ(ring.push("e", "p", "w3", 0, 0, 1, 0), "w2");
  EXPECT_EQ(ring.push("f", "p", "w1", 0, 0, 1, 0), "") << "w1's replaced its own: never at 0";
  EXPECT_EQ(ring.push("g", "p", "w3", 0, 0, 1, 0), "");
  EXPECT_EQ(ring.push("h", "p", "w3", 0, 0, 1, 0), "");
  EXPECT_EQ(ring.push("i", "p", "w3", 0, 0, 1, 0), "w1");
  EXPECT_EQ(ring.worker_count(), 1u);
  EXPECT_EQ(ring.entries_of("w3"), 3u);
  EXPECT_EQ(ring.entries_of("w1"), 0u);
}

// A departed worker's bars still in the ring stay on the scheduler's clock (its offset is
// kept), and once they all left the ring its offset goes. A fake worker over a real socket
// reports tasks on a clock 1000 s ahead of the scheduler's.
TEST(TaskStreamCluster, ADepartedWorkersBarsKeepTheirOffsetUntilTheyLeave) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = "offset-token";
  so.task_stream_length = 6;
  Scheduler sched(so);
  comm::CommOptions co;
  co.token = so.token;
  auto fake = [&](const std::string& name, int port) {
    auto c = comm::connect(sched.address(), co);
    wire::WorkerHello hello;
    hello.add.address = "tcp://127.0.0.1:" + std::to_string(port);
    hello.add.name = name;
    hello.add.nthreads = 1;
    comm::Message m(wire::kRegisterWorker);
    m.set("worker", hello);
    c->send(std::move(m)).get();
    EXPECT_EQ(c->recv(std::chrono::milliseconds(5000)).op, wire::kRegistered);
    return c;
  };
  auto finish = [](const std::shared_ptr<comm::Comm>& c, int n, double clock_ahead) {
    std::vector<wire::WorkerToScheduler> events;
    for (int i = 0; i < n; ++i) {
      TaskFinished done;
      done.key = "k-" + std::to_string(i);
      done.stop = clock_ahead + 0.001 * i;
      done.start = done.stop - 0.0005;
      done.thread = 0;
      events.push_back(done);
    }
    c->send(wire::batch_message(wire::kWorkerEvents, events)).get();
  };
  ClientOptions copt;
  copt.token = so.token;
  Client client(sched.address(), copt);
  const auto gone = fake("ahead", 31001);
  finish(gone, 2, 1000.0);
  ASSERT_TRUE(wait_until([&] { return sched.task_stream_offset_count() == 1; }, 5))
      << sched.task_stream_offset_count() << " offsets, " << client.get_task_stream().size() << " bars";
  gone->close();
  ASSERT_TRUE(wait_until([&] { return sched.workers().empty(); }, 5));
  auto other = fake("other", 31002);
  finish(other, 3, 5.0);  // the ring: 2 bars of the departed worker, 3 of this one
  ASSERT_TRUE(wait_until([&] { return client.get_task_stream().size() == 5; }, 5));
  const double t = client.scheduler_info().uptime;
  for (const auto& e : client.get_task_stream()) {
    // On the scheduler's clock: at most now, not 1000 s ahead.
    EXPECT_LE(e.stop, t + 0.5) << e.worker << " " << e.key;
    EXPECT_GE(e.stop, -0.5) << e.worker << " " << e.key;
  }
  EXPECT_EQ(sched.task_stream_offset_count(), 2u) << "the departed worker's offset is kept while its bars are";
  finish(other, 3, 5.0);  // fills the ring (6), then wraps: the departed worker's two bars leave
  ASSERT_TRUE(wait_until([&] { return sched.task_stream_offset_count() == 1; }, 5))
      << sched.task_stream_offset_count() << " offsets kept";
  for (const auto& e : client.get_task_stream()) EXPECT_EQ(e.worker, "tcp://127.0.0.1:31002");
  other->close();
  client.close();
}

TEST(TaskStreamJson, QueryParametersAndRenderings) {
  EXPECT_EQ(query_parameter("/x?since=5&limit=10", "since"), "5");
  EXPECT_EQ(query_parameter("/x?since=5&limit=10", "limit"), "10");
  EXPECT_EQ(query_parameter("/x?since=5&limit=10", "tail"), std::nullopt);
  EXPECT_EQ(query_parameter("/x", "since"), std::nullopt);
  EXPECT_EQ(query_parameter("/x?flag&since=", "flag"), "");

  TaskStreamRing ring;
  ring.push("add-1", "add", "tcp://a:1", 1, 2.0, 2.5, 80);
  auto j = nlohmann::json::parse(task_stream_json(ring.since(0, 10), 0));
  ASSERT_EQ(j["tasks"].size(), 1u);
  EXPECT_EQ(j["tasks"][0]["key"], "add-1");
  EXPECT_EQ(j["tasks"][0]["prefix"], "add");
  EXPECT_EQ(j["tasks"][0]["worker"], "tcp://a:1");
  EXPECT_EQ(j["tasks"][0]["thread"], 1);
  EXPECT_EQ(j["tasks"][0]["nbytes"], 80);
  EXPECT_EQ(j["next"], 1);
  EXPECT_EQ(j["newest"], 1);
  auto past = nlohmann::json::parse(task_stream_json(ring.since(7, 10), 7));
  EXPECT_EQ(past["next"], 1) << "a since beyond the newest (a restarted scheduler) starts again from the newest";

  SchedulerSnapshot s;
  std::vector<std::size_t> counts(static_cast<std::size_t>(TaskStatus::Forgotten) + 1, 0);
  counts[static_cast<std::size_t>(TaskStatus::Memory)] = 3;
  counts[static_cast<std::size_t>(TaskStatus::Processing)] = 2;
  s.by_op = {{"add", counts}};
  s.tasks_finished = 9;
  s.clients = 2;
  auto p = nlohmann::json::parse(progress_json(s));
  EXPECT_EQ(p["finished"], 9);
  EXPECT_EQ(p["clients"], 2);
  ASSERT_EQ(p["prefixes"].size(), 1u);
  EXPECT_EQ(p["prefixes"][0]["name"], "add");
  EXPECT_EQ(p["prefixes"][0]["memory"], 3);
  EXPECT_EQ(p["prefixes"][0]["processing"], 2);
  EXPECT_EQ(p["prefixes"][0]["erred"], 0);
  EXPECT_EQ(p["prefixes"][0]["total"], 5);
}

TEST(TaskStreamCluster, RecordsWhatRanWhereAndServesIt) {
  StreamCluster cluster(2);
  const int port = port_of(cluster.sched->dashboard_url());
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const std::uint64_t before = client.task_stream_position();

  std::vector<std::int64_t> xs(24);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<std::int64_t>(i);
  const std::string report = (std::filesystem::temp_directory_path() / ("ts-report-" + std::to_string(::getpid()) + ".html")).string();
  std::vector<TypedFuture<std::int64_t>> fs;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  {
    PerformanceReport rep(client, report, "task stream test");
    fs = client.map(ts_nap, xs);
    ProgressBarOptions po;
    po.fd = pipe_fds[1];
    po.width = 20;
    progress(std::vector<Future>(fs.begin(), fs.end()), po);
    ::close(pipe_fds[1]);
    for (auto& f : fs) EXPECT_TRUE(f.done());
  }
  // What progress() drew: redraws after '\r', the last one complete and ended by a newline.
  std::string drawn;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) drawn.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  ASSERT_FALSE(drawn.empty());
  EXPECT_EQ(drawn.back(), '\n');
  std::string last = drawn.substr(drawn.rfind('\r') + 1);
  EXPECT_EQ(last.rfind("[" + std::string(20, '#') + "] | 100% Completed |", 0), 0u) << last;

  // get_task_stream: every task once, on both workers, each on one of its 2 threads, and the
  // bars of one thread never overlap (one thread runs one task at a time).
  auto stream = client.get_task_stream(before);
  ASSERT_EQ(stream.size(), xs.size());
  std::set<std::string> keys, on;
  std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> lanes;
  for (const auto& e : stream) {
    keys.insert(e.key);
    on.insert(e.worker);
    EXPECT_EQ(e.prefix, "task_stream_test.nap");
    EXPECT_TRUE(e.thread == 0 || e.thread == 1) << e.thread;
    EXPECT_GE(e.stop - e.start, 0.015) << e.key;
    lanes[{e.worker, e.thread}].push_back({e.start, e.stop});
  }
  EXPECT_EQ(keys.size(), xs.size());
  EXPECT_EQ(on.size(), 2u) << "both workers ran tasks";
  for (auto& [lane, bars] : lanes) {
    std::sort(bars.begin(), bars.end());
    for (std::size_t i = 1; i < bars.size(); ++i)
      EXPECT_LE(bars[i - 1].second, bars[i].first + 1e-6) << lane.first << " #" << lane.second;
  }
  EXPECT_TRUE(client.get_task_stream(stream.back().id).empty());

  // The same over HTTP, incrementally and as a tail.
  auto j = nlohmann::json::parse(http_get(port, "/api/v1/task-stream?since=" + std::to_string(before)).body);
  ASSERT_EQ(j["tasks"].size(), xs.size());
  EXPECT_EQ(j["next"], stream.back().id);
  EXPECT_EQ(j["tasks"][0]["key"], stream[0].key);
  auto rest = nlohmann::json::parse(http_get(port, "/api/v1/task-stream?since=" + j["next"].dump()).body);
  EXPECT_TRUE(rest["tasks"].empty());
  EXPECT_EQ(rest["next"], j["next"]);
  ASSERT_TRUE(wait_until(
      [&] {
        return nlohmann::json::parse(http_get(port, "/api/v1/task-stream?tail=5").body)["tasks"].size() == 5;
      },
      5, 100));
  EXPECT_EQ(nlohmann::json::parse(http_get(port, "/api/v1/task-stream?limit=2").body)["tasks"].size(), 2u);

  // /api/v1/progress: the 24 results held by the futures.
  nlohmann::json prog;
  ASSERT_TRUE(wait_until(
      [&] {
        prog = nlohmann::json::parse(http_get(port, "/api/v1/progress").body);
        for (const auto& p : prog["prefixes"])
          if (p["name"] == "task_stream_test.nap") return p["memory"] == 24 && p["total"] == 24;
        return false;
      },
      5, 100))
      << prog.dump();
  EXPECT_GE(prog["finished"].get<std::uint64_t>(), xs.size());

  // The workers' table has the disk-spilled bytes from the heartbeat.
  auto w = nlohmann::json::parse(http_get(port, "/api/v1/workers").body);
  for (const auto& x : w["workers"]) EXPECT_EQ(x["spilled"], 0) << x.dump();

  // /status: the page and its script, served from the binary.
  auto page = http_get(port, "/status");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("text/html"), std::string::npos) << page.headers;
  EXPECT_NE(page.body.find("<canvas id=\"stream\""), std::string::npos);
  EXPECT_NE(page.body.find("/api/v1/task-stream"), std::string::npos);
  EXPECT_EQ(page.body.find("http://"), std::string::npos) << "nothing is loaded from elsewhere";
  EXPECT_EQ(page.body.find("https://"), std::string::npos) << "nothing is loaded from elsewhere";

  // The performance report: one bar per task, the operation, and no outside resource.
  std::string html = tessera_test::read_text(report);
  std::size_t bars = 0;
  for (auto p = html.find("<rect class=\"task\""); p != std::string::npos; p = html.find("<rect class=\"task\"", p + 1))
    ++bars;
  EXPECT_EQ(bars, xs.size());
  EXPECT_NE(html.find("task_stream_test.nap"), std::string::npos);
  EXPECT_NE(html.find("<td>tasks</td><td>24</td>"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  std::filesystem::remove(report);
}

TEST(TaskStreamCluster, ShowsTransfersBetweenWorkers) {
  StreamCluster cluster(1);
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  const std::uint64_t before = client.task_stream_position();
  std::vector<std::int64_t> xs(8);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<std::int64_t>(i);
  auto fs = client.map(ts_nap, xs);
  client.gather(fs);
  // Every pair: some inputs of each sum live on the other worker.
  std::vector<TypedFuture<std::int64_t>> sums;
  for (std::size_t i = 0; i < fs.size(); ++i)
    for (std::size_t j = i + 1; j < fs.size(); ++j) sums.push_back(client.submit(ts_add, fs[i], fs[j]));
  client.gather(sums);

  std::set<std::string> addresses;
  for (const auto& w : cluster.workers) addresses.insert(w->address());
  std::size_t tasks = 0, transfers = 0;
  for (const auto& e : client.get_task_stream(before)) {
    if (e.prefix != "transfer") {
      ++tasks;
      EXPECT_GE(e.thread, 0);
      continue;
    }
    if (e.key == client.id()) continue;  // the gathers: results sent to this client (below)
    ++transfers;
    EXPECT_EQ(e.thread, -1) << "a transfer is not on an execution thread";
    EXPECT_TRUE(addresses.count(e.key)) << "the key of a transfer is the peer: " << e.key;
    EXPECT_NE(e.key, e.worker) << "fetched from the other worker";
    EXPECT_GT(e.nbytes, 0u);
    EXPECT_GE(e.stop, e.start);
  }
  EXPECT_EQ(tasks, xs.size() + sums.size());
  EXPECT_GE(transfers, 1u) << "sums of results on both workers fetch some";
  // The workers' transfer totals reach the scheduler with their heartbeats.
  std::size_t received = 0, sent = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        received = sent = 0;
        for (const auto& w : client.scheduler_info().workers) {
          received += w.bytes_received;
          sent += w.bytes_sent;
        }
        return received > 0 && sent >= received;
      },
      5, 50))
      << "received " << received << ", sent " << sent;
  std::string html = performance_report_html(client.get_task_stream(before), "transfers", 1);
  EXPECT_NE(html.find("transfers</text>"), std::string::npos) << "a row for each worker's transfers";
}

// A client's gather: each get-data reply a worker sends it is a transfer bar on that worker's
// transfer row (thread -1), the client's id as the key, with the bytes of the results it carried.
TEST(TaskStreamCluster, ShowsResultsFetchedByTheClient) {
  StreamCluster cluster(2);
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  std::set<std::string> addresses;
  for (const auto& w : cluster.workers) addresses.insert(w->address());
  const std::uint64_t before = client.task_stream_position();
  constexpr std::size_t kResults = 16;
  std::vector<TypedFuture<Block>> fs;
  for (std::size_t i = 0; i < kResults; ++i)  // 8 KiB each, every one a different size
    fs.push_back(client.submit(ts_block, static_cast<std::int64_t>(1024 + i)));
  ASSERT_TRUE(wait(std::vector<Future>(fs.begin(), fs.end()), 30s));
  // The tasks' own bars first: the clock shift of each worker settles, and what they made.
  std::map<std::string, double> last_stop;  // per worker
  std::size_t result_bytes = 0;
  for (const auto& e : client.get_task_stream(before)) {
    ASSERT_NE(e.prefix, "transfer") << "nothing was fetched yet: " << e.key;
    last_stop[e.worker] = std::max(last_stop[e.worker], e.stop);
    result_bytes += e.nbytes;
  }
  ASSERT_EQ(result_bytes, (1024 * kResults + kResults * (kResults - 1) / 2) * sizeof(double));
  const std::uint64_t after_tasks = client.task_stream_position();

  auto blocks = client.gather(fs);
  ASSERT_EQ(blocks.size(), kResults);
  std::vector<TaskStreamEntry> bars;
  std::size_t bar_bytes = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        bars.clear();
        bar_bytes = 0;
        for (auto& e : client.get_task_stream(after_tasks))
          if (e.prefix == "transfer" && e.key == client.id()) {
            bar_bytes += e.nbytes;
            bars.push_back(e);
          }
        return bar_bytes >= result_bytes;
      },
      5, 20))
      << bars.size() << " bars, " << bar_bytes << " of " << result_bytes << " bytes";
  EXPECT_EQ(bar_bytes, result_bytes) << "every result sent once, its bytes in a bar";
  EXPECT_GE(bars.size(), last_stop.size()) << "at least one reply from each worker that ran tasks";
  EXPECT_LE(bars.size(), kResults) << "one bar per reply, a reply carrying one or more results";
  for (const auto& e : bars) {
    EXPECT_TRUE(addresses.count(e.worker)) << "on the serving worker's row: " << e.worker;
    EXPECT_EQ(e.thread, -1) << "the transfer row, not an execution thread";
    EXPECT_GT(e.nbytes, 0u);
    EXPECT_GE(e.stop, e.start);
    EXPECT_LT(e.stop - e.start, 5.0);
    EXPECT_GE(e.start, last_stop[e.worker] - 1e-6) << "sent after the worker computed it";
  }
}

// progress() over futures of which some erred: the erred share apart ('X'), "N erred", and no
// clean "100% Completed" at the end; a ProgressBar fed by report_progress says the same.
TEST(TaskStreamCluster, ProgressShowsErredFutures) {
  StreamCluster cluster(2);
  Client client(cluster.sched->address(), tessera_test::client_options());
  ASSERT_TRUE(client.wait_for_workers(2, 10s));
  std::vector<std::int64_t> xs(12);  // 0, 3, 6, 9 raise: 8 finish, 4 err
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<std::int64_t>(i);
  auto fs = client.map(ts_nap_or_raise, xs);
  std::vector<Future> futures(fs.begin(), fs.end());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ProgressBarOptions po;
  po.fd = pipe_fds[1];
  po.width = 12;
  progress(futures, po);
  {
    ProgressBar bar(po);  // through an ExecutionObserver: task_finished / task_erred per future
    report_progress(futures, *execution_observer(), 0.01);
  }
  ::close(pipe_fds[1]);
  const std::string drawn = read_all(pipe_fds[0]);
  ::close(pipe_fds[0]);
  std::vector<std::string> finals;
  for (std::size_t from = 0, nl; (nl = drawn.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string line = drawn.substr(from, nl - from);
    finals.push_back(line.substr(line.rfind('\r') + 1));
  }
  ASSERT_EQ(finals.size(), 2u) << drawn;
  for (const auto& f : finals) {
    EXPECT_EQ(f.rfind("[########XXXX] |  66% Completed | 4 erred | ", 0), 0u) << f;
    EXPECT_EQ(f.find("100%"), std::string::npos) << f;
  }
  EXPECT_EQ(drawn.find("100% Completed"), std::string::npos) << drawn;
}

TEST(PerformanceReportHtml, EscapesKeysAndSurvivesAnEmptyStream) {
  TaskStreamEntry e;
  e.id = 1;
  e.key = "<x&y>";
  e.prefix = "op\"q";
  e.worker = "tcp://w:1";
  e.thread = 0;
  e.start = 1;
  e.stop = 2;
  std::string html = performance_report_html({e}, "t<", 1.5);
  EXPECT_EQ(html.find("<x&y>"), std::string::npos);
  EXPECT_NE(html.find("&lt;x&amp;y&gt;"), std::string::npos);
  EXPECT_NE(html.find("op&quot;q"), std::string::npos);
  std::string empty = performance_report_html({}, "nothing", 0);
  EXPECT_NE(empty.find("<td>tasks</td><td>0</td>"), std::string::npos);
}

}  // namespace
