// A worker that stopped answering (no heartbeat for worker_silent: SIGSTOP, a hung host, a cut
// link whose connection has not closed) keeps its place until worker_ttl removes it, but the
// work and data the computation needs from it are taken back at once, so a computation goes
// on without it (docs/state-machines.md, docs/security.md).
#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

void SchedulerStateImpl::evacuate_silent(Id wid) {
  WorkerRec& w = workers[wid];
  // Its tasks: those it may not have started go to the others. The scheduler does not know
  // which it started (at most nthreads), so all that may run elsewhere are taken; the FreeKeys
  // it reads when it wakes drops them, and a result of one it was running is dropped too (a
  // task runs at most twice). Tasks only it may run (resources, strict restrictions) stay.
  std::vector<Id> processing = w.processing;
  std::size_t moved = 0;
  for (Id id : processing) {
    TaskRec& t = tasks[id];
    if (!t.resources.empty() || (t.restricted && !t.loose)) continue;
    unassign(id, true);
    w.evacuated.insert(t.key);
    recommend(id, TaskStatus::Released);  // placed again (elsewhere: it gets nothing while silent)
    moved++;
  }
  // Its results: unreachable while it is stopped (a peer's fetch would wait for it), so they
  // are counted as lost, as when a worker leaves: those still needed are computed again.
  std::vector<Id> held(w.has_what.begin(), w.has_what.end());
  for (Id id : held) {
    TaskRec& t = tasks[id];
    std::erase(t.who_has, wid);
    free_key_on(wid, t.key);
    if (t.who_has.empty() && t.state == TaskStatus::Memory) recommend(id, TaskStatus::Released);
  }
  w.has_what.clear();
  w.nbytes = 0;
  if (moved || !held.empty())
    log("worker", "worker " + w.address + " is silent: " + std::to_string(moved) + " of its tasks go to others, " +
                      std::to_string(held.size()) + " of its results count as lost");
}

}  // namespace tessera::distributed::detail
