// Task transitions: the table of allowed (from, to) recommendations and their handlers, as in
// Dask's Scheduler._transitions_table, and the state changes they make.
#include <algorithm>
#include <array>

#include "tessera/core/error.hpp"
#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {
namespace {

using S = TaskStatus;
using Handler = void (SchedulerStateImpl::*)(const Rec&);

struct Row {
  S from, to;
  Handler handler;
};

/**
 * Every recommendation the scheduler may act on: the task's state when it is applied, the
 * target, the handler. A (from, to) pair not listed is a bug and throws.
 *
 * Targets are only waiting, processing, released, erred and forgotten: queued and no-worker are
 * what schedule() decides on the way to processing, and memory comes only from a worker's
 * task-finished (recorded in the story like every other change).
 *
 * Recommendations run from a FIFO, so one made earlier in an event can be overtaken by another
 * that moved the task on (two dependents both pull a released dependency to waiting; a task
 * finishes before its recommended release). Those rows are listed explicitly as `overtaken`.
 */
constexpr Row kTransitions[] = {
    {S::Released, S::Waiting, &SchedulerStateImpl::released_to_waiting},
    {S::Released, S::Released, &SchedulerStateImpl::released_again},
    {S::Waiting, S::Released, &SchedulerStateImpl::any_to_released},
    {S::Queued, S::Released, &SchedulerStateImpl::any_to_released},
    {S::NoWorker, S::Released, &SchedulerStateImpl::any_to_released},
    {S::Processing, S::Released, &SchedulerStateImpl::any_to_released},
    {S::Memory, S::Released, &SchedulerStateImpl::any_to_released},
    {S::Erred, S::Released, &SchedulerStateImpl::any_to_released},
    {S::Waiting, S::Processing, &SchedulerStateImpl::ready_to_processing},
    {S::Queued, S::Processing, &SchedulerStateImpl::ready_to_processing},
    {S::NoWorker, S::Processing, &SchedulerStateImpl::ready_to_processing},
    {S::Released, S::Erred, &SchedulerStateImpl::any_to_erred},
    {S::Waiting, S::Erred, &SchedulerStateImpl::any_to_erred},
    {S::Queued, S::Erred, &SchedulerStateImpl::any_to_erred},
    {S::NoWorker, S::Erred, &SchedulerStateImpl::any_to_erred},
    {S::Processing, S::Erred, &SchedulerStateImpl::any_to_erred},
    {S::Released, S::Forgotten, &SchedulerStateImpl::any_to_forgotten},
    {S::Erred, S::Forgotten, &SchedulerStateImpl::any_to_forgotten},
    // Overtaken: already at or past the target.
    {S::Waiting, S::Waiting, &SchedulerStateImpl::overtaken},
    {S::Queued, S::Waiting, &SchedulerStateImpl::overtaken},
    {S::NoWorker, S::Waiting, &SchedulerStateImpl::overtaken},
    {S::Processing, S::Waiting, &SchedulerStateImpl::overtaken},
    {S::Memory, S::Waiting, &SchedulerStateImpl::overtaken},
    {S::Erred, S::Waiting, &SchedulerStateImpl::overtaken},
    {S::Released, S::Processing, &SchedulerStateImpl::overtaken},
    {S::Processing, S::Processing, &SchedulerStateImpl::overtaken},
    {S::Memory, S::Processing, &SchedulerStateImpl::overtaken},
    {S::Erred, S::Processing, &SchedulerStateImpl::overtaken},
    {S::Memory, S::Erred, &SchedulerStateImpl::overtaken},
    {S::Erred, S::Erred, &SchedulerStateImpl::overtaken},
    {S::Waiting, S::Forgotten, &SchedulerStateImpl::overtaken},
    {S::Queued, S::Forgotten, &SchedulerStateImpl::overtaken},
    {S::NoWorker, S::Forgotten, &SchedulerStateImpl::overtaken},
    {S::Processing, S::Forgotten, &SchedulerStateImpl::overtaken},
    {S::Memory, S::Forgotten, &SchedulerStateImpl::overtaken},
};

constexpr std::size_t kStates = static_cast<std::size_t>(S::Forgotten) + 1;
using Table = std::array<std::array<Handler, kStates>, kStates>;

// The rows as a matrix indexed by (from, to), so a transition costs one lookup.
constexpr Table make_table() {
  Table t{};
  for (const Row& r : kTransitions) t[static_cast<std::size_t>(r.from)][static_cast<std::size_t>(r.to)] = r.handler;
  return t;
}
constexpr Table kTable = make_table();

}  // namespace

