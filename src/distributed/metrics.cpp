#include "metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "tessera/distributed/scheduler_state.hpp"

namespace tessera::distributed {
namespace {

// A registry per scrape: the values are a snapshot's, so nothing is kept between scrapes, and a
// counter is simply created at its running total (prometheus-cpp counters only go up).
class Metrics {
 public:
  void gauge(const std::string& name, const std::string& help, double value) {
    prometheus::BuildGauge().Name(name).Help(help).Register(registry_).Add({}).Set(value);
  }
  void counter(const std::string& name, const std::string& help, double total) {
    prometheus::BuildCounter().Name(name).Help(help).Register(registry_).Add({}).Increment(total);
  }
  /** One gauge per label value, e.g. tasks{state="memory"}. */
  void gauges(const std::string& name, const std::string& help, const std::string& label,
              const std::vector<std::pair<std::string, double>>& values) {
    auto& family = prometheus::BuildGauge().Name(name).Help(help).Register(registry_);
    for (const auto& [v, x] : values) family.Add({{label, v}}).Set(x);
  }
  std::string text() const { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

 private:
  prometheus::Registry registry_;
};

// Every scheduler task state a task can be seen in (forgotten ones are gone), zeros included,
// so that a query for one state finds a series even when no task is in it.
std::vector<std::pair<std::string, std::size_t>> all_task_states(const wire::ClusterInfo& info) {
  std::map<std::string, std::size_t> have(info.task_states.begin(), info.task_states.end());
  std::vector<std::pair<std::string, std::size_t>> out;
  for (auto s = static_cast<int>(TaskStatus::Released); s < static_cast<int>(TaskStatus::Forgotten); ++s) {
    std::string name = task_status_name(static_cast<TaskStatus>(s));
    auto it = have.find(name);
    out.emplace_back(name, it == have.end() ? 0 : it->second);
  }
  return out;
}

template <typename T>
std::vector<std::pair<std::string, double>> as_doubles(const std::vector<std::pair<std::string, T>>& v) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [k, x] : v) out.emplace_back(k, static_cast<double>(x));
  return out;
}

// NVML's figures; absent (not zero) where there is no NVML or no GPU.
nlohmann::json usage_gpu_json(const ProcessUsage& u) {
  nlohmann::json j = {{"name", u.gpu_name},
                      {"utilization", u.gpu_utilization},
                      {"memory_used", u.gpu_memory_used},
                      {"memory_total", u.gpu_memory_total}};
  // Throughput in bytes per second, each only where NVML gave it.
  for (const auto& [name, value] : {std::pair{"pcie_tx", u.gpu_pcie_tx}, std::pair{"pcie_rx", u.gpu_pcie_rx},
                                    std::pair{"nvlink_tx", u.gpu_nvlink_tx}, std::pair{"nvlink_rx", u.gpu_nvlink_rx}})
    if (value >= 0) j[name] = value;
  return j;
}

}  // namespace

std::string scheduler_metrics_text(const SchedulerSnapshot& s) {
  Metrics m;
  m.gauge("tessera_scheduler_clients", "Number of clients connected", static_cast<double>(s.clients));
  m.gauge("tessera_scheduler_workers", "Number of workers known by scheduler",
          static_cast<double>(s.info.workers.size()));
  m.gauges("tessera_scheduler_tasks", "Number of tasks known by scheduler", "state",
           as_doubles(all_task_states(s.info)));
  double threads = 0, paused = 0;
  for (const auto& w : s.info.workers) {
    threads += w.summary.nthreads;
    paused += w.summary.paused ? 1 : 0;
  }
  m.gauge("tessera_scheduler_worker_threads", "Threads of all workers together", threads);
  m.gauge("tessera_scheduler_workers_paused", "Workers paused near their memory limit", paused);
  m.gauge("tessera_scheduler_uptime_seconds", "Seconds since the scheduler started", s.info.uptime);
  m.counter("tessera_scheduler_tasks_finished_total", "Tasks run so far (transfers not counted)",
            static_cast<double>(s.tasks_finished));
  m.gauge("tessera_scheduler_tasks_per_second", "Tasks finished per second over the last 3 seconds",
          s.tasks_per_second);
  m.gauge("tessera_scheduler_event_loop_latency_seconds",
          "How late the scheduler's periodic tick last ran (its loop or lock was busy)", s.event_loop_latency);
  m.gauge("tessera_scheduler_event_loop_latency_maximum_seconds",
          "The largest tick delay lately (halves every 2 seconds)", s.event_loop_latency_max);
  return m.text();
}

