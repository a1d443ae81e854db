// The two events a peer-to-peer shuffle needs from the state machine (docs/dataframe-shuffle.md):
// placing a run's unpack tasks on the workers that receive their shards, and computing a lost
// run's tasks again. The run table itself is the scheduler's (scheduler_shuffle.cpp): these are
// ordinary task-state changes and keep the machine's invariants.
#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

void SchedulerStateImpl::on(PinTasks& e) {
  const std::size_t n = std::min(e.keys.size(), e.workers.size());
  for (std::size_t i = 0; i < n; ++i) {
    Id id = find_task(e.keys[i]);
    if (id == kNone) continue;
    TaskRec& t = tasks[id];
    // A task already handed to a worker (or done) keeps its place: the run it was placed for
    // either finished with it or restarts and pins it again.
    if (t.state == TaskStatus::Processing || t.state == TaskStatus::Memory || t.state == TaskStatus::Erred ||
        t.state == TaskStatus::Forgotten)
      continue;
    auto spec = std::make_shared<Task>(*t.spec);
    spec->annotations.workers = {e.workers[i]};
    spec->annotations.allow_other_workers = true;
    t.spec = std::move(spec);
    t.restricted = true;
    t.loose = true;
    t.pinned = true;  // its shards are on that worker: stealing it would only make it fail
    t.root = false;
  }
}

void SchedulerStateImpl::on(ForgetResults& e) {
  for (const Key& k : e.keys) {
    Id id = find_task(k);
    if (id == kNone || tasks[id].state != TaskStatus::Memory) continue;
    log("task", "forgetting " + k + ": " + e.reason);
    const std::vector<Id> holders = tasks[id].who_has;
    for (Id wid : holders) {
      free_key_on(wid, k);  // the worker drops it too, or it would answer a new compute with it
      lose_replica(id, wid);
    }
  }
}

}  // namespace tessera::distributed::detail
