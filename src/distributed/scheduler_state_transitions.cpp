// Task transitions: one table of every allowed (from, to) task-state transition with its
// handler, as Dask's Scheduler._transitions_table, and the state changes the handlers make.
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
  Handler recommended;  ///< runs a recommendation to `to` of a task in `from`; null: never recommended
  const char* changed_by;  ///< what makes this state change; null: no change (an overtaken recommendation)
};

constexpr auto kRelease = &SchedulerStateImpl::any_to_released;
constexpr auto kSchedule = &SchedulerStateImpl::ready_to_processing;
constexpr auto kErr = &SchedulerStateImpl::any_to_erred;
constexpr auto kForget = &SchedulerStateImpl::any_to_forgotten;
constexpr auto kOvertaken = &SchedulerStateImpl::overtaken;

/**
 * Every transition the scheduler allows. A recommendation (from the FIFO that handlers and
 * events fill) runs the row's `recommended` handler; every state change, whatever makes it,
 * must be a row's `changed_by`. Anything else is a bug: set_state and transition throw naming
 * the task, both states and the stimulus.
 *
 * Recommendations target waiting, processing, released, erred and forgotten only: queued and
 * no-worker are what schedule() decides on the way to processing, and memory comes only from a
 * worker's task-finished. They run in order, so one made earlier in an event can be overtaken
 * by another that moved the task on (two dependents pull the same released dependency to
 * waiting; a task finishes before its recommended release): those rows change nothing.
 */
constexpr Row kTransitions[] = {
    {S::Released, S::Waiting, &SchedulerStateImpl::released_to_waiting, "to_waiting"},
    {S::Released, S::Released, &SchedulerStateImpl::released_again, nullptr},
    {S::Waiting, S::Released, kRelease, "to_released"},
    {S::Queued, S::Released, kRelease, "to_released"},
    {S::NoWorker, S::Released, kRelease, "to_released"},
    {S::Processing, S::Released, kRelease, "to_released"},
    {S::Memory, S::Released, kRelease, "to_released"},
    {S::Erred, S::Released, kRelease, "to_released; retry-keys"},
    {S::Waiting, S::Processing, kSchedule, "schedule: assign"},
    {S::Queued, S::Processing, kSchedule, "schedule: assign; fill_worker"},
    {S::NoWorker, S::Processing, kSchedule, "schedule: assign"},
    {S::Waiting, S::Queued, nullptr, "schedule"},
    {S::NoWorker, S::Queued, nullptr, "schedule"},
    {S::Waiting, S::NoWorker, nullptr, "schedule"},
    {S::Queued, S::NoWorker, nullptr, "schedule"},
    {S::Processing, S::Memory, nullptr, "task-finished"},
    {S::Processing, S::Processing, kOvertaken, "steal-response: moved to the thief"},
    {S::Processing, S::Waiting, kOvertaken, "steal-response: re-decided, the thief left"},
    {S::Released, S::Erred, kErr, "to_erred"},
    {S::Waiting, S::Erred, kErr, "to_erred"},
    {S::Queued, S::Erred, kErr, "to_erred"},
    {S::NoWorker, S::Erred, kErr, "to_erred"},
    {S::Processing, S::Erred, kErr, "to_erred"},
    {S::Released, S::Forgotten, kForget, "forget"},
    {S::Erred, S::Forgotten, kForget, "forget"},
    // Overtaken recommendations: the task is already at or past the target.
    {S::Waiting, S::Waiting, kOvertaken, nullptr},
    {S::Queued, S::Waiting, kOvertaken, nullptr},
    {S::NoWorker, S::Waiting, kOvertaken, nullptr},
    {S::Memory, S::Waiting, kOvertaken, nullptr},
    {S::Erred, S::Waiting, kOvertaken, nullptr},
    {S::Released, S::Processing, kOvertaken, nullptr},
    {S::Memory, S::Processing, kOvertaken, nullptr},
    {S::Erred, S::Processing, kOvertaken, nullptr},
    {S::Memory, S::Erred, kOvertaken, nullptr},
    {S::Erred, S::Erred, kOvertaken, nullptr},
    {S::Waiting, S::Forgotten, kOvertaken, nullptr},
    {S::Queued, S::Forgotten, kOvertaken, nullptr},
    {S::NoWorker, S::Forgotten, kOvertaken, nullptr},
    {S::Processing, S::Forgotten, kOvertaken, nullptr},
    {S::Memory, S::Forgotten, kOvertaken, nullptr},
};

constexpr std::size_t kStates = static_cast<std::size_t>(S::Forgotten) + 1;
using Table = std::array<std::array<Handler, kStates>, kStates>;

// The rows as matrices indexed by (from, to), so a transition costs one lookup.
constexpr Table make_table() {
  Table t{};
  for (const Row& r : kTransitions) t[static_cast<std::size_t>(r.from)][static_cast<std::size_t>(r.to)] = r.recommended;
  return t;
}
constexpr Table kTable = make_table();

constexpr bool rows_unique() {
  for (std::size_t i = 0; i < std::size(kTransitions); ++i)
    for (std::size_t j = i + 1; j < std::size(kTransitions); ++j)
      if (kTransitions[i].from == kTransitions[j].from && kTransitions[i].to == kTransitions[j].to) return false;
  return true;
}
static_assert(rows_unique(), "a (from, to) pair listed twice in kTransitions");

constexpr StateChanges make_changes() {
  StateChanges c{};
  for (const Row& r : kTransitions)
    if (r.changed_by) c[static_cast<std::size_t>(r.from)][static_cast<std::size_t>(r.to)] = true;
  return c;
}

}  // namespace

constinit const StateChanges kStateChanges = make_changes();

void SchedulerStateImpl::impossible(Id id, TaskStatus from, TaskStatus to, const char* what) {
  const Key& key = tasks[id].key;
  throw Error("scheduler: impossible " + std::string(what) + " of task " + key + " from " + task_status_name(from) +
              " to " + task_status_name(to) + " (stimulus " + stimulus() + ")\n" +
              format_story(key, transition_log.story(key)));
}

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
  const TaskStatus from = tasks[r.id].state;
  Handler h = kTable[static_cast<std::size_t>(from)][static_cast<std::size_t>(r.target)];
  if (!h) impossible(r.id, from, r.target, "recommendation");
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
