#include "tessera/distributed/scheduler.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "../core/logging.hpp"
#include "dashboard.hpp"
#include "rpc.hpp"
#include "task_stream_ring.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "options_check.hpp"
#include "wire.hpp"
#include "worker_identity.hpp"
#include "comm/log_limiter.hpp"

namespace tessera::distributed {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kTransferPrefix = "transfer";  // the task stream's name for fetches from peers


// One connection as the scheduler sees it, with the events batched for it during one step.
struct Conn {
  enum class Role { Unknown, Worker, Client, Nanny };
  std::shared_ptr<comm::Comm> comm;
  Role role = Role::Unknown;
  std::string id;  // worker address or client name
  bool leaving = false;  // the worker said it is closing on purpose
  bool restarting = false;  // an old worker of a restart (Client::restart): forgotten, its messages ignored
  int nanny_pid = 0;        // from its registration: a nanny restarts it (0: none)
  double accepted_at = 0;   // scheduler clock: one that has not registered by registration_timeout is closed
  std::string secret;    // handed to the worker when it registered: proves a re-registration is it
  double last_heartbeat = 0;    // scheduler clock; a worker silent past worker_silent is announced
  bool announced_silent = false;  // its peers were told it is gone (peer-gone) since it was last heard
  wire::WorkerHello hello;
  std::size_t device_memory = 0;  // from the worker's last heartbeat (scheduler_info)
  std::size_t device_spilled_bytes = 0;
  std::size_t spilled = 0;
  std::size_t bytes_received = 0, bytes_sent = 0;
  ProcessUsage usage;  // CPU, memory, GPU from the last heartbeat (dashboards)
  // Worker clock -> scheduler clock for the task stream: the smallest (receive time - task stop)
  // seen, i.e. the clocks' difference plus the fastest message latency.
  double clock_offset = std::numeric_limits<double>::infinity();
  std::vector<wire::SchedulerToWorker> to_worker;
  std::vector<wire::SchedulerToClient> to_client;
  bool dirty = false;
};

// As Dask's: "services" lists the dashboard's port, so a script finds it next to the address.
// With `token` (tessera-scheduler --token auto) the file holds the cluster's secret: it is created
// readable by its owner only, before anything is written in it.
void write_scheduler_file(const std::string& path, const std::string& address, const std::string& id,
                          int dashboard_port, const std::string& token) {
  namespace fs = std::filesystem;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  std::ostringstream out;
  out << "{\n  \"type\": \"Scheduler\",\n  \"id\": \"" << id << "\",\n  \"address\": \"" << address
      << "\",\n  \"pid\": " << ::getpid();
  if (dashboard_port > 0) out << ",\n  \"services\": {\"dashboard\": " << dashboard_port << "}";
  if (!token.empty()) out << ",\n  \"token\": \"" << token << "\"";  // hex digits: nothing to escape
  out << "\n}\n";
  const std::string text = out.str();
  ::unlink(tmp.c_str());  // a stale one keeps its mode; O_EXCL makes sure this one is ours
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, token.empty() ? 0644 : 0600);
  if (fd < 0) throw Error("cannot write scheduler file " + path + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) throw Error("cannot write scheduler file " + path);
  fs::rename(tmp, p);  // atomic: readers never see half a file
}

}  // namespace

struct Scheduler::Impl : std::enable_shared_from_this<Scheduler::Impl> {
  SchedulerOptions opt;
  std::string id = random_hex(16);
  Clock::time_point start = Clock::now();

  mutable std::mutex mu;  // guards everything below
  SchedulerState state;
  std::set<std::shared_ptr<Conn>> conns;
  std::unordered_map<std::string, std::shared_ptr<Conn>> workers;  // by address
  std::unordered_map<std::string, std::shared_ptr<Conn>> clients;  // by client name
  // Nannies' own connections (docs/nanny.md), by nanny_key(host, pid): a worker that does not
  // leave for a restart is killed through its nanny.
  std::unordered_map<std::string, std::shared_ptr<Conn>> nannies;
  // The last registrations of departed workers that had a nanny, newest last, at most
  // kDepartedKept: a nanny's worker-given-up comes after the worker's connection closed, and
  // says only its pid; what the worker could run decides which waiting tasks needed it.
  struct Departed {
    std::string nanny_key;
    wire::WorkerHello hello;
  };
  std::deque<Departed> departed;
  static constexpr std::size_t kDepartedKept = 256;
  // Connections in the order they were accepted, for the registration deadline: the oldest
  // first, so each tick looks only at those whose deadline has come.
  std::deque<std::weak_ptr<Conn>> awaiting_registration;
  std::vector<Conn*> dirty;
  std::vector<SchedulerAction> actions;
  std::vector<std::shared_ptr<comm::Comm>> closing;  // retired workers, told to close after the batch
  // Connections a message's handling decided to close (a refused or replaced registration):
  // closed by on_message once the lock is released.
  std::vector<std::shared_ptr<comm::Comm>> close_after_dispatch;
  comm::detail::LogLimiter refusal_log{std::chrono::seconds(1)};
  TaskStreamRing task_stream;  // times on each worker's clock; see clock_offsets
  std::uint64_t tasks_finished = 0;  // executions reported (the page's tasks/s), transfers not counted
  // Worker address -> its clock's offset to ours (Conn::clock_offset, kept after the worker
  // leaves so its bars stay placed). Applied when the stream is read, so every bar of a worker
  // gets its best estimate, including bars recorded before a faster message improved it. An
  // entry lives as long as the ring holds a bar of that worker (push_bar), so the map does not
  // grow with every worker ever seen.
  std::unordered_map<std::string, double> clock_offsets;
  double idle_since = 0;
  // The scheduler's own figures (the dashboard's), kept by the ticker: how late its timer fired
  // (Dask's event-loop latency: a late tick means the lock, or the machine, was busy), and
  // tasks finished over the last few seconds for the tasks-per-second rate.
  double loop_latency = 0, loop_latency_max = 0;
  std::deque<std::pair<double, std::uint64_t>> finished_samples;

