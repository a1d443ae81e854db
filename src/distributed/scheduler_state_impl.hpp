#pragma once
/**
 * @file Private: the records and the machine behind SchedulerState, shared by its files:
 * scheduler_state.cpp (the public class, stimulus ids, queries), scheduler_state_placement.cpp
 * (choosing a worker, assigning), scheduler_state_transitions.cpp (the transitions table and its
 * handlers), scheduler_state_stealing.cpp, scheduler_state_events.cpp (one handler per event),
 * scheduler_state_story.cpp (the transition log) and scheduler_state_invariants.cpp. Not
 * installed.
 */
#include <array>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tessera/distributed/scheduler_state.hpp"

namespace tessera::distributed::detail {

using Id = std::int32_t;
inline constexpr Id kNone = -1;

/** A dependent edge; `inc` detects a slot reused after the dependent was forgotten. */
struct DepRef {
  Id id;
  std::uint32_t inc;
};

struct TaskRec {
  Key key;
  std::shared_ptr<const Task> spec;
  TaskStatus state = TaskStatus::Forgotten;
  std::uint32_t inc = 0;
  Priority priority;
  std::int32_t op = -1;
  std::vector<Id> deps;            // alive as long as this task is (a task with dependents is never forgotten)
  std::vector<DepRef> dependents;  // may hold stale entries (check inc)
  std::int32_t n_dependents = 0;   // alive dependents
  std::int32_t waiting_on = 0;     // Waiting: dependencies not in memory
  std::int32_t waiters = 0;        // dependents registered as needing this task's value
  bool registered = false;         // counted in its dependencies' waiters
  bool root = false;               // no dependencies, resources or restrictions: subject to queuing
  bool restricted = false;
  bool loose = false;              // allow_other_workers
  bool pinned = false;             // placed by PinTasks (a shuffle's unpack): never stolen
  std::vector<Id> who_wants;       // clients
  std::vector<Id> who_has;         // workers
  Id processing_on = kNone;
  std::int32_t proc_index = -1;
  double est = 0;                  // estimated duration charged to processing_on
  Id steal_thief = kNone;
  bool steal_refused = false;      // the current worker refused once (already running it)
  std::size_t nbytes = 0;
  std::string type;
  int retries = 0;
  int suspicious = 0;
  std::vector<std::pair<std::int32_t, double>> resources;
  std::string exception, traceback;
  Key blame;  // the task that raised
};

struct WorkerRec {
  std::string address, name;
  int nthreads = 1;
  std::size_t memory_limit = 0, memory = 0, nbytes = 0;
  std::vector<double> res_total, res_used;  // by resource id
  std::vector<char> ops;                    // by op id
  std::vector<Id> processing;
  std::unordered_set<Id> has_what;
  double occupancy = 0;
  Time last_seen = 0;
  bool alive = false, paused = false;
  bool silent = false;  // no heartbeat for worker_silent: no new tasks until it is heard from
  // Tasks taken from it when it turned silent (evacuate_silent): a result it reports for one
  // after waking is dropped (it was told to free it), not counted as a copy it holds.
  std::unordered_set<Key> evacuated;
  bool retiring = false;  // RetireWorkers: no new tasks; its data moves elsewhere, then it closes
  bool closing = false;   // retired: CloseWorker sent, its RemoveWorker is to come
  int steal_incoming = 0;
  bool running() const { return alive && !paused && !silent && !retiring && !closing; }
};

struct ClientRec {
  std::string name;
  std::unordered_set<Id> wants;
  bool alive = false;
};

/** A recommendation: move task `id` toward `target`; `inc` drops it if the slot was reused. */
struct Rec {
  Id id;
  TaskStatus target;
  Id cause;
  std::uint32_t inc;
};

using PrioKey = std::pair<Priority, Id>;

/**
 * The last `capacity` state changes of every task, oldest first, in one ring (Dask's
 * transition_log), and the stimulus ids of the events that made them in another: a change
 * refers to its event by number, so an event that moves many tasks stores its id once. Slots
 * are overwritten in place, so their strings keep their buffers and a full ring records
 * without allocating.
 */
class TransitionLog {
 public:
  void set_capacity(std::size_t n) { capacity_ = n; }
  /** The id of event number `event`; called before the event's first record. */
  void name_event(std::uint64_t event, std::string_view stimulus);
  void record(const Key& key, TaskStatus from, TaskStatus to, std::uint64_t event, Time time);
  /** The records of `key`, oldest first. */
  std::vector<TransitionRecord> story(const Key& key) const;

