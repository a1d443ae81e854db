#pragma once
/**
 * @file The client's shared state, private to src/distributed/client*.cpp: one ClientImpl per
 * connection, shared by the Client and every Future it made. Session and dispatch live in
 * client.cpp, futures in client_future.cpp, fetching values from workers in client_fetch.cpp,
 * Annotate scopes in client_annotate.cpp.
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rpc.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "wire.hpp"

namespace tessera::distributed {

/** @brief Gives a task the annotations of the Annotate scopes where its own are unset. */
void apply_annotate_scope(Task& task, const Annotations& scope);

namespace detail {

using Clock = std::chrono::steady_clock;
inline double seconds_on_clock() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }
// How often release_loop asks the scheduler whether it is there (ClientOptions::scheduler_timeout).
inline constexpr std::chrono::seconds kProbeInterval{1};
using DoneCallbacks = std::vector<std::pair<std::function<void(const Future&)>, Future>>;

struct KeyState {
  FutureStatus status = FutureStatus::Pending;
  // result() is waiting: when the key finishes, the I/O thread fetches it at once (prefetch).
  bool want_value = false;
  enum class Prefetch { None, InFlight, Done, Failed } prefetch = Prefetch::None;
  Value value;  // the prefetched value
  std::vector<std::string> workers;
  std::string message, cause;
  int refs = 0;
  DoneCallbacks callbacks;
};

struct ClientImpl : std::enable_shared_from_this<ClientImpl> {
  ClientOptions opt;
  std::string address, id;
  std::string key_prefix;
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
  std::thread releaser;  // runs release_loop: batched releases and the liveness probe
  // When the scheduler last said anything (seconds on Clock, as a double for the atomic): set by
  // the I/O thread for every message, read by release_loop's liveness check.
  std::atomic<double> last_heard{0};
  double last_check = 0;  // when check_scheduler last ran (release_loop's thread only)
  // Restarts of the cluster seen (the scheduler's `restarted`): a future made before one is
  // stale, its key forgotten by the cluster; it stays cancelled with restart_reasons[its epoch].
  std::uint64_t epoch = 0;
  std::vector<std::string> restart_reasons;

  struct WorkerConn {
    std::shared_ptr<comm::Comm> comm;
    RpcTable rpc;
  };
  std::mutex wmu;
  std::unordered_map<std::string, std::shared_ptr<WorkerConn>> worker_conns;

  ClientImpl();

  // ---- session and dispatch (client.cpp) ----
  comm::CommOptions comm_options() const;
  void connect(const std::string& addr);
  void learn(const wire::ClusterInfo& info);
  void on_message(const comm::Message& m);
  void on_lost(const std::string& why);
  // The cluster was restarted (client_restart.cpp): every future so far is cancelled.
  void on_restarted(const comm::Message& m);
  // The error of a future of `future_epoch` when that epoch is over (a restart), else nullptr;
  // the caller holds mu.
  std::exception_ptr restart_error(const Key& key, std::uint64_t future_epoch) const;
  void check_open() const;
  void release(const Key& key, std::uint64_t future_epoch);
  // Sends releases in batches: dropping 100,000 futures is one message, not 100,000. Between
  // batches, once a second, checks that the scheduler still answers (check_scheduler).
  void release_loop();
  // Asks the scheduler something it always answers, or, when it has answered nothing for
  // opt.scheduler_timeout, ends the session with on_lost (the caller holds no lock).
  void check_scheduler();
  void send_events(std::vector<wire::ClientToScheduler> events);
  // Every op must be runnable by some worker (when there are workers): fail at submit if not.
  void ensure_ops(const std::set<std::string>& ops);
  wire::ClusterInfo info();
  std::vector<Future> submit_graph(std::vector<Task> tasks, const std::vector<Key>& outputs,
                                   std::unordered_map<Key, std::int64_t> order = {});
  void close();

  // ---- futures (client_future.cpp) ----
  Future make_future(const Key& key);
  static const FutureRef& ref(const Future& f);
  // A future is its key and epoch: one of an epoch a restart ended reads as cancelled.
  FutureStatus wait_key(const Key& key, std::uint64_t future_epoch, std::optional<std::chrono::duration<double>> timeout);
  std::exception_ptr error_of(const Key& key, std::uint64_t future_epoch) const;
  void want_value(const Key& key, std::uint64_t future_epoch);
  // result(): the prefetched value when there is one (waiting for one in flight). Taken, not
  // copied: the client does not keep a result alive after handing it out (a later result()
  // fetches it again, as in Dask).
  std::optional<Value> take_prefetched(const Key& key, std::uint64_t future_epoch);
  static void run_callback(const std::function<void(const Future&)>& fn, const Future& f);

  // ---- fetching values from workers (client_fetch.cpp) ----
  std::shared_ptr<WorkerConn> worker_conn(const std::string& addr);
  std::vector<std::string> who_has(const Key& key);
  // On the I/O thread: asks the worker for a finished key someone waits on in result(), over
  // an existing connection only (connecting could block this thread). Saves the waiting thread
  // a wake-up and a message turn.
  void prefetch(const Key& key, const std::string& worker);
  // The values of finished keys, several keys per get-data message. A key whose worker is gone
  // is looked up again (the scheduler recomputes lost keys that a client still wants). Keys of
  // futures of `future_epoch`: a restart meanwhile ends the fetch with the restart's error.
  std::vector<Value> fetch(const std::vector<Key>& want, std::uint64_t future_epoch);
};

// One per Future and its copies: the last one gone releases the key (unless a restart since
// made the cluster forget it).
struct FutureRef {
  Key key;
  std::shared_ptr<ClientImpl> client;
  std::uint64_t epoch;  // the client's restarts seen when it was made
  FutureRef(Key k, std::shared_ptr<ClientImpl> c, std::uint64_t e)
      : key(std::move(k)), client(std::move(c)), epoch(e) {}
  ~FutureRef() { client->release(key, epoch); }
};

/**
 * @brief Waits for every future; throws the error of the first that did not finish. Their keys;
 * `epoch`, when given, gets the epoch they belong to (for fetch()).
 */
std::vector<Key> wait_finished(ClientImpl& impl, const std::vector<Future>& futures, std::uint64_t* epoch = nullptr);

}  // namespace detail
}  // namespace tessera::distributed
