// Placement: which worker runs a task (decide), handing it over (assign) and taking it back
// (unassign), and giving queued tasks to a worker that has room (fill_worker).
#include <algorithm>
#include <cmath>

#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

// Root tasks a worker may hold at once. Normally nthreads * worker_saturation, as in Dask; for
// an op measured to be much shorter than a scheduler round trip, enough to keep each thread
// busy for root_queue_seconds, or the worker would idle between tasks (capped per thread).
int SchedulerStateImpl::slots(const WorkerRec& w, std::int32_t op) const {
  int base = std::max(1, static_cast<int>(std::ceil(w.nthreads * cfg.worker_saturation)));
  if (op >= 0 && op_samples[op] >= 2 && op_duration[op] > 0 && cfg.root_queue_seconds > 0) {
    double per_thread = std::min(cfg.root_queue_seconds / op_duration[op], static_cast<double>(cfg.max_root_slots));
    base = std::max(base, static_cast<int>(std::ceil(per_thread * w.nthreads)));
  }
  return base;
}

/** Transfer-cost plus queue-time objective; ties broken by bytes stored. */
std::pair<double, std::size_t> SchedulerStateImpl::objective(const TaskRec& t, Id wid) const {
  const WorkerRec& w = workers[wid];
  double comm = 0;
  for (Id d : t.deps) {
    const TaskRec& dt = tasks[d];
    if (std::find(dt.who_has.begin(), dt.who_has.end(), wid) == dt.who_has.end())
      comm += static_cast<double>(dt.nbytes);
  }
  return {w.occupancy / w.nthreads + comm / cfg.bandwidth, w.nbytes};
}

SchedulerStateImpl::Decision SchedulerStateImpl::decide(TaskRec& t, Id& chosen) {
  chosen = kNone;
  auto consider = [&](Id wid, std::pair<double, std::size_t>& best) {
    auto o = objective(t, wid);
    if (chosen == kNone || o < best || (o == best && wid < chosen)) {
      chosen = wid;
      best = o;
    }
  };
  std::pair<double, std::size_t> best{0, 0};
  if (!t.resources.empty()) {
    // A loose restriction (allow_other_workers) still prefers its workers: they are waited for
    // while one of them can run the task at all, and only when none can does any other do. (A
    // shuffle's pinned unpack, a GPU task, must run where its shards are, not on whichever
    // worker has a GPU free first.)
    bool capable = false;
    for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
      const WorkerRec& w = workers[wid];
      if (!can_run(t, w, t.restricted)) continue;
      capable = true;
      if (has_resources(t, w, true)) consider(wid, best);
    }
    if (!capable && t.restricted && t.loose) {
      for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
        const WorkerRec& w = workers[wid];
        if (!can_run(t, w, false)) continue;
        capable = true;
        if (has_resources(t, w, true)) consider(wid, best);
      }
    }
    if (chosen != kNone) return Decision::Assign;
    return capable ? Decision::Queue : Decision::NoWorker;
  }
  if (t.restricted) {
    for (const auto& r : t.spec->annotations.workers) {
      for (auto* m : {&worker_by_address, &worker_by_name}) {
        auto it = m->find(r);
        if (it != m->end() && can_run(t, workers[it->second], true)) consider(it->second, best);
      }
    }
    if (chosen != kNone) return Decision::Assign;
    if (!t.loose) return Decision::NoWorker;
  }
  if (t.root) {
    bool capable = false;
    std::size_t scanned = 0;
    for (auto it = by_load.begin(); it != by_load.end() && scanned < cfg.scan_limit; ++it, ++scanned) {
      const WorkerRec& w = workers[it->second];
      if (!has_op(w, t.op)) continue;
      capable = true;
      if (static_cast<int>(w.processing.size()) < slots(w, t.op)) {
        chosen = it->second;
        return Decision::Assign;
      }
    }
    if (!capable && t.op >= 0 && op_alive_workers[t.op] > 0) {
      // Rare: every worker scanned lacks the op; look at them all.
      for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
        const WorkerRec& w = workers[wid];
        if (!w.running() || !has_op(w, t.op)) continue;
        capable = true;
        if (static_cast<int>(w.processing.size()) < slots(w, t.op)) {
          chosen = wid;
          return Decision::Assign;
        }
      }
    }
    if (capable || (t.op >= 0 && op_alive_workers[t.op] > 0)) return Decision::Queue;
    return Decision::NoWorker;
  }
  // Holders of the dependencies, plus the least occupied capable worker.
  for (Id d : t.deps)
    for (Id wid : tasks[d].who_has)
      if (can_run(t, workers[wid], false)) consider(wid, best);
  std::size_t scanned = 0;
  for (auto it = by_load.begin(); it != by_load.end() && scanned < cfg.scan_limit; ++it, ++scanned) {
    if (can_run(t, workers[it->second], false)) {
      consider(it->second, best);
      break;
    }
  }
  return chosen != kNone ? Decision::Assign : Decision::NoWorker;
}

