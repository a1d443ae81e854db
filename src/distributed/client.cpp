#include "tessera/distributed/client.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>

#include "rpc.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "wire.hpp"

namespace tessera::distributed {

const char* future_status_name(FutureStatus s) noexcept {
  switch (s) {
    case FutureStatus::Pending: return "pending";
    case FutureStatus::Finished: return "finished";
    case FutureStatus::Error: return "error";
    case FutureStatus::Cancelled: return "cancelled";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;


// The annotations of the enclosing Annotate scopes, innermost last.
thread_local std::vector<Annotations> annotate_stack;

Annotations merge(Annotations base, const Annotations& over) {
  if (!over.resources.empty()) base.resources = over.resources;
  if (over.priority != 0) base.priority = over.priority;
  if (over.retries != 0) base.retries = over.retries;
  if (!over.workers.empty()) base.workers = over.workers;
  if (over.allow_other_workers) base.allow_other_workers = true;
  return base;
}

// Gives a task the scope's annotations where its own are unset.
void apply_scope(Task& t, const Annotations& scope) {
  if (scope == Annotations{}) return;
  t.annotations = merge(scope, t.annotations);
}

}  // namespace

Annotate::Annotate(Annotations annotations) { annotate_stack.push_back(std::move(annotations)); }
Annotate::~Annotate() { annotate_stack.pop_back(); }
Annotations Annotate::current() {
  Annotations a;
  for (const auto& s : annotate_stack) a = merge(a, s);
  return a;
}

namespace detail {

struct KeyState {
  FutureStatus status = FutureStatus::Pending;
  // result() is waiting: when the key finishes, the I/O thread fetches it at once (prefetch).
  bool want_value = false;
  enum class Prefetch { None, InFlight, Done, Failed } prefetch = Prefetch::None;
  Value value;  // the prefetched value
  std::vector<std::string> workers;
  std::string message, cause;
  int refs = 0;
  std::vector<std::pair<std::function<void(const Future&)>, Future>> callbacks;
};

struct ClientImpl : std::enable_shared_from_this<ClientImpl> {
  ClientOptions opt;
  std::string address, id;
  std::string key_prefix = random_hex(8);
  std::atomic<std::uint64_t> counter{0};
  std::shared_ptr<comm::Comm> scheduler;
  RpcTable rpc;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<Key, KeyState> keys;
  std::vector<Key> pending_release;
  // Orders what the releaser and submit_graph send: held (before mu) from taking the pending
  // releases until they are sent, and from a graph's last look at them until the graph is sent,
  // so a release never overtakes a later graph that wants the key again.
  std::mutex send_mu;
  std::set<std::string> known_ops;
  std::size_t n_workers = 0;
  bool closed = false;
  std::string closed_reason;
  std::thread releaser;

  struct WorkerConn {
    std::shared_ptr<comm::Comm> comm;
    RpcTable rpc;
  };
  std::mutex wmu;
  std::unordered_map<std::string, std::shared_ptr<WorkerConn>> worker_conns;

  comm::CommOptions comm_options() const {
    comm::CommOptions co;
    co.token = opt.token;
    co.name = id.empty() ? "client" : id;
    co.max_header_bytes = kClusterMaxHeaderBytes;
    return co;
  }

  void connect(const std::string& addr) {
    address = addr;
    opt.token = token_or_env(opt.token);
    auto deadline = Clock::now() + std::chrono::duration<double>(opt.timeout);
    std::string last;
    while (true) {
      try {
        scheduler = comm::connect(addr, comm_options());
        break;
      } catch (const comm::HandshakeError&) {
        throw;
      } catch (const comm::CommError& e) {
        last = e.what();
      }
      if (Clock::now() >= deadline)
        throw comm::CommError("client: cannot reach the scheduler at " + addr + ": " + last);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto registered = std::make_shared<std::promise<comm::Message>>();
    auto reg_future = registered->get_future();
    std::weak_ptr<ClientImpl> weak = shared_from_this();
    scheduler->set_handlers(
        [weak, registered](comm::Message m) {
          auto self = weak.lock();
          if (!self) return;
          if (m.op == wire::kRegistered) {
            registered->set_value(std::move(m));
            return;
          }
          self->on_message(m);
        },
        [weak](std::exception_ptr reason) {
          if (auto self = weak.lock()) self->on_lost(describe_exception(reason));
        });
    comm::Message hello(wire::kRegisterClient);
    hello.set("client", "client-" + random_hex(8));
    scheduler->send(std::move(hello));
    if (reg_future.wait_for(std::chrono::duration<double>(std::max(1.0, opt.timeout))) != std::future_status::ready)
      throw comm::CommError("client: the scheduler at " + addr + " did not answer");
    comm::Message reply = reg_future.get();
    id = reply.get<std::string>("client");
    learn(reply.get<wire::ClusterInfo>("info"));
    releaser = std::thread([this] { release_loop(); });
  }

  void learn(const wire::ClusterInfo& info) {
    std::lock_guard lock(mu);
    n_workers = info.workers.size();
    known_ops.clear();
    for (const auto& w : info.workers) known_ops.insert(w.ops.begin(), w.ops.end());
  }

  // ---- messages from the scheduler ------------------------------------------------------------------
  void on_message(const comm::Message& m) {
    if (rpc.complete(m)) return;
    if (m.op != wire::kClientUpdates) {
      spdlog::warn("client: unexpected message '{}' from the scheduler", m.op);
      return;
    }
    std::vector<std::pair<std::function<void(const Future&)>, Future>> fire;
    std::vector<std::pair<Key, std::string>> prefetches;
    {
      std::lock_guard lock(mu);
      for (auto& e : wire::batch_events<wire::SchedulerToClient>(m)) {
        std::visit(
            [&](auto& x) {
              auto it = keys.find(x.key);
              if (it == keys.end()) return;  // released meanwhile
              KeyState& ks = it->second;
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, wire::KeyReady>) {
                ks.status = FutureStatus::Finished;
                ks.workers = std::move(x.workers);
                if (ks.want_value && ks.prefetch == KeyState::Prefetch::None && !ks.workers.empty())
                  prefetches.push_back({x.key, ks.workers.front()});
              } else if constexpr (std::is_same_v<T, KeyErred>) {
                ks.status = FutureStatus::Error;
                ks.message = x.message;
                ks.cause = x.cause;
              } else if constexpr (std::is_same_v<T, OperationUnavailable>) {
                ks.status = FutureStatus::Error;
                ks.message = x.message;
                ks.cause = x.key;
              } else {
                ks.status = FutureStatus::Cancelled;
              }
              for (auto& cb : ks.callbacks) fire.push_back(std::move(cb));
              ks.callbacks.clear();
            },
            e);
      }
    }
    for (auto& [key, worker] : prefetches) prefetch(key, worker);
    cv.notify_all();
    for (auto& [fn, f] : fire) run_callback(fn, f);
  }

  // On the I/O thread: asks the worker for a finished key someone waits on in result(), over
  // an existing connection only (connecting could block this thread). Saves the waiting thread
  // a wake-up and a message turn.
  void prefetch(const Key& key, const std::string& worker) {
    std::shared_ptr<WorkerConn> wc;
    {
      std::lock_guard lock(wmu);
      auto it = worker_conns.find(worker);
      if (it == worker_conns.end() || it->second->comm->is_closed()) return;
      wc = it->second;
    }
    {
      std::lock_guard lock(mu);
      auto it = keys.find(key);
      if (it == keys.end()) return;
      it->second.prefetch = KeyState::Prefetch::InFlight;
    }
    comm::Message req(wire::kGetData);
    req.set("keys", std::vector<Key>{key});
    std::weak_ptr<ClientImpl> weak = shared_from_this();
    wc->rpc.request(wc->comm, std::move(req), [weak, key](const comm::Message* r, std::exception_ptr e) {
      auto self = weak.lock();
      if (!self) return;
      Value v;
      bool ok = false;
      if (!e) {
        try {
          auto ks = r->get<std::vector<Key>>("keys");
          auto vs = wire::get_values(*r);
          if (ks.size() == 1 && vs.size() == 1 && ks[0] == key) {
            v = std::move(vs[0]);
            ok = true;
          }
        } catch (const std::exception&) {
        }
      }
      {
        std::lock_guard lock(self->mu);
        auto it = self->keys.find(key);
        if (it == self->keys.end()) return;
        it->second.prefetch = ok ? KeyState::Prefetch::Done : KeyState::Prefetch::Failed;
        if (ok) it->second.value = std::move(v);
      }
      self->cv.notify_all();
    });
  }

  // result(): the prefetched value when there is one (waiting for one in flight). Taken, not
  // copied: the client does not keep a result alive after handing it out (a later result()
  // fetches it again, as in Dask).
  std::optional<Value> take_prefetched(const Key& key) {
    std::unique_lock lock(mu);
    auto it = keys.find(key);
    if (it == keys.end()) return std::nullopt;
    cv.wait(lock, [&] {
      auto i = keys.find(key);
      return closed || i == keys.end() || i->second.prefetch != KeyState::Prefetch::InFlight;
    });
    it = keys.find(key);
    if (it == keys.end() || it->second.prefetch != KeyState::Prefetch::Done) return std::nullopt;
    it->second.prefetch = KeyState::Prefetch::None;
    return std::exchange(it->second.value, Value());
  }

  void want_value(const Key& key) {
    std::lock_guard lock(mu);
    if (auto it = keys.find(key); it != keys.end()) it->second.want_value = true;
  }

  static void run_callback(const std::function<void(const Future&)>& fn, const Future& f) {
    try {
      fn(f);
    } catch (const std::exception& e) {
      spdlog::error("client: a done callback for {} threw: {}", f.key(), e.what());
    }
  }

  void on_lost(const std::string& why) {
    // Every pending future ends: its waiters, done callbacks and AsCompleted see the error.
    std::vector<std::pair<std::function<void(const Future&)>, Future>> fire;
    {
      std::lock_guard lock(mu);
      if (closed) return;
      closed = true;
      closed_reason = "lost the scheduler at " + address + ": " + why;
      for (auto& [key, ks] : keys) {
        if (ks.status != FutureStatus::Pending) continue;
        ks.status = FutureStatus::Error;
        ks.message = "task " + key + " failed: " + closed_reason;
        ks.cause = key;
        for (auto& cb : ks.callbacks) fire.push_back(std::move(cb));
        ks.callbacks.clear();
      }
    }
    cv.notify_all();
    for (auto& [fn, f] : fire) run_callback(fn, f);
    rpc.fail_all(std::make_exception_ptr(comm::CommClosedError(closed_reason)));
  }

  void check_open() const {
    if (closed) throw comm::CommClosedError(closed_reason.empty() ? "client is closed" : closed_reason);
  }

  // ---- keys and futures ------------------------------------------------------------------------------
  Future make_future(const Key& key);
  void release(const Key& key) {
    {
      std::lock_guard lock(mu);
      auto it = keys.find(key);
      if (it == keys.end() || --it->second.refs > 0) return;
      keys.erase(it);
      if (closed) return;
      pending_release.push_back(key);
    }
    cv.notify_all();
  }

  // Sends releases in batches: dropping 100,000 futures is one message, not 100,000.
  void release_loop() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return closed || !pending_release.empty(); });
      if (pending_release.empty() && closed) return;
      lock.unlock();
      {
        std::lock_guard order_lock(send_mu);
        std::vector<Key> batch;
        bool was_closed;
        {
          std::lock_guard again(mu);
          batch.swap(pending_release);
          was_closed = closed;
        }
        if (!batch.empty() && !was_closed) send_events({ReleaseKeys{id, std::move(batch)}});
      }
      lock.lock();
      if (closed) return;
    }
  }

  void send_events(std::vector<wire::ClientToScheduler> events) {
    scheduler->send(wire::batch_message(wire::kClientEvents, events), nullptr);
  }

  FutureStatus wait_key(const Key& key, std::optional<std::chrono::duration<double>> timeout) {
    std::unique_lock lock(mu);
    auto pred = [&] {
      auto it = keys.find(key);
      return closed || it == keys.end() || it->second.status != FutureStatus::Pending;
    };
    if (timeout) {
      if (!cv.wait_for(lock, *timeout, pred)) return FutureStatus::Pending;
    } else {
      cv.wait(lock, pred);
    }
    auto it = keys.find(key);
    if (it != keys.end() && it->second.status != FutureStatus::Pending) return it->second.status;
    check_open();
    return FutureStatus::Pending;
  }

  std::exception_ptr error_of(const Key& key) const {
    std::lock_guard lock(mu);
    auto it = keys.find(key);
    if (it == keys.end()) return nullptr;
    const KeyState& ks = it->second;
    if (ks.status == FutureStatus::Error)
      return std::make_exception_ptr(TaskError(ks.cause.empty() ? key : ks.cause, ks.message, ks.message));
    if (ks.status == FutureStatus::Cancelled)
      return std::make_exception_ptr(CancelledError("task " + key + " was cancelled"));
    return nullptr;
  }

  // Every op must be runnable by some worker (when there are workers): fail at submit if not.
  void ensure_ops(const std::set<std::string>& ops) {
    auto missing = [&] {
      std::lock_guard lock(mu);
      std::vector<std::string> out;
      if (n_workers == 0) return out;
      for (const auto& op : ops)
        if (!known_ops.count(op)) out.push_back(op);
      return out;
    };
    if (missing().empty()) return;
    learn(info());  // a worker that joined since may have it
    auto still = missing();
    if (still.empty()) return;
    std::string list;
    for (const auto& op : still) list += (list.empty() ? "'" : ", '") + op + "'";
    throw UnknownOperationError("no worker of the cluster at " + address + " can run operation " + list + " (" +
                                std::to_string(n_workers) +
                                " workers; register it in the workers' program with TESSERA_REGISTER_FUNCTION and "
                                "tessera::init(), or load it with tessera-worker --preload)");
  }

  wire::ClusterInfo info() {
    check_open();
    comm::Message reply = rpc.call(scheduler, comm::Message(wire::kSchedulerInfo));
    return reply.get<wire::ClusterInfo>("info");
  }

  std::vector<Future> submit_graph(std::vector<Task> tasks, const std::vector<Key>& outputs,
                                   std::unordered_map<Key, std::int64_t> order = {}) {
    std::set<std::string> ops;
    Annotations scope = Annotate::current();
    for (auto& t : tasks) {
      ops.insert(t.op);
      apply_scope(t, scope);
    }
    ensure_ops(ops);
    std::vector<Future> futures;
    futures.reserve(outputs.size());
    for (const auto& k : outputs) futures.push_back(make_future(k));  // before any answer can come
    UpdateGraph u;
    u.client = id;
    u.tasks = std::move(tasks);
    u.keys = outputs;
    u.order = std::move(order);
    // Releases not sent yet go first, in the same batch: a key this client let go of and now
    // wants again is computed again (as in Dask), never forgotten behind the client's back.
    std::vector<wire::ClientToScheduler> events;
    std::lock_guard order_lock(send_mu);
    {
      std::lock_guard lock(mu);
      check_open();
      if (!pending_release.empty()) events.push_back(ReleaseKeys{id, std::exchange(pending_release, {})});
    }
    events.push_back(std::move(u));
    send_events(std::move(events));
    return futures;
  }

  // ---- fetching values from workers ----------------------------------------------------------------
  std::shared_ptr<WorkerConn> worker_conn(const std::string& addr) {
    std::lock_guard lock(wmu);
    auto& slot = worker_conns[addr];
    if (slot && !slot->comm->is_closed()) return slot;
    auto wc = std::make_shared<WorkerConn>();
    wc->comm = comm::connect(addr, comm_options());
    wc->comm->set_handlers([wc_raw = wc.get()](comm::Message m) { wc_raw->rpc.complete(m); },
                           [wcw = std::weak_ptr<WorkerConn>(wc)](std::exception_ptr reason) {
                             if (auto w = wcw.lock())
                               w->rpc.fail_all(reason ? reason
                                                      : std::make_exception_ptr(comm::CommClosedError("closed")));
                           });
    slot = wc;
    return wc;
  }

  std::vector<std::string> who_has(const Key& key) {
    comm::Message req(wire::kWhoHas);
    req.set("keys", std::vector<Key>{key});
    auto reply = rpc.call(scheduler, std::move(req));
    auto w = reply.get<std::vector<WhoHas>>("who_has");
    return w.empty() ? std::vector<std::string>{} : w[0].workers;
  }

  // The values of finished keys, several keys per get-data message. A key whose worker is gone
  // is looked up again (the scheduler recomputes lost keys that a client still wants).
  std::vector<Value> fetch(const std::vector<Key>& want) {
    std::vector<Value> out(want.size());
    std::vector<std::size_t> todo(want.size());
    for (std::size_t i = 0; i < want.size(); ++i) todo[i] = i;
    std::unordered_map<std::size_t, std::vector<std::string>> located;
    auto deadline = Clock::now() + std::chrono::seconds(300);
    for (int round = 0; !todo.empty(); ++round) {
      if (round > 0) {
        if (Clock::now() > deadline) throw Error("client: could not fetch " + want[todo[0]] + " from any worker");
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20 * round, 200)));
      }
      std::map<std::string, std::vector<std::size_t>> by_worker;
      {
        std::lock_guard lock(mu);
        check_open();
        for (std::size_t i : todo) {
          std::vector<std::string> ws;
          if (auto l = located.find(i); l != located.end()) ws = l->second;
          else if (auto it = keys.find(want[i]); it != keys.end()) ws = it->second.workers;
          if (ws.empty()) continue;
          by_worker[ws[i % ws.size()]].push_back(i);
        }
      }
      std::vector<std::pair<std::vector<std::size_t>, std::future<comm::Message>>> calls;
      for (auto& [addr, idx] : by_worker) {
        auto p = std::make_shared<std::promise<comm::Message>>();
        calls.push_back({idx, p->get_future()});
        try {
          auto wc = worker_conn(addr);
          comm::Message req(wire::kGetData);
          std::vector<Key> ks;
          for (auto i : idx) ks.push_back(want[i]);
          req.set("keys", ks);
          wc->rpc.request(wc->comm, std::move(req), [p](const comm::Message* r, std::exception_ptr e) {
            if (e) p->set_exception(e);
            else p->set_value(*r);
          });
        } catch (...) {
          p->set_exception(std::current_exception());
        }
      }
      std::vector<std::size_t> again;
      std::set<std::size_t> got;
      for (auto& [idx, fut] : calls) {
        try {
          comm::Message r = fut.get();
          auto ks = r.get<std::vector<Key>>("keys");
          auto vs = wire::get_values(r);
          std::unordered_map<Key, std::size_t> pos;
          for (std::size_t j = 0; j < ks.size() && j < vs.size(); ++j) pos[ks[j]] = j;
          for (auto i : idx) {
            auto it = pos.find(want[i]);
            if (it == pos.end()) continue;
            out[i] = std::move(vs[it->second]);
            got.insert(i);
          }
        } catch (const std::exception& e) {
          spdlog::debug("client: fetch failed: {}", e.what());
        }
      }
      for (std::size_t i : todo)
        if (!got.count(i)) again.push_back(i);
      // Ask the scheduler where the missing ones are now.
      for (std::size_t i : again) {
        FutureStatus st;
        {
          std::lock_guard lock(mu);
          auto it = keys.find(want[i]);
          st = it == keys.end() ? FutureStatus::Finished : it->second.status;
        }
        if (st == FutureStatus::Error || st == FutureStatus::Cancelled) std::rethrow_exception(error_of(want[i]));
        located[i] = who_has(want[i]);
      }
      todo = std::move(again);
    }
    return out;
  }

  void close() {
    {
      std::lock_guard lock(mu);
      if (closed && !releaser.joinable()) return;
      if (!closed) {
        closed = true;
        closed_reason = "client is closed";
      }
    }
    cv.notify_all();
    if (releaser.joinable()) releaser.join();
    if (scheduler) scheduler->close();
    std::lock_guard lock(wmu);
    for (auto& [a, w] : worker_conns) w->comm->close();
    worker_conns.clear();
  }
};

