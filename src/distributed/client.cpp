// The client's session and dispatch: connecting to the scheduler, its messages, submitting
// graphs (checked against the registry), releasing keys, and the Client's own calls.
// Futures: client_future.cpp; fetching values: client_fetch.cpp; Annotate: client_annotate.cpp.
#include "tessera/distributed/client.hpp"

#include <algorithm>
#include <future>
#include <iomanip>
#include <sstream>
#include <thread>
#include <utility>

#include "../core/logging.hpp"
#include "client_impl.hpp"
#include "scheduler_file.hpp"
#include "token.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/distributed/progress.hpp"
#include "util.hpp"

namespace tessera::distributed {
namespace detail {

ClientImpl::ClientImpl() : key_prefix(random_hex(8)) {}

comm::CommOptions ClientImpl::comm_options() const {
  comm::CommOptions co;
  co.token = opt.token;
  co.security = opt.security.with_env_defaults();
  co.name = id.empty() ? "client" : id;
  co.max_header_bytes = kClusterMaxHeaderBytes;
  return co;
}

void ClientImpl::connect(const std::string& addr) {
  address = addr;
  opt.token = token_or_env(opt.token);
  scheduler = connect_to_scheduler(addr, comm_options(), std::chrono::duration<double>(opt.timeout), "client");
  auto registered = std::make_shared<std::promise<comm::Message>>();
  auto reg_future = registered->get_future();
  std::weak_ptr<ClientImpl> weak = shared_from_this();
  last_heard = seconds_on_clock();
  scheduler->set_handlers(
      [weak, registered](comm::Message m) {
        auto self = weak.lock();
        if (!self) return;
        self->last_heard = seconds_on_clock();
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

void ClientImpl::learn(const wire::ClusterInfo& info) {
  std::lock_guard lock(mu);
  n_workers = info.workers.size();
  known_ops.clear();
  for (const auto& w : info.workers) known_ops.insert(w.ops.begin(), w.ops.end());
}

void ClientImpl::on_message(const comm::Message& m) {
  if (rpc.complete(m)) return;
  if (m.op == wire::kRestarted) return on_restarted(m);
  if (m.op != wire::kClientUpdates) {
    logging::warn("client: unexpected message '{}' from the scheduler", m.op);
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

void ClientImpl::on_lost(const std::string& why) {
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

void ClientImpl::check_open() const {
  if (closed) throw comm::CommClosedError(closed_reason.empty() ? "client is closed" : closed_reason);
}

void ClientImpl::release(const Key& key, std::uint64_t future_epoch) {
  {
    std::lock_guard lock(mu);
    if (future_epoch != epoch) return;  // forgotten by the restart (and by this client)
    auto it = keys.find(key);
    if (it == keys.end() || --it->second.refs > 0) return;
    keys.erase(it);
    if (closed) return;
    pending_release.push_back(key);
  }
  cv.notify_all();
}

void ClientImpl::release_loop() {
  std::unique_lock lock(mu);
  auto next_probe = Clock::now() + kProbeInterval;
  while (true) {
    if (opt.scheduler_timeout > 0) {
      cv.wait_until(lock, next_probe, [&] { return closed || !pending_release.empty(); });
    } else {
      cv.wait(lock, [&] { return closed || !pending_release.empty(); });
    }
    if (pending_release.empty() && closed) return;
    if (opt.scheduler_timeout > 0 && Clock::now() >= next_probe) {
      lock.unlock();
      check_scheduler();
      next_probe = Clock::now() + kProbeInterval;
      lock.lock();
      continue;
    }
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

void ClientImpl::check_scheduler() {
  const double now = seconds_on_clock();
  // This process was itself stopped or starved (a debugger, a suspended laptop) since the last
  // check: the scheduler's answers may be waiting unread, so the silence counts from now.
  if (last_check > 0 && now - last_check > 3 * std::chrono::duration<double>(kProbeInterval).count())
    last_heard = std::max(last_heard.load(), now);
  last_check = now;
  const double silent = now - last_heard.load();
  if (silent > opt.scheduler_timeout) {
    std::ostringstream os;
    os << "it answered nothing for " << std::fixed << std::setprecision(1) << silent
       << " s (ClientOptions::scheduler_timeout " << opt.scheduler_timeout
       << " s; a stopped or hung scheduler process, or a cut network)";
    on_lost(os.str());
    scheduler->close();  // its I/O ends too; a late answer is not waited for
    return;
  }
  // Who has nothing: answered on the scheduler's message thread like any request, so a scheduler
  // that stopped handling messages stops answering it. The reply itself counts (last_heard).
  comm::Message probe(wire::kWhoHas);
  probe.set("keys", std::vector<Key>{});
  rpc.request(scheduler, std::move(probe), [](const comm::Message*, std::exception_ptr) {});
}

void ClientImpl::send_events(std::vector<wire::ClientToScheduler> events) {
  scheduler->send(wire::batch_message(wire::kClientEvents, events), nullptr);
}

void ClientImpl::ensure_ops(const std::set<std::string>& ops) {
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

wire::ClusterInfo ClientImpl::info() {
  check_open();
  comm::Message reply = rpc.call(scheduler, comm::Message(wire::kSchedulerInfo));
  return reply.get<wire::ClusterInfo>("info");
}

std::vector<Future> ClientImpl::submit_graph(std::vector<Task> tasks, const std::vector<Key>& outputs,
                                             std::unordered_map<Key, std::int64_t> order) {
  std::set<std::string> ops;
  Annotations scope = Annotate::current();
  for (auto& t : tasks) {
    ops.insert(t.op);
    apply_annotate_scope(t, scope);
  }
  ensure_ops(ops);
  UpdateGraph u;
  u.client = id;
  u.tasks = std::move(tasks);
  u.keys = outputs;
  u.order = std::move(order);
  // Releases not sent yet go first, in the same batch: a key this client let go of and now
  // wants again is computed again (as in Dask), never forgotten behind the client's back.
  std::vector<wire::ClientToScheduler> events;
  std::vector<Future> futures;
  std::lock_guard order_lock(send_mu);
  while (true) {
    futures.clear();  // a try a restart overtook: those futures release nothing
    futures.reserve(outputs.size());
    for (const auto& k : outputs) futures.push_back(make_future(k));  // before any answer can come
    bool stale = false;
    {
      std::lock_guard lock(mu);
      check_open();
      // Heard of a restart since the futures were made: they are cancelled already. Made again,
      // so that the graph, which the restarted cluster will compute, has futures that see it.
      for (const auto& f : futures) stale = stale || ref(f).epoch != epoch;
      if (!stale && !pending_release.empty()) events.push_back(ReleaseKeys{id, std::exchange(pending_release, {})});
    }
    if (!stale) break;
  }
  events.push_back(std::move(u));
  send_events(std::move(events));
  return futures;
}

void ClientImpl::close() {
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

}  // namespace detail

using detail::Clock;

// ---- Client ------------------------------------------------------------------------------------------

Client::Client(const std::string& address, ClientOptions options) : impl_(std::make_shared<detail::ClientImpl>()) {
  impl_->opt = std::move(options);
  impl_->connect(address);
}

Client::Client(const LocalCluster& cluster, ClientOptions options) : impl_(std::make_shared<detail::ClientImpl>()) {
  impl_->opt = std::move(options);
  if (impl_->opt.token.empty()) impl_->opt.token = cluster.token();
  if (!impl_->opt.security.has_tls()) impl_->opt.security = cluster.security();
  impl_->connect(cluster.client_address());
}

Client::Client(std::shared_ptr<LocalCluster> cluster, ClientOptions options)
    : Client(*cluster, std::move(options)) {
  owned_cluster_ = std::move(cluster);
}

std::unique_ptr<Client> Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  std::string addr = read_scheduler_file(path, options.timeout);
  // No token of our own: the one a scheduler started with --token auto wrote there, if any.
  if (given_token(options.token).empty()) options.token = scheduler_file_token(path);
  return std::make_unique<Client>(addr, std::move(options));
}

Client::~Client() {
  close();
  owned_cluster_.reset();
}

Client::Client(Client&& other) noexcept
    : impl_(std::move(other.impl_)), owned_cluster_(std::move(other.owned_cluster_)) {}

Client& Client::operator=(Client&& other) {
  if (this != &other) {
    close();  // this client's own keys go, as when it is destroyed
    owned_cluster_.reset();
    impl_ = std::move(other.impl_);
    owned_cluster_ = std::move(other.owned_cluster_);
  }
  return *this;
}

const std::shared_ptr<detail::ClientImpl>& Client::live() const {
  if (!impl_) throw comm::CommClosedError("this Client is empty: it was moved from (use the client it was moved to)");
  return impl_;
}

void Client::close() {
  if (impl_) impl_->close();  // a moved-from client has nothing to close
}

const std::string& Client::address() const { return live()->address; }
const std::string& Client::id() const { return live()->id; }
std::string Client::name() const { return impl_ ? "distributed(" + impl_->address + ")" : "distributed(empty)"; }

namespace {

// Checks the arguments of a call to op against its registered types, when this process knows
// them (otherwise the worker does, before the call).
void check_call(const std::string& op, const std::optional<OpSignature>& types, const std::vector<std::string>& tags) {
  if (types) check_arguments(op, *types, tags);
}

std::vector<std::string> tags_of(const std::vector<Arg>& args) {
  std::vector<std::string> tags;
  tags.reserve(args.size());
  for (const Arg& a : args) tags.push_back(std::holds_alternative<Value>(a) ? type_tag_of(std::get<Value>(a)) : "");
  return tags;
}

}  // namespace

std::string Client::registered_name(const std::string& function_id) {
  auto names = OpRegistry::global().names_of_function(function_id);
  if (names.empty())
    throw UnknownOperationError(
        "submit: this function is not registered in this process (register it with "
        "TESSERA_REGISTER_FUNCTION, or submit it by its registered name)");
  return names.front();
}

void Client::throw_unequal_lengths(const std::vector<std::size_t>& sizes) {
  std::string list;
  for (std::size_t s : sizes) list += (list.empty() ? "" : ", ") + std::to_string(s);
  throw Error("map: the sequences must have one length, given " + list);
}

Future Client::submit_task(const std::string& op, std::vector<Arg> args, std::optional<std::vector<std::string>> tags,
                           const SubmitOptions& options) {
  const auto& impl = live();
  if (tags) check_call(op, OpRegistry::global().types(op), *tags);
  Task t;
  t.key = options.key.empty() ? op + "-" + impl->key_prefix + std::to_string(impl->counter++) : options.key;
  t.op = op;
  t.args = std::move(args);
  if (options.annotations) t.annotations = *options.annotations;
  Key key = t.key;
  std::vector<Task> tasks;
  tasks.push_back(std::move(t));
  return impl->submit_graph(std::move(tasks), {key})[0];
}

Future Client::submit(Task task) {
  const auto& impl = live();
  check_call(task.op, OpRegistry::global().types(task.op), tags_of(task.args));
  Key key = task.key;
  std::vector<Task> tasks;
  tasks.push_back(std::move(task));
  return impl->submit_graph(std::move(tasks), {key})[0];
}

std::vector<Future> Client::map_tasks(const std::string& op, std::vector<std::vector<Arg>> calls,
                                      std::optional<std::vector<std::vector<std::string>>> tags) {
  const auto& impl = live();
  if (tags) {
    const auto types = OpRegistry::global().types(op);  // looked up once for every call
    for (const auto& t : *tags) check_call(op, types, t);
  }
  std::vector<Task> tasks(calls.size());
  std::vector<Key> keys(calls.size());
  std::string prefix = op + "-" + impl->key_prefix;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    tasks[i].key = prefix + std::to_string(impl->counter++);
    tasks[i].op = op;
    tasks[i].args = std::move(calls[i]);
    keys[i] = tasks[i].key;
  }
  return impl->submit_graph(std::move(tasks), keys);
}

std::shared_ptr<const KeptResults> Client::keep(const Graph& graph, const std::vector<Key>& outputs) {
  const auto& impl = live();
  std::vector<Future> futures = persist(graph, outputs);
  if (auto observer = execution_observer()) report_progress(futures, *observer);  // a ProgressBar: chunks done
  detail::wait_finished(*impl, futures);  // like the local executors: done, or the first task error
  auto kept = std::make_shared<KeptResults>();
  kept->holder = impl;
  kept->keys = outputs;
  // The futures keep the results on the workers for as long as `kept` lives.
  kept->values = [impl, futures = std::move(futures)] {
    std::uint64_t epoch = 0;
    auto keys = detail::wait_finished(*impl, futures, &epoch);  // after a restart: its error
    return impl->fetch(keys, epoch);
  };
  return kept;
}

bool Client::holds(const KeptResults& kept) const {
  if (!impl_ || !kept.holder || kept.holder.get() != impl_.get()) return false;
  // Results from before a restart are gone from the cluster: not held (values() then says why),
  // unless this client made them again since (a future of this epoch wants each key).
  std::lock_guard lock(impl_->mu);
  for (const Key& k : kept.keys)
    if (!impl_->keys.count(k)) return false;
  return true;
}

Future Client::scatter(Value value) {
  const auto& impl = live();
  // The value travels inside an identity task: the scheduler keeps it as the task's lineage,
  // so a scattered value survives the loss of the worker holding it.
  Task t;
  t.key = "scatter-" + impl->key_prefix + std::to_string(impl->counter++);
  t.op = "tessera.identity";
  t.args.push_back(std::move(value));
  return submit(std::move(t));
}

std::vector<Future> Client::compute(const Graph& graph, const std::vector<Key>& outputs) {
  std::vector<Task> tasks;
  tasks.reserve(graph.size());
  for (const auto& [k, t] : graph.tasks()) tasks.push_back(t);
  // Ordered here, where the graph already is, rather than rebuilt on the scheduler.
  return live()->submit_graph(std::move(tasks), outputs, tessera::order(graph, outputs));
}

std::vector<Future> Client::persist(const Graph& graph, const std::vector<Key>& outputs) {
  return compute(graph, outputs);
}

std::vector<Value> Client::get(const Graph& graph, const std::vector<Key>& outputs) {
  auto futures = compute(graph, outputs);
  if (auto observer = execution_observer()) report_progress(futures, *observer);
  return gather(futures);
}

std::map<std::string, Value> Client::run(const std::string& op, const std::vector<Value>& args) {
  auto info = live()->info();
  std::vector<std::pair<std::string, std::future<comm::Message>>> calls;
  for (const auto& w : info.workers) {
    auto p = std::make_shared<std::promise<comm::Message>>();
    calls.push_back({w.summary.address, p->get_future()});
    try {
      auto wc = live()->worker_conn(w.summary.address);
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
  wire::ClusterInfo ci = live()->info();
  live()->learn(ci);
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
    wi.spilled = w.spilled;
    wi.bytes_received = w.bytes_received;
    wi.bytes_sent = w.bytes_sent;
    s.workers.push_back(std::move(wi));
  }
  return s;
}

bool Client::wait_for_workers(std::size_t n, std::chrono::duration<double> timeout) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  while (true) {
    auto info = live()->info();
    live()->learn(info);
    if (info.workers.size() >= n) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Client::cancel(const std::vector<Future>& futures, bool force) {
  CancelKeys c{live()->id, {}, force};
  {
    std::lock_guard lock(live()->mu);
    for (const auto& f : futures)
      if (detail::ClientImpl::ref(f).epoch == live()->epoch) c.keys.push_back(f.key());  // not one a restart ended
  }
  if (!c.keys.empty()) live()->send_events({std::move(c)});
}

void Client::retry(const std::vector<Future>& futures) {
  RetryKeys r{live()->id, {}};
  {
    std::lock_guard lock(live()->mu);
    for (const auto& f : futures) {
      if (detail::ClientImpl::ref(f).epoch != live()->epoch) continue;  // gone with a restart: submit it again
      auto it = live()->keys.find(f.key());
      if (it == live()->keys.end() || it->second.status != FutureStatus::Error) continue;
      it->second.status = FutureStatus::Pending;
      r.keys.push_back(f.key());
    }
  }
  if (!r.keys.empty()) live()->send_events({std::move(r)});
}

}  // namespace tessera::distributed