std::string worker_metrics_text(const WorkerSnapshot& s) {
  Metrics m;
  m.gauges("tessera_worker_tasks", "Number of tasks at worker", "state", as_doubles(s.task_states));
  m.gauge("tessera_worker_threads", "Number of worker threads", s.nthreads);
  // Dask's split: managed (results in memory), unmanaged (the rest of the resident process, from
  // the last heartbeat's /proc reading), spilled (results on disk).
  const double managed = static_cast<double>(s.stats.memory_bytes);
  const double rss = static_cast<double>(s.usage.rss);
  m.gauges("tessera_worker_memory_bytes", "Memory breakdown", "type",
           {{"managed", managed},
            {"unmanaged", rss > managed ? rss - managed : 0.0},
            {"spilled", static_cast<double>(s.stats.spilled_bytes)}});
  if (s.usage.cpu >= 0)
    m.gauge("tessera_worker_cpu_percent", "CPU use of the worker process, percent of one core", s.usage.cpu);
  // Only a worker whose GPU NVML answered for has these (none without NVML).
  if (!s.usage.gpu_name.empty()) {
    m.gauge("tessera_gpu_utilization", "GPU utilization, percent (NVML)", s.usage.gpu_utilization);
    m.gauge("tessera_gpu_memory_used_bytes", "GPU memory used on the device (NVML)",
            static_cast<double>(s.usage.gpu_memory_used));
    m.gauge("tessera_gpu_memory_total_bytes", "GPU memory on the device (NVML)",
            static_cast<double>(s.usage.gpu_memory_total));
    // NVDashboard's throughput figures; each only where this driver and GPU give it.
    if (s.usage.gpu_pcie_tx >= 0)
      m.gauge("tessera_gpu_pcie_tx_bytes_per_second", "PCIe bytes per second sent by the GPU (NVML)",
              s.usage.gpu_pcie_tx);
    if (s.usage.gpu_pcie_rx >= 0)
      m.gauge("tessera_gpu_pcie_rx_bytes_per_second", "PCIe bytes per second received by the GPU (NVML)",
              s.usage.gpu_pcie_rx);
    if (s.usage.gpu_nvlink_tx >= 0)
      m.gauge("tessera_gpu_nvlink_tx_bytes_per_second", "NVLink data bytes per second sent, all links (NVML)",
              s.usage.gpu_nvlink_tx);
    if (s.usage.gpu_nvlink_rx >= 0)
      m.gauge("tessera_gpu_nvlink_rx_bytes_per_second", "NVLink data bytes per second received, all links (NVML)",
              s.usage.gpu_nvlink_rx);
  }
  m.gauge("tessera_worker_memory_limit_bytes", "Bytes of results held in memory before spilling (0: no limit)",
          static_cast<double>(s.memory_limit));
  m.gauge("tessera_worker_device_memory_bytes", "Bytes of results held in GPU memory",
          static_cast<double>(s.stats.device_bytes));
  m.counter("tessera_worker_device_spilled_bytes_total", "Bytes of results moved from GPU to host memory",
            static_cast<double>(s.stats.device_spilled_bytes));
  m.counter("tessera_worker_spill_count_total", "Results written to disk", static_cast<double>(s.stats.spilled));
  m.gauge("tessera_worker_transfer_incoming_count", "Number of open data transfers from other workers",
          static_cast<double>(s.transfer_incoming_count));
  m.counter("tessera_worker_transfer_incoming_count_total",
            "Total number of data transfers from other workers since the worker was started",
            static_cast<double>(s.stats.fetches));
  m.counter("tessera_worker_transfer_incoming_bytes_total",
            "Total bytes received from other workers since the worker was started",
            static_cast<double>(s.stats.fetched_bytes));
  m.counter("tessera_worker_transfer_outgoing_count_total",
            "Total number of data transfers to other workers (and clients) since the worker was started",
            static_cast<double>(s.stats.served_requests));
  m.counter("tessera_worker_transfer_outgoing_bytes_total",
            "Total bytes sent to other workers (and clients) since the worker was started",
            static_cast<double>(s.stats.served_bytes));
  m.counter("tessera_worker_tasks_executed_total", "Tasks this worker ran (failed ones included)",
            static_cast<double>(s.stats.executed + s.stats.failed));
  return m.text();
}

