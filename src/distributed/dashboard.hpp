#pragma once
/**
 * @file The scheduler's and the workers' dashboards: an HttpServer with their endpoints
 * (docs/dashboard.md). They read the server they belong to only through a snapshot function,
 * at most once per snapshot_interval, so scrapes never reach the scheduler's hot path more than
 * a few times a second however many clients poll. Private to libtessera.
 */
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http_server.hpp"
#include "metrics.hpp"
#include "tessera/distributed/task_stream.hpp"

namespace tessera::distributed {

/** @brief Endpoints and how often the served state may be re-read. */
struct DashboardOptions {
  HttpServerOptions http;
  double snapshot_interval = 0.2;  ///< seconds a snapshot is served before a new one is taken
  double event_interval = 0.25;    ///< seconds between server-sent events (/api/v1/events)
};

/**
 * @brief The last snapshot, taken again when older than the interval. Used on the HTTP
 * server's one thread only, so it needs no lock.
 */
template <typename T>
class SnapshotCache {
 public:
  SnapshotCache(std::function<T()> take, double interval_s) : take_(std::move(take)), interval_(interval_s) {}
  const T& get() {
    auto now = std::chrono::steady_clock::now();
    if (!value_ || std::chrono::duration<double>(now - taken_).count() >= interval_) {
      value_ = take_();
      taken_ = now;
    }
    return *value_;
  }

 private:
  std::function<T()> take_;
  double interval_;
  std::optional<T> value_;
  std::chrono::steady_clock::time_point taken_;
};

/** @brief Up to `limit` task-stream entries after `since`, copied under the scheduler's lock. */
using TaskStreamSource = std::function<TaskStreamPage(std::uint64_t since, std::size_t limit)>;

/** @brief The most task-stream bars one server-sent event carries. */
inline constexpr std::uint64_t kEventBars = 500;

/**
 * @brief /health, /metrics, /api/v1/{workers,tasks,progress,task-stream}, the server-sent events
 * of /api/v1/events and the /status page of the scheduler.
 */
class SchedulerDashboard {
 public:
  SchedulerDashboard(DashboardOptions options, std::function<SchedulerSnapshot()> take,
                     TaskStreamSource task_stream = {});
  const std::string& url() const { return server_->url(); }
  int port() const { return server_->port(); }
  /** @brief Stops serving; the snapshot function is never called after it returns. */
  void stop() { server_->stop(); }

  /** @brief Where one viewer of /api/v1/events is in the task stream. */
  struct EventCursor {
    std::uint64_t since = 0;
    std::uint64_t events = 0;
  };

 private:
  HttpResponse route(const HttpRequest& req);
  // The next event for a viewer: workers, progress and the bars new to it, on the HTTP thread.
  std::string next_event(EventCursor& cursor);
  SnapshotCache<SchedulerSnapshot> cache_;
  TaskStreamSource task_stream_;
  double event_interval_;
  std::unique_ptr<HttpServer> server_;
};

/** @brief The value of `name` in a target's query ("/x?since=5&limit=10"), nullopt when absent. */
std::optional<std::string> query_parameter(const std::string& target, const std::string& name);

/** @brief /health, /metrics, the /status page and its /api/v1/{worker,events} of a worker. */
class WorkerDashboard {
 public:
  WorkerDashboard(DashboardOptions options, std::function<WorkerSnapshot()> take);
  const std::string& url() const { return server_->url(); }
  int port() const { return server_->port(); }
  void stop() { server_->stop(); }

 private:
  HttpResponse route(const HttpRequest& req);
  SnapshotCache<WorkerSnapshot> cache_;
  double event_interval_;
  std::unique_ptr<HttpServer> server_;
};

/** @brief The host part of a comm address ("tcp://10.0.0.5:8786" -> "10.0.0.5"); "127.0.0.1" for inproc. */
std::string dashboard_host_of(const std::string& comm_address);

}  // namespace tessera::distributed