  std::unique_ptr<comm::Listener> listener;
  std::vector<std::unique_ptr<comm::Listener>> other_listeners;
  std::string address;
  std::thread ticker;
  std::unique_ptr<SchedulerDashboard> dashboard;
  std::condition_variable cv;
  bool stopping = false, stopped = false;

  explicit Impl(SchedulerOptions o)
      : opt(std::move(o)), state(state_config(opt)), task_stream(opt.task_stream_length) {}
  static SchedulerConfig state_config(const SchedulerOptions& o) {
    SchedulerConfig c = o.state;
    if (c.worker_silent <= 0) c.worker_silent = o.worker_silent;
    return c;
  }

  double now() const { return std::chrono::duration<double>(Clock::now() - start).count(); }

  // ---- the state machine ------------------------------------------------------------------------
  void handle(SchedulerEvent e) {
    actions.clear();
    state.handle(std::move(e), actions);
    for (auto& a : actions) route(std::move(a));
  }

  Conn* worker_conn(const std::string& address) {
    auto it = workers.find(address);
    return it == workers.end() ? nullptr : it->second.get();
  }
  Conn* client_conn(const std::string& name) {
    auto it = clients.find(name);
    return it == clients.end() ? nullptr : it->second.get();
  }
  void to_worker(const std::string& address, wire::SchedulerToWorker e) {
    if (Conn* c = worker_conn(address)) {
      c->to_worker.push_back(std::move(e));
      mark(c);
    }
  }
  void to_client(const std::string& name, wire::SchedulerToClient e) {
    if (Conn* c = client_conn(name)) {
      c->to_client.push_back(std::move(e));
      mark(c);
    }
  }
  void mark(Conn* c) {
    if (!c->dirty) {
      c->dirty = true;
      dirty.push_back(c);
    }
  }