void SchedulerStateImpl::run() {
  while (true) {
    while (!recs.empty()) {
      Rec r = recs.front();
      recs.pop_front();
      TaskRec& t = tasks[r.id];
      if (t.inc != r.inc || t.state == TaskStatus::Forgotten) continue;
      transition(r);
    }
    if (fill_pending.empty()) break;
    std::vector<Id> fills;
    fills.swap(fill_pending);
    std::sort(fills.begin(), fills.end());
    fills.erase(std::unique(fills.begin(), fills.end()), fills.end());
    for (Id wid : fills) fill_worker(wid);
  }
}

void SchedulerStateImpl::transition(const Rec& r) {
  const TaskRec& t = tasks[r.id];
  Handler h = kTable[static_cast<std::size_t>(t.state)][static_cast<std::size_t>(r.target)];
  if (!h) {
    throw Error("scheduler: impossible transition of task " + t.key + " from " + task_status_name(t.state) +
                " to " + task_status_name(r.target) + " (stimulus " + stimulus() + ")\n" +
                format_story(t.key, transition_log.story(t.key)));
  }
  (this->*h)(r);
}

// ---- the handlers in the table ----------------------------------------------------------------------

// A recommendation made while the task was needed may arrive after it stopped being.
void SchedulerStateImpl::released_to_waiting(const Rec& r) {
  if (needed(tasks[r.id])) to_waiting(r.id);
  else post_release(r.id);
}

void SchedulerStateImpl::released_again(const Rec& r) { post_release(r.id); }

void SchedulerStateImpl::any_to_released(const Rec& r) { to_released(r.id); }

void SchedulerStateImpl::ready_to_processing(const Rec& r) {
  const TaskRec& t = tasks[r.id];
  if (t.state == TaskStatus::Waiting && t.waiting_on != 0) return;  // a dependency was lost since
  if (needed(t)) schedule(r.id);
  else to_released(r.id);
}

void SchedulerStateImpl::any_to_erred(const Rec& r) { to_erred(r.id, r.cause); }

void SchedulerStateImpl::any_to_forgotten(const Rec& r) {
  if (forgettable(tasks[r.id])) forget(r.id);
}

void SchedulerStateImpl::overtaken(const Rec&) {}

// ---- state changes ------------------------------------------------------------------------------------

void SchedulerStateImpl::register_waiter(TaskRec& t) {
  if (t.registered) return;
  t.registered = true;
  for (Id d : t.deps) tasks[d].waiters++;
}

void SchedulerStateImpl::unregister_waiter(TaskRec& t) {
  if (!t.registered) return;
  t.registered = false;
  for (Id d : t.deps) {
    TaskRec& dt = tasks[d];
    dt.waiters--;
    if (dt.waiters == 0 && dt.who_wants.empty()) {
      switch (dt.state) {
        case TaskStatus::Memory:
        case TaskStatus::Waiting:
        case TaskStatus::Queued:
        case TaskStatus::NoWorker:
        case TaskStatus::Processing: recommend(d, TaskStatus::Released); break;
        default: break;
      }
    }
  }
}

void SchedulerStateImpl::dequeue(Id id) {
  TaskRec& t = tasks[id];
  if (t.state == TaskStatus::Queued) {
    (t.resources.empty() ? root_queue : constrained_queue).erase({t.priority, id});
  } else if (t.state == TaskStatus::NoWorker) {
    no_worker.erase(id);
  }
}

void SchedulerStateImpl::to_waiting(Id id) {
  TaskRec& t = tasks[id];
  set_state(id, TaskStatus::Waiting);
  register_waiter(t);
  t.waiting_on = 0;
  Id erred_dep = kNone;
  for (Id d : t.deps) {
    TaskRec& dt = tasks[d];
    if (dt.state == TaskStatus::Memory) continue;
    t.waiting_on++;
    if (dt.state == TaskStatus::Erred) erred_dep = d;
    else if (dt.state == TaskStatus::Released) recommend(d, TaskStatus::Waiting);
  }
  if (erred_dep != kNone) recommend(id, TaskStatus::Erred, erred_dep);
  else if (t.waiting_on == 0) recommend(id, TaskStatus::Processing);
}

void SchedulerStateImpl::schedule(Id id) {
  TaskRec& t = tasks[id];
  dequeue(id);
  Id wid;
  switch (decide(t, wid)) {
    case Decision::Assign: assign(id, wid); break;
    case Decision::Queue:
      if (t.state != TaskStatus::Queued) set_state(id, TaskStatus::Queued);
      (t.resources.empty() ? root_queue : constrained_queue).insert({t.priority, id});
      break;
    case Decision::NoWorker:
      if (t.state != TaskStatus::NoWorker) set_state(id, TaskStatus::NoWorker);
      no_worker.insert(id);
      break;
  }
}

