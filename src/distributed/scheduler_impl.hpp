// The scheduler server's insides, shared by the files that implement it (private to
// src/distributed/):
//   scheduler.cpp          start (listeners, the dashboard, the scheduler file), stop, and the
//                          public Scheduler methods;
//   scheduler_dispatch.cpp connections and their messages (registration, client and worker
//                          events, requests), and the state machine's actions routed to them;
//   scheduler_restart.cpp  retire-workers and Client::restart;
//   scheduler_observe.cpp  what the scheduler reports: scheduler-info, the dashboard snapshot,
//                          the task stream;
//   scheduler_shuffle.cpp  the peer-to-peer shuffle's requests and its runs' ends and losses;
//   scheduler_time.cpp     the ticker: the state machine's clock, registration deadlines,
//                          silent and removed workers.
// The state machine itself is SchedulerState (scheduler_state*.cpp); docs/distributed.md.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "comm/log_limiter.hpp"
#include "dashboard.hpp"
#include "shuffle_runs.hpp"
#include "task_stream_ring.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "util.hpp"
#include "wire.hpp"

namespace tessera::distributed {

struct Scheduler::Impl : std::enable_shared_from_this<Scheduler::Impl> {
  using Clock = std::chrono::steady_clock;
  static inline const std::string kTransferPrefix = "transfer";  // the task stream's name for fetches from peers

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

  SchedulerOptions opt;
  std::string id = random_hex(16);
  Clock::time_point start = Clock::now();

  mutable std::mutex mu;  // guards everything below
  SchedulerState state;
  ShuffleRuns shuffles;  // peer-to-peer shuffle runs (scheduler_shuffle.cpp)
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

  void handle(SchedulerEvent e);

  Conn* worker_conn(const std::string& address) {
    auto it = workers.find(address);
    return it == workers.end() ? nullptr : it->second.get();
  }
  Conn* client_conn(const std::string& name) {
    auto it = clients.find(name);
    return it == clients.end() ? nullptr : it->second.get();
  }
  void to_worker(const std::string& address, wire::SchedulerToWorker e);
  void to_client(const std::string& name, wire::SchedulerToClient e);
  void mark(Conn* c);
  void route(SchedulerAction a);
  void flush();

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
  void start_retirement(Conn& c, const comm::Message& m);
  void answer_retirements();

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
  static std::string describe(const OldWorker& w);
  void refuse_request(Conn& c, const comm::Message& m, const std::string& error);
  void start_restart(Conn& c, const comm::Message& m);
  void answer_restart(std::vector<std::shared_ptr<comm::Comm>>* to_close);
  void kill_departing(Restart& r);
  void restart_departed(const std::shared_ptr<Conn>& conn);
  static std::string join(const std::vector<std::string>& items);
  wire::ClusterInfo info() const;
  SchedulerSnapshot snapshot() const;
  void record_tick(double t, double late);
  void record_finished(Conn& c, const TaskFinished& x);

  void push_bar(const Conn& c, const std::string& key, const std::string& prefix, int thread, double start,
                double stop, std::size_t nbytes);
  void record_transfer(const Conn& c, const wire::TransferDone& x);
  TaskStreamPage task_stream_since(std::uint64_t since, std::size_t limit) const;
  TaskStreamPage task_stream_page(std::uint64_t since, std::size_t limit) const;
  void on_accept(std::shared_ptr<comm::Comm> c);
  void on_message(const std::shared_ptr<Conn>& conn, comm::Message m);
  void dispatch(Conn& c, comm::Message& m);
  void worker_given_up(Conn& nanny, const std::string& name, int pid, const std::string& reason);
  void refuse_registration(Conn& c, const std::string& address, const std::string& why);
  void on_close(const std::shared_ptr<Conn>& conn, std::exception_ptr reason);
  void tick_loop();
  void close_unregistered(double t, std::unique_lock<std::mutex>& lock);
  void announce_silent_workers(double t);
  void drop_removed_workers(std::unique_lock<std::mutex>& lock);
  void stop(bool close_workers);

  // ---- the peer-to-peer shuffle (scheduler_shuffle.cpp) -------------------------------------------
  void shuffle_request(Conn& c, const comm::Message& m);
  void shuffle_task_finished(const Key& key);
  void shuffle_worker_removed(const std::string& address);
  void tell_participants(const ShuffleRun& run, const std::string& reason, const std::string& except);
};
}  // namespace tessera::distributed
