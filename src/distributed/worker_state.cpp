#include "tessera/distributed/worker_state.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <set>
#include <unordered_map>

#include "tessera/core/error.hpp"

namespace tessera::distributed {

const char* worker_task_status_name(WorkerTaskStatus s) noexcept {
  switch (s) {
    case WorkerTaskStatus::Released: return "released";
    case WorkerTaskStatus::Waiting: return "waiting";
    case WorkerTaskStatus::Fetch: return "fetch";
    case WorkerTaskStatus::Flight: return "flight";
    case WorkerTaskStatus::Missing: return "missing";
    case WorkerTaskStatus::Ready: return "ready";
    case WorkerTaskStatus::Executing: return "executing";
    case WorkerTaskStatus::Memory: return "memory";
    case WorkerTaskStatus::Error: return "error";
  }
  return "?";
}

namespace {

using S = WorkerTaskStatus;

struct WTask {
  Key key;
  S state = S::Released;
  std::shared_ptr<const Task> spec;
  Priority priority;
  std::uint64_t seq = 0;
  std::vector<WTask*> deps;        // for tasks to compute here
  std::vector<WTask*> dependents;  // local tasks that read this one
  int waiting_for_data = 0;
  std::vector<std::string> who_has;  // for fetch
  std::size_t nbytes = 0;
  std::string type;
  std::map<std::string, double> resources;
  bool cancelled = false;  // Executing/Flight: the scheduler no longer wants it here
  bool orphan = false;     // Memory kept for local dependents after the scheduler freed it
  bool replica = false;    // Fetch/Flight for the scheduler itself (AcquireReplicas), with or without dependents
  std::optional<ComputeTask> compute_after_flight;
  std::string flight_peer;
};

struct QKey {
  Priority priority;
  std::uint64_t seq;
  WTask* task;
  bool operator<(const QKey& o) const {
    if (priority != o.priority) return priority < o.priority;
    return seq < o.seq;
  }
};
QKey qkey(WTask* t) { return QKey{t->priority, t->seq, t}; }

}  // namespace

struct WorkerState::Impl {
  WorkerConfig cfg;
  std::vector<WorkerAction>* out = nullptr;
  std::unordered_map<Key, std::unique_ptr<WTask>> tasks;
  std::uint64_t next_seq = 0;
  std::set<QKey> ready, constrained, data_needed;
  std::unordered_map<std::string, std::set<QKey>> per_peer;
  std::map<std::string, std::vector<WTask*>> in_flight;
  std::map<std::string, double> available;
  std::size_t executing = 0;
  bool paused = false;
  std::vector<std::pair<Key, std::size_t>> add_keys;  // flushed once per event

  WTask* find(const Key& k) const {
    auto it = tasks.find(k);
    return it == tasks.end() ? nullptr : it->second.get();
  }
  WTask* get(const Key& k) {
    auto& slot = tasks[k];
    if (!slot) {
      slot = std::make_unique<WTask>();
      slot->key = k;
      slot->seq = next_seq++;
    }
    return slot.get();
  }
  void erase(WTask* t) { tasks.erase(t->key); }

  // ---- fetch bookkeeping -------------------------------------------------------------------------
  void add_to_fetch(WTask* t) {
    t->state = S::Fetch;
    data_needed.insert(qkey(t));
    for (const auto& h : t->who_has) per_peer[h].insert(qkey(t));
  }
  void remove_from_fetch(WTask* t) {
    data_needed.erase(qkey(t));
    for (const auto& h : t->who_has) {
      auto it = per_peer.find(h);
      if (it == per_peer.end()) continue;
      it->second.erase(qkey(t));
      if (it->second.empty()) per_peer.erase(it);
    }
  }
  void set_holders(WTask* t, const std::vector<std::string>& holders) {
    for (const auto& h : holders)
      if (h != cfg.address && std::find(t->who_has.begin(), t->who_has.end(), h) == t->who_has.end())
        t->who_has.push_back(h);
  }

