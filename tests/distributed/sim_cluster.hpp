#pragma once
// A deterministic in-process driver for the scheduler and worker state machines: it routes
// every action to the machine (or simulated client) it is meant for through one FIFO queue,
// runs tasks instantly (value = 1 + sum of input values) and moves data between simulated
// workers' stores.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tessera/distributed/scheduler_state.hpp"
#include "tessera/distributed/worker_state.hpp"

namespace tessera::distributed::testing {

inline Task make_task(const Key& key, std::vector<Key> deps = {}, std::string op = "op") {
  Task t;
  t.key = key;
  t.op = std::move(op);
  for (auto& d : deps) t.args.push_back(KeyRef{std::move(d)});
  return t;
}

struct SimValue {
  std::int64_t value = 0;
  std::size_t nbytes = 0;
};

class SimCluster {
 public:
  struct Worker {
    explicit Worker(WorkerConfig c) : state(std::move(c)) {}
    WorkerState state;
    std::unordered_map<Key, SimValue> data;
    std::vector<std::pair<Key, std::shared_ptr<const Task>>> held;  // executions not yet run
    std::set<Key> running;
    std::size_t max_running = 0;
    std::map<std::string, double> res_running, max_res;
    std::vector<Key> executed;
    bool hold = false;
  };
  struct ClientView {
    std::map<Key, std::size_t> in_memory;
    std::map<Key, std::string> erred;
    std::vector<OperationUnavailable> unavailable;
    std::vector<Key> cancelled;
  };
  struct Kill {
    std::string address;
  };
  using Msg = std::variant<SchedulerEvent, std::pair<std::string, WorkerEvent>, Kill>;

  explicit SimCluster(SchedulerConfig cfg = default_config(), bool validate = true)
      : sched(cfg), validate_(validate) {}
  static SchedulerConfig default_config() {
    SchedulerConfig c;
    c.validate = true;
    return c;
  }

  SchedulerState sched;
  std::map<std::string, std::unique_ptr<Worker>> workers;
  std::map<std::string, ClientView> clients;
  std::vector<LogEvent> logs;
  std::vector<StealRequest> steals;
  std::vector<std::string> closed;  // workers told to close (CloseWorker)
  std::map<Key, int> attempts;
  std::size_t gathers = 0, events = 0;
  double scheduler_seconds = 0;  // time spent inside SchedulerState::handle
  double now = 0;
  bool record_logs = true;
  /** Returns an exception text to make this attempt fail. */
  std::function<std::optional<std::string>(const std::string& worker, const Key& key, int attempt)> fail;
  /** Kills the worker when it starts this key. */
  std::function<bool(const std::string& worker, const Key& key)> kill_on_execute;
  std::function<std::size_t(const Key&)> nbytes_of = [](const Key&) { return std::size_t{8}; };

  void add_worker(const std::string& addr, int nthreads = 1, std::map<std::string, double> resources = {},
                  std::vector<std::string> ops = {"op"}, const std::string& name = "") {
    WorkerConfig wc;
    wc.address = addr;
    wc.nthreads = nthreads;
    wc.resources = resources;
    wc.validate = validate_;
    workers[addr] = std::make_unique<Worker>(std::move(wc));
    AddWorker a;
    a.address = addr;
    a.name = name;
    a.nthreads = nthreads;
    a.resources = std::move(resources);
    a.ops = std::move(ops);
    a.now = now;
    queue_.push_back(SchedulerEvent(std::move(a)));
  }
  void submit(const std::string& client, std::vector<Task> tasks, std::vector<Key> keys) {
    UpdateGraph u;
    u.client = client;
    u.tasks = std::move(tasks);
    u.keys = std::move(keys);
    u.now = now;
    queue_.push_back(SchedulerEvent(std::move(u)));
  }
  void to_scheduler(SchedulerEvent e) { queue_.push_back(std::move(e)); }
  void to_worker(const std::string& w, WorkerEvent e) { queue_.push_back(std::make_pair(w, std::move(e))); }
  void kill(const std::string& addr) { queue_.push_back(Kill{addr}); }

  /** Processes queued messages; returns false when max_steps ran out first. */
  bool run(std::size_t max_steps = SIZE_MAX) {
    std::size_t steps = 0;
    while (!queue_.empty()) {
      if (steps++ >= max_steps) return false;
      Msg m = std::move(queue_.front());
      queue_.pop_front();
      step(std::move(m));
    }
    return true;
  }
  /** Runs up to n held executions on a worker (all when n < 0). */
  void release_held(const std::string& addr, int n = -1) {
    Worker& w = *workers.at(addr);
    while (!w.held.empty() && n-- != 0) {
      auto [k, t] = w.held.front();
      w.held.erase(w.held.begin());
      perform(addr, k, t);
    }
  }
  void tick(double t) {
    now = t;
    queue_.push_back(SchedulerEvent(Tick{t}));
  }
  std::optional<std::int64_t> value(const Key& k) const {
    for (const auto& [a, w] : workers)
      if (auto it = w->data.find(k); it != w->data.end()) return it->second.value;
    return std::nullopt;
  }
  std::string executed_on(const Key& k) const {
    std::string out;
    for (const auto& [a, w] : workers)
      for (const auto& e : w->executed)
        if (e == k) out = a;
    return out;
  }
  void check_all() const {
    sched.check_invariants();
    for (const auto& [a, w] : workers) w->state.check_invariants();
  }

 private:
  bool validate_;
  std::deque<Msg> queue_;
  std::vector<SchedulerAction> sacts_;
  std::vector<WorkerAction> wacts_;

