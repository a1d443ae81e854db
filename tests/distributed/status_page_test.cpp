// The /status page in a real browser: headless Chromium (Debian's chromium) loads it from a
// tessera-scheduler with two tessera-worker processes while a computation runs, and the DOM
// after its scripts ran must list both workers and show task-stream bars. It also takes a
// screenshot (docs/dashboard.png when TESSERA_UPDATE_SCREENSHOT names the repository's docs
// directory). Skips, saying why, without chromium or the binaries.
#include <atomic>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chromium_cdp.hpp"
#include "cluster_fixture.hpp"
#include "http_client.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera_test::Children;
using tessera_test::child_env;

std::string find_chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(p)) return p;
  return {};
}

// Runs chromium headless on `url` with `args`, its output into `out`, under a hard time limit;
// its own temporary profile in `profile` tells its processes apart from any other browser.
void run_chromium(Children& kids, const std::string& chromium, const std::filesystem::path& profile,
                  const std::vector<std::string>& args, const std::string& url, const std::filesystem::path& out) {
  std::string cmd = "exec timeout -s KILL 90 " + chromium +
                    " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
                    " --disable-extensions --user-data-dir=" + profile.string();
  for (const auto& a : args) cmd += " " + a;
  cmd += " " + url + " > " + out.string() + " 2> " + out.string() + ".err";
  pid_t pid = kids.spawn({"/bin/sh", "-c", cmd});
  auto status = kids.wait_exit(pid, 100);
  ASSERT_TRUE(status.has_value()) << "chromium did not finish";
}

// Ends whatever chromium left behind (renderers, zygotes), found by its profile directory.
std::size_t kill_leftovers(const std::filesystem::path& profile) {
  auto left = tessera_test::processes_with(profile.string());
  for (int pid : left) ::kill(pid, SIGKILL);
  return left.size();
}