struct FutureRef {
  Key key;
  std::shared_ptr<ClientImpl> client;
  FutureRef(Key k, std::shared_ptr<ClientImpl> c) : key(std::move(k)), client(std::move(c)) {}
  ~FutureRef() { client->release(key); }
};

Future ClientImpl::make_future(const Key& key) {
  {
    std::lock_guard lock(mu);
    keys[key].refs++;
  }
  return Future(std::make_shared<FutureRef>(key, shared_from_this()));
}

}  // namespace detail

// ---- Future ---------------------------------------------------------------------------------------------

namespace {
const detail::FutureRef& ref_of(const std::shared_ptr<detail::FutureRef>& r) {
  if (!r) throw Error("empty Future");
  return *r;
}
}  // namespace

const Key& Future::key() const { return ref_of(ref_).key; }

FutureStatus Future::status() const {
  const auto& r = ref_of(ref_);
  std::lock_guard lock(r.client->mu);
  auto it = r.client->keys.find(r.key);
  return it == r.client->keys.end() ? FutureStatus::Pending : it->second.status;
}

bool Future::done() const { return status() != FutureStatus::Pending; }

bool Future::wait(std::optional<std::chrono::duration<double>> timeout) const {
  const auto& r = ref_of(ref_);
  return r.client->wait_key(r.key, timeout) != FutureStatus::Pending;
}