  void step(Msg m) {
    events++;
    if (auto* se = std::get_if<SchedulerEvent>(&m)) {
      sacts_.clear();
      auto t0 = std::chrono::steady_clock::now();
      sched.handle(std::move(*se), sacts_);
      scheduler_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (auto& a : sacts_) route(std::move(a));
    } else if (auto* we = std::get_if<std::pair<std::string, WorkerEvent>>(&m)) {
      auto it = workers.find(we->first);
      if (it == workers.end()) return;  // dead worker: message lost
      Worker& w = *it->second;
      if (auto* s = std::get_if<ExecuteSuccess>(&we->second)) done_running(w, s->key);
      if (auto* f = std::get_if<ExecuteFailure>(&we->second)) done_running(w, f->key);
      wacts_.clear();
      w.state.handle(std::move(we->second), wacts_);
      std::vector<WorkerAction> acts = std::move(wacts_);
      for (auto& a : acts) route(we->first, std::move(a));
    } else {
      const std::string addr = std::get<Kill>(m).address;
      if (!workers.erase(addr)) return;
      sacts_.clear();
      sched.handle(RemoveWorker{addr, "killed", false, now}, sacts_);
      for (auto& a : sacts_) route(std::move(a));
    }
  }

  void done_running(Worker& w, const Key& k) {
    w.running.erase(k);
    if (auto it = running_res_.find(&w); it != running_res_.end()) {
      auto r = it->second.find(k);
      if (r != it->second.end()) {
        for (auto& [name, amount] : r->second) w.res_running[name] -= amount;
        it->second.erase(r);
      }
    }
  }
  std::map<const Worker*, std::map<Key, std::map<std::string, double>>> running_res_;

  void route(SchedulerAction a) {
    std::visit(
        [&](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, ComputeTask>) {
            std::string w = x.worker;
            to_worker(w, std::move(x));
          } else if constexpr (std::is_same_v<T, FreeKeys>) {
            std::string w = x.worker;
            to_worker(w, std::move(x));
          } else if constexpr (std::is_same_v<T, StealRequest>) {
            steals.push_back(x);
            std::string w = x.worker;
            to_worker(w, std::move(x));
          } else if constexpr (std::is_same_v<T, KeyInMemory>) {
            clients[x.client].in_memory[x.key] = x.nbytes;
            clients[x.client].erred.erase(x.key);
          } else if constexpr (std::is_same_v<T, KeyErred>) {
            clients[x.client].erred[x.key] = x.message;
          } else if constexpr (std::is_same_v<T, OperationUnavailable>) {
            clients[x.client].unavailable.push_back(x);
          } else if constexpr (std::is_same_v<T, KeyCancelled>) {
            clients[x.client].cancelled.push_back(x.key);
          } else if constexpr (std::is_same_v<T, LogEvent>) {
            if (record_logs) logs.push_back(std::move(x));
          } else if constexpr (std::is_same_v<T, AcquireReplicas>) {
            std::string w = x.worker;
            to_worker(w, std::move(x));
          } else if constexpr (std::is_same_v<T, CloseWorker>) {
            // A retired worker closes cleanly: gone at once, its departure safe.
            closed.push_back(x.worker);
            if (workers.erase(x.worker)) to_scheduler(RemoveWorker{x.worker, "retired", true, now});
          }
        },
        a);
  }

  void route(const std::string& from, WorkerAction a) {
    Worker& w = *workers.at(from);
    std::visit(
        [&](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, GatherDep>) {
            gathers++;
            auto peer = workers.find(x.peer);
            if (peer == workers.end()) {
              to_worker(from, GatherDepFailure{x.peer, "connection refused"});
              return;
            }
            GatherDepSuccess s{x.peer, {}};
            for (const Key& k : x.keys)
              if (auto it = peer->second->data.find(k); it != peer->second->data.end()) {
                w.data[k] = it->second;
                s.data.push_back({k, it->second.nbytes});
              }
            to_worker(from, std::move(s));
          } else if constexpr (std::is_same_v<T, Execute>) {
            w.running.insert(x.key);
            w.max_running = std::max(w.max_running, w.running.size());
            for (auto& [name, amount] : x.task->annotations.resources) {
              w.res_running[name] += amount;
              w.max_res[name] = std::max(w.max_res[name], w.res_running[name]);
              running_res_[&w][x.key][name] = amount;
            }
            if (w.hold) w.held.push_back({x.key, x.task});
            else perform(from, x.key, x.task);
          } else if constexpr (std::is_same_v<T, ReleaseData>) {
            w.data.erase(x.key);
          } else {
            to_scheduler(std::move(x));
          }
        },
        a);
  }

  void perform(const std::string& addr, const Key& k, const std::shared_ptr<const Task>& task) {
    Worker& w = *workers.at(addr);
    int attempt = ++attempts[k];
    w.executed.push_back(k);
    if (kill_on_execute && kill_on_execute(addr, k)) {
      kill(addr);
      return;
    }
    std::int64_t v = 1;
    for (const Key& d : task->dependencies()) {
      auto it = w.data.find(d);
      if (it == w.data.end()) {
        ADD_FAILURE() << "worker " << addr << " runs " << k << " without its input " << d;
        continue;
      }
      v += it->second.value;
    }
    if (fail) {
      if (auto msg = fail(addr, k, attempt)) {
        to_worker(addr, ExecuteFailure{k, *msg, "Traceback: " + k});
        return;
      }
    }
    std::size_t nb = nbytes_of(k);
    w.data[k] = SimValue{v, nb};
    to_worker(addr, ExecuteSuccess{k, nb, "int64", now, now, 0});
  }
};

}  // namespace tessera::distributed::testing