  void ensure_communicating() {
    bool progress = true;
    while (progress && in_flight.size() < cfg.transfer_incoming_count_limit && !data_needed.empty()) {
      progress = false;
      for (const QKey& q : data_needed) {
        std::string peer;
        for (const auto& h : q.task->who_has)
          if (!in_flight.count(h)) {
            peer = h;
            break;
          }
        if (peer.empty()) continue;
        std::vector<WTask*> batch;
        std::size_t total = 0;
        for (const QKey& p : per_peer[peer]) {
          if (!batch.empty() && total + p.task->nbytes > cfg.transfer_message_bytes_limit) break;
          batch.push_back(p.task);
          total += p.task->nbytes;
        }
        GatherDep g{peer, {}, total};
        for (WTask* b : batch) {
          remove_from_fetch(b);
          b->state = S::Flight;
          b->flight_peer = peer;
          g.keys.push_back(b->key);
        }
        in_flight[peer] = std::move(batch);
        out->push_back(std::move(g));
        progress = true;
        break;
      }
    }
  }

  // ---- compute bookkeeping -----------------------------------------------------------------------
  bool fits(const WTask* t) const {
    for (const auto& [r, amount] : t->resources) {
      auto it = available.find(r);
      if (it == available.end() || it->second < amount - 1e-9) return false;
    }
    return true;
  }
  void to_ready(WTask* t) {
    t->state = S::Ready;
    (t->resources.empty() ? ready : constrained).insert(qkey(t));
  }
  void ensure_computing() {
    if (paused) return;
    while (executing < static_cast<std::size_t>(cfg.nthreads)) {
      const QKey* best = ready.empty() ? nullptr : &*ready.begin();
      bool from_constrained = false;
      for (const QKey& c : constrained) {
        if (!fits(c.task)) continue;
        if (!best || c < *best) {
          best = &c;
          from_constrained = true;
        }
        break;
      }
      if (!best) break;
      WTask* t = best->task;
      (from_constrained ? constrained : ready).erase(qkey(t));
      for (const auto& [r, amount] : t->resources) available[r] -= amount;
      t->state = S::Executing;
      executing++;
      out->push_back(Execute{t->key, t->spec});
    }
  }

  void start_compute(WTask* t, const ComputeTask& e) {
    t->spec = e.task;
    t->priority = e.priority;
    t->resources = e.resources;
    t->cancelled = false;
    t->orphan = false;
    t->waiting_for_data = 0;
    t->state = S::Waiting;
    for (const WhoHas& wh : e.who_has) {
      WTask* d = get(wh.key);
      if (std::find(t->deps.begin(), t->deps.end(), d) != t->deps.end()) continue;
      t->deps.push_back(d);
      d->dependents.push_back(t);
      if (d->state == S::Memory) continue;
      t->waiting_for_data++;
      switch (d->state) {
        case S::Released:
        case S::Missing:
        case S::Error:
        case S::Fetch: {
          bool was_fetch = d->state == S::Fetch;
          if (was_fetch) remove_from_fetch(d);
          if (!was_fetch || t->priority < d->priority) d->priority = t->priority;
          if (d->state != S::Fetch) d->who_has.clear();
          set_holders(d, wh.workers);
          d->nbytes = wh.nbytes;
          if (d->who_has.empty()) {
            d->state = S::Missing;
            out->push_back(MissingData{cfg.address, d->key, cfg.address});
          } else {
            add_to_fetch(d);
          }
          break;
        }
        case S::Flight:
          d->cancelled = false;
          set_holders(d, wh.workers);
          break;
        case S::Executing: d->cancelled = false; break;
        default: break;  // Waiting/Ready here: its completion counts down
      }
    }
    if (t->waiting_for_data == 0) to_ready(t);
  }

  void on(ComputeTask& e) {
    WTask* t = get(e.key);
    switch (t->state) {
      case S::Memory:
        t->orphan = false;
        out->push_back(TaskFinished{cfg.address, t->key, t->nbytes, t->type, 0, 0, -1});
        return;
      case S::Waiting:
      case S::Ready: return;
      case S::Executing: t->cancelled = false; return;
      case S::Flight:
        t->cancelled = false;
        t->compute_after_flight = e;
        return;
      case S::Fetch: remove_from_fetch(t); break;
      default: break;
    }
    start_compute(t, e);
  }

  /** A dependency lost a local reader: drop it when nothing here needs it any more. */
  void unlink_deps(WTask* t) {
    for (WTask* d : t->deps) {
      std::erase(d->dependents, t);
      if (!d->dependents.empty() || d->replica) continue;
      switch (d->state) {
        case S::Fetch:
          remove_from_fetch(d);
          erase(d);
          break;
        case S::Missing:
        case S::Released: erase(d); break;
        case S::Flight:
          if (!d->compute_after_flight) d->cancelled = true;
          break;
        case S::Memory:
          if (d->orphan) {
            out->push_back(ReleaseData{d->key});
            erase(d);
          }
          break;
        default: break;
      }
    }
    t->deps.clear();
  }