Value Future::result(std::optional<std::chrono::duration<double>> timeout) const {
  const auto& r = ref_of(ref_);
  r.client->want_value(r.key);
  FutureStatus st = r.client->wait_key(r.key, timeout);
  if (st == FutureStatus::Pending)
    throw comm::CommTimeoutError("timed out waiting for " + r.key);
  if (st != FutureStatus::Finished) std::rethrow_exception(r.client->error_of(r.key));
  if (auto v = r.client->take_prefetched(r.key)) return std::move(*v);
  return r.client->fetch({r.key})[0];
}

std::exception_ptr Future::exception() const {
  const auto& r = ref_of(ref_);
  return r.client->error_of(r.key);
}

void Future::cancel() const {
  const auto& r = ref_of(ref_);
  r.client->send_events({CancelKeys{r.client->id, {r.key}, false}});
}

void Future::add_done_callback(std::function<void(const Future&)> fn) const {
  const auto& r = ref_of(ref_);
  {
    std::lock_guard lock(r.client->mu);
    auto it = r.client->keys.find(r.key);
    if (it != r.client->keys.end() && it->second.status == FutureStatus::Pending) {
      it->second.callbacks.push_back({std::move(fn), *this});
      return;
    }
  }
  detail::ClientImpl::run_callback(fn, *this);
}