 private:
  struct Change {
    Key key;
    TaskStatus from, to;
    std::uint64_t event;
    Time time;
  };
  struct Event {
    std::uint64_t number;
    std::string stimulus;
  };
  // Every change refers to one of the last `capacity_` events named (each named event has a
  // change), so the events ring never drops a stimulus a kept change needs.
  template <typename T>
  struct Ring {
    std::vector<T> slots;
    std::size_t next = 0;  // the oldest slot once full
    T& push(std::size_t capacity) {
      if (slots.size() < capacity) return slots.emplace_back();
      T& t = slots[next];
      next = next + 1 == capacity ? 0 : next + 1;
      return t;
    }
    const T& at(std::size_t i) const { return slots[(next + i) % slots.size()]; }  // 0 = oldest
  };
  Ring<Change> changes_;
  Ring<Event> events_;
  std::size_t capacity_ = 0;
};

/** [from][to]: the state changes the transitions table allows (scheduler_state_transitions.cpp). */
using StateChanges = std::array<std::array<bool, static_cast<std::size_t>(TaskStatus::Forgotten) + 1>,
                                static_cast<std::size_t>(TaskStatus::Forgotten) + 1>;
extern const StateChanges kStateChanges;

/** Prints a story one transition a line, for error messages. */
std::string format_story(const Key& key, const std::vector<TransitionRecord>& story);

class SchedulerStateImpl {
 public:
  explicit SchedulerStateImpl(SchedulerConfig config);

  /** Applies one event (SchedulerState::handle). */
  void handle(SchedulerEvent& event, std::vector<SchedulerAction>& out);

  SchedulerConfig cfg;
  std::vector<SchedulerAction>* out = nullptr;
  Time now = 0;
  std::int64_t generation = 0;

  std::vector<TaskRec> tasks;
  std::vector<Id> free_ids;
  std::unordered_map<Key, Id> key_ids;
  std::size_t n_alive_tasks = 0;

  std::vector<WorkerRec> workers;
  std::unordered_map<std::string, Id> worker_by_address, worker_by_name;
  std::vector<Id> free_worker_ids;  // slots of departed workers, reused (remove_worker)
  std::size_t n_alive_workers = 0;
  std::set<std::pair<double, Id>> by_load;  // running workers by occupancy per thread

  std::vector<ClientRec> clients;
  std::unordered_map<std::string, Id> client_ids;
  std::vector<Id> free_client_ids;  // slots of departed clients, reused (no record per client ever seen)

  std::unordered_map<std::string, std::int32_t> op_ids, res_ids;
  std::vector<std::string> op_names, res_names;
  std::vector<int> op_alive_workers;  // alive workers advertising each op
  std::vector<double> op_duration;    // running mean, < 0 = unmeasured
  std::vector<std::int64_t> op_samples;

  std::set<PrioKey> root_queue, constrained_queue;
  std::set<Id> no_worker;

  std::deque<Rec> recs;  // FIFO: tasks are assigned in the order they became runnable
  std::vector<Id> fill_pending;
  std::unordered_map<Id, std::vector<Key>> free_batch;  // worker -> keys, flushed per event

  TransitionLog transition_log;

  std::size_t n_retiring = 0;  // alive workers with `retiring` set
  // Retirement's copies asked for: task -> (recipient, when asked); asked again when the
  // recipient left or after kReplicaRetry seconds.
  std::unordered_map<Id, std::pair<Id, Time>> replica_requests;

  // ---- stimulus ids (scheduler_state.cpp) --------------------------------------------------------
  /**
   * The id of the event being handled, e.g. "task-finished-tcp://10.0.0.1:9000-42": the event's
   * kind, its sender and the event's sequence number. Built on first use: most heartbeats and
   * ticks change no task.
   */
  const std::string& stimulus();
  /** Sets the event that stimulus() describes; `subject` must outlive the event. */
  void begin_event(const char* kind, const std::string* subject);