  void route(SchedulerAction a) {
    std::visit(
        [&](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, ComputeTask> || std::is_same_v<T, FreeKeys> ||
                        std::is_same_v<T, StealRequest> || std::is_same_v<T, AcquireReplicas>) {
            std::string w = x.worker;
            to_worker(w, std::move(x));
          } else if constexpr (std::is_same_v<T, KeyInMemory>) {
            wire::KeyReady r{x.key, x.nbytes, x.type, state.who_has(x.key)};
            to_client(x.client, std::move(r));
          } else if constexpr (std::is_same_v<T, KeyErred> || std::is_same_v<T, OperationUnavailable> ||
                               std::is_same_v<T, KeyCancelled>) {
            std::string c = x.client;
            to_client(c, std::move(x));
          } else if constexpr (std::is_same_v<T, CloseWorker>) {
            // After this step's batch (flush): the worker sees its last events first.
            if (Conn* c = worker_conn(x.worker)) {
              c->leaving = true;
              closing.push_back(c->comm);
            }
          } else if constexpr (std::is_same_v<T, LogEvent>) {
            if (x.topic == "worker" || x.topic == "client")
              logging::info("scheduler: {}", x.message);
            else
              logging::debug("scheduler: [{}] {}", x.topic, x.message);
          }
        },
        a);
  }

  // Sends what this step produced, one batch message per connection.
  void flush() {
    for (Conn* c : dirty) {
      c->dirty = false;
      if (!c->to_worker.empty()) {
        c->comm->send(wire::batch_message(wire::kSchedulerEvents, c->to_worker), nullptr);
        c->to_worker.clear();
      }
      if (!c->to_client.empty()) {
        c->comm->send(wire::batch_message(wire::kClientUpdates, c->to_client), nullptr);
        c->to_client.clear();
      }
    }
    dirty.clear();
    for (auto& c : closing) c->send(comm::Message(wire::kCloseWorker), nullptr);
    closing.clear();
  }

  // ---- retire-workers and adaptive-target requests --------------------------------------------
  // A retire-workers request is answered once each of its workers closed or stopped retiring,
  // or at its deadline; checked on every tick.
  struct Retirement {
    std::weak_ptr<Conn> conn;
    comm::Message request;
    std::vector<std::string> addresses;
    double deadline = 0;
  };
  std::vector<Retirement> retirements;

  void start_retirement(Conn& c, const comm::Message& m) {
    std::vector<std::string> addresses = m.get<std::vector<std::string>>("addresses");
    auto n = m.get<std::uint64_t>("n");
    if (n > 0) addresses = state.workers_to_close(static_cast<std::size_t>(n));
    double timeout = m.get<double>("timeout");
    handle(RetireWorkers{addresses, now()});
    Retirement r;
    for (auto& sp : conns)
      if (sp.get() == &c) r.conn = sp;
    r.request = m;
    r.addresses = std::move(addresses);
    r.deadline = now() + (timeout > 0 ? timeout : 60);
    retirements.push_back(std::move(r));
    answer_retirements();
  }

  void answer_retirements() {
    std::set<std::string> alive;
    for (const auto& w : state.workers()) alive.insert(w.address);
    const double t = now();
    for (auto it = retirements.begin(); it != retirements.end();) {
      std::vector<std::string> retired, kept;
      bool done = true;
      for (const auto& a : it->addresses) {
        if (!alive.count(a)) retired.push_back(a);
        else if (state.retiring(a)) done = false;
        else kept.push_back(a);
      }
      if (!done && t < it->deadline) {
        ++it;
        continue;
      }
      if (auto c = it->conn.lock()) {
        for (const auto& a : it->addresses)
          if (alive.count(a) && state.retiring(a)) kept.push_back(a);
        comm::Message reply = make_reply(it->request);
        reply.set("retired", retired);
        reply.set("kept", kept);
        c->comm->send(std::move(reply), nullptr);
      }
      it = retirements.erase(it);
    }
  }

  // ---- restart (Client::restart) -------------------------------------------------------------------
  // Every worker with a nanny is asked to restart (it exits 4 and its nanny starts it again at
  // once), every other one to close; the state machine is replaced by a fresh one (all tasks and
  // data forgotten; the clients are told with `restarted`). The request is answered once every
  // old worker's connection closed and, with wait_for_workers, as many workers as before
  // registered; or at its deadline, with an error naming the workers that did not.
  struct OldWorker {
    std::string address, name;
    int pid = 0;
    bool nanny = false;
    std::string nanny_key;  // its nanny's connection, when it has one (nanny_key(host, pid))
  };
  static std::string nanny_key(const std::string& host, int pid) { return host + " " + std::to_string(pid); }
  // A worker that did not leave this long after the restart request (it exits by itself within
  // 2 s, kRestartGrace, even with a task running) is stopped or hung: its nanny kills it. At
  // most half the restart's timeout, so that the kill comes before the deadline.
  static constexpr double kRestartKillAfter = 3.0;
  struct Restart {
    std::weak_ptr<Conn> conn;
    comm::Message request;
    std::size_t want = 0;  // the workers before
    bool wait_for_workers = true;
    double timeout = 0, deadline = 0;
    double kill_at = 0;       // when the old workers still connected are killed through their nannies
    bool kill_asked = false;
    std::vector<OldWorker> old;
    std::vector<std::shared_ptr<Conn>> departing;  // old workers whose connection is still open
  };
  std::optional<Restart> restart;

  // "worker-1 (tcp://127.0.0.1:40123, pid 812)"; a worker named after its address: "tcp://... (pid 812)".
  static std::string describe(const OldWorker& w) {
    const std::string pid = "pid " + std::to_string(w.pid) + ")";
    if (w.name.empty() || w.name == w.address) return w.address + " (" + pid;
    return w.name + " (" + w.address + ", " + pid;
  }

  void refuse_request(Conn& c, const comm::Message& m, const std::string& error) {
    c.comm->send(make_error_reply(m, error), nullptr);
  }

  void start_restart(Conn& c, const comm::Message& m) {
    if (restart) return refuse_request(c, m, "restart: a restart is already under way");
    // Workers in this very process (an in-process LocalCluster's threads): nothing can start
    // them again, and closing them would leave a cluster with none. Refused, nothing changed.
    std::vector<std::string> in_process;
    for (const auto& [address, w] : workers)
      if (w->hello.pid == static_cast<int>(::getpid())) in_process.push_back(w->hello.add.name);
    if (!in_process.empty())
      return refuse_request(c, m,
                            "restart: worker" + std::string(in_process.size() > 1 ? "s " : " ") + join(in_process) +
                                " run" + (in_process.size() > 1 ? "" : "s") +
                                " in the scheduler's process (threads of an in-process LocalCluster, or Worker "
                                "objects): no nanny can restart them. Nothing was restarted; restart() needs worker "
                                "processes under a nanny (tessera-worker without --no-nanny)");
    Restart r;
    for (auto& sp : conns)
      if (sp.get() == &c) r.conn = sp;
    r.request = m;
    r.want = workers.size();
    r.wait_for_workers = m.get<bool>("wait_for_workers");
    r.timeout = m.get<double>("timeout");
    if (!(r.timeout > 0)) r.timeout = 60;
    r.deadline = now() + r.timeout;
    r.kill_at = now() + std::min(kRestartKillAfter, r.timeout / 2);
    std::vector<std::string> closed;
    for (auto& [address, w] : workers) {
      OldWorker o{address, w->hello.add.name, w->hello.pid, w->nanny_pid > 0,
                  w->nanny_pid > 0 ? nanny_key(w->hello.host, w->nanny_pid) : std::string()};
      // Forgotten now: its close must not remove anything, and what it still sends is stale.
      w->restarting = true;
      w->role = Conn::Role::Unknown;
      w->to_worker.clear();
      if (o.nanny) {
        w->comm->send(comm::Message(wire::kRestartWorker), nullptr);
      } else {
        w->leaving = true;
        w->comm->send(comm::Message(wire::kCloseWorker), nullptr);
        closed.push_back(describe(o));
      }
      r.departing.push_back(w);
      r.old.push_back(std::move(o));
    }
    workers.clear();
    logging::warn("scheduler: restart asked by client {}: {} workers ({} with a nanny), every task forgotten", c.id,
                  r.old.size(), r.old.size() - closed.size());
    if (!closed.empty())
      logging::warn("scheduler: restart: worker{} {} {} no nanny: closed, not restarted (something else must start "
                    "{} again)",
                    closed.size() > 1 ? "s" : "", join(closed), closed.size() > 1 ? "have" : "has",
                    closed.size() > 1 ? "them" : "it");
    // Every task and result forgotten: a fresh state machine, which knows the connected clients.
    state = SchedulerState(state_config(opt));
    const std::string reason = "the cluster was restarted (Client::restart by client " + c.id + ")";
    comm::Message note(wire::kRestarted);
    note.set("reason", reason);
    for (auto& [name, cc] : clients) {
      cc->to_client.clear();  // news of keys now forgotten
      handle(AddClient{name});
      cc->comm->send(note, nullptr);
    }
    restart = std::move(r);
    if (!retirements.empty()) answer_retirements();  // their workers are gone too
    answer_restart(nullptr);
  }

  // Answers the restart when it is done; at its deadline too when `to_close` is given (the
  // ticker): the old workers still connected (stopped, or hung) are closed (by the caller,
  // outside the lock) and named in the error.
  void answer_restart(std::vector<std::shared_ptr<comm::Comm>>* to_close) {
    if (!restart) return;
    Restart& r = *restart;
    const std::size_t registered = state.worker_count();
    const bool done = r.departing.empty() && (!r.wait_for_workers || registered >= r.want);
    if (!done && to_close && !r.kill_asked && now() >= r.kill_at) kill_departing(r);
    if (!done && (!to_close || now() < r.deadline)) return;
    std::vector<std::string> restarted, closed;
    for (const auto& o : r.old) (o.nanny ? restarted : closed).push_back(o.address);
    comm::Message reply = make_reply(r.request);
    if (done) {
      reply.set("restarted", restarted);
      reply.set("closed", closed);
      reply.set("workers", static_cast<std::uint64_t>(registered));
      logging::info("scheduler: restart done: {} workers", registered);
    } else {
      std::set<std::string> stuck, names_now;
      for (const auto& d : r.departing) {
        stuck.insert(d->id);
        to_close->push_back(d->comm);
      }
      for (const auto& w : state.workers()) names_now.insert(w.name);
      std::vector<std::string> not_left, not_back, no_nanny;
      for (const auto& o : r.old) {
        if (stuck.count(o.address)) not_left.push_back(describe(o));
        else if (!o.nanny) no_nanny.push_back(describe(o));
        // A worker named after its address gets a new name with its new port: not told apart.
        else if (r.wait_for_workers && o.name != o.address && !names_now.count(o.name)) not_back.push_back(describe(o));
      }
      std::ostringstream os;
      os << "restart: after " << r.timeout << " s, ";
      if (r.wait_for_workers) os << registered << " of " << r.want << " workers are back";
      else os << "not every worker left";
      if (!not_left.empty())
        os << "; did not leave (stopped or hung; their connections are closed now): " << join(not_left);
      if (!not_back.empty()) os << "; did not register again: " << join(not_back);
      if (!no_nanny.empty())
        os << "; closed, not restarted, having no nanny (something else must start them again, or restart() "
              "waits in vain): "
           << join(no_nanny);
      os << ". Consider a longer timeout, or wait_for_workers = false";
      reply.set("error", os.str());
      logging::warn("scheduler: {}", os.str());
    }
    if (auto c = r.conn.lock()) c->comm->send(std::move(reply), nullptr);
    restart.reset();
  }

  // The old workers still connected past kill_at, through their nannies' connections: each is
  // SIGKILLed and started again by its nanny (its connection then closes, restart_departed).
  // One whose nanny has no connection is left for the deadline, which names it.
  void kill_departing(Restart& r) {
    r.kill_asked = true;
    for (const auto& d : r.departing)
      for (const auto& o : r.old) {
        if (o.address != d->id || o.nanny_key.empty()) continue;
        auto n = nannies.find(o.nanny_key);
        if (n == nannies.end()) {
          logging::warn("scheduler: restart: {} did not leave, and its nanny has no connection to kill it",
                        describe(o));
          continue;
        }
        logging::warn("scheduler: restart: {} did not leave within {} s (stopped or hung): asking its nanny to kill "
                      "and start it again",
                      describe(o), kRestartKillAfter);
        comm::Message m(wire::kKillWorker);
        m.set("pid", o.pid);
        n->second->comm->send(std::move(m), nullptr);
      }
  }

  // An old worker of a restart closed its connection.
  void restart_departed(const std::shared_ptr<Conn>& conn) {
    if (!restart) return;
    auto& d = restart->departing;
    d.erase(std::remove(d.begin(), d.end(), conn), d.end());
    answer_restart(nullptr);
  }

  static std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
  }

  wire::ClusterInfo info() const {
    wire::ClusterInfo ci;
    ci.address = address;
    ci.id = id;
    ci.uptime = now();
    ci.tasks = state.task_count();
    auto counts = state.status_counts();
    for (std::size_t s = 0; s < counts.size(); ++s)
      if (counts[s]) ci.task_states.push_back({task_status_name(static_cast<TaskStatus>(s)), counts[s]});
    for (auto& w : state.workers()) {
      wire::WorkerInfo wi;
      if (auto it = workers.find(w.address); it != workers.end()) {
        const auto& h = it->second->hello;
        wi.pid = h.pid;
        wi.host = h.host;
        wi.local_directory = h.local_directory;
        wi.extra = h.extra;
        wi.ops = h.add.ops;
        wi.gpus = h.gpus;
        wi.device_memory_limit = h.device_memory_limit;
        wi.device_memory = it->second->device_memory;
        wi.device_spilled_bytes = it->second->device_spilled_bytes;
        wi.spilled = it->second->spilled;
        wi.bytes_received = it->second->bytes_received;
        wi.bytes_sent = it->second->bytes_sent;
        wi.usage = it->second->usage;
      }
      wi.summary = std::move(w);
      ci.workers.push_back(std::move(wi));
    }
    return ci;
  }

  // What the dashboard serves: the same copy a scheduler-info request gets, taken under the
  // lock (the dashboard takes one at most every few hundred milliseconds; the HTTP work happens
  // on its own thread, after the lock is released).
  SchedulerSnapshot snapshot() const {
    std::lock_guard lock(mu);
    SchedulerSnapshot s{info(), clients.size(), state.status_counts_by_op(), tasks_finished, task_stream.newest(),
                        state.adaptive_target()};
    s.event_loop_latency = loop_latency;
    s.event_loop_latency_max = loop_latency_max;
    if (finished_samples.size() > 1) {
      const auto& [t0, n0] = finished_samples.front();
      const auto& [t1, n1] = finished_samples.back();
      if (t1 > t0) s.tasks_per_second = static_cast<double>(n1 - n0) / (t1 - t0);
    }
    return s;
  }

  // Called by the ticker with the lock held, `late` seconds after it was due.
  void record_tick(double t, double late) {
    loop_latency = late;
    // The worst of the last ~10 s: decays so one stall does not show for ever.
    loop_latency_max = std::max(late, loop_latency_max * std::pow(0.5, opt.tick_interval / 2.0));
    finished_samples.emplace_back(t, tasks_finished);
    while (finished_samples.size() > 2 && t - finished_samples.front().first > 3.0) finished_samples.pop_front();
  }

  // One bar of the task stream: O(1) (a hash lookup and a slot overwritten), under the lock
  // this event already holds. Keys a worker only learned (no execution times) are not bars.
  void record_finished(Conn& c, const TaskFinished& x) {
    if (x.stop <= 0 || x.stop < x.start) return;
    ++tasks_finished;
    if (opt.task_stream_length == 0) return;
    if (double offset = now() - x.stop; offset < c.clock_offset) {  // rare: a faster message than any before
      c.clock_offset = offset;
      clock_offsets[c.id] = offset;
    }
    push_bar(c, x.key, state.op_of(x.key), x.thread, x.start, x.stop, x.nbytes);
  }

  // Every bar goes through here: the offset of a worker whose last bar left the ring is freed,
  // and a live worker's comes back with its next bar (two hash lookups, no scan).
  void push_bar(const Conn& c, const std::string& key, const std::string& prefix, int thread, double start,
                double stop, std::size_t nbytes) {
    if (std::isfinite(c.clock_offset) && task_stream.entries_of(c.id) == 0) clock_offsets.emplace(c.id, c.clock_offset);
    if (std::string gone = task_stream.push(key, prefix, c.id, thread, start, stop, nbytes); !gone.empty())
      clock_offsets.erase(gone);
  }

  // A transfer as a bar of its own: prefix "transfer", the peer it came from as the key, thread
  // -1 (a row of its own under the worker's threads on the page).
  void record_transfer(const Conn& c, const wire::TransferDone& x) {
    if (x.stop < x.start || opt.task_stream_length == 0) return;
    push_bar(c, x.peer, kTransferPrefix, -1, x.start, x.stop, x.nbytes);
  }

  // A page on the scheduler's clock. Called with the lock held.
  TaskStreamPage task_stream_since(std::uint64_t since, std::size_t limit) const {
    TaskStreamPage page = task_stream.since(since, limit);
    const std::string* last = nullptr;
    double offset = 0;
    for (auto& e : page.entries) {
      if (!last || *last != e.worker) {  // runs of one worker are common: one lookup per run
        auto it = clock_offsets.find(e.worker);
        offset = it == clock_offsets.end() ? 0 : it->second;
        last = &e.worker;
      }
      e.start += offset;
      e.stop += offset;
    }
    return page;
  }

  TaskStreamPage task_stream_page(std::uint64_t since, std::size_t limit) const {
    std::lock_guard lock(mu);
    return task_stream_since(since, limit);
  }

  // ---- connections ----------------------------------------------------------------------------------
  void on_accept(std::shared_ptr<comm::Comm> c) {
    auto conn = std::make_shared<Conn>();
    conn->comm = c;
    {
      std::lock_guard lock(mu);
      if (stopping) {
        c->close();
        return;
      }
      conns.insert(conn);
      conn->accepted_at = now();
      if (opt.registration_timeout > 0) awaiting_registration.push_back(conn);
    }
    std::weak_ptr<Impl> weak = shared_from_this();
    // The handlers hold the connection weakly: `conns` owns it, and the connection owns the
    // comm that owns these handlers, so a strong capture is a cycle that outlives a scheduler
    // stopped before the comm reports its close (LeakSanitizer saw it, now and then).
    std::weak_ptr<Conn> weak_conn = conn;
    c->set_handlers(
        [weak, weak_conn](comm::Message m) {
          auto self = weak.lock();
          auto conn = weak_conn.lock();
          if (self && conn) self->on_message(conn, std::move(m));
        },
        [weak, weak_conn](std::exception_ptr reason) {
          auto self = weak.lock();
          auto conn = weak_conn.lock();
          if (self && conn) self->on_close(conn, reason);
        });
  }

  void on_message(const std::shared_ptr<Conn>& conn, comm::Message m) {
    std::vector<std::shared_ptr<comm::Comm>> close_now;
    bool bad = false;
    std::string why;
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      try {
        dispatch(*conn, m);
      } catch (const std::exception& e) {
        bad = true;
        why = e.what();
      }
      flush();
      close_now.swap(close_after_dispatch);
    }
    for (auto& gone : close_now) gone->close();
    if (bad) {
      logging::warn("scheduler: closing connection from {}: bad message '{}': {}", conn->comm->peer_address(), m.op,
                   why);
      conn->comm->close();
    }
  }

  void dispatch(Conn& c, comm::Message& m) {
    const std::string& op = m.op;
    if (c.restarting) return;  // an old worker of a restart: all it could say is forgotten
    if (op == wire::kWorkerEvents && c.role == Conn::Role::Worker) {
      for (auto& e : wire::batch_events<wire::WorkerToScheduler>(m)) {
        std::visit(
            [&](auto& x) {
              using T = std::decay_t<decltype(x)>;
              // A worker speaks only for itself.
              if constexpr (std::is_same_v<T, wire::TransferDone>) {
                record_transfer(c, x);  // the task stream only: not a state-machine event
              } else if constexpr (std::is_same_v<T, Heartbeat>) {
                x.address = c.id;
                x.now = now();
                c.last_heartbeat = x.now;
                c.announced_silent = false;
                c.device_memory = x.device_memory;
                c.device_spilled_bytes = x.device_spilled_bytes;
                c.spilled = x.spilled;
                c.bytes_received = x.bytes_received;
                c.bytes_sent = x.bytes_sent;
                c.usage = std::move(x.usage);
              } else if constexpr (std::is_same_v<T, WorkerStatusChange>) {
                x.address = c.id;
              } else {
                x.worker = c.id;
                if constexpr (std::is_same_v<T, TaskFinished>) record_finished(c, x);
              }
              if constexpr (!std::is_same_v<T, wire::TransferDone>) handle(std::move(x));
            },
            e);
      }
    } else if (op == wire::kClientEvents && c.role == Conn::Role::Client) {
      for (auto& e : wire::batch_events<wire::ClientToScheduler>(m)) {
        std::visit(
            [&](auto& x) {
              using T = std::decay_t<decltype(x)>;
              x.client = c.id;
              if constexpr (std::is_same_v<T, UpdateGraph>) x.now = now();
              handle(std::move(x));
            },
            e);
      }
    } else if (op == wire::kRegisterWorker && c.role == Conn::Role::Unknown) {
      c.hello = m.get<wire::WorkerHello>("worker");
      AddWorker add = c.hello.add;
      if (add.address.empty()) throw Error("register-worker without an address");
      add.now = now();
      // The address is the worker's identity (tasks, peers' transfers): a second registration
      // for a live worker's address is refused unless it carries the secret that worker was
      // given (it is that worker, reconnecting before its old connection was seen to close),
      // or any peer could take a worker's place and close it. The old one is gone once its
      // connection closed or the TTL removed it (drop_removed_workers); one that said it is
      // leaving may be replaced at once.
      if (auto old = workers.find(add.address); old != workers.end() && old->second.get() != &c) {
        const std::shared_ptr<Conn> prev = old->second;
        const std::string given = m.has("secret") ? m.get<std::string>("secret") : std::string();
        if (prev->leaving) {
          logging::warn("scheduler: worker {} registered again while leaving; dropping its old connection",
                        add.address);
        } else if (registration_secret_matches(prev->secret, given)) {
          logging::warn("scheduler: worker {} registered again with its secret; replacing its old connection",
                        add.address);
          close_after_dispatch.push_back(prev->comm);  // outside the lock (on_message)
        } else {
          refuse_registration(c, add.address,
                              given.empty() ? "without the secret it was given" : "with a wrong secret");
          return;
        }
        prev->role = Conn::Role::Unknown;  // its close must not remove the new one
        workers.erase(old);
        // The state machine replaces a worker registered twice (its tasks are rescheduled:
        // the new process may hold none of the old one's results).
      }
      c.role = Conn::Role::Worker;
      c.id = add.address;
      if (m.has(wire::kNannyField)) {
        c.nanny_pid = m.get<int>(wire::kNannyField);
        c.hello.extra["nanny"] = std::to_string(c.nanny_pid);  // scheduler_info() shows it
      }
      for (auto& sp : conns)
        if (sp.get() == &c) workers[c.id] = sp;
      c.secret = new_registration_secret();
      c.last_heartbeat = add.now;
      comm::Message reply(wire::kRegistered);
      reply.set("id", id);
      reply.set("secret", c.secret);
      c.comm->send(std::move(reply), nullptr);
      handle(std::move(add));
      answer_restart(nullptr);  // one that restarted, perhaps the last awaited
    } else if (op == wire::kRegisterNanny && c.role == Conn::Role::Unknown) {
      // A nanny's own connection: authenticated as any peer (token proof, TLS). It is only ever
      // asked to kill its own children (it checks); a false one (it holds the token) can at most
      // take the real one's place here, so that a hung worker is named instead of killed.
      c.role = Conn::Role::Nanny;
      c.id = nanny_key(m.get<std::string>("host"), m.get<int>("pid"));
      for (auto& sp : conns)
        if (sp.get() == &c) nannies[c.id] = sp;  // a nanny that dialled again replaces its old one
    } else if (op == wire::kWorkerKilled && c.role == Conn::Role::Nanny) {
      if (m.get<bool>("killed"))
        logging::info("scheduler: nanny {} killed worker pid {} for the restart", c.id, m.get<int>("pid"));
      else
        logging::warn("scheduler: nanny {} has no worker pid {} to kill", c.id, m.get<int>("pid"));
    } else if (op == wire::kWorkerGivenUp && c.role == Conn::Role::Nanny) {
      worker_given_up(c, m.get<std::string>("name"), m.get<int>("pid"), m.get<std::string>("reason"));
    } else if (op == wire::kRegisterClient && c.role == Conn::Role::Unknown) {
      std::string name = m.get<std::string>("client");
      if (name.empty() || clients.count(name)) name += "-" + random_hex(16);
      c.role = Conn::Role::Client;
      c.id = name;
      for (auto& sp : conns)
        if (sp.get() == &c) clients[c.id] = sp;
      handle(AddClient{name});
      comm::Message reply(wire::kRegistered);
      reply.set("client", name);
      reply.set("info", info());
      c.comm->send(std::move(reply), nullptr);
    } else if (op == wire::kSchedulerInfo) {
      comm::Message reply = make_reply(m);
      reply.set("info", info());
      c.comm->send(std::move(reply), nullptr);
    } else if (op == wire::kTaskStream) {
      comm::Message reply = make_reply(m);
      auto limit = std::min<std::uint64_t>(m.get<std::uint64_t>("limit"), wire::kMaxTaskStreamPage);
      reply.set("page", task_stream_since(m.get<std::uint64_t>("since"), static_cast<std::size_t>(limit)));
      c.comm->send(std::move(reply), nullptr);
    } else if (op == wire::kRetireWorkers && c.role == Conn::Role::Client) {
      start_retirement(c, m);
    } else if (op == wire::kRestart && c.role == Conn::Role::Client) {
      start_restart(c, m);
    } else if (op == wire::kAdaptiveTarget) {
      comm::Message reply = make_reply(m);
      reply.set("target", static_cast<std::uint64_t>(state.adaptive_target(m.get<double>("target_duration"))));
      c.comm->send(std::move(reply), nullptr);
    } else if (op == wire::kWhoHas) {
      auto keys = m.get<std::vector<Key>>("keys");
      std::vector<WhoHas> out;
      for (auto& k : keys) out.push_back(WhoHas{k, state.who_has(k), 0});
      comm::Message reply = make_reply(m);
      reply.set("who_has", out);
      c.comm->send(std::move(reply), nullptr);
    } else if (op == wire::kUnregister && c.role == Conn::Role::Worker) {
      c.leaving = true;
    } else if (op == wire::kReply) {
      // nothing is asked of peers yet
    } else {
      throw Error(c.role == Conn::Role::Unknown ? "expected register-worker or register-client first, got '" + op + "'"
                                                : "unknown or misplaced message '" + op + "'");
    }
  }

  // A nanny gave up restarting its worker `pid` (docs/nanny.md): the tasks that only it could
  // run err with the reason (WorkerGivenUp) instead of waiting for a worker that will not come.
  void worker_given_up(Conn& nanny, const std::string& name, int pid, const std::string& reason) {
    std::optional<wire::WorkerHello> last;
    auto of_this_nanny = [&](const Conn& w) {
      return w.hello.pid == pid && w.nanny_pid > 0 && nanny_key(w.hello.host, w.nanny_pid) == nanny.id;
    };
    // Its connection normally closed before its nanny saw it die; if not yet, it is dead anyway.
    for (auto it = workers.begin(); it != workers.end(); ++it) {
      Conn& w = *it->second;
      if (!of_this_nanny(w)) continue;
      last = w.hello;
      close_after_dispatch.push_back(w.comm);
      w.role = Conn::Role::Unknown;  // its close must not remove it again
      const std::string address = it->first;
      workers.erase(it);
      handle(RemoveWorker{address, "its nanny gave it up", false, now()});
      break;
    }
    for (auto d = departed.rbegin(); !last && d != departed.rend(); ++d)
      if (d->nanny_key == nanny.id && d->hello.pid == pid) last = d->hello;
    if (!last) {
      logging::warn("scheduler: nanny {} gave up worker {} (pid {}), which never registered here: {}", nanny.id, name,
                    pid, reason);
      return;
    }
    const std::string why = "worker " + last->add.address + " (" + name + ", pid " + std::to_string(pid) + " on " +
                            last->host + ") was given up by its nanny: " + reason;
    logging::warn("scheduler: {}", why);
    handle(WorkerGivenUp{last->add, why, now()});
  }

  // A registration for a live worker's address that does not prove it is that worker: the
  // peer is told why (a worker that gets this exits with the message) and closed. Logged at
  // most once a second (a peer may cause this at will), with the count of those left out.
  void refuse_registration(Conn& c, const std::string& address, const std::string& why) {
    const std::string error = "worker address " + address + " belongs to a live worker; registration " + why +
                              " refused";
    std::size_t suppressed = 0;
    if (refusal_log.allow(suppressed))
      logging::warn("scheduler: {} (from {}){}", error, c.comm->peer_address(),
                    suppressed ? " (" + std::to_string(suppressed) + " more refusals not logged)" : std::string());
    comm::Message reply(wire::kRegistered);
    reply.set("error", error);
    // close() sends what was queued before it: the reply reaches the peer.
    c.comm->send(std::move(reply), nullptr);
    close_after_dispatch.push_back(c.comm);
  }

  void on_close(const std::shared_ptr<Conn>& conn, std::exception_ptr reason) {
    const std::string why = reason ? describe_exception(reason) : "connection closed";
    std::lock_guard lock(mu);
    conns.erase(conn);
    if (stopping) return;
    if (conn->restarting) {
      restart_departed(conn);
    } else if (conn->role == Conn::Role::Worker) {
      if (auto it = workers.find(conn->id); it != workers.end() && it->second == conn) {
        workers.erase(it);
        handle(RemoveWorker{conn->id, conn->leaving ? "worker closed" : why, conn->leaving, now()});
        if (conn->nanny_pid > 0) {
          departed.push_back({nanny_key(conn->hello.host, conn->nanny_pid), conn->hello});
          if (departed.size() > kDepartedKept) departed.pop_front();
        }
      }
    } else if (conn->role == Conn::Role::Client) {
      if (auto it = clients.find(conn->id); it != clients.end() && it->second == conn) {
        clients.erase(it);
        handle(RemoveClient{conn->id});
      }
    } else if (conn->role == Conn::Role::Nanny) {
      if (auto it = nannies.find(conn->id); it != nannies.end() && it->second == conn) nannies.erase(it);
    }
    flush();
  }

  // ---- time -------------------------------------------------------------------------------------
  void tick_loop() {
    std::unique_lock lock(mu);
    const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.tick_interval));
    while (!stopping) {
      const auto due = Clock::now() + interval;
      cv.wait_until(lock, due);
      if (stopping) break;
      // After the lock is taken again: a tick kept waiting by a long message handler is late.
      const auto woke = Clock::now();
      double t = now();
      record_tick(t, woke > due ? std::chrono::duration<double>(woke - due).count() : 0.0);
      handle(Tick{t});
      close_unregistered(t, lock);
      announce_silent_workers(t);
      flush();
      drop_removed_workers(lock);
      if (!retirements.empty()) answer_retirements();
      if (restart) {
        std::vector<std::shared_ptr<comm::Comm>> stuck;
        answer_restart(&stuck);
        if (!stuck.empty()) {
          lock.unlock();
          for (auto& c : stuck) c->close();
          lock.lock();
        }
      }
      if (opt.idle_timeout > 0) {
        bool busy = !clients.empty() || state.task_count() > 0;
        if (busy || idle_since == 0) idle_since = t;
        if (!busy && t - idle_since > opt.idle_timeout) {
          logging::info("scheduler: idle for {:.0f} s, closing", t - idle_since);
          lock.unlock();
          std::thread([self = shared_from_this()] { self->stop(true); }).detach();
          return;
        }
      }
    }
  }

  // Connections that did not register within registration_timeout of being accepted are
  // closed: each holds one of the listener's max_connections, and before issue 29 766 idle
  // authenticated ones held a cap of 768 for ever, locking clients out. Called with the lock
  // held; releases it while closing.
  void close_unregistered(double t, std::unique_lock<std::mutex>& lock) {
    std::vector<std::shared_ptr<comm::Comm>> late;
    while (!awaiting_registration.empty()) {
      auto conn = awaiting_registration.front().lock();
      if (conn && t - conn->accepted_at < opt.registration_timeout) break;
      awaiting_registration.pop_front();
      // Registered, closed already, or an old worker of a restart (closed by the restart).
      if (!conn || conn->role != Conn::Role::Unknown || conn->restarting || !conns.count(conn)) continue;
      late.push_back(conn->comm);
    }
    if (late.empty()) return;
    std::size_t suppressed = 0;
    if (refusal_log.allow(suppressed))
      logging::warn("scheduler: closing {} connection(s) that did not register within {} s (--registration-timeout), "
                    "e.g. from {}{}",
                    late.size(), opt.registration_timeout, late.front()->peer_address(),
                    suppressed ? " (" + std::to_string(suppressed) + " more not logged)" : std::string());
    lock.unlock();
    for (auto& c : late) c->close();
    lock.lock();
  }

  // A worker silent past worker_silent has its results counted as lost (the state machine's
  // evacuate_silent): its peers are told it is gone, so that their fetches from it fail now
  // (and they report the data missing) instead of waiting for a stopped process. Told once per
  // silence; it is fetched from again once heard from and given data.
  void announce_silent_workers(double t) {
    const double after = state_config(opt).worker_silent;
    if (after <= 0) return;
    for (auto& [address, c] : workers) {
      if (c->announced_silent || c->leaving || t - c->last_heartbeat <= after) continue;
      c->announced_silent = true;
      comm::Message m(wire::kPeerGone);
      m.set("address", address);
      for (auto& [other, oc] : workers)
        if (oc != c) oc->comm->send(m, nullptr);
    }
  }

  // A worker the state machine removed on its own (no heartbeat within worker_ttl) may still
  // be connected (stopped, or cut off): close its connection, so that a process that wakes
  // up leaves instead of lingering unknown, and tell the other workers, whose transfers from
  // it would otherwise wait forever. Called with the lock held; releases it while closing.
  void drop_removed_workers(std::unique_lock<std::mutex>& lock) {
    // Connections and live workers come and go together except after a Tick expired a worker:
    // nothing to do (the common case, every tick) unless the counts differ.
    if (workers.size() == state.worker_count()) return;
    std::set<std::string> alive;
    for (const auto& w : state.workers()) alive.insert(w.address);
    std::vector<std::shared_ptr<Conn>> gone;
    for (auto it = workers.begin(); it != workers.end();) {
      if (alive.count(it->first)) {
        ++it;
        continue;
      }
      gone.push_back(it->second);
      it = workers.erase(it);
    }
    if (gone.empty()) return;
    for (auto& g : gone) {
      logging::warn("scheduler: closing the connection of removed worker {}", g->id);
      comm::Message m(wire::kPeerGone);
      m.set("address", g->id);
      for (auto& [a, c] : workers) c->comm->send(m, nullptr);
    }
    lock.unlock();
    for (auto& g : gone) g->comm->close();
    lock.lock();
  }

  void stop(bool close_workers) {
    std::vector<std::shared_ptr<Conn>> to_close;
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      stopping = true;
      to_close.assign(conns.begin(), conns.end());
      conns.clear();
      workers.clear();
      clients.clear();
      nannies.clear();
    }
    cv.notify_all();
    if (dashboard) dashboard->stop();  // outside mu: a request in progress may be taking a snapshot
    if (listener) listener->stop();
    for (auto& l : other_listeners) l->stop();
    std::vector<std::future<void>> sent;
    if (close_workers)
      for (auto& c : to_close)
        if (c->role == Conn::Role::Worker) sent.push_back(c->comm->send(comm::Message(wire::kCloseWorker)));
    for (auto& f : sent) f.wait_for(std::chrono::seconds(2));
    for (auto& c : to_close) c->comm->close();
    if (ticker.joinable() && ticker.get_id() != std::this_thread::get_id()) ticker.join();
    {
      std::lock_guard lock(mu);
      stopped = true;
    }
    cv.notify_all();
    if (!opt.scheduler_file.empty()) {
      std::error_code ec;
      std::filesystem::remove(opt.scheduler_file, ec);
    }
  }
};