bool wait(const std::vector<Future>& futures, std::optional<std::chrono::duration<double>> timeout) {
  auto deadline = timeout ? Clock::now() + std::chrono::duration_cast<Clock::duration>(*timeout) : Clock::time_point::max();
  for (const auto& f : futures) {
    if (!timeout) {
      f.wait();
      continue;
    }
    auto left = std::chrono::duration<double>(deadline - Clock::now());
    if (left.count() <= 0 && !f.done()) return false;
    if (!f.wait(std::max(left, std::chrono::duration<double>(0)))) return false;
  }
  return true;
}

// ---- AsCompleted --------------------------------------------------------------------------------------

struct AsCompleted::State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Future> done;
  std::size_t outstanding = 0;
};

AsCompleted::AsCompleted(const std::vector<Future>& futures) : state_(std::make_shared<State>()) {
  for (const auto& f : futures) add(f);
}
AsCompleted::~AsCompleted() = default;

void AsCompleted::add(const Future& f) {
  {
    std::lock_guard lock(state_->mu);
    state_->outstanding++;
  }
  std::weak_ptr<State> weak = state_;
  f.add_done_callback([weak](const Future& g) {
    if (auto s = weak.lock()) {
      {
        std::lock_guard lock(s->mu);
        s->done.push_back(g);
      }
      s->cv.notify_all();
    }
  });
}

