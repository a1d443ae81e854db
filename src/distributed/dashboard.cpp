#include "dashboard.hpp"

#include <algorithm>
#include <string_view>

#include "status_page.hpp"

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
    "/api/v1/adaptive-target";

// A count from the query; a missing or malformed one is the default (the page never sends one).
std::uint64_t query_count(const std::string& target, const std::string& name, std::uint64_t fallback) {
  auto v = query_parameter(target, name);
  if (!v || v->empty() || v->size() > 19 || v->find_first_not_of("0123456789") != std::string::npos) return fallback;
  return std::stoull(*v);
}

// The most entries one request copies under the scheduler's lock; the page asks for less.
constexpr std::uint64_t kMaxTaskStreamRequest = 10000;
constexpr const char* kWorkerEndpoints = "/health /metrics";

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
    : cache_(std::move(take), options.snapshot_interval), task_stream_(std::move(task_stream)) {
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
  if (p == "/status" || p == "/") {
    HttpResponse r = text(200, std::string(status_page_html()));
    r.content_type = "text/html; charset=utf-8";
    return r;
  }
  return not_found(p, kSchedulerEndpoints);
}

WorkerDashboard::WorkerDashboard(DashboardOptions options, std::function<WorkerSnapshot()> take)
    : cache_(std::move(take), options.snapshot_interval) {
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
  if (p == "/") return text(200, std::string("tessera worker\nendpoints: ") + kWorkerEndpoints + "\n");
  return not_found(p, kWorkerEndpoints);
}

}  // namespace tessera::distributed
