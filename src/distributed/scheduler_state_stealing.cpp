// Work stealing: on Tick, idle workers take unstarted tasks from overloaded ones, through a
// StealRequest the victim may refuse (docs/state-machines.md).
#include <algorithm>

#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

bool SchedulerStateImpl::stealable(const TaskRec& t, const WorkerRec& thief) const {
  return t.steal_thief == kNone && !t.steal_refused && t.resources.empty() && (!t.restricted || t.loose) && !t.pinned &&
         has_op(thief, t.op);
}

void SchedulerStateImpl::balance() {
  std::vector<Id> thieves;
  std::vector<std::pair<int, Id>> victims;  // surplus, worker
  for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
    const WorkerRec& w = workers[wid];
    if (!w.running()) continue;
    int n = static_cast<int>(w.processing.size());
    if (n + w.steal_incoming < w.nthreads) thieves.push_back(wid);
    else if (n > w.nthreads) victims.push_back({n - w.nthreads, wid});
  }
  if (thieves.empty() || victims.empty()) return;
  for (auto& v : victims)
    for (Id id : workers[v.second].processing)
      if (tasks[id].steal_thief != kNone) v.first--;
  for (Id thief_id : thieves) {
    WorkerRec& thief = workers[thief_id];
    while (static_cast<int>(thief.processing.size()) + thief.steal_incoming < thief.nthreads) {
      std::sort(victims.begin(), victims.end(),
                [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
      bool stolen = false;
      for (auto& v : victims) {
        if (v.first <= 0) break;
        const WorkerRec& victim = workers[v.second];
        Id pick = kNone;
        std::size_t scanned = 0;
        for (Id id : victim.processing) {
          if (++scanned > cfg.scan_limit * 4) break;
          const TaskRec& t = tasks[id];
          if (!stealable(t, thief)) continue;
          if (pick == kNone || tasks[pick].priority < t.priority) pick = id;
        }
        if (pick == kNone) continue;
        TaskRec& t = tasks[pick];
        t.steal_thief = thief_id;
        thief.steal_incoming++;
        v.first--;
        out->push_back(StealRequest{victim.address, t.key});
        log("steal", "request " + t.key + " from " + victim.address + " for " + thief.address);
        stolen = true;
        break;
      }
      if (!stolen) break;
    }
  }
}

void SchedulerStateImpl::on(StealResponse& e) {
  Id wid = find_worker(e.worker);
  Id id = find_task(e.key);
  if (id == kNone || wid == kNone) return;
  TaskRec& t = tasks[id];
  if (t.state != TaskStatus::Processing || t.processing_on != wid) {
    log("steal", "stale steal response for " + e.key + " from " + e.worker);
    return;
  }
  if (t.steal_thief == kNone) {
    // The thief left meanwhile (remove_worker forgot the steal). Given up, the task is
    // placed again; kept, it stays where it runs.
    if (!e.accepted) return;
    log("steal", e.worker + " gave up " + t.key + " for a thief that left");
    unassign(id, false);
    set_state(id, TaskStatus::Waiting);
    t.waiting_on = 0;
    recommend(id, TaskStatus::Processing);
    return;
  }
  Id thief = t.steal_thief;
  if (!e.accepted) {
    log("steal", e.worker + " refused to give up " + t.key);
    t.steal_refused = true;
    workers[thief].steal_incoming--;
    t.steal_thief = kNone;
    return;
  }
  unassign(id, false);  // the victim already released it
  if (workers[thief].alive && can_run(t, workers[thief], t.restricted && !t.loose)) {
    log("steal", "moved " + t.key + " from " + e.worker + " to " + workers[thief].address);
    assign(id, thief);
  } else {
    set_state(id, TaskStatus::Waiting);  // re-decided at once
    t.waiting_on = 0;
    recommend(id, TaskStatus::Processing);
  }
}

}  // namespace tessera::distributed::detail