std::optional<Future> AsCompleted::next() {
  std::unique_lock lock(state_->mu);
  if (state_->outstanding == 0) return std::nullopt;
  state_->cv.wait(lock, [&] { return !state_->done.empty(); });
  Future f = std::move(state_->done.front());
  state_->done.pop_front();
  state_->outstanding--;
  return f;
}

std::size_t AsCompleted::remaining() const {
  std::lock_guard lock(state_->mu);
  return state_->outstanding;
}

// ---- Client ------------------------------------------------------------------------------------------

Client::Client(const std::string& address, ClientOptions options) : impl_(std::make_shared<detail::ClientImpl>()) {
  impl_->opt = std::move(options);
  impl_->connect(address);
}

Client::Client(const LocalCluster& cluster, ClientOptions options) : impl_(std::make_shared<detail::ClientImpl>()) {
  impl_->opt = std::move(options);
  if (impl_->opt.token.empty()) impl_->opt.token = cluster.token();
  impl_->connect(cluster.client_address());
}

Client::Client(std::shared_ptr<LocalCluster> cluster, ClientOptions options)
    : Client(*cluster, std::move(options)) {
  owned_cluster_ = std::move(cluster);
}

std::unique_ptr<Client> Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  std::string addr = read_scheduler_file(path, options.timeout);
  return std::make_unique<Client>(addr, std::move(options));
}

