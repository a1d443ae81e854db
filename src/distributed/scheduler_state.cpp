#include "tessera/distributed/scheduler_state.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "tessera/core/error.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera::distributed {

const char* task_status_name(TaskStatus s) noexcept {
  switch (s) {
    case TaskStatus::Released: return "released";
    case TaskStatus::Waiting: return "waiting";
    case TaskStatus::NoWorker: return "no-worker";
    case TaskStatus::Queued: return "queued";
    case TaskStatus::Processing: return "processing";
    case TaskStatus::Memory: return "memory";
    case TaskStatus::Erred: return "erred";
    case TaskStatus::Forgotten: return "forgotten";
  }
  return "?";
}

namespace {

using Id = std::int32_t;
constexpr Id kNone = -1;

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
  int steal_incoming = 0;
  bool running() const { return alive && !paused; }
};

struct ClientRec {
  std::string name;
  std::unordered_set<Id> wants;
  bool alive = false;
};

struct Rec {
  Id id;
  TaskStatus target;
  Id cause;
  std::uint32_t inc;
};

using PrioKey = std::pair<Priority, Id>;

}  // namespace

struct SchedulerState::Impl {
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
  std::size_t n_alive_workers = 0;
  std::set<std::pair<double, Id>> by_load;  // running workers by occupancy per thread