Scheduler::Scheduler(SchedulerOptions options)
    : impl_(std::make_shared<Impl>(checked_options(std::move(options)))) {
  comm::CommOptions co;
  co.token = impl_->opt.token;
  co.security = impl_->opt.security;
  co.name = "scheduler";
  co.max_header_bytes = kClusterMaxHeaderBytes;
  // Clients and workers register at once: a connection that says nothing is closed.
  co.first_message_timeout = co.handshake_timeout;
  std::weak_ptr<Impl> weak = impl_;
  auto on_comm = [weak](std::shared_ptr<comm::Comm> c) {
    if (auto self = weak.lock()) self->on_accept(std::move(c));
  };
  auto on_error = [](const std::string& peer, std::exception_ptr reason) {
    // comm already logs refusals, at a bounded rate (a peer may cause them at will).
    logging::debug("scheduler: refused connection from {}: {}", peer, describe_exception(reason));
  };
  impl_->listener = comm::listen(impl_->opt.address, on_comm, co, on_error);
  for (const auto& a : impl_->opt.also_listen) impl_->other_listeners.push_back(comm::listen(a, on_comm, co, on_error));
  {
    // Under mu: the listener already accepts, and its handlers read the address (info(), on the
    // I/O thread, under mu); ThreadSanitizer saw a registering client's reply read it unordered.
    std::lock_guard lock(impl_->mu);
    impl_->address = impl_->listener->address();
  }
  if (!impl_->opt.dashboard_address.empty()) {
    DashboardOptions d;
    d.http.address = impl_->opt.dashboard_address;
    d.http.default_host = dashboard_host_of(impl_->address);
    d.http.name = "scheduler dashboard";
    // The Impl outlives its dashboard: stop() (run by ~Scheduler at the latest) stops it first.
    impl_->dashboard = std::make_unique<SchedulerDashboard>(
        d, [self = impl_.get()] { return self->snapshot(); },
        [self = impl_.get()](std::uint64_t since, std::size_t limit) { return self->task_stream_page(since, limit); });
    logging::info("scheduler: dashboard at {}", impl_->dashboard->url());
  }
  if (!impl_->opt.scheduler_file.empty())
    write_scheduler_file(impl_->opt.scheduler_file, impl_->address, impl_->id,
                         impl_->dashboard ? impl_->dashboard->port() : 0,
                         impl_->opt.token_in_scheduler_file ? impl_->opt.token : std::string());
  impl_->ticker = std::thread([self = impl_.get()] { self->tick_loop(); });
  logging::info("scheduler: listening at {}", impl_->address);
}

Scheduler::~Scheduler() { impl_->stop(true); }

const std::string& Scheduler::address() const { return impl_->address; }

std::string Scheduler::dashboard_url() const { return impl_->dashboard ? impl_->dashboard->url() : std::string(); }

std::vector<std::string> Scheduler::other_addresses() const {
  std::vector<std::string> out;
  for (const auto& l : impl_->other_listeners) out.push_back(l->address());
  return out;
}

void Scheduler::wait() {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped; });
}

void Scheduler::stop(bool close_workers) { impl_->stop(close_workers); }

bool Scheduler::stopped() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stopped;
}

std::vector<WorkerSummary> Scheduler::workers() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state.workers();
}

std::size_t Scheduler::task_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state.task_count();
}

std::size_t Scheduler::client_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state.client_count();
}

std::size_t Scheduler::task_stream_offset_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->clock_offsets.size();
}

std::size_t Scheduler::worker_record_count() const {
  std::lock_guard lock(impl_->mu);
  // The connections' map is keyed by address and erased on close: the state's slots are what
  // could grow with every worker ever seen.
  return std::max(impl_->state.worker_slot_count(), impl_->workers.size());
}

}  // namespace tessera::distributed