Client::~Client() {
  close();
  owned_cluster_.reset();
}

void Client::close() { impl_->close(); }

const std::string& Client::address() const { return impl_->address; }
const std::string& Client::id() const { return impl_->id; }
std::string Client::name() const { return "distributed(" + impl_->address + ")"; }

Future Client::submit_task(const std::string& op, std::vector<Arg> args, const SubmitOptions& options) {
  Task t;
  t.key = options.key.empty() ? op + "-" + impl_->key_prefix + std::to_string(impl_->counter++) : options.key;
  t.op = op;
  t.args = std::move(args);
  if (options.annotations) t.annotations = *options.annotations;
  Key key = t.key;
  std::vector<Task> tasks;
  tasks.push_back(std::move(t));
  return impl_->submit_graph(std::move(tasks), {key})[0];
}

Future Client::submit(Task task) {
  Key key = task.key;
  std::vector<Task> tasks;
  tasks.push_back(std::move(task));
  return impl_->submit_graph(std::move(tasks), {key})[0];
}

std::vector<Future> Client::map_tasks(const std::string& op, std::vector<std::vector<Arg>> calls) {
  std::vector<Task> tasks(calls.size());
  std::vector<Key> keys(calls.size());
  std::string prefix = op + "-" + impl_->key_prefix;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    tasks[i].key = prefix + std::to_string(impl_->counter++);
    tasks[i].op = op;
    tasks[i].args = std::move(calls[i]);
    keys[i] = tasks[i].key;
  }
  return impl_->submit_graph(std::move(tasks), keys);
}

