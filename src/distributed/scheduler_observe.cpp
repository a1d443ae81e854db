// What the scheduler reports about itself: scheduler-info, the dashboard snapshot, the task stream.
#include "scheduler_impl.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "util.hpp"
#include "wire.hpp"

namespace tessera::distributed {

std::string Scheduler::Impl::join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

wire::ClusterInfo Scheduler::Impl::info() const {
  wire::ClusterInfo ci;
  ci.address = address;
  ci.id = id;
  ci.uptime = now();
  ci.tasks = state.task_count();
  auto counts = state.status_counts();
  for (std::size_t s = 0; s < counts.size(); ++s)
    if (counts[s]) ci.task_states.push_back({task_status_name(static_cast<TaskStatus>(s)), counts[s]});
  for (auto& w : state.workers()) {
    wire::WorkerInfo wi;
    if (auto it = workers.find(w.address); it != workers.end()) {
      const auto& h = it->second->hello;
      wi.pid = h.pid;
      wi.host = h.host;
      wi.local_directory = h.local_directory;
      wi.extra = h.extra;
      wi.ops = h.add.ops;
      wi.gpus = h.gpus;
      wi.device_memory_limit = h.device_memory_limit;
      wi.device_memory = it->second->device_memory;
      wi.device_spilled_bytes = it->second->device_spilled_bytes;
      wi.spilled = it->second->spilled;
      wi.bytes_received = it->second->bytes_received;
      wi.bytes_sent = it->second->bytes_sent;
      wi.usage = it->second->usage;
    }
    wi.summary = std::move(w);
    ci.workers.push_back(std::move(wi));
  }
  return ci;
}

// What the dashboard serves: the same copy a scheduler-info request gets, taken under the
// lock (the dashboard takes one at most every few hundred milliseconds; the HTTP work happens
// on its own thread, after the lock is released).
SchedulerSnapshot Scheduler::Impl::snapshot() const {
  std::lock_guard lock(mu);
  SchedulerSnapshot s{info(), clients.size(), state.status_counts_by_op(), tasks_finished, task_stream.newest(),
                      state.adaptive_target()};
  s.event_loop_latency = loop_latency;
  s.event_loop_latency_max = loop_latency_max;
  if (finished_samples.size() > 1) {
    const auto& [t0, n0] = finished_samples.front();
    const auto& [t1, n1] = finished_samples.back();
    if (t1 > t0) s.tasks_per_second = static_cast<double>(n1 - n0) / (t1 - t0);
  }
  return s;
}

// Called by the ticker with the lock held, `late` seconds after it was due.
void Scheduler::Impl::record_tick(double t, double late) {
  loop_latency = late;
  // The worst of the last ~10 s: decays so one stall does not show for ever.
  loop_latency_max = std::max(late, loop_latency_max * std::pow(0.5, opt.tick_interval / 2.0));
  finished_samples.emplace_back(t, tasks_finished);
  while (finished_samples.size() > 2 && t - finished_samples.front().first > 3.0) finished_samples.pop_front();
}

// One bar of the task stream: O(1) (a hash lookup and a slot overwritten), under the lock
// this event already holds. Keys a worker only learned (no execution times) are not bars.
void Scheduler::Impl::record_finished(Conn& c, const TaskFinished& x) {
  if (x.stop <= 0 || x.stop < x.start) return;
  ++tasks_finished;
  if (opt.task_stream_length == 0) return;
  if (double offset = now() - x.stop; offset < c.clock_offset) {  // rare: a faster message than any before
    c.clock_offset = offset;
    clock_offsets[c.id] = offset;
  }
  push_bar(c, x.key, state.op_of(x.key), x.thread, x.start, x.stop, x.nbytes);
}

// Every bar goes through here: the offset of a worker whose last bar left the ring is freed,
// and a live worker's comes back with its next bar (two hash lookups, no scan).
void Scheduler::Impl::push_bar(const Conn& c, const std::string& key, const std::string& prefix, int thread, double start,
              double stop, std::size_t nbytes) {
  if (std::isfinite(c.clock_offset) && task_stream.entries_of(c.id) == 0) clock_offsets.emplace(c.id, c.clock_offset);
  if (std::string gone = task_stream.push(key, prefix, c.id, thread, start, stop, nbytes); !gone.empty())
    clock_offsets.erase(gone);
}

// A transfer as a bar of its own: prefix "transfer", the peer it came from as the key, thread
// -1 (a row of its own under the worker's threads on the page).
void Scheduler::Impl::record_transfer(const Conn& c, const wire::TransferDone& x) {
  if (x.stop < x.start || opt.task_stream_length == 0) return;
  push_bar(c, x.peer, kTransferPrefix, -1, x.start, x.stop, x.nbytes);
}

// A page on the scheduler's clock. Called with the lock held.
TaskStreamPage Scheduler::Impl::task_stream_since(std::uint64_t since, std::size_t limit) const {
  TaskStreamPage page = task_stream.since(since, limit);
  const std::string* last = nullptr;
  double offset = 0;
  for (auto& e : page.entries) {
    if (!last || *last != e.worker) {  // runs of one worker are common: one lookup per run
      auto it = clock_offsets.find(e.worker);
      offset = it == clock_offsets.end() ? 0 : it->second;
      last = &e.worker;
    }
    e.start += offset;
    e.stop += offset;
  }
  return page;
}

TaskStreamPage Scheduler::Impl::task_stream_page(std::uint64_t since, std::size_t limit) const {
  std::lock_guard lock(mu);
  return task_stream_since(since, limit);
}

}  // namespace tessera::distributed