void SchedulerStateImpl::assign(Id id, Id wid) {
  TaskRec& t = tasks[id];
  WorkerRec& w = workers[wid];
  set_state(id, TaskStatus::Processing);
  if (!w.evacuated.empty()) w.evacuated.erase(t.key);  // asked again: its next result counts
  t.processing_on = wid;
  t.proc_index = static_cast<std::int32_t>(w.processing.size());
  w.processing.push_back(id);
  t.est = duration_estimate(t);
  load_erase(wid);
  w.occupancy += t.est;
  load_insert(wid);
  ComputeTask ct;
  ct.worker = w.address;
  ct.key = t.key;
  ct.task = t.spec;
  ct.priority = t.priority;
  for (auto [rid, amount] : t.resources) {
    if (w.res_used.size() <= static_cast<std::size_t>(rid)) w.res_used.resize(rid + 1, 0);
    w.res_used[rid] += amount;
    ct.resources.emplace(res_names[rid], amount);
  }
  // Frees queued for this worker in this event must arrive before the new work.
  if (auto fb = free_batch.find(wid); fb != free_batch.end() && !fb->second.empty()) {
    out->push_back(FreeKeys{w.address, std::move(fb->second)});
    free_batch.erase(fb);
  }
  ct.who_has.reserve(t.deps.size());
  for (Id d : t.deps) {
    const TaskRec& dt = tasks[d];
    WhoHas wh{dt.key, {}, dt.nbytes};
    wh.workers.reserve(dt.who_has.size());
    for (Id h : dt.who_has) wh.workers.push_back(workers[h].address);
    ct.who_has.push_back(std::move(wh));
  }
  out->push_back(std::move(ct));
}

/** Takes a processing task off its worker (idempotent); the caller sets its next state. */
void SchedulerStateImpl::unassign(Id id, bool send_free) {
  TaskRec& t = tasks[id];
  Id wid = t.processing_on;
  if (wid == kNone) return;
  WorkerRec& w = workers[wid];
  Id last = w.processing.back();
  w.processing[t.proc_index] = last;
  tasks[last].proc_index = t.proc_index;
  w.processing.pop_back();
  load_erase(wid);
  w.occupancy -= t.est;
  if (w.processing.empty()) w.occupancy = 0;
  load_insert(wid);
  for (auto [rid, amount] : t.resources) w.res_used[rid] -= amount;
  if (t.steal_thief != kNone) {
    workers[t.steal_thief].steal_incoming--;
    t.steal_thief = kNone;
  }
  if (send_free) free_key_on(wid, t.key);
  t.processing_on = kNone;
  t.proc_index = -1;
  t.est = 0;
  t.steal_refused = false;
  fill_pending.push_back(wid);
}

/** Gives queued tasks to a worker that has room. */
void SchedulerStateImpl::fill_worker(Id wid) {
  WorkerRec& w = workers[wid];
  if (!w.running()) return;
  // Resource-constrained tasks: any that now fits, in priority order.
  if (!constrained_queue.empty()) {
    std::size_t scanned = 0;
    for (auto it = constrained_queue.begin(); it != constrained_queue.end() && scanned < cfg.scan_limit * 4;) {
      Id id = it->second;
      TaskRec& t = tasks[id];
      ++scanned;
      if (can_run(t, w, t.restricted && !t.loose) && has_resources(t, w, true)) {
        // decide() may still prefer another worker (or none with the resource free).
        Id chosen;
        if (decide(t, chosen) == Decision::Assign) {
          it = constrained_queue.erase(it);
          assign(id, chosen);
        } else {
          break;
        }
      } else {
        ++it;
      }
    }
  }
  std::size_t scanned = 0;
  auto it = root_queue.begin();
  while (it != root_queue.end() && scanned < cfg.scan_limit) {
    Id id = it->second;
    TaskRec& t = tasks[id];
    if (static_cast<int>(w.processing.size()) >= slots(w, t.op)) break;
    if (!has_op(w, t.op)) {
      ++it;
      ++scanned;
      continue;
    }
    it = root_queue.erase(it);
    assign(id, wid);
  }
}

}  // namespace tessera::distributed::detail