namespace {

/** Waits for every future; throws the error of the first that did not finish. Their keys. */
std::vector<Key> wait_finished(detail::ClientImpl& impl, const std::vector<Future>& futures) {
  std::vector<Key> keys;
  keys.reserve(futures.size());
  for (const auto& f : futures) {
    FutureStatus st = impl.wait_key(f.key(), std::nullopt);
    if (st != FutureStatus::Finished) std::rethrow_exception(impl.error_of(f.key()));
    keys.push_back(f.key());
  }
  return keys;
}

}  // namespace

std::vector<Value> Client::gather(const std::vector<Future>& futures) {
  return impl_->fetch(wait_finished(*impl_, futures));
}

std::shared_ptr<const KeptResults> Client::keep(const Graph& graph, const std::vector<Key>& outputs) {
  std::vector<Future> futures = persist(graph, outputs);
  wait_finished(*impl_, futures);  // like the local executors: done, or the first task error
  auto kept = std::make_shared<KeptResults>();
  kept->holder = impl_;
  kept->keys = outputs;
  // The futures keep the results on the workers for as long as `kept` lives.
  kept->values = [impl = impl_, futures = std::move(futures)] { return impl->fetch(wait_finished(*impl, futures)); };
  return kept;
}

bool Client::holds(const KeptResults& kept) const { return kept.holder && kept.holder.get() == impl_.get(); }

Future Client::scatter(Value value) {
  // The value travels inside an identity task: the scheduler keeps it as the task's lineage,
  // so a scattered value survives the loss of the worker holding it.
  Task t;
  t.key = "scatter-" + impl_->key_prefix + std::to_string(impl_->counter++);
  t.op = "tessera.identity";
  t.args.push_back(std::move(value));
  return submit(std::move(t));
}