std::string workers_json(const wire::ClusterInfo& info) {
  using nlohmann::json;
  json workers = json::array();
  for (const auto& w : info.workers) {
    const auto& s = w.summary;
    json gpus = json::array();
    for (const auto& g : w.gpus)
      gpus.push_back({{"name", g.name},
                      {"uuid", g.uuid},
                      {"pci_bus_id", g.pci_bus_id},
                      {"total_memory", g.total_memory},
                      {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)}});
    workers.push_back({{"address", s.address},
                       {"name", s.name},
                       {"nthreads", s.nthreads},
                       {"memory_limit", s.memory_limit},
                       {"memory", s.memory},
                       {"nbytes", s.nbytes},
                       {"processing", s.processing},
                       {"keys", s.has_what},
                       {"occupancy", s.occupancy},
                       {"paused", s.paused},
                       {"resources", s.resources},
                       {"resources_used", s.resources_used},
                       {"pid", w.pid},
                       {"host", w.host},
                       {"local_directory", w.local_directory},
                       {"extra", w.extra},
                       {"ops", w.ops.size()},
                       {"gpus", std::move(gpus)},
                       {"device_memory_limit", w.device_memory_limit},
                       {"device_memory", w.device_memory},
                       {"device_spilled_bytes", w.device_spilled_bytes},
                       {"spilled", w.spilled},
                       {"bytes_received", w.bytes_received},
                       {"bytes_sent", w.bytes_sent},
                       {"rss", w.usage.rss}});
    if (w.usage.cpu >= 0) workers.back()["cpu"] = w.usage.cpu;
    if (!w.usage.gpu_name.empty()) workers.back()["gpu"] = usage_gpu_json(w.usage);
  }
  json out = {{"num_workers", info.workers.size()}, {"workers", std::move(workers)}};
  return out.dump();
}

std::string tasks_json(const wire::ClusterInfo& info) {
  nlohmann::json states = nlohmann::json::object();
  for (const auto& [name, n] : all_task_states(info)) states[name] = n;
  nlohmann::json out = {{"total", info.tasks}, {"states", std::move(states)}};
  return out.dump();
}

std::string progress_json(const SchedulerSnapshot& s) {
  nlohmann::json prefixes = nlohmann::json::array();
  const auto n_states = static_cast<std::size_t>(TaskStatus::Forgotten);
  for (const auto& [op, counts] : s.by_op) {
    nlohmann::json p = {{"name", op}};
    std::size_t total = 0;
    for (std::size_t st = 0; st < n_states && st < counts.size(); ++st) {
      p[task_status_name(static_cast<TaskStatus>(st))] = counts[st];
      total += counts[st];
    }
    p["total"] = total;
    prefixes.push_back(std::move(p));
  }
  nlohmann::json out = {{"uptime", s.info.uptime},
                        {"finished", s.tasks_finished},
                        {"clients", s.clients},
                        {"tasks_per_second", s.tasks_per_second},
                        {"event_loop_latency", s.event_loop_latency},
                        {"event_loop_latency_max", s.event_loop_latency_max},
                        {"prefixes", std::move(prefixes)}};
  return out.dump();
}