  void notify_dependents(WTask* t) {
    for (WTask* d : t->dependents)
      if (d->state == S::Waiting && --d->waiting_for_data == 0) to_ready(d);
  }

  /** Drops a task that was to be computed here and has not started. */
  void release_compute(WTask* t) {
    if (t->state == S::Ready) (t->resources.empty() ? ready : constrained).erase(qkey(t));
    unlink_deps(t);
    t->state = S::Released;
    t->spec.reset();
    if (t->dependents.empty()) erase(t);
  }

  void on(FreeKeys& e) {
    for (const Key& k : e.keys) {
      WTask* t = find(k);
      if (!t) continue;
      switch (t->state) {
        case S::Executing: t->cancelled = true; break;
        case S::Flight:
          t->compute_after_flight.reset();
          if (t->dependents.empty()) t->cancelled = true;
          break;
        case S::Memory:
          if (t->dependents.empty()) {
            out->push_back(ReleaseData{t->key});
            erase(t);
          } else {
            t->orphan = true;
          }
          break;
        case S::Waiting:
        case S::Ready: release_compute(t); break;
        case S::Fetch:
          if (t->dependents.empty()) {
            remove_from_fetch(t);
            erase(t);
          }
          break;
        case S::Missing:
        case S::Error:
        case S::Released:
          if (t->dependents.empty()) erase(t);
          else t->state = S::Released;
          break;
      }
    }
  }

  void on(StealRequest& e) {
    WTask* t = find(e.key);
    bool accepted = !t || t->state == S::Waiting || t->state == S::Ready || t->state == S::Released;
    if (t && (t->state == S::Waiting || t->state == S::Ready)) release_compute(t);
    out->push_back(StealResponse{cfg.address, e.key, accepted});
  }

  void refetch_or_missing(WTask* t, const std::string& errant) {
    if (t->compute_after_flight) {
      ComputeTask e = std::move(*t->compute_after_flight);
      t->compute_after_flight.reset();
      t->state = S::Released;
      start_compute(t, e);
      return;
    }
    if (t->cancelled && t->dependents.empty()) {
      erase(t);
      return;
    }
    t->cancelled = false;
    if (!t->who_has.empty()) {
      add_to_fetch(t);
    } else if (t->replica && t->dependents.empty()) {
      // A copy nobody here reads: the scheduler asks again (elsewhere) once it learns of the loss.
      out->push_back(MissingData{cfg.address, t->key, errant});
      erase(t);
    } else {
      t->state = S::Missing;
      out->push_back(MissingData{cfg.address, t->key, errant});
    }
  }

  void on(GatherDepSuccess& e) {
    std::vector<WTask*> batch;
    if (auto it = in_flight.find(e.peer); it != in_flight.end()) {
      batch = std::move(it->second);
      in_flight.erase(it);
    }
    std::unordered_map<std::string_view, std::size_t> got;
    for (const auto& [k, n] : e.data) got.emplace(k, n);
    for (WTask* t : batch) {
      auto g = got.find(t->key);
      if (g == got.end()) {
        std::erase(t->who_has, e.peer);
        refetch_or_missing(t, e.peer);
        continue;
      }
      std::size_t nbytes = g->second;
      got.erase(g);
      if (t->cancelled && t->dependents.empty() && !t->compute_after_flight) {
        out->push_back(ReleaseData{t->key});
        erase(t);
        continue;
      }
      t->state = S::Memory;
      t->nbytes = nbytes;
      t->cancelled = false;
      t->replica = false;
      if (t->compute_after_flight) {
        t->compute_after_flight.reset();
        out->push_back(TaskFinished{cfg.address, t->key, nbytes, t->type, 0, 0, -1});
      } else {
        add_keys.push_back({t->key, nbytes});
      }
      notify_dependents(t);
    }
    for (const auto& [k, n] : got) {  // unsolicited
      WTask* t = find(Key(k));
      if (!t || t->state != S::Memory) out->push_back(ReleaseData{Key(k)});
    }
  }