  // ---- small helpers ---------------------------------------------------------------------------
  void log(std::string topic, std::string msg) {
    out->push_back(LogEvent{now, std::move(topic), std::move(msg)});
  }
  std::int32_t intern(std::unordered_map<std::string, std::int32_t>& m, std::vector<std::string>& names,
                      const std::string& s) {
    auto [it, fresh] = m.try_emplace(s, static_cast<std::int32_t>(names.size()));
    if (fresh) {
      names.push_back(s);
      if (&m == &op_ids) {
        op_alive_workers.push_back(0);
        op_duration.push_back(-1);
        op_samples.push_back(0);
      }
    }
    return it->second;
  }
  Id find_task(const Key& k) const {
    auto it = key_ids.find(k);
    return it == key_ids.end() ? kNone : it->second;
  }
  Id find_worker(const std::string& a) const {
    auto it = worker_by_address.find(a);
    return it == worker_by_address.end() ? kNone : it->second;
  }
  Id client_id(const std::string& name) {
    auto [it, fresh] = client_ids.try_emplace(name, kNone);
    if (fresh) {
      if (free_client_ids.empty()) {
        it->second = static_cast<Id>(clients.size());
        clients.push_back(ClientRec{name, {}, true});
      } else {
        it->second = free_client_ids.back();
        free_client_ids.pop_back();
        clients[it->second] = ClientRec{name, {}, true};
      }
    }
    clients[it->second].alive = true;
    return it->second;
  }
  double load_key(const WorkerRec& w) const { return w.occupancy / w.nthreads; }
  void load_erase(Id wid) { by_load.erase({load_key(workers[wid]), wid}); }
  void load_insert(Id wid) {
    if (workers[wid].running()) by_load.insert({load_key(workers[wid]), wid});
  }
  double duration_estimate(const TaskRec& t) const {
    double d = t.op >= 0 ? op_duration[t.op] : -1;
    return d < 0 ? cfg.default_task_duration : d;
  }
  bool needed(const TaskRec& t) const { return !t.who_wants.empty() || t.waiters > 0; }
  bool forgettable(const TaskRec& t) const {
    return t.who_wants.empty() && t.n_dependents == 0 &&
           (t.state == TaskStatus::Released || t.state == TaskStatus::Erred);
  }
  void recommend(Id id, TaskStatus target, Id cause = kNone) {
    recs.push_back(Rec{id, target, cause, tasks[id].inc});
  }
  /**
   * Every task state change goes through here: it must be one the transitions table allows, and
   * the transition log sees it.
   */
  void set_state(Id id, TaskStatus to) {
    TaskRec& t = tasks[id];
    if (!kStateChanges[static_cast<std::size_t>(t.state)][static_cast<std::size_t>(to)])
      impossible(id, t.state, to, "state change");
    if (cfg.transition_log_length > 0) {
      if (logged_event_ != event_seq_) {
        transition_log.name_event(event_seq_, stimulus());
        logged_event_ = event_seq_;
      }
      transition_log.record(t.key, t.state, to, event_seq_, now);
    }
    t.state = to;
  }
  template <typename F>
  void for_dependents(TaskRec& t, F&& f) {
    // By index: f may append to other tasks' dependents (never to this one's while iterating).
    for (std::size_t i = 0; i < t.dependents.size(); ++i) {
      DepRef r = t.dependents[i];
      TaskRec& d = tasks[r.id];
      if (d.inc != r.inc || d.state == TaskStatus::Forgotten) continue;
      f(r.id, d);
    }
  }
  void compact_dependents(TaskRec& t) {
    if (t.dependents.size() > 8 && t.dependents.size() > 2 * static_cast<std::size_t>(t.n_dependents)) {
      std::erase_if(t.dependents, [&](const DepRef& r) {
        return tasks[r.id].inc != r.inc || tasks[r.id].state == TaskStatus::Forgotten;
      });
    }
  }
  void free_key_on(Id wid, const Key& k) {
    if (wid >= 0 && workers[wid].alive) free_batch[wid].push_back(k);
  }

  // ---- worker capability checks ------------------------------------------------------------------
  bool has_op(const WorkerRec& w, std::int32_t op) const {
    return op >= 0 && static_cast<std::size_t>(op) < w.ops.size() && w.ops[op];
  }
  bool matches_restrictions(const TaskRec& t, const WorkerRec& w) const {
    if (!t.restricted) return true;
    for (const auto& r : t.spec->annotations.workers)
      if (r == w.address || r == w.name) return true;
    return false;
  }
  bool has_resources(const TaskRec& t, const WorkerRec& w, bool free) const {
    for (auto [rid, amount] : t.resources) {
      double total = static_cast<std::size_t>(rid) < w.res_total.size() ? w.res_total[rid] : 0;
      double used = static_cast<std::size_t>(rid) < w.res_used.size() ? w.res_used[rid] : 0;
      if (total < amount) return false;
      if (free && total - used < amount - 1e-9) return false;
    }
    return true;
  }
  bool can_run(const TaskRec& t, const WorkerRec& w, bool strict) const {
    return w.running() && has_op(w, t.op) && (!strict || matches_restrictions(t, w)) &&
           has_resources(t, w, false);
  }

