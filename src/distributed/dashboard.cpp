#include "dashboard.hpp"

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

constexpr const char* kSchedulerEndpoints = "/health /metrics /api/v1/workers /api/v1/tasks";
constexpr const char* kWorkerEndpoints = "/health /metrics";

}  // namespace

std::string dashboard_host_of(const std::string& comm_address) {
  auto s = comm_address.find("://");
  if (s == std::string::npos || comm_address.compare(0, s, "inproc") == 0) return "127.0.0.1";
  std::string rest = comm_address.substr(s + 3);
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);
  auto colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  return host.empty() ? "127.0.0.1" : host;
}

SchedulerDashboard::SchedulerDashboard(DashboardOptions options, std::function<SchedulerSnapshot()> take)
    : cache_(std::move(take), options.snapshot_interval) {
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
  if (p == "/") return text(200, std::string("tessera scheduler\nendpoints: ") + kSchedulerEndpoints + "\n");
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