std::vector<Future> Client::compute(const Graph& graph, const std::vector<Key>& outputs) {
  std::vector<Task> tasks;
  tasks.reserve(graph.size());
  for (const auto& [k, t] : graph.tasks()) tasks.push_back(t);
  // Ordered here, where the graph already is, rather than rebuilt on the scheduler.
  return impl_->submit_graph(std::move(tasks), outputs, tessera::order(graph, outputs));
}

std::vector<Future> Client::persist(const Graph& graph, const std::vector<Key>& outputs) {
  return compute(graph, outputs);
}

std::vector<Value> Client::get(const Graph& graph, const std::vector<Key>& outputs) {
  auto futures = compute(graph, outputs);
  return gather(futures);
}

std::map<std::string, Value> Client::run(const std::string& op, const std::vector<Value>& args) {
  auto info = impl_->info();
  std::vector<std::pair<std::string, std::future<comm::Message>>> calls;
  for (const auto& w : info.workers) {
    auto p = std::make_shared<std::promise<comm::Message>>();
    calls.push_back({w.summary.address, p->get_future()});
    try {
      auto wc = impl_->worker_conn(w.summary.address);
      comm::Message req(wire::kRun);
      req.set("op", op);
      wire::put_values(req, args);
      wc->rpc.request(wc->comm, std::move(req), [p](const comm::Message* r, std::exception_ptr e) {
        if (e) p->set_exception(e);
        else p->set_value(*r);
      });
    } catch (...) {
      p->set_exception(std::current_exception());
    }
  }
  std::map<std::string, Value> out;
  for (auto& [addr, fut] : calls) {
    try {
      comm::Message r = fut.get();
      auto vs = wire::get_values(r);
      out[addr] = vs.empty() ? Value() : vs[0];
    } catch (const std::exception& e) {
      throw Error("run '" + op + "' on worker " + addr + " failed: " + e.what());
    }
  }
  return out;
}

SchedulerInfo Client::scheduler_info() {
  wire::ClusterInfo ci = impl_->info();
  impl_->learn(ci);
  SchedulerInfo s;
  s.address = ci.address;
  s.id = ci.id;
  s.uptime = ci.uptime;
  s.tasks = ci.tasks;
  for (auto& [name, n] : ci.task_states) s.task_states[name] = n;
  for (auto& w : ci.workers) {
    WorkerInfo wi;
    wi.address = w.summary.address;
    wi.name = w.summary.name;
    wi.nthreads = w.summary.nthreads;
    wi.resources = w.summary.resources;
    wi.resources_used = w.summary.resources_used;
    wi.memory_limit = w.summary.memory_limit;
    wi.memory = w.summary.memory;
    wi.processing = w.summary.processing;
    wi.keys = w.summary.has_what;
    wi.paused = w.summary.paused;
    wi.pid = w.pid;
    wi.host = w.host;
    wi.local_directory = w.local_directory;
    wi.extra = w.extra;
    wi.ops = w.ops.size();
    wi.gpus = w.gpus;
    wi.device_memory_limit = w.device_memory_limit;
    wi.device_memory = w.device_memory;
    wi.device_spilled_bytes = w.device_spilled_bytes;
    s.workers.push_back(std::move(wi));
  }
  return s;
}

bool Client::wait_for_workers(std::size_t n, std::chrono::duration<double> timeout) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  while (true) {
    auto info = impl_->info();
    impl_->learn(info);
    if (info.workers.size() >= n) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Client::cancel(const std::vector<Future>& futures, bool force) {
  CancelKeys c{impl_->id, {}, force};
  for (const auto& f : futures) c.keys.push_back(f.key());
  impl_->send_events({std::move(c)});
}

void Client::retry(const std::vector<Future>& futures) {
  RetryKeys r{impl_->id, {}};
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& f : futures) {
      auto it = impl_->keys.find(f.key());
      if (it == impl_->keys.end() || it->second.status != FutureStatus::Error) continue;
      it->second.status = FutureStatus::Pending;
      r.keys.push_back(f.key());
    }
  }
  if (!r.keys.empty()) impl_->send_events({std::move(r)});
}

}  // namespace tessera::distributed
