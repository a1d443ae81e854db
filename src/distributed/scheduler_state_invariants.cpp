// check(): recounts everything the scheduler maintains incrementally and names the first
// inconsistency, with the story of the task at fault.
#include <algorithm>
#include <cmath>

#include "tessera/core/error.hpp"
#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

void SchedulerStateImpl::fail(const std::string& what) const {
  throw Error("scheduler invariant violated: " + what);
}

void SchedulerStateImpl::fail(Id id, const std::string& what) const {
  const Key& key = tasks[id].key;
  throw Error("scheduler invariant violated: " + what + "\n" + format_story(key, transition_log.story(key)));
}

void SchedulerStateImpl::check() const {
  std::size_t alive = 0;
  std::vector<int> waiters(tasks.size(), 0), ndeps(tasks.size(), 0);
  std::size_t n_root_q = 0, n_con_q = 0, n_nw = 0;
  for (Id id = 0; id < static_cast<Id>(tasks.size()); ++id) {
    const TaskRec& t = tasks[id];
    if (t.state == TaskStatus::Forgotten) continue;
    alive++;
    const std::string k = t.key + " (" + task_status_name(t.state) + ")";
    if (find_task(t.key) != id) fail(id, "key map does not point at " + k);
    for (Id d : t.deps) {
      if (tasks[d].state == TaskStatus::Forgotten) fail(id, "dependency of " + k + " forgotten");
      ndeps[d]++;
      if (t.registered) waiters[d]++;
    }
    bool should_register = t.state == TaskStatus::Waiting || t.state == TaskStatus::Queued ||
                           t.state == TaskStatus::NoWorker || t.state == TaskStatus::Processing;
    if (t.registered != should_register) fail(id, "waiter registration of " + k);
    if (t.state == TaskStatus::Memory) {
      if (t.who_has.empty()) fail(id, k + " has no holder");
      for (Id w : t.who_has)
        if (!workers[w].alive || !workers[w].has_what.count(id)) fail(id, k + " holder inconsistent");
    } else if (!t.who_has.empty()) {
      fail(id, k + " has holders but is not in memory");
    }
    if (t.state == TaskStatus::Waiting) {
      int n = 0;
      for (Id d : t.deps) n += tasks[d].state != TaskStatus::Memory;
      if (n != t.waiting_on) fail(id, k + " waiting_on " + std::to_string(t.waiting_on) + " != " + std::to_string(n));
      if (n == 0) fail(id, k + " waiting on nothing");
    }
    if (t.state == TaskStatus::Queued || t.state == TaskStatus::NoWorker || t.state == TaskStatus::Processing)
      for (Id d : t.deps)
        if (tasks[d].state != TaskStatus::Memory) fail(id, k + " runnable with dependency not in memory");
    if (t.state == TaskStatus::Processing) {
      if (t.processing_on == kNone || !workers[t.processing_on].alive) fail(id, k + " on no live worker");
      const auto& p = workers[t.processing_on].processing;
      if (t.proc_index < 0 || static_cast<std::size_t>(t.proc_index) >= p.size() || p[t.proc_index] != id)
        fail(id, k + " processing index");
    } else if (t.processing_on != kNone) {
      fail(id, k + " has a worker but is not processing");
    }
    if (t.state == TaskStatus::Queued) {
      const auto& q = t.resources.empty() ? root_queue : constrained_queue;
      if (!q.count({t.priority, id})) fail(id, k + " not in its queue");
      (t.resources.empty() ? n_root_q : n_con_q)++;
    }
    if (t.state == TaskStatus::NoWorker) {
      if (!no_worker.count(id)) fail(id, k + " not in no-worker set");
      n_nw++;
    }
    if (t.state == TaskStatus::Erred && t.exception.empty()) fail(id, k + " erred without exception");
    if ((t.state == TaskStatus::Released || t.state == TaskStatus::Erred) && forgettable(t))
      fail(id, k + " should have been forgotten");
    if (t.state == TaskStatus::Released && needed(t)) fail(id, k + " released but needed");
    if ((t.state == TaskStatus::Memory || should_register) && !needed(t)) fail(id, k + " held or scheduled but unneeded");
    for (Id c : t.who_wants)
      if (!clients[c].wants.count(id)) fail(id, k + " wanted by a client that does not list it");
  }
  for (Id id = 0; id < static_cast<Id>(tasks.size()); ++id) {
    const TaskRec& t = tasks[id];
    if (t.state == TaskStatus::Forgotten) continue;
    if (t.waiters != waiters[id]) fail(id, t.key + " waiters " + std::to_string(t.waiters) + " != " + std::to_string(waiters[id]));
    if (t.n_dependents != ndeps[id]) fail(id, t.key + " dependents count");
  }
  if (alive != n_alive_tasks || alive != key_ids.size()) fail("task count");
  if (n_root_q != root_queue.size() || n_con_q != constrained_queue.size() || n_nw != no_worker.size())
    fail("queue sizes");
  std::size_t running = 0;
  for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
    const WorkerRec& w = workers[wid];
    if (!w.alive) continue;
    if (w.running()) {
      running++;
      if (!by_load.count({load_key(w), wid})) fail("worker " + w.address + " missing from load index");
    }
    double occ = 0;
    std::vector<double> used(w.res_total.size(), 0);
    for (Id id : w.processing) {
      if (tasks[id].processing_on != wid) fail(id, "worker " + w.address + " processing list has " + tasks[id].key);
      occ += tasks[id].est;
      for (auto [rid, a] : tasks[id].resources) used[rid] += a;
    }
    if (std::abs(occ - w.occupancy) > 1e-6 * (1 + occ)) fail("worker " + w.address + " occupancy");
    for (std::size_t r = 0; r < used.size(); ++r) {
      double u = r < w.res_used.size() ? w.res_used[r] : 0;
      if (std::abs(used[r] - u) > 1e-9) fail("worker " + w.address + " resource accounting");
      if (used[r] > w.res_total[r] + 1e-9) fail("worker " + w.address + " over-subscribed " + res_names[r]);
    }
    std::size_t nb = 0;
    for (Id id : w.has_what) {
      nb += tasks[id].nbytes;
      if (std::find(tasks[id].who_has.begin(), tasks[id].who_has.end(), wid) == tasks[id].who_has.end())
        fail(id, "worker " + w.address + " has_what lists " + tasks[id].key);
    }
    if (nb != w.nbytes) fail("worker " + w.address + " nbytes");
  }
  if (running != by_load.size()) fail("load index size");
}

}  // namespace tessera::distributed::detail