  std::vector<ClientRec> clients;
  std::unordered_map<std::string, Id> client_ids;

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
    auto [it, fresh] = client_ids.try_emplace(name, static_cast<Id>(clients.size()));
    if (fresh) clients.push_back(ClientRec{name, {}, true});
    clients[it->second].alive = true;
    return it->second;
  }
  // Root tasks a worker may hold at once. Normally nthreads * worker_saturation, as in Dask; for
  // an op measured to be much shorter than a scheduler round trip, enough to keep each thread
  // busy for root_queue_seconds, or the worker would idle between tasks (capped per thread).
  int slots(const WorkerRec& w, std::int32_t op = -1) const {
    int base = std::max(1, static_cast<int>(std::ceil(w.nthreads * cfg.worker_saturation)));
    if (op >= 0 && op_samples[op] >= 2 && op_duration[op] > 0 && cfg.root_queue_seconds > 0) {
      double per_thread = std::min(cfg.root_queue_seconds / op_duration[op], static_cast<double>(cfg.max_root_slots));
      base = std::max(base, static_cast<int>(std::ceil(per_thread * w.nthreads)));
    }
    return base;
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
  template <typename F>
  void for_dependents(TaskRec& t, F&& f) {
    // Copy: f may forget tasks and compact nothing, but may append to other vectors.
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
  /** Transfer-cost plus queue-time objective; ties broken by bytes stored. */
  std::pair<double, std::size_t> objective(const TaskRec& t, Id wid) const {
    const WorkerRec& w = workers[wid];
    double comm = 0;
    for (Id d : t.deps) {
      const TaskRec& dt = tasks[d];
      if (std::find(dt.who_has.begin(), dt.who_has.end(), wid) == dt.who_has.end())
        comm += static_cast<double>(dt.nbytes);
    }
    return {w.occupancy / w.nthreads + comm / cfg.bandwidth, w.nbytes};
  }

  enum class Decision { Assign, Queue, NoWorker };

  Decision decide(TaskRec& t, Id& chosen) {
    chosen = kNone;
    bool strict = t.restricted && !t.loose;
    auto consider = [&](Id wid, std::pair<double, std::size_t>& best) {
      auto o = objective(t, wid);
      if (chosen == kNone || o < best || (o == best && wid < chosen)) {
        chosen = wid;
        best = o;
      }
    };
    std::pair<double, std::size_t> best{0, 0};
    if (!t.resources.empty()) {
      bool capable = false;
      for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
        const WorkerRec& w = workers[wid];
        if (!can_run(t, w, strict)) continue;
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

  // ---- assignment ----------------------------------------------------------------------------------
  void assign(Id id, Id wid) {
    TaskRec& t = tasks[id];
    WorkerRec& w = workers[wid];
    t.state = TaskStatus::Processing;
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

  /** Takes a processing task off its worker (idempotent). */
  void unassign(Id id, bool send_free) {
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

  void register_waiter(TaskRec& t) {
    if (t.registered) return;
    t.registered = true;
    for (Id d : t.deps) tasks[d].waiters++;
  }
  void unregister_waiter(TaskRec& t) {
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
  void dequeue(Id id) {
    TaskRec& t = tasks[id];
    if (t.state == TaskStatus::Queued) {
      (t.resources.empty() ? root_queue : constrained_queue).erase({t.priority, id});
    } else if (t.state == TaskStatus::NoWorker) {
      no_worker.erase(id);
    }
  }

  // ---- transitions ----------------------------------------------------------------------------------
  void run() {
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

  void transition(const Rec& r) {
    TaskRec& t = tasks[r.id];
    switch (r.target) {
      // A recommendation made while the task was needed may arrive after it stopped being.
      case TaskStatus::Waiting:
        if (t.state == TaskStatus::Released) {
          if (needed(t)) to_waiting(r.id);
          else post_release(r.id);
        }
        break;
      case TaskStatus::Processing:
        if ((t.state == TaskStatus::Waiting && t.waiting_on == 0) || t.state == TaskStatus::Queued ||
            t.state == TaskStatus::NoWorker) {
          if (needed(t)) schedule(r.id);
          else to_released(r.id);
        }
        break;
      case TaskStatus::Released:
        if (t.state == TaskStatus::Released)
          post_release(r.id);
        else
          to_released(r.id);
        break;
      case TaskStatus::Forgotten:
        if (forgettable(t)) forget(r.id);
        break;
      case TaskStatus::Erred:
        if (t.state != TaskStatus::Memory && t.state != TaskStatus::Erred) to_erred(r.id, r.cause);
        break;
      default: break;
    }
  }

  void to_waiting(Id id) {
    TaskRec& t = tasks[id];
    t.state = TaskStatus::Waiting;
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

  void schedule(Id id) {
    TaskRec& t = tasks[id];
    dequeue(id);
    Id wid;
    switch (decide(t, wid)) {
      case Decision::Assign: assign(id, wid); break;
      case Decision::Queue:
        t.state = TaskStatus::Queued;
        (t.resources.empty() ? root_queue : constrained_queue).insert({t.priority, id});
        break;
      case Decision::NoWorker:
        t.state = TaskStatus::NoWorker;
        no_worker.insert(id);
        break;
    }
  }

  void to_released(Id id) {
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
    t.state = TaskStatus::Released;
    t.waiting_on = 0;
    post_release(id);
  }

  void post_release(Id id) {
    TaskRec& t = tasks[id];
    if (needed(t)) recommend(id, TaskStatus::Waiting);
    else if (forgettable(t)) recommend(id, TaskStatus::Forgotten);
  }

  void to_erred(Id id, Id cause) {
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
    t.state = TaskStatus::Erred;
    t.waiting_on = 0;
    for_dependents(t, [&](Id did, TaskRec& d) {
      if (d.state == TaskStatus::Waiting || d.state == TaskStatus::Queued ||
          d.state == TaskStatus::NoWorker || d.state == TaskStatus::Processing)
        recommend(did, TaskStatus::Erred, id);
    });
    for (Id c : t.who_wants) out->push_back(erred_message(t, c));
    if (forgettable(t)) recommend(id, TaskStatus::Forgotten);
  }

  KeyErred erred_message(const TaskRec& t, Id client) const {
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

  void forget(Id id) {
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
    t.state = TaskStatus::Forgotten;
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

  /** Gives queued tasks to a worker that has room. */
  void fill_worker(Id wid) {
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
          it = constrained_queue.erase(it);
          t.state = TaskStatus::Waiting;  // transient; schedule() re-decides
          Id chosen;
          if (decide(t, chosen) == Decision::Assign) {
            assign(id, chosen);
          } else {
            t.state = TaskStatus::Queued;
            constrained_queue.insert({t.priority, id});
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

  // ---- event handlers ----------------------------------------------------------------------------
  void on(AddWorker& e) {
    now = std::max(now, e.now);
    if (find_worker(e.address) != kNone) {
      log("worker", "worker " + e.address + " registered twice; replacing the old one");
      RemoveWorker r{e.address, "re-registered", true, e.now};
      on(r);
    }
    Id wid = static_cast<Id>(workers.size());
    workers.emplace_back();
    WorkerRec& w = workers.back();
    w.address = e.address;
    w.name = e.name.empty() ? e.address : e.name;
    w.nthreads = std::max(1, e.nthreads);
    w.memory_limit = e.memory_limit;
    w.last_seen = e.now;
    w.alive = true;
    for (const auto& [r, amount] : e.resources) {
      auto rid = intern(res_ids, res_names, r);
      if (w.res_total.size() <= static_cast<std::size_t>(rid)) w.res_total.resize(rid + 1, 0);
      w.res_total[rid] = amount;
    }
    w.res_used.assign(w.res_total.size(), 0);
    for (const auto& op : e.ops) {
      auto oid = intern(op_ids, op_names, op);
      if (w.ops.size() <= static_cast<std::size_t>(oid)) w.ops.resize(oid + 1, 0);
      if (!w.ops[oid]) {
        w.ops[oid] = 1;
        op_alive_workers[oid]++;
      }
    }
    worker_by_address[w.address] = wid;
    worker_by_name[w.name] = wid;
    n_alive_workers++;
    load_insert(wid);
    log("worker", "add worker " + w.address + " (" + std::to_string(w.nthreads) + " threads)");
    retry_no_worker();
    fill_pending.push_back(wid);
  }

  void retry_no_worker() {
    for (Id id : no_worker) recommend(id, TaskStatus::Processing);
  }

  void on(RemoveWorker& e) {
    now = std::max(now, e.now);
    Id wid = find_worker(e.address);
    if (wid == kNone) return;
    remove_worker(wid, e.reason, e.safe);
  }

  void remove_worker(Id wid, const std::string& reason, bool safe) {
    WorkerRec& w = workers[wid];
    log("worker", "remove worker " + w.address + ": " + reason);
    load_erase(wid);
    w.alive = false;
    worker_by_address.erase(w.address);
    if (auto it = worker_by_name.find(w.name); it != worker_by_name.end() && it->second == wid)
      worker_by_name.erase(it);
    n_alive_workers--;
    for (std::size_t oid = 0; oid < w.ops.size(); ++oid)
      if (w.ops[oid]) op_alive_workers[oid]--;
    std::vector<Id> processing = w.processing;
    for (Id id : processing) {
      TaskRec& t = tasks[id];
      unassign(id, false);
      if (!safe) t.suspicious++;
      if (!safe && t.suspicious >= cfg.allowed_failures) {
        t.exception = "KilledWorker: task " + t.key + " died on " + std::to_string(t.suspicious) +
                      " workers (last: " + w.address + ")";
        t.traceback.clear();
        t.blame = t.key;
        log("task", t.exception);
        recommend(id, TaskStatus::Erred, id);
      } else {
        recommend(id, TaskStatus::Released);
      }
    }
    for (Id id : w.has_what) {
      TaskRec& t = tasks[id];
      std::erase(t.who_has, wid);
      if (t.who_has.empty() && t.state == TaskStatus::Memory) recommend(id, TaskStatus::Released);
    }
    w.has_what.clear();
    w.nbytes = 0;
    w.processing.clear();
    w.occupancy = 0;
    free_batch.erase(wid);
    // Steals in flight toward this worker: the victim's answer will re-decide.
  }

  void on(Heartbeat& e) {
    now = std::max(now, e.now);
    Id wid = find_worker(e.address);
    if (wid == kNone) {
      log("worker", "heartbeat from unknown worker " + e.address);
      return;
    }
    workers[wid].last_seen = std::max(workers[wid].last_seen, e.now);
    workers[wid].memory = e.memory;
  }

  void on(WorkerStatusChange& e) {
    Id wid = find_worker(e.address);
    if (wid == kNone) return;
    WorkerRec& w = workers[wid];
    if (w.paused == e.paused) return;
    load_erase(wid);
    w.paused = e.paused;
    load_insert(wid);
    log("worker", "worker " + w.address + (e.paused ? " paused" : " resumed"));
    if (!e.paused) {
      retry_no_worker();
      fill_pending.push_back(wid);
    }
  }

  void on(Tick& e) {
    now = std::max(now, e.now);
    std::vector<Id> dead;
    for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid)
      if (workers[wid].alive && now - workers[wid].last_seen > cfg.worker_ttl) dead.push_back(wid);
    for (Id wid : dead) remove_worker(wid, "no heartbeat for " + std::to_string(now - workers[wid].last_seen) + " s", false);
    if (cfg.work_stealing) balance();
  }

  bool stealable(const TaskRec& t, const WorkerRec& thief) const {
    return t.steal_thief == kNone && !t.steal_refused && t.resources.empty() && (!t.restricted || t.loose) &&
           has_op(thief, t.op);
  }

  void balance() {
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

  void on(StealResponse& e) {
    Id wid = find_worker(e.worker);
    Id id = find_task(e.key);
    if (id == kNone || wid == kNone) return;
    TaskRec& t = tasks[id];
    if (t.state != TaskStatus::Processing || t.processing_on != wid || t.steal_thief == kNone) {
      log("steal", "stale steal response for " + e.key + " from " + e.worker);
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
      t.state = TaskStatus::Waiting;  // transient, re-decided
      t.waiting_on = 0;
      recommend(id, TaskStatus::Processing);
    }
  }

  void on(AddClient& e) { client_id(e.client); }

  void on(RemoveClient& e) {
    auto it = client_ids.find(e.client);
    if (it == client_ids.end()) return;
    Id cid = it->second;
    std::vector<Id> wants(clients[cid].wants.begin(), clients[cid].wants.end());
    std::sort(wants.begin(), wants.end());
    for (Id id : wants) drop_want(id, cid);
    clients[cid].alive = false;
    log("client", "remove client " + e.client + " (released " + std::to_string(wants.size()) + " keys)");
  }

  void drop_want(Id id, Id cid) {
    TaskRec& t = tasks[id];
    std::erase(t.who_wants, cid);
    clients[cid].wants.erase(id);
    if (needed(t)) return;
    switch (t.state) {
      case TaskStatus::Released:
      case TaskStatus::Erred:
        if (forgettable(t)) recommend(id, TaskStatus::Forgotten);
        break;
      case TaskStatus::Forgotten: break;
      default: recommend(id, TaskStatus::Released);
    }
  }

  void on(UpdateGraph& e) {
    now = std::max(now, e.now);
    Id cid = client_id(e.client);
    std::int64_t gen = ++generation;
    // Without dependencies (client.map) submission order is graph order; otherwise order the
    // graph here unless the client did.
    bool flat = e.order.empty();
    if (flat)
      for (const auto& t : e.tasks)
        if (!t.dependencies().empty()) {
          flat = false;
          break;
        }
    if (!flat && e.order.empty() && !e.tasks.empty()) {
      Graph g;
      for (const auto& t : e.tasks) g.set(t);
      e.order = tessera::order(g, e.keys);
    }
    std::vector<Id> fresh;
    fresh.reserve(e.tasks.size());
    std::int64_t position = -1;
    for (auto& task : e.tasks) {
      ++position;
      if (find_task(task.key) != kNone) continue;
      Id id;
      if (!free_ids.empty()) {
        id = free_ids.back();
        free_ids.pop_back();
      } else {
        id = static_cast<Id>(tasks.size());
        tasks.emplace_back();
      }
      TaskRec& t = tasks[id];
      t.key = task.key;
      t.state = TaskStatus::Released;
      const Annotations& a = task.annotations;
      // Device tasks need a worker with a GPU: such workers advertise "<op>@device" as well.
      t.op = a.target == Target::Device ? intern(op_ids, op_names, task.op + kDeviceOpSuffix)
                                        : intern(op_ids, op_names, task.op);
      std::int64_t ord = position;
      if (!flat) {
        auto it = e.order.find(task.key);
        ord = it == e.order.end() ? 0 : it->second;
      }
      t.priority = Priority{-a.priority, gen, ord};
      t.retries = a.retries;
      t.suspicious = 0;
      t.restricted = !a.workers.empty();
      t.loose = a.allow_other_workers;
      for (const auto& [r, amount] : a.resources)
        if (amount > 0) t.resources.push_back({intern(res_ids, res_names, r), amount});
      t.spec = std::make_shared<const Task>(std::move(task));
      t.n_dependents = 0;
      t.waiters = 0;
      t.waiting_on = 0;
      t.registered = false;
      t.nbytes = 0;
      key_ids.emplace(t.key, id);
      n_alive_tasks++;
      fresh.push_back(id);
    }
    for (Id id : fresh) {
      TaskRec& t = tasks[id];
      std::string missing;
      for (const Key& dk : t.spec->dependencies()) {
        Id did = find_task(dk);
        if (did == kNone) {
          missing = dk;
          continue;
        }
        t.deps.push_back(did);
        tasks[did].dependents.push_back({id, t.inc});
        tasks[did].n_dependents++;
      }
      t.root = t.deps.empty() && t.resources.empty() && !t.restricted;
      if (!missing.empty()) {
        t.exception = "dependency " + missing + " of task " + t.key + " is not known to the scheduler";
        t.blame = t.key;
        recommend(id, TaskStatus::Erred, id);
      }
    }
    for (const Key& k : e.keys) {
      Id id = find_task(k);
      if (id == kNone) {
        KeyErred err{e.client, k, k, "task " + k + " failed: key is not defined in the graph", ""};
        out->push_back(std::move(err));
        continue;
      }
      TaskRec& t = tasks[id];
      if (std::find(t.who_wants.begin(), t.who_wants.end(), cid) == t.who_wants.end()) t.who_wants.push_back(cid);
      clients[cid].wants.insert(id);
      if (t.state == TaskStatus::Memory) out->push_back(KeyInMemory{e.client, t.key, t.nbytes, t.type});
      else if (t.state == TaskStatus::Erred) out->push_back(erred_message(t, cid));
    }
    if (n_alive_workers > 0) {
      for (Id id : fresh) {
        TaskRec& t = tasks[id];
        if (op_alive_workers[t.op] > 0 || !t.exception.empty()) continue;
        const std::string& name = op_names[t.op];
        if (name.ends_with(kDeviceOpSuffix))
          t.exception = "no worker with a GPU can run operation '" +
                        name.substr(0, name.size() - std::string_view(kDeviceOpSuffix).size()) + "' (task " + t.key +
                        " targets the device)";
        else
          t.exception = "no worker can run operation '" + name + "' (task " + t.key + ")";
        t.blame = t.key;
        out->push_back(OperationUnavailable{e.client, t.key, op_names[t.op], t.exception});
        log("task", t.exception);
        recommend(id, TaskStatus::Erred, id);
      }
    }
    run();  // errors settle before anything is scheduled
    for (const Key& k : e.keys) {
      Id id = find_task(k);
      if (id != kNone && tasks[id].state == TaskStatus::Released) recommend(id, TaskStatus::Waiting);
    }
    run();
    for (Id id : fresh)
      if (tasks[id].state != TaskStatus::Forgotten && forgettable(tasks[id])) recommend(id, TaskStatus::Forgotten);
  }

  void on(TaskFinished& e) {
    Id wid = find_worker(e.worker);
    Id id = find_task(e.key);
    if (wid == kNone) return;
    if (id == kNone) {
      free_key_on(wid, e.key);
      return;
    }
    TaskRec& t = tasks[id];
    WorkerRec& w = workers[wid];
    if (t.state == TaskStatus::Memory) {
      add_replica(id, wid);
      return;
    }
    if (t.state != TaskStatus::Processing) {
      free_key_on(wid, e.key);
      return;
    }
    if (t.processing_on != wid) unassign(id, true);  // a stale assignment elsewhere
    else unassign(id, false);
    if (e.stop > e.start && t.op >= 0) {
      double d = e.stop - e.start;
      auto& n = op_samples[t.op];
      double& mean = op_duration[t.op];
      mean = n == 0 ? d : mean + (d - mean) / static_cast<double>(std::min<std::int64_t>(n + 1, 20));
      n++;
    }
    t.nbytes = e.nbytes;
    t.type = e.type;
    t.state = TaskStatus::Memory;
    t.who_has.push_back(wid);
    w.has_what.insert(id);
    w.nbytes += t.nbytes;
    unregister_waiter(t);
    for_dependents(t, [&](Id did, TaskRec& d) {
      if (d.state == TaskStatus::Waiting && --d.waiting_on == 0) recommend(did, TaskStatus::Processing);
    });
    for (Id c : t.who_wants) out->push_back(KeyInMemory{clients[c].name, t.key, t.nbytes, t.type});
    if (!needed(t)) recommend(id, TaskStatus::Released);
  }

  void add_replica(Id id, Id wid) {
    TaskRec& t = tasks[id];
    if (std::find(t.who_has.begin(), t.who_has.end(), wid) != t.who_has.end()) return;
    t.who_has.push_back(wid);
    workers[wid].has_what.insert(id);
    workers[wid].nbytes += t.nbytes;
  }

  void on(TaskErred& e) {
    Id wid = find_worker(e.worker);
    Id id = find_task(e.key);
    if (wid == kNone || id == kNone) return;
    TaskRec& t = tasks[id];
    if (t.state != TaskStatus::Processing || t.processing_on != wid) return;
    if (t.retries > 0) {
      t.retries--;
      log("task", "task " + t.key + " failed on " + e.worker + ", retrying (" + std::to_string(t.retries) +
                      " retries left): " + e.exception);
      recommend(id, TaskStatus::Released);
      return;
    }
    t.exception = e.exception;
    t.traceback = e.traceback;
    t.blame = t.key;
    recommend(id, TaskStatus::Erred, id);
  }

  void on(AddKeys& e) {
    Id wid = find_worker(e.worker);
    if (wid == kNone) return;
    for (auto& [k, nbytes] : e.keys) {
      Id id = find_task(k);
      if (id != kNone && tasks[id].state == TaskStatus::Memory) add_replica(id, wid);
      else free_key_on(wid, k);
    }
  }

  void lose_replica(Id id, Id wid) {
    TaskRec& t = tasks[id];
    auto it = std::find(t.who_has.begin(), t.who_has.end(), wid);
    if (it == t.who_has.end()) return;
    t.who_has.erase(it);
    workers[wid].has_what.erase(id);
    workers[wid].nbytes -= t.nbytes;
    if (t.who_has.empty() && t.state == TaskStatus::Memory) recommend(id, TaskStatus::Released);
  }

  void on(RemoveKeys& e) {
    Id wid = find_worker(e.worker);
    if (wid == kNone) return;
    for (const Key& k : e.keys)
      if (Id id = find_task(k); id != kNone) lose_replica(id, wid);
  }

  void on(MissingData& e) {
    Id id = find_task(e.key);
    if (id == kNone) return;
    log("task", e.worker + " could not get " + e.key + " from " + e.errant_worker);
    if (Id errant = find_worker(e.errant_worker); errant != kNone) lose_replica(id, errant);
    // Re-send the dependents waiting on this worker with fresh locations.
    Id wid = find_worker(e.worker);
    for_dependents(tasks[id], [&](Id did, TaskRec& d) {
      if (d.state == TaskStatus::Processing && d.processing_on == wid) recommend(did, TaskStatus::Released);
    });
  }

  void on(ReleaseKeys& e) {
    auto it = client_ids.find(e.client);
    if (it == client_ids.end()) return;
    for (const Key& k : e.keys)
      if (Id id = find_task(k); id != kNone) drop_want(id, it->second);
  }

  void on(CancelKeys& e) {
    auto it = client_ids.find(e.client);
    if (it == client_ids.end()) return;
    for (const Key& k : e.keys) {
      Id id = find_task(k);
      if (id == kNone) continue;
      std::vector<Id> drop = e.force ? tasks[id].who_wants : std::vector<Id>{it->second};
      for (Id c : drop) {
        if (std::find(tasks[id].who_wants.begin(), tasks[id].who_wants.end(), c) == tasks[id].who_wants.end()) continue;
        out->push_back(KeyCancelled{clients[c].name, k});
        drop_want(id, c);
      }
    }
  }

  void on(RetryKeys& e) {
    std::vector<Id> stack, roots;
    std::unordered_set<Id> seen;
    for (const Key& k : e.keys)
      if (Id id = find_task(k); id != kNone && tasks[id].state == TaskStatus::Erred) {
        stack.push_back(id);
        roots.push_back(id);
      }
    std::vector<Id> reset;
    while (!stack.empty()) {
      Id id = stack.back();
      stack.pop_back();
      if (!seen.insert(id).second) continue;
      reset.push_back(id);
      for (Id d : tasks[id].deps)
        if (tasks[d].state == TaskStatus::Erred) stack.push_back(d);
    }
    for (Id id : reset) {
      TaskRec& t = tasks[id];
      t.state = TaskStatus::Released;
      t.exception.clear();
      t.traceback.clear();
      t.blame.clear();
      t.suspicious = 0;
      t.retries = t.spec->annotations.retries;
    }
    for (Id id : reset)
      for_dependents(tasks[id], [&](Id did, TaskRec& d) {
        if (d.state == TaskStatus::Erred && !seen.count(did)) recommend(did, TaskStatus::Released);
      });
    for (Id id : reset) post_release(id);
  }

  void flush() {
    if (free_batch.empty()) return;
    std::vector<Id> wids;
    for (auto& [wid, keys] : free_batch) wids.push_back(wid);
    std::sort(wids.begin(), wids.end());
    for (Id wid : wids) {
      auto& keys = free_batch[wid];
      if (workers[wid].alive && !keys.empty()) out->push_back(FreeKeys{workers[wid].address, std::move(keys)});
    }
    free_batch.clear();
  }

  // ---- invariants ------------------------------------------------------------------------------------
  void fail(const std::string& what) const { throw Error("scheduler invariant violated: " + what); }

  void check() const {
    std::size_t alive = 0;
    std::vector<int> waiters(tasks.size(), 0), ndeps(tasks.size(), 0);
    std::size_t n_root_q = 0, n_con_q = 0, n_nw = 0;
    for (Id id = 0; id < static_cast<Id>(tasks.size()); ++id) {
      const TaskRec& t = tasks[id];
      if (t.state == TaskStatus::Forgotten) continue;
      alive++;
      const std::string k = t.key + " (" + task_status_name(t.state) + ")";
      if (find_task(t.key) != id) fail("key map does not point at " + k);
      for (Id d : t.deps) {
        if (tasks[d].state == TaskStatus::Forgotten) fail("dependency of " + k + " forgotten");
        ndeps[d]++;
        if (t.registered) waiters[d]++;
      }
      bool should_register = t.state == TaskStatus::Waiting || t.state == TaskStatus::Queued ||
                             t.state == TaskStatus::NoWorker || t.state == TaskStatus::Processing;
      if (t.registered != should_register) fail("waiter registration of " + k);
      if (t.state == TaskStatus::Memory) {
        if (t.who_has.empty()) fail(k + " has no holder");
        for (Id w : t.who_has)
          if (!workers[w].alive || !workers[w].has_what.count(id)) fail(k + " holder inconsistent");
      } else if (!t.who_has.empty()) {
        fail(k + " has holders but is not in memory");
      }
      if (t.state == TaskStatus::Waiting) {
        int n = 0;
        for (Id d : t.deps) n += tasks[d].state != TaskStatus::Memory;
        if (n != t.waiting_on) fail(k + " waiting_on " + std::to_string(t.waiting_on) + " != " + std::to_string(n));
        if (n == 0) fail(k + " waiting on nothing");
      }
      if (t.state == TaskStatus::Queued || t.state == TaskStatus::NoWorker || t.state == TaskStatus::Processing)
        for (Id d : t.deps)
          if (tasks[d].state != TaskStatus::Memory) fail(k + " runnable with dependency not in memory");
      if (t.state == TaskStatus::Processing) {
        if (t.processing_on == kNone || !workers[t.processing_on].alive) fail(k + " on no live worker");
        const auto& p = workers[t.processing_on].processing;
        if (t.proc_index < 0 || static_cast<std::size_t>(t.proc_index) >= p.size() || p[t.proc_index] != id)
          fail(k + " processing index");
      } else if (t.processing_on != kNone) {
        fail(k + " has a worker but is not processing");
      }
      if (t.state == TaskStatus::Queued) {
        const auto& q = t.resources.empty() ? root_queue : constrained_queue;
        if (!q.count({t.priority, id})) fail(k + " not in its queue");
        (t.resources.empty() ? n_root_q : n_con_q)++;
      }
      if (t.state == TaskStatus::NoWorker) {
        if (!no_worker.count(id)) fail(k + " not in no-worker set");
        n_nw++;
      }
      if (t.state == TaskStatus::Erred && t.exception.empty()) fail(k + " erred without exception");
      if ((t.state == TaskStatus::Released || t.state == TaskStatus::Erred) && forgettable(t))
        fail(k + " should have been forgotten");
      if (t.state == TaskStatus::Released && needed(t)) fail(k + " released but needed");
      if ((t.state == TaskStatus::Memory || should_register) && !needed(t)) fail(k + " held or scheduled but unneeded");
      for (Id c : t.who_wants)
        if (!clients[c].wants.count(id)) fail(k + " wanted by a client that does not list it");
    }
    for (Id id = 0; id < static_cast<Id>(tasks.size()); ++id) {
      const TaskRec& t = tasks[id];
      if (t.state == TaskStatus::Forgotten) continue;
      if (t.waiters != waiters[id]) fail(t.key + " waiters " + std::to_string(t.waiters) + " != " + std::to_string(waiters[id]));
      if (t.n_dependents != ndeps[id]) fail(t.key + " dependents count");
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
        if (tasks[id].processing_on != wid) fail("worker " + w.address + " processing list");
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
          fail("worker " + w.address + " has_what");
      }
      if (nb != w.nbytes) fail("worker " + w.address + " nbytes");
    }
    if (running != by_load.size()) fail("load index size");
  }
};

SchedulerState::SchedulerState(SchedulerConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = config;
}
SchedulerState::~SchedulerState() = default;
SchedulerState::SchedulerState(SchedulerState&&) noexcept = default;
SchedulerState& SchedulerState::operator=(SchedulerState&&) noexcept = default;

void SchedulerState::handle(SchedulerEvent event, std::vector<SchedulerAction>& out) {
  Impl& s = *impl_;
  s.out = &out;
  std::visit([&](auto& e) { s.on(e); }, event);
  s.run();
  s.flush();
  s.out = nullptr;
  if (s.cfg.validate) s.check();
}

std::vector<SchedulerAction> SchedulerState::handle(SchedulerEvent event) {
  std::vector<SchedulerAction> out;
  handle(std::move(event), out);
  return out;
}

void SchedulerState::check_invariants() const { impl_->check(); }

std::optional<TaskStatus> SchedulerState::status(const Key& key) const {
  Id id = impl_->find_task(key);
  if (id == kNone) return std::nullopt;
  return impl_->tasks[id].state;
}

std::vector<std::string> SchedulerState::who_has(const Key& key) const {
  std::vector<std::string> out;
  Id id = impl_->find_task(key);
  if (id == kNone) return out;
  for (Id w : impl_->tasks[id].who_has) out.push_back(impl_->workers[w].address);
  std::sort(out.begin(), out.end());
  return out;
}

std::string SchedulerState::processing_on(const Key& key) const {
  Id id = impl_->find_task(key);
  if (id == kNone || impl_->tasks[id].processing_on == kNone) return {};
  return impl_->workers[impl_->tasks[id].processing_on].address;
}

std::string SchedulerState::exception(const Key& key) const {
  Id id = impl_->find_task(key);
  return id == kNone ? std::string() : impl_->tasks[id].exception;
}

std::size_t SchedulerState::task_count() const noexcept { return impl_->n_alive_tasks; }

std::vector<std::size_t> SchedulerState::status_counts() const {
  std::vector<std::size_t> c(static_cast<std::size_t>(TaskStatus::Forgotten) + 1, 0);
  for (const auto& t : impl_->tasks)
    if (t.state != TaskStatus::Forgotten) c[static_cast<std::size_t>(t.state)]++;
  return c;
}

std::vector<WorkerSummary> SchedulerState::workers() const {
  std::vector<WorkerSummary> out;
  for (const auto& w : impl_->workers) {
    if (!w.alive) continue;
    WorkerSummary s;
    s.address = w.address;
    s.name = w.name;
    s.nthreads = w.nthreads;
    for (std::size_t r = 0; r < w.res_total.size(); ++r) {
      if (w.res_total[r] <= 0) continue;
      s.resources[impl_->res_names[r]] = w.res_total[r];
      s.resources_used[impl_->res_names[r]] = r < w.res_used.size() ? w.res_used[r] : 0;
    }
    s.memory_limit = w.memory_limit;
    s.memory = w.memory;
    s.nbytes = w.nbytes;
    s.processing = w.processing.size();
    s.has_what = w.has_what.size();
    s.occupancy = w.occupancy;
    s.paused = w.paused;
    s.last_seen = w.last_seen;
    out.push_back(std::move(s));
  }
  return out;
}

std::size_t SchedulerState::worker_count() const noexcept { return impl_->n_alive_workers; }
std::size_t SchedulerState::queued_count() const noexcept {
  return impl_->root_queue.size() + impl_->constrained_queue.size();
}
const SchedulerConfig& SchedulerState::config() const noexcept { return impl_->cfg; }

}  // namespace tessera::distributed