void SchedulerStateImpl::to_released(Id id) {
  TaskRec& t = tasks[id];
  switch (t.state) {
    case TaskStatus::Waiting: unregister_waiter(t); break;
    case TaskStatus::Queued:
    case TaskStatus::NoWorker:
      dequeue(id);
      unregister_waiter(t);
      break;
    case TaskStatus::Processing:
      unassign(id, true);
      unregister_waiter(t);
      break;
    case TaskStatus::Memory:
      for (Id wid : t.who_has) {
        WorkerRec& w = workers[wid];
        w.has_what.erase(id);
        w.nbytes -= t.nbytes;
        free_key_on(wid, t.key);
      }
      t.who_has.clear();
      for_dependents(t, [&](Id did, TaskRec& d) {
        if (d.state == TaskStatus::Waiting) d.waiting_on++;
        else if (d.state == TaskStatus::Queued || d.state == TaskStatus::NoWorker ||
                 d.state == TaskStatus::Processing)
          recommend(did, TaskStatus::Released);
      });
      break;
    case TaskStatus::Erred:
      t.exception.clear();
      t.traceback.clear();
      t.blame.clear();
      for_dependents(t, [&](Id did, TaskRec& d) {
        if (d.state == TaskStatus::Erred) recommend(did, TaskStatus::Released);
      });
      break;
    default: break;
  }
  if (t.state != TaskStatus::Released) set_state(id, TaskStatus::Released);
  t.waiting_on = 0;
  post_release(id);
}

void SchedulerStateImpl::post_release(Id id) {
  TaskRec& t = tasks[id];
  if (needed(t)) recommend(id, TaskStatus::Waiting);
  else if (forgettable(t)) recommend(id, TaskStatus::Forgotten);
}

void SchedulerStateImpl::to_erred(Id id, Id cause) {
  TaskRec& t = tasks[id];
  dequeue(id);
  if (t.state == TaskStatus::Processing) unassign(id, true);
  unregister_waiter(t);
  if (cause != id && cause != kNone) {
    const TaskRec& c = tasks[cause];
    t.exception = c.exception;
    t.traceback = c.traceback;
    t.blame = c.blame;
  } else if (t.blame.empty()) {
    t.blame = t.key;
  }
  set_state(id, TaskStatus::Erred);
  t.waiting_on = 0;
  for_dependents(t, [&](Id did, TaskRec& d) {
    if (d.state == TaskStatus::Waiting || d.state == TaskStatus::Queued || d.state == TaskStatus::NoWorker ||
        d.state == TaskStatus::Processing)
      recommend(did, TaskStatus::Erred, id);
  });
  for (Id c : t.who_wants) out->push_back(erred_message(t, c));
  if (forgettable(t)) recommend(id, TaskStatus::Forgotten);
}

KeyErred SchedulerStateImpl::erred_message(const TaskRec& t, Id client) const {
  KeyErred e;
  e.client = clients[client].name;
  e.key = t.key;
  e.cause = t.blame;
  e.message = t.blame == t.key ? "task " + t.key + " failed: " + t.exception
                               : "task " + t.key + " failed because its dependency " + t.blame +
                                     " failed: " + t.exception;
  e.traceback = t.traceback;
  return e;
}

void SchedulerStateImpl::forget(Id id) {
  TaskRec& t = tasks[id];
  for (Id d : t.deps) {
    TaskRec& dt = tasks[d];
    dt.n_dependents--;
    compact_dependents(dt);
    if (dt.n_dependents == 0 && dt.who_wants.empty()) {
      if (dt.state == TaskStatus::Released || dt.state == TaskStatus::Erred)
        recommend(d, TaskStatus::Forgotten);
      else if (dt.state == TaskStatus::Memory && dt.waiters == 0)
        recommend(d, TaskStatus::Released);
    }
  }
  key_ids.erase(t.key);
  set_state(id, TaskStatus::Forgotten);
  t.inc++;
  t.key.clear();
  t.spec.reset();
  t.deps.clear();
  t.dependents.clear();
  t.who_wants.clear();
  t.resources.clear();
  t.exception.clear();
  t.traceback.clear();
  t.blame.clear();
  t.type.clear();
  free_ids.push_back(id);
  n_alive_tasks--;
}

}  // namespace tessera::distributed::detail