  // ---- placement (scheduler_state_placement.cpp) --------------------------------------------------
  enum class Decision { Assign, Queue, NoWorker };
  int slots(const WorkerRec& w, std::int32_t op = -1) const;
  std::pair<double, std::size_t> objective(const TaskRec& t, Id wid) const;
  Decision decide(TaskRec& t, Id& chosen);
  void assign(Id id, Id wid);
  void unassign(Id id, bool send_free);
  void fill_worker(Id wid);

  // ---- transitions (scheduler_state_transitions.cpp) -----------------------------------------------
  /** Runs recommendations (and fills workers that gained room) until there are none. */
  void run();
  /** Looks the (state, target) pair up in the transitions table; throws Error when not allowed. */
  void transition(const Rec& r);
  /** Throws Error naming the task, both states, the stimulus, with the task's story. */
  [[noreturn]] void impossible(Id id, TaskStatus from, TaskStatus to, const char* what);
  void register_waiter(TaskRec& t);
  void unregister_waiter(TaskRec& t);
  void dequeue(Id id);
  void to_waiting(Id id);
  void schedule(Id id);
  void to_released(Id id);
  void post_release(Id id);
  void to_erred(Id id, Id cause);
  KeyErred erred_message(const TaskRec& t, Id client) const;
  void forget(Id id);
  // Handlers named in the transitions table.
  void released_to_waiting(const Rec& r);
  void released_again(const Rec& r);
  void any_to_released(const Rec& r);
  void ready_to_processing(const Rec& r);
  void any_to_erred(const Rec& r);
  void any_to_forgotten(const Rec& r);
  void overtaken(const Rec& r);

  // ---- work stealing (scheduler_state_stealing.cpp) ----------------------------------------------
  bool stealable(const TaskRec& t, const WorkerRec& thief) const;
  void balance();
  void on(StealResponse& e);

  // ---- event handlers (scheduler_state_events.cpp) -------------------------------------------------
  void on(AddWorker& e);
  void on(RemoveWorker& e);
  void on(Heartbeat& e);
  void on(WorkerStatusChange& e);
  void on(Tick& e);
  void on(AddClient& e);
  void on(RemoveClient& e);
  void on(UpdateGraph& e);
  void on(TaskFinished& e);
  void on(TaskErred& e);
  void on(AddKeys& e);
  void on(RemoveKeys& e);
  void on(MissingData& e);
  void on(ReleaseKeys& e);
  void on(CancelKeys& e);
  void on(RetryKeys& e);
  void on(WorkerGivenUp& e);
  void on(PinTasks& e);        // scheduler_state_shuffle.cpp
  void on(ForgetResults& e);
  void retry_no_worker();

  // ---- retirement and adaptive scaling (scheduler_state_retire.cpp) ------------------------------
  void on(RetireWorkers& e);
  /** Asks for copies of what only retiring workers hold; sends CloseWorker to those done. */
  void advance_retirement();
  void stop_retiring(Id wid, const std::string& why);
  std::vector<std::string> workers_to_close(std::size_t n) const;
  std::size_t adaptive_target(double target_duration) const;
  void remove_worker(Id wid, const std::string& reason, bool safe);
  // A worker turned silent: its tasks that may run elsewhere and its results are taken from it
  // (scheduler_state_silent.cpp); it stays a member until worker_ttl.
  void evacuate_silent(Id wid);
  void drop_want(Id id, Id cid);
  void add_replica(Id id, Id wid);
  void lose_replica(Id id, Id wid);
  /** Sends the FreeKeys batched during the event. */
  void flush();

  // ---- invariants (scheduler_state_invariants.cpp) --------------------------------------------------
  /** Throws Error naming the first inconsistency, with the offending task's story. */
  void check() const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail(Id id, const std::string& what) const;

  std::uint64_t event_seq_ = 0;
  const char* event_kind_ = "";
  const std::string* event_subject_ = nullptr;
  std::uint64_t stimulus_seq_ = 0;  // event_seq_ that stimulus_ was built for (0 = none)
  std::uint64_t logged_event_ = 0;  // the last event named in transition_log
  std::string stimulus_;
};

}  // namespace tessera::distributed::detail