TEST(StatusPage, ChromiumShowsBothWorkersAndTheTaskStream) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium; scripts/setup.sh)";
  auto bin = tessera_test::build_bin_dir();
  const std::string scheduler = (bin / "tessera-scheduler").string(), worker = (bin / "tessera-worker").string();
  if (!std::filesystem::exists(scheduler) || !std::filesystem::exists(worker))
    GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";

  tessera_test::TempDir dir;
  const auto profile = dir.path() / "chromium-profile";
  const std::string sfile = (dir.path() / "s.json").string();
  Children kids;
  kids.spawn({scheduler, "--port", "0", "--scheduler-file", sfile, "--log-level", "warning", "--dashboard-address",
              "127.0.0.1:0"},
             child_env());
  for (int i = 0; i < 2; ++i)
    kids.spawn({worker, "--scheduler-file", sfile, "--nthreads", "2", "--name", "page-" + std::to_string(i),
                "--death-timeout", "10", "--log-level", "warning"},
               child_env());
  const int port = tessera_test::dashboard_port_from(sfile);
  ASSERT_GT(port, 0);
  auto client = Client::from_scheduler_file(sfile, tessera_test::client_options());
  ASSERT_TRUE(client->wait_for_workers(2, 10s));

  // Results held throughout, so the progress table always has a row (a computation's tasks are
  // forgotten between rounds).
  Array held = (random::normal(3, 0.0, 1.0, {400, 400}, {100, 100}) + 1).persist(*client);
  // Keep the cluster busy while the browser looks: the seed workload, again and again.
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread load([&] {
    while (!stop) {
      (void)tessera_test::seed_expr(1200, 100).compute(*client).item();
      ++rounds;
    }
  });
  // ?events=6: the page's event streams end after 6 events and reconnect, so that virtual time
  // (which stands still while a response is open) moves on.
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/status?events=6";
  const auto dom_file = dir.path() / "dom.html", png = dir.path() / "dashboard.png";
  // Virtual time runs the page's timers for 4 s; its fetches to the live scheduler are real.
  run_chromium(kids, chromium, profile, {"--virtual-time-budget=4000", "--dump-dom"}, url, dom_file);
  run_chromium(kids, chromium, profile,
               {"--virtual-time-budget=4000", "--hide-scrollbars", "--window-size=1280,800",
                "--screenshot=" + png.string()},
               url, dir.path() / "shot.txt");
  stop = true;
  load.join();
  EXPECT_GE(rounds.load(), 1);
  kill_leftovers(profile);
  EXPECT_TRUE(tessera_test::wait_until([&] { return tessera_test::processes_with(profile.string()).empty(); }, 5))
      << "every chromium process is gone";

  const std::string dom = tessera_test::read_text(dom_file);
  ASSERT_FALSE(dom.empty()) << tessera_test::read_text(dom_file.string() + ".err");
  // The workers' table: one row per worker, each with its address.
  auto info = client->scheduler_info();
  ASSERT_EQ(info.workers.size(), 2u);
  std::regex row("<tr class=\"worker-row\" data-address=\"([^\"]+)\">");
  std::set<std::string> rows;
  for (std::sregex_iterator it(dom.begin(), dom.end(), row), end; it != end; ++it) rows.insert((*it)[1]);
  std::set<std::string> want;
  for (const auto& w : info.workers) want.insert(w.address);
  EXPECT_EQ(rows, want) << dom;
  // The task stream drew bars, on the rows of worker threads, with a legend per operation.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<canvas id=\"stream\"[^>]*data-bars=\"([0-9]+)\"[^>]*>")))
      << dom;
  EXPECT_GT(std::stoi(m[1]), 0) << "bars drawn: " << m[0];
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("data-rows=\"([0-9]+)\"")));
  EXPECT_GE(std::stoi(m[1]), 2) << "rows of worker threads";
  EXPECT_NE(dom.find("class=\"stream-prefix\""), std::string::npos) << "a legend entry per operation";
  EXPECT_NE(dom.find("class=\"progress-row\""), std::string::npos) << "progress per operation (16 held)";
  EXPECT_NE(dom.find("<b id=\"n-workers\">2</b>"), std::string::npos);
  EXPECT_NE(dom.find("<b id=\"n-clients\">1</b>"), std::string::npos) << "this test's client";
  EXPECT_NE(dom.find("<span id=\"error\"></span>"), std::string::npos) << "the page reached every endpoint";
  EXPECT_NE(dom.find("<b id=\"transport\">pushed</b>"), std::string::npos) << "updates came as server-sent events";

  // The screenshot: a PNG of the page.
  ASSERT_TRUE(std::filesystem::exists(png)) << tessera_test::read_text(dir.path() / "shot.txt.err");
  const std::string bytes = tessera_test::read_text(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  if (const char* docs = std::getenv("TESSERA_UPDATE_SCREENSHOT"))
    std::filesystem::copy_file(png, std::filesystem::path(docs) / "dashboard.png",
                               std::filesystem::copy_options::overwrite_existing);
}