  void on(GatherDepFailure& e) {
    std::vector<WTask*> batch;
    if (auto it = in_flight.find(e.peer); it != in_flight.end()) {
      batch = std::move(it->second);
      in_flight.erase(it);
    }
    // The peer is unreachable: forget it as a holder of anything we still want to fetch.
    if (auto it = per_peer.find(e.peer); it != per_peer.end()) {
      std::vector<WTask*> affected;
      for (const QKey& q : it->second) affected.push_back(q.task);
      for (WTask* t : affected) {
        remove_from_fetch(t);
        std::erase(t->who_has, e.peer);
        t->state = S::Released;
        refetch_or_missing(t, e.peer);
      }
    }
    for (WTask* t : batch) {
      std::erase(t->who_has, e.peer);
      refetch_or_missing(t, e.peer);
    }
  }

  WTask* executing_task(const Key& k) {
    WTask* t = find(k);
    if (!t || t->state != S::Executing) return nullptr;
    executing--;
    for (const auto& [r, amount] : t->resources) available[r] += amount;
    unlink_deps(t);
    return t;
  }

  void on(ExecuteSuccess& e) {
    WTask* t = executing_task(e.key);
    if (!t) {
      out->push_back(ReleaseData{e.key});
      return;
    }
    t->nbytes = e.nbytes;
    t->type = e.type;
    if (t->cancelled) {
      t->cancelled = false;
      if (t->dependents.empty()) {
        out->push_back(ReleaseData{t->key});
        erase(t);
        return;
      }
      // Freed by the scheduler but read here: keep it as an untracked replica.
      t->state = S::Memory;
      t->orphan = true;
      notify_dependents(t);
      return;
    }
    t->state = S::Memory;
    out->push_back(TaskFinished{cfg.address, t->key, e.nbytes, e.type, e.start, e.stop, e.thread});
    notify_dependents(t);
  }

  void on(ExecuteFailure& e) {
    WTask* t = executing_task(e.key);
    if (!t) return;
    if (t->cancelled) {
      t->cancelled = false;
      t->state = S::Released;
      if (t->dependents.empty()) erase(t);
      return;
    }
    t->state = S::Error;
    out->push_back(TaskErred{cfg.address, t->key, e.exception, e.traceback});
  }

  // Copies the scheduler wants here (a retiring worker's data): fetched as dependencies are,
  // after them (lowest priority), and reported with AddKeys like any fetched key.
  void on(AcquireReplicas& e) {
    for (const WhoHas& wh : e.who_has) {
      WTask* t = find(wh.key);
      if (t && t->state == S::Memory) {
        add_keys.push_back({t->key, t->nbytes});  // already here: the scheduler may not know
        continue;
      }
      if (t && t->state != S::Released && t->state != S::Missing && t->state != S::Error) {
        t->replica = true;  // on its way here already (fetch, flight, or computed here)
        if (t->state == S::Fetch || t->state == S::Flight) t->cancelled = false;
        continue;
      }
      if (!t) {
        t = get(wh.key);
        t->priority = Priority{std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int64_t>::max(), 0};
      }
      t->replica = true;
      t->who_has.clear();
      set_holders(t, wh.workers);
      t->nbytes = wh.nbytes;
      if (t->who_has.empty()) {
        if (t->dependents.empty()) erase(t);
        continue;
      }
      add_to_fetch(t);
    }
  }

  void on(PauseWorker& e) {
    if (paused == e.paused) return;
    paused = e.paused;
    out->push_back(WorkerStatusChange{cfg.address, paused});
  }