std::string task_stream_json(const TaskStreamPage& page, std::uint64_t since) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& e : page.entries) tasks.push_back(task_stream_entry_json(e));
  // Past the newest (a scheduler that restarted its count): start again from its newest.
  std::uint64_t next = page.entries.empty() ? std::min(since, page.newest) : page.entries.back().id;
  nlohmann::json out = {
      {"newest", page.newest}, {"dropped", page.dropped}, {"next", next}, {"tasks", std::move(tasks)}};
  return out.dump();
}

}  // namespace tessera::distributed

namespace tessera::distributed {

std::string compact_bars_json(const TaskStreamPage& page, std::uint64_t skipped) {
  std::unordered_map<std::string_view, std::size_t> worker_ids, prefix_ids;
  nlohmann::json workers = nlohmann::json::array(), prefixes = nlohmann::json::array(), bars = nlohmann::json::array();
  auto id_of = [](std::unordered_map<std::string_view, std::size_t>& ids, nlohmann::json& names, const std::string& s) {
    auto [it, added] = ids.emplace(s, ids.size());
    if (added) names.push_back(s);
    return it->second;
  };
  auto ms = [](double t) { return std::round(t * 1e4) / 1e4; };
  for (const auto& e : page.entries)
    bars.push_back({id_of(worker_ids, workers, e.worker), e.thread, ms(e.start), ms(e.stop),
                    id_of(prefix_ids, prefixes, e.prefix)});
  // The bars' ids are from+1, from+2, ...: a page that reconnected drops those it has.
  const std::uint64_t from = page.entries.empty() ? page.newest : page.entries.front().id - 1;
  nlohmann::json out = {{"newest", page.newest},       {"from", from}, {"dropped", page.dropped}, {"skipped", skipped},
                        {"workers", std::move(workers)}, {"prefixes", std::move(prefixes)}, {"bars", std::move(bars)}};
  return out.dump();
}

nlohmann::json task_stream_entry_json(const TaskStreamEntry& e) {
  return {{"id", e.id},         {"key", e.key},   {"prefix", e.prefix}, {"worker", e.worker},
          {"thread", e.thread}, {"start", e.start}, {"stop", e.stop},    {"nbytes", e.nbytes}};
}

std::string worker_status_json(const WorkerSnapshot& s) {
  nlohmann::json running = nlohmann::json::array();
  for (const auto& [key, op] : s.running) running.push_back({{"key", key}, {"prefix", op}});
  nlohmann::json states = nlohmann::json::object();
  for (const auto& [name, n] : s.task_states) states[name] = n;
  nlohmann::json out = {{"address", s.address},
                        {"name", s.name},
                        {"scheduler", s.scheduler},
                        {"uptime", s.uptime},
                        {"nthreads", s.nthreads},
                        {"running", std::move(running)},
                        {"states", std::move(states)},
                        {"memory", s.stats.memory_bytes},
                        {"spilled", s.stats.spilled_bytes},
                        {"memory_limit", s.memory_limit},
                        {"rss", s.usage.rss},
                        {"executed", s.stats.executed},
                        {"failed", s.stats.failed},
                        {"bytes_received", s.stats.fetched_bytes},
                        {"bytes_sent", s.stats.served_bytes},
                        {"device_memory", s.stats.device_bytes},
                        {"paused", s.stats.paused}};
  if (s.usage.cpu >= 0) out["cpu"] = s.usage.cpu;
  if (!s.usage.gpu_name.empty()) out["gpu"] = usage_gpu_json(s.usage);
  return out.dump();
}

}  // namespace tessera::distributed