// The "the page stays responsive with 100,000 tasks in flight": a real browser (over the
// DevTools protocol, in real time) keeps /status open while 100,000 small tasks run on a
// tessera-scheduler with two tessera-worker processes. The page's own measurements (the time
// each update takes it, the bytes pushed) and how fast it answers the test (a Runtime.evaluate
// round trip: its main thread is free) are printed, and bounded.
TEST(StatusPage, StaysResponsiveWith100000TasksInFlight) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium; scripts/setup.sh)";
  auto bin = tessera_test::build_bin_dir();
  const std::string scheduler = (bin / "tessera-scheduler").string(), worker = (bin / "tessera-worker").string();
  if (!std::filesystem::exists(scheduler) || !std::filesystem::exists(worker))
    GTEST_SKIP() << "tessera-scheduler / tessera-worker not built next to the tests";
  tessera_test::TempDir dir;
  const auto profile = dir.path() / "chromium-profile";
  const std::string sfile = (dir.path() / "s.json").string();
  Children kids;
  kids.spawn({scheduler, "--port", "0", "--scheduler-file", sfile, "--log-level", "warning", "--dashboard-address",
              "127.0.0.1:0"},
             child_env());
  for (int i = 0; i < 2; ++i)
    kids.spawn({worker, "--scheduler-file", sfile, "--nthreads", "1", "--name", "busy-" + std::to_string(i),
                "--death-timeout", "30", "--log-level", "warning"},
               child_env());
  const int port = tessera_test::dashboard_port_from(sfile);
  ASSERT_GT(port, 0);
  auto client = Client::from_scheduler_file(sfile, tessera_test::client_options("", 30));
  ASSERT_TRUE(client->wait_for_workers(2, 10s));

  nlohmann::json before, after;
  double worst_answer_ms = 0, seconds = 0;
  std::size_t answers = 0;
  {
    tessera_test::CdpBrowser browser(chromium, profile);
    const std::string session = browser.open("http://127.0.0.1:" + std::to_string(port) + "/status");
    // "null" until the page (not yet the about:blank it replaces) ran its script.
    const std::string figures =
        "!document.getElementById('stream') || !document.body.dataset.updates ? 'null' : JSON.stringify({updates: +document.body.dataset.updates, ms: +document.body.dataset.updateMs, "
        "max: +document.body.dataset.updateMaxMs, bytes: +document.body.dataset.eventBytes, "
        "bars: +document.getElementById('stream').dataset.bars, "
        "finished: +document.getElementById('n-finished').textContent, "
        "transport: document.getElementById('transport').textContent})";
    ASSERT_TRUE(tessera_test::wait_until(
        [&] {
          auto j = nlohmann::json::parse(browser.evaluate(session, figures).get<std::string>());
          return j.is_object() && j["updates"].get<double>() > 0;
        },
        20))
        << "the page got its first update";
    before = nlohmann::json::parse(browser.evaluate(session, figures).get<std::string>());

    std::vector<int> items(100000, 1);
    std::atomic<bool> done{false};
    auto t0 = std::chrono::steady_clock::now();
    std::thread load([&] {
      auto futures = client->map("tessera.identity", items);
      (void)client->gather(futures);
      done = true;
    });
    std::string browser_error;  // the load thread is joined whatever the browser does
    while (!done) {
      auto q0 = std::chrono::steady_clock::now();
      try {
        if (browser_error.empty()) (void)browser.evaluate(session, "1", 10);
      } catch (const std::exception& e) {
        browser_error = e.what();
      }
      worst_answer_ms = std::max(
          worst_answer_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - q0).count());
      ++answers;
      std::this_thread::sleep_for(100ms);
    }
    load.join();
    ASSERT_EQ(browser_error, "");
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::this_thread::sleep_for(1s);  // the last updates
    after = nlohmann::json::parse(browser.evaluate(session, figures).get<std::string>());
  }
  kill_leftovers(profile);
  const double updates = after["updates"].get<double>() - before["updates"].get<double>();
  const double bytes = after["bytes"].get<double>() - before["bytes"].get<double>();
  std::printf("100,000 tasks in %.1f s with /status open: %.0f updates (%.1f/s), last update %.2f ms, worst %.2f ms, "
              "%.1f KiB per update, %.0f bars drawn, worst answer to the test %.0f ms over %zu\n",
              seconds, updates, updates / (seconds + 1), after["ms"].get<double>(), after["max"].get<double>(),
              bytes / std::max(1.0, updates) / 1024, after["bars"].get<double>(), worst_answer_ms, answers);
  RecordProperty("update_max_ms", std::to_string(after["max"].get<double>()));
  RecordProperty("kib_per_update", std::to_string(bytes / std::max(1.0, updates) / 1024));
  EXPECT_EQ(after["transport"], "pushed");
  EXPECT_GE(after["finished"].get<double>(), 100000) << "the page counted the tasks";
  EXPECT_GE(updates, 2 * (seconds - 1)) << "updates kept coming (4 a second are sent)";
  // Bounded payloads: at most kEventBars bars (about 40 bytes each) plus the tables.
  EXPECT_LT(bytes / std::max(1.0, updates), 128 * 1024);
  // Responsive: an update takes the page well under a frame budget of a few frames, and its
  // main thread answers at once (generous bounds: two cores shared with the cluster).
  EXPECT_LT(after["max"].get<double>(), 250) << "ms for the slowest update";
  EXPECT_LT(worst_answer_ms, 1000);
}

}  // namespace