  // ---- invariants ----------------------------------------------------------------------------------
  void fail(const std::string& what) const {
    throw Error("worker " + cfg.address + " invariant violated: " + what);
  }
  void check() const {
    std::size_t n_exec = 0, n_ready = 0, n_con = 0, n_fetch = 0, n_flight = 0;
    std::map<std::string, double> used;
    for (const auto& [k, up] : tasks) {
      const WTask* t = up.get();
      std::string d = k + " (" + worker_task_status_name(t->state) + ")";
      for (const WTask* dep : t->deps) {
        if (find(dep->key) != dep) fail(d + " depends on a dropped task");
        if (std::count(dep->dependents.begin(), dep->dependents.end(), t) != 1) fail(d + " dependency link");
      }
      for (const WTask* dt : t->dependents) {
        if (find(dt->key) != dt) fail(d + " has a dropped dependent");
        if (std::count(dt->deps.begin(), dt->deps.end(), t) != 1) fail(d + " dependent link");
      }
      switch (t->state) {
        case S::Executing:
          n_exec++;
          for (const auto& [r, a] : t->resources) used[r] += a;
          break;
        case S::Ready:
          if (!(t->resources.empty() ? ready : constrained).count(qkey(const_cast<WTask*>(t))))
            fail(d + " not queued");
          (t->resources.empty() ? n_ready : n_con)++;
          for (const WTask* dep : t->deps)
            if (dep->state != S::Memory) fail(d + " ready with a dependency not in memory");
          break;
        case S::Waiting: {
          int n = 0;
          for (const WTask* dep : t->deps) n += dep->state != S::Memory;
          if (n != t->waiting_for_data || n == 0) fail(d + " waiting count");
          break;
        }
        case S::Fetch:
          n_fetch++;
          if (!data_needed.count(qkey(const_cast<WTask*>(t)))) fail(d + " not in data_needed");
          if (t->who_has.empty()) fail(d + " fetch without holders");
          break;
        case S::Flight: {
          n_flight++;
          auto it = in_flight.find(t->flight_peer);
          if (it == in_flight.end() || std::find(it->second.begin(), it->second.end(), t) == it->second.end())
            fail(d + " not in flight");
          break;
        }
        default: break;
      }
      if ((t->state == S::Fetch || t->state == S::Missing) && t->dependents.empty() && !t->replica)
        fail(d + " fetched for nobody");
    }
    if (n_exec != executing) fail("executing count");
    if (executing > static_cast<std::size_t>(cfg.nthreads)) fail("more tasks executing than threads");
    for (const auto& [r, total] : cfg.resources) {
      if (used[r] > total + 1e-9) fail("resource " + r + " over-subscribed");
      auto it = available.find(r);
      if (it == available.end() || std::abs(it->second + used[r] - total) > 1e-9) fail("resource accounting " + r);
    }
    if (n_ready != ready.size() || n_con != constrained.size() || n_fetch != data_needed.size())
      fail("queue sizes");
    std::size_t flights = 0;
    for (const auto& [p, v] : in_flight) flights += v.size();
    if (flights != n_flight) fail("flight count");
    if (in_flight.size() > cfg.transfer_incoming_count_limit) fail("too many incoming transfers");
  }
};

WorkerState::WorkerState(WorkerConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = std::move(config);
  impl_->available = impl_->cfg.resources;
}
WorkerState::~WorkerState() = default;
WorkerState::WorkerState(WorkerState&&) noexcept = default;
WorkerState& WorkerState::operator=(WorkerState&&) noexcept = default;

void WorkerState::handle(WorkerEvent event, std::vector<WorkerAction>& out) {
  Impl& s = *impl_;
  s.out = &out;
  std::visit([&](auto& e) { s.on(e); }, event);
  s.ensure_communicating();
  s.ensure_computing();
  if (!s.add_keys.empty()) {
    out.push_back(AddKeys{s.cfg.address, std::move(s.add_keys)});
    s.add_keys.clear();
  }
  s.out = nullptr;
  if (s.cfg.validate) s.check();
}

std::vector<WorkerAction> WorkerState::handle(WorkerEvent event) {
  std::vector<WorkerAction> out;
  handle(std::move(event), out);
  return out;
}

void WorkerState::check_invariants() const { impl_->check(); }

std::optional<WorkerTaskStatus> WorkerState::status(const Key& key) const {
  const WTask* t = impl_->find(key);
  if (!t) return std::nullopt;
  return t->state;
}

std::vector<Key> WorkerState::data_keys() const {
  std::vector<Key> out;
  for (const auto& [k, t] : impl_->tasks)
    if (t->state == S::Memory) out.push_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::size_t> WorkerState::status_counts() const {
  std::vector<std::size_t> c(static_cast<std::size_t>(S::Error) + 1, 0);
  for (const auto& [k, t] : impl_->tasks) c[static_cast<std::size_t>(t->state)]++;
  return c;
}

std::size_t WorkerState::executing_count() const noexcept { return impl_->executing; }
std::size_t WorkerState::in_flight_peers() const noexcept { return impl_->in_flight.size(); }
std::size_t WorkerState::task_count() const noexcept { return impl_->tasks.size(); }
bool WorkerState::paused() const noexcept { return impl_->paused; }
const WorkerConfig& WorkerState::config() const noexcept { return impl_->cfg; }

}  // namespace tessera::distributed
