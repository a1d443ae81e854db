#include "dashboard.hpp"

#include <algorithm>
#include <string_view>

#include "status_page.hpp"
#include "worker_page.hpp"

namespace tessera::distributed {
namespace {

HttpResponse text(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse json(std::string body) {
  HttpResponse r;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

HttpResponse not_found(const std::string& path, const char* endpoints) {
  return text(404, "404 not found: nothing is served at " + path + "\nendpoints: " + endpoints + "\n");
}

constexpr const char* kSchedulerEndpoints =
    "/status /health /metrics /api/v1/workers /api/v1/tasks /api/v1/progress /api/v1/task-stream "
    "/api/v1/adaptive-target /api/v1/events";

// A count from the query; a missing or malformed one is the default (the page never sends one).
std::uint64_t query_count(const std::string& target, const std::string& name, std::uint64_t fallback) {
  auto v = query_parameter(target, name);
  if (!v || v->empty() || v->size() > 19 || v->find_first_not_of("0123456789") != std::string::npos) return fallback;
  return std::stoull(*v);
}

// The most entries one request copies under the scheduler's lock; the page asks for less.
constexpr std::uint64_t kMaxTaskStreamRequest = 10000;
constexpr const char* kWorkerEndpoints = "/status /health /metrics /api/v1/worker /api/v1/events";

// One server-sent event: "data: <json>\n\n" (JSON from dump() has no newline to escape). The
// first also tells EventSource to reconnect after 2 s rather than its default 3 s.
std::string sse(const std::string& json_text, bool first) {
  std::string out;
  out.reserve(json_text.size() + 32);
  if (first) out += "retry: 2000\n";
  out += "data: ";
  out += json_text;
  out += "\n\n";
  return out;
}

// ?max=n ends the stream after n events (EventSource then reconnects): for a browser under
// virtual time (the tests' headless Chromium), which stands still while a response is open.
HttpResponse event_stream(const HttpRequest& req, std::function<std::string()> next, double interval) {
  HttpResponse r;
  r.content_type = "text/event-stream";
  r.next_event = std::move(next);
  r.event_interval = interval;
  r.max_events = static_cast<std::size_t>(query_count(req.target, "max", 0));
  return r;
}

}  // namespace

std::optional<std::string> query_parameter(const std::string& target, const std::string& name) {
  auto q = target.find('?');
  if (q == std::string::npos) return std::nullopt;
  std::size_t pos = q + 1;
  while (pos <= target.size()) {
    auto amp = target.find('&', pos);
    if (amp == std::string::npos) amp = target.size();
    std::string_view pair(target.data() + pos, amp - pos);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) return std::string(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    pos = amp + 1;
  }
  return std::nullopt;
}

std::string dashboard_host_of(const std::string& comm_address) {
  auto s = comm_address.find("://");
  if (s == std::string::npos || comm_address.compare(0, s, "inproc") == 0) return "127.0.0.1";
  std::string rest = comm_address.substr(s + 3);
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);
  auto colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  return host.empty() ? "127.0.0.1" : host;
}

SchedulerDashboard::SchedulerDashboard(DashboardOptions options, std::function<SchedulerSnapshot()> take,
                                       TaskStreamSource task_stream)
    : cache_(std::move(take), options.snapshot_interval),
      task_stream_(std::move(task_stream)),
      event_interval_(options.event_interval) {
  server_ = std::make_unique<HttpServer>(std::move(options.http), [this](const HttpRequest& r) { return route(r); });
}

HttpResponse SchedulerDashboard::route(const HttpRequest& req) {
  const std::string& p = req.path;
  // "ok" as Dask's /health: load balancers and orchestrators match on it.
  if (p == "/health") return text(200, "ok");
  if (p == "/metrics") {
    HttpResponse r = text(200, scheduler_metrics_text(cache_.get()));
    r.content_type = kPrometheusContentType;
    return r;
  }
  if (p == "/api/v1/workers") return json(workers_json(cache_.get().info));
  if (p == "/api/v1/tasks") return json(tasks_json(cache_.get().info));
  if (p == "/api/v1/progress") return json(progress_json(cache_.get()));
  if (p == "/api/v1/adaptive-target") {
    // What a cluster manager outside C++ (a script, an operator) scales to; see docs/distributed.md.
    const SchedulerSnapshot& s = cache_.get();
    return json("{\"target\": " + std::to_string(s.adaptive_target) +
                ", \"workers\": " + std::to_string(s.info.workers.size()) + "}");
  }
  if (p == "/api/v1/task-stream") {
    // Not cached: each viewer asks for what is new to it, a bounded copy.
    std::uint64_t since = query_count(req.target, "since", 0);
    std::uint64_t limit = std::min(query_count(req.target, "limit", kMaxTaskStreamRequest), kMaxTaskStreamRequest);
    // tail=n: only the newest n (a page opened late skips what it would not draw anyway).
    if (auto tail = query_count(req.target, "tail", 0); tail > 0) {
      std::uint64_t newest = cache_.get().stream_newest;
      if (newest > tail) since = std::max(since, newest - tail);
    }
    TaskStreamPage page = task_stream_ ? task_stream_(since, static_cast<std::size_t>(limit)) : TaskStreamPage{};
    return json(task_stream_json(page, since));
  }
  if (p == "/api/v1/events") {
    // Each viewer its own cursor into the task stream; the snapshot is the shared, cached one.
    auto cursor = std::make_shared<EventCursor>();
    return event_stream(req, [this, cursor] { return next_event(*cursor); }, event_interval_);
  }
  if (p == "/status" || p == "/") {
    HttpResponse r = text(200, std::string(status_page_html()));
    r.content_type = "text/html; charset=utf-8";
    return r;
  }
  return not_found(p, kSchedulerEndpoints);
}

std::string SchedulerDashboard::next_event(EventCursor& cursor) {
  const SchedulerSnapshot& s = cache_.get();
  // At most kEventBars new bars per event: when more finished since the last one (tens of
  // thousands of tasks a second), skip to the newest; the page draws recent bars, and the rest
  // stay in /api/v1/task-stream and the client's get_task_stream().
  std::uint64_t since = cursor.since;
  std::uint64_t skipped = 0;
  if (s.stream_newest > since + kEventBars) {
    skipped = s.stream_newest - kEventBars - since;
    since = s.stream_newest - kEventBars;
  }
  TaskStreamPage page = task_stream_ ? task_stream_(since, kEventBars) : TaskStreamPage{};
  cursor.since = page.entries.empty() ? std::min(since, page.newest) : page.entries.back().id;
  const bool first = cursor.events++ == 0;
  std::string out = "{\"workers\":" + workers_json(s.info) + ",\"progress\":" + progress_json(s) +
                    ",\"stream\":" + compact_bars_json(page, skipped) + "}";
  return sse(out, first);
}

WorkerDashboard::WorkerDashboard(DashboardOptions options, std::function<WorkerSnapshot()> take)
    : cache_(std::move(take), options.snapshot_interval), event_interval_(options.event_interval) {
  server_ = std::make_unique<HttpServer>(std::move(options.http), [this](const HttpRequest& r) { return route(r); });
}

HttpResponse WorkerDashboard::route(const HttpRequest& req) {
  const std::string& p = req.path;
  if (p == "/health") return text(200, "ok");
  if (p == "/metrics") {
    HttpResponse r = text(200, worker_metrics_text(cache_.get()));
    r.content_type = kPrometheusContentType;
    return r;
  }
  if (p == "/api/v1/worker") return json(worker_status_json(cache_.get()));
  if (p == "/api/v1/events") {
    auto first = std::make_shared<bool>(true);
    return event_stream(
        req,
        [this, first] {
          bool f = *first;
          *first = false;
          return sse(worker_status_json(cache_.get()), f);
        },
        event_interval_);
  }
  if (p == "/status" || p == "/") {
    HttpResponse r = text(200, std::string(worker_page_html()));
    r.content_type = "text/html; charset=utf-8";
    return r;
  }
  return not_found(p, kWorkerEndpoints);
}

}  // namespace tessera::distributed
