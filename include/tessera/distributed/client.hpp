#pragma once
/**
 * @file
 * Client and Future: the user's side of a cluster, like dask.distributed.Client.
 *
 *     int inc(int x) { return x + 1; }
 *     TESSERA_REGISTER_FUNCTION(inc);
 *
 *     tessera::distributed::LocalCluster cluster({.n_workers = 2});
 *     tessera::distributed::Client client(cluster);
 *     auto f = client.submit(inc, 41);            // TypedFuture<int>
 *     int v = f.result();                         // 42
 *     auto fs = client.map(inc, std::vector<int>{1, 2, 3});
 *     std::vector<int> values = client.gather(fs);
 *     Future g = client.submit("inc", 41);        // by name: for functions this program does not link
 *     int w = g.result_as<int>();
 *     double s = ((x + 1).sum()).compute(client).item<double>();   // any Array, unchanged
 *
 * Arguments are checked against the function's registered types at submit (by name: when this
 * process registers the name; otherwise the worker checks them before the call). Tasks run
 * wherever the scheduler places them; values stay on the workers until a result() or gather()
 * fetches them straight from the worker that holds them.
 */
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tessera/comm/security.hpp"
#include "tessera/core/device.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/distributed/task_stream.hpp"
#include "tessera/graph/task.hpp"
#include "tessera/ops/function.hpp"

namespace tessera::distributed {

class LocalCluster;
class Client;

namespace detail {
struct ClientImpl;
struct FutureRef;
}  // namespace detail

/** @brief A future's key was cancelled before it finished. */
class CancelledError : public Error {
 public:
  using Error::Error;
};

/**
 * @brief Client::restart did not finish: a worker did not leave or come back within the
 * timeout (named in the message), or the cluster's workers cannot be restarted.
 */
class RestartError : public Error {
 public:
  using Error::Error;
};

/** @brief What Client::restart did (addresses are the workers' before the restart). */
struct RestartReport {
  std::vector<std::string> restarted;  ///< asked to restart: their nannies started them again
  std::vector<std::string> closed;     ///< without a nanny (--no-nanny): closed, not restarted
  std::size_t workers = 0;             ///< workers connected when the scheduler answered
};

enum class FutureStatus { Pending, Finished, Error, Cancelled };
const char* future_status_name(FutureStatus s) noexcept;

/**
 * @brief A task's result on the cluster. Copies share one reference; when the last Future of a
 * key (across copies) is dropped, the client tells the scheduler it no longer wants the key.
 */
class Future {
 public:
  Future() = default;
  const Key& key() const;
  bool valid() const noexcept { return ref_ != nullptr; }
  FutureStatus status() const;
  bool done() const;
  /** @brief Blocks until done (or the timeout, then returns false). */
  bool wait(std::optional<std::chrono::duration<double>> timeout = std::nullopt) const;
  /**
   * @brief The value, fetched from a worker holding it (cached afterwards).
   * @throw TaskError naming the key and the task that raised; CancelledError; CommError.
   */
  Value result(std::optional<std::chrono::duration<double>> timeout = std::nullopt) const;
  /**
   * @brief result() decoded as T (a Block, or a cereal-serializable type).
   * @throw SerializationError "the result of K holds int, read as std::string" for another type.
   */
  template <typename T>
  T result_as(std::optional<std::chrono::duration<double>> timeout = std::nullopt) const {
    return tessera::detail::from_task_value<T>(result(timeout), "the result of " + key());
  }
  /** @brief The error once done: a TaskError/CancelledError, or nullptr when it finished. */
  std::exception_ptr exception() const;
  /** @brief Asks the scheduler to cancel the key (and release it). */
  void cancel() const;
  /** @brief Calls fn once the future is done (at once if it already is), on a client thread. */
  void add_done_callback(std::function<void(const Future&)> fn) const;

 private:
  friend class Client;
  friend struct detail::ClientImpl;
  explicit Future(std::shared_ptr<detail::FutureRef> ref) : ref_(std::move(ref)) {}
  std::shared_ptr<detail::FutureRef> ref_;
};

/**
 * @brief A Future whose value is known to be a T: what submitting a function itself gives
 * (`client.submit(inc, 41)` is a TypedFuture<int>). It is a Future (same size, one shared
 * reference), so it goes wherever a Future does; result() decodes the value as T.
 *
 * It is not spelled Future<T> because Future stays a plain class, used as it is everywhere
 * (std::vector<Future>, Array compute on a Client); a class and a template cannot share a name.
 */
template <typename T>
class TypedFuture : public Future {
 public:
  using value_type = T;
  TypedFuture() = default;
  /** @brief The value as T; throws as Future::result. For a function returning void: waits. */
  T result(std::optional<std::chrono::duration<double>> timeout = std::nullopt) const {
    if constexpr (std::is_void_v<T>) (void)Future::result(timeout);
    else return result_as<T>(timeout);
  }
  /** @brief The untyped Future (the same reference). */
  const Future& untyped() const noexcept { return *this; }

 private:
  friend class Client;
  explicit TypedFuture(Future f) : Future(std::move(f)) {}
};

namespace detail {
template <typename T>
struct typed_future_value {
  static constexpr bool typed = false;
};
template <typename T>
struct typed_future_value<TypedFuture<T>> {
  static constexpr bool typed = true;
  using type = T;
};
}  // namespace detail

/** @brief Blocks until every future is done; false when the timeout ran out first. */
bool wait(const std::vector<Future>& futures,
          std::optional<std::chrono::duration<double>> timeout = std::nullopt);

/**
 * @brief Yields futures in the order they finish, like dask's as_completed:
 *
 *     AsCompleted ac(futures);
 *     while (auto f = ac.next()) use(f->result());
 */
class AsCompleted {
 public:
  explicit AsCompleted(const std::vector<Future>& futures);
  ~AsCompleted();
  /** @brief Adds another future to wait for. */
  void add(const Future& f);
  /** @brief The next finished future; nullopt once all have been returned. */
  std::optional<Future> next();
  std::size_t remaining() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/**
 * @brief Scheduling annotations for everything submitted or computed in this thread while the
 * scope lives, like `with dask.annotate(...)`. Scopes nest; inner values win. A task's own
 * non-default annotations win over the scope's.
 *
 *     { Annotate gpu({.resources = {{"GPU", 1}}}); client.submit("train", 1); }
 */
class Annotate {
 public:
  explicit Annotate(Annotations annotations);
  ~Annotate();
  Annotate(const Annotate&) = delete;
  Annotate& operator=(const Annotate&) = delete;
  /** @brief The annotations in force in this thread (defaults outside any scope). */
  static Annotations current();
};

/** @brief One worker, as scheduler_info() shows it. */
struct WorkerInfo {
  std::string address;
  std::string name;
  int nthreads = 0;
  std::map<std::string, double> resources;
  std::map<std::string, double> resources_used;
  std::size_t memory_limit = 0;
  std::size_t memory = 0;  ///< bytes held, as of the last heartbeat
  std::size_t processing = 0;
  std::size_t keys = 0;
  bool paused = false;
  int pid = 0;
  std::string host;
  std::string local_directory;
  std::map<std::string, std::string> extra;  ///< WorkerOptions::extra
  std::size_t ops = 0;                        ///< operations it can run
  std::vector<GpuInfo> gpus;                  ///< the GPU it uses; empty for a host-only worker
  std::size_t device_memory_limit = 0;        ///< bytes of results kept on the GPU (0: no limit)
  std::size_t device_memory = 0;              ///< bytes of results on the GPU, as of the last heartbeat
  std::size_t device_spilled_bytes = 0;       ///< bytes moved GPU -> host memory so far (last heartbeat)
  std::size_t spilled = 0;                    ///< bytes of results spilled to disk (last heartbeat)
  std::size_t bytes_received = 0;             ///< fetched from other workers so far (last heartbeat)
  std::size_t bytes_sent = 0;                 ///< sent to other workers and clients so far (last heartbeat)
};

struct SchedulerInfo {
  std::string address;
  std::string id;
  double uptime = 0;
  std::size_t tasks = 0;
  std::map<std::string, std::size_t> task_states;
  std::vector<WorkerInfo> workers;
};

/** @brief Options of submit_with(): an explicit key and per-call annotations. */
struct SubmitOptions {
  Key key;                                 ///< default: "<op>-<unique hex>"
  std::optional<Annotations> annotations;  ///< default: the Annotate scope
};

/** @brief Dask's Security: the CA file, certificate and key for tls:// (comm/security.hpp). */
using Security = comm::Security;

struct ClientOptions {
  std::string token;
  /// tls:// schedulers: CA file, certificate and key; fields left empty come from
  /// TESSERA_TLS_CA_FILE, TESSERA_TLS_CERT, TESSERA_TLS_KEY.
  Security security;
  double timeout = 30;  ///< seconds to wait for the scheduler at connect
  /// Seconds the scheduler may answer nothing (it is asked something every second) before the
  /// client counts it as lost: every pending future then errs and every wait returns, as a
  /// worker's --death-timeout ends the worker. A scheduler that is SIGSTOPped or whose host hung
  /// keeps its TCP connection open, so without this a wait with no timeout would never end.
  /// 0: never (wait for the connection to close).
  double scheduler_timeout = 10;
};

/**
 * @brief A connection to a scheduler. Thread-safe. Also an Executor, so Array::compute(client)
 * and persist run on the cluster unchanged. Closing (or destroying) it releases everything it
 * asked for.
 */
class Client final : public Executor {
 public:
  /** @brief Connects to "tcp://host:port" (or any registered scheme). */
  explicit Client(const std::string& address, ClientOptions options = {});
  /** @brief Connects to a LocalCluster (which must outlive the client). */
  explicit Client(const LocalCluster& cluster, ClientOptions options = {});
  /** @brief Owns the cluster: it is closed after the client. */
  explicit Client(std::shared_ptr<LocalCluster> cluster, ClientOptions options = {});
  /** @brief Reads the address from a scheduler file (waiting up to options.timeout for it). */
  static std::unique_ptr<Client> from_scheduler_file(const std::string& path, ClientOptions options = {});
  ~Client() override;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  /** @brief Takes over the connection; the moved-from client is empty and throws when used. */
  Client(Client&& other) noexcept;
  /** @brief Closes this client's own connection first, then takes over other's. */
  Client& operator=(Client&& other);
  /** @brief False for a moved-from client. */
  bool valid() const noexcept { return impl_ != nullptr; }

  /**
   * @brief Runs fn(args...) on the cluster, fn being a registered function (found by its
   * address, or a lambda's type, in this process's registry). Each argument is converted to its
   * parameter's type as in a call, without narrowing (a mismatch does not compile); a
   * TypedFuture must hold the parameter's type, an untyped Future is checked by the worker.
   * @throw UnknownOperationError when fn is not registered or no worker can run it.
   */
  template <tessera::detail::RegistrableFunction F, typename... A>
  auto submit(F&& fn, A&&... args) {
    return submit_with(SubmitOptions{}, std::forward<F>(fn), std::forward<A>(args)...);
  }
  /** @brief submit(fn, args...) with an explicit key or annotations. */
  template <tessera::detail::RegistrableFunction F, typename... A>
  auto submit_with(const SubmitOptions& options, F&& fn, A&&... args) {
    using P = typename tessera::detail::call_traits<F>::args;
    using R = typename tessera::detail::call_traits<F>::result;
    static_assert(sizeof...(A) == std::tuple_size_v<P>, "submit: wrong number of arguments for this function");
    const std::string op = function_name(fn);
    return TypedFuture<R>(submit_task(op, typed_args<P>(std::forward<A>(args)...), std::nullopt, options));
  }
  /**
   * @brief Runs op(args...) on the cluster, op being a registered name: for functions this
   * program does not link. Futures among args become the values they stand for; other args
   * travel as Blocks or cereal Objects, as they are.
   * @throw SignatureError when this process registers op and the arguments do not fit it (count
   *        or type; the message names the function, the argument, the expected and given type).
   * @throw UnknownOperationError when no worker of the cluster can run op.
   */
  template <typename... A>
  Future submit(const std::string& op, A&&... args) {
    return submit_task(op, std::vector<Arg>{to_arg(args)...}, std::vector<std::string>{tag_of(args)...}, {});
  }
  template <typename... A>
  Future submit_with(const SubmitOptions& options, const std::string& op, A&&... args) {
    return submit_task(op, std::vector<Arg>{to_arg(args)...}, std::vector<std::string>{tag_of(args)...}, options);
  }
  /**
   * @brief One task per index i, fn(seqs[0][i], seqs[1][i], ...), sent as one graph; the
   * sequences must have one length. Arguments convert as in submit(fn, ...).
   */
  template <tessera::detail::RegistrableFunction F, typename... T>
    requires(sizeof...(T) >= 1)
  auto map(F&& fn, const std::vector<T>&... seqs) {
    using P = typename tessera::detail::call_traits<F>::args;
    using R = typename tessera::detail::call_traits<F>::result;
    static_assert(sizeof...(T) == std::tuple_size_v<P>, "map: one sequence per argument of the function");
    const std::string op = function_name(fn);
    const std::size_t n = common_length(seqs...);
    std::vector<std::vector<Arg>> calls;
    calls.reserve(n);
    for (std::size_t i = 0; i < n; ++i) calls.push_back(typed_args<P>(seqs[i]...));
    std::vector<TypedFuture<R>> out;
    out.reserve(n);
    for (auto& f : map_tasks(op, std::move(calls), std::nullopt)) out.push_back(TypedFuture<R>(std::move(f)));
    return out;
  }
  /** @brief map by name: one task per index, op(seqs[0][i], ...); checked as submit(op, ...). */
  template <typename... T>
    requires(sizeof...(T) >= 1)
  std::vector<Future> map(const std::string& op, const std::vector<T>&... seqs) {
    const std::size_t n = common_length(seqs...);
    std::vector<std::vector<Arg>> calls;
    std::vector<std::vector<std::string>> tags;
    calls.reserve(n);
    tags.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      calls.push_back({to_arg(seqs[i])...});
      tags.push_back({tag_of(seqs[i])...});
    }
    return map_tasks(op, std::move(calls), std::move(tags));
  }
  /** @brief Submits a prepared task (its key must be new); checked as submit(op, ...). */
  Future submit(Task task);

  /** @brief The values of the futures, fetched from their workers (several keys per message). */
  std::vector<Value> gather(const std::vector<Future>& futures);
  /** @brief The values of typed futures, decoded as T. */
  template <typename T>
  std::vector<T> gather(const std::vector<TypedFuture<T>>& futures) {
    std::vector<Future> untyped(futures.begin(), futures.end());
    std::vector<Value> values = gather(untyped);
    std::vector<T> out;
    out.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      out.push_back(tessera::detail::from_task_value<T>(values[i], "the result of " + untyped[i].key()));
    return out;
  }
  /** @brief Places a value on the cluster; the future stands for it. */
  Future scatter(Value value);
  template <typename T>
  Future scatter(const T& value) {
    return scatter(tessera::detail::to_task_value(value));
  }
  /** @brief Submits a graph; returns a future per output key. */
  std::vector<Future> compute(const Graph& graph, const std::vector<Key>& outputs);
  /** @brief Same as compute(): the outputs stay on the workers while the futures live. */
  std::vector<Future> persist(const Graph& graph, const std::vector<Key>& outputs);
  /** @brief Executor: computes on the cluster and returns the values (then releases them). */
  std::vector<Value> get(const Graph& graph, const std::vector<Key>& outputs) override;
  /**
   * @brief Executor (Array::persist): computes on the cluster and leaves the results on the
   * workers while the returned KeptResults lives; graphs this client runs later use them by key.
   */
  std::shared_ptr<const KeptResults> keep(const Graph& graph, const std::vector<Key>& outputs) override;
  bool holds(const KeptResults& kept) const override;
  std::string name() const override;

  /** @brief Runs op(args...) on every worker right away (outside the graph); address -> value. */
  std::map<std::string, Value> run(const std::string& op, const std::vector<Value>& args = {});
  /** @brief The scheduler's view: workers, their resources, memory, threads, GPUs, task counts. */
  SchedulerInfo scheduler_info();
  /**
   * @brief The id of the newest task-stream entry now. What runs after it is what
   * get_task_stream(position) returns: Dask's `with get_task_stream() as ts:` is
   * `auto p = client.task_stream_position(); ...; auto ts = client.get_task_stream(p);`.
   */
  std::uint64_t task_stream_position();
  /**
   * @brief What ran where and when (Dask's get_task_stream): the scheduler's entries after
   * `since`, oldest first, as many pages as it takes. The scheduler keeps the last 100,000;
   * older ones are gone.
   */
  std::vector<TaskStreamEntry> get_task_stream(std::uint64_t since = 0);
  /**
   * @brief Retires workers gracefully, as Dask's retire_workers: the scheduler gives them no new
   * tasks, lets the running ones finish, copies the data only they hold to other workers, then
   * tells each to close. Returns the addresses that closed within the timeout. A worker whose
   * data no other worker can take (the last one) is kept, and not returned.
   */
  std::vector<std::string> retire_workers(const std::vector<std::string>& addresses,
                                          std::chrono::duration<double> timeout = std::chrono::seconds(60));
  /** @brief Retires n workers of the scheduler's choice: idle ones first, then those holding the least. */
  std::vector<std::string> retire_workers(std::size_t n,
                                          std::chrono::duration<double> timeout = std::chrono::seconds(60));
  /**
   * @brief How many workers the scheduler wants now (Dask's adaptive_target): enough to run the
   * queued and processing work in target_duration seconds, more when memory is short, fewer
   * when idle (SchedulerState::adaptive_target). Cluster managers scale to it.
   */
  std::size_t adaptive_target(double target_duration = 5);
  /**
   * @brief Restarts the cluster, as Dask's Client.restart: every worker with a nanny is restarted
   * (a new process under the same nanny; a process LocalCluster is its workers' nanny; one too
   * hung to leave within 3 s is killed by its nanny), every worker without one (--no-nanny) is closed in the
   * hope that something starts it again (logged as a warning, and listed in `closed`); every task
   * and result of every client is forgotten, and their futures are cancelled with a "the cluster
   * was restarted" reason. With wait_for_workers, returns once as many workers as before are
   * connected again, else once the old ones left. Refused (RestartError, nothing changed) when a
   * worker runs in the scheduler's process (an in-process LocalCluster's threads).
   * @throw RestartError naming the workers that did not leave or come back within timeout.
   */
  RestartReport restart(std::chrono::duration<double> timeout = std::chrono::seconds(120),
                        bool wait_for_workers = true);
  /** @brief Blocks until at least n workers are connected; false on timeout. */
  bool wait_for_workers(std::size_t n, std::chrono::duration<double> timeout = std::chrono::seconds(60));
  void cancel(const std::vector<Future>& futures, bool force = false);
  /** @brief Re-runs erred futures (and the erred tasks they depend on). */
  void retry(const std::vector<Future>& futures);
  /** @brief The scheduler's address. */
  const std::string& address() const;
  /** @brief The name the scheduler knows this client by. */
  const std::string& id() const;
  /** @brief Disconnects: the scheduler releases this client's keys. Idempotent. */
  void close();

 private:
  template <typename T>
  static constexpr bool is_future_v =
      std::is_same_v<std::decay_t<T>, Future> || detail::typed_future_value<std::decay_t<T>>::typed;

  template <typename T>
  static Arg to_arg(const T& v) {
    using D = std::decay_t<T>;
    if constexpr (is_future_v<D>) return KeyRef{v.key()};
    else if constexpr (std::is_same_v<D, KeyRef>) return v;
    else return tessera::detail::to_task_value(v);
  }
  // The type an argument is known to have here: "" for an untyped future (the worker checks it).
  template <typename T>
  static std::string tag_of(const T& v) {
    using D = std::decay_t<T>;
    if constexpr (detail::typed_future_value<D>::typed)
      return type_tag<typename detail::typed_future_value<D>::type>();
    else if constexpr (std::is_same_v<D, Future> || std::is_same_v<D, KeyRef>) return {};
    else if constexpr (std::is_same_v<D, Value>) return type_tag_of(v);
    else return type_tag<D>();
  }
  // One argument for a parameter of type P, converted as a call would (without narrowing).
  template <typename P, typename A>
  static Arg typed_arg(A&& a) {
    using D = std::decay_t<A>;
    if constexpr (std::is_same_v<D, Future> || std::is_same_v<D, KeyRef>) {
      return to_arg(a);
    } else if constexpr (detail::typed_future_value<D>::typed) {
      static_assert(std::is_same_v<P, Value> || std::is_same_v<typename detail::typed_future_value<D>::type, P>,
                    "submit: a TypedFuture argument must hold the parameter's type");
      return KeyRef{a.key()};
    } else if constexpr (std::is_same_v<P, Value> || std::is_same_v<D, P>) {
      return tessera::detail::to_task_value(std::forward<A>(a));
    } else {
      static_assert(requires { P{std::declval<A>()}; },
                    "submit: an argument does not convert to its parameter's type (or only by narrowing)");
      return tessera::detail::to_task_value(P{std::forward<A>(a)});
    }
  }
  template <typename Params, typename... A>
  static std::vector<Arg> typed_args(A&&... args) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::vector<Arg>{typed_arg<std::tuple_element_t<I, Params>>(std::forward<A>(args))...};
    }(std::index_sequence_for<A...>{});
  }
  template <typename... T>
  static std::size_t common_length(const std::vector<T>&... seqs) {
    const std::size_t sizes[] = {seqs.size()...};
    for (std::size_t s : sizes)
      if (s != sizes[0]) throw_unequal_lengths({seqs.size()...});
    return sizes[0];
  }
  [[noreturn]] static void throw_unequal_lengths(const std::vector<std::size_t>& sizes);
  template <typename F>
  static std::string function_name(const F& fn) {
    return registered_name(tessera::detail::function_id(fn));
  }
  // The name the function is registered under (the first, sorted, when it has several).
  static std::string registered_name(const std::string& function_id);
  const std::shared_ptr<detail::ClientImpl>& live() const;
  // `tags` holds one type tag per argument ("" when unknown here), checked against op's
  // registered types when this process knows them; nullopt (the typed calls, whose arguments
  // were converted to the parameters' types) skips the check.
  Future submit_task(const std::string& op, std::vector<Arg> args, std::optional<std::vector<std::string>> tags,
                     const SubmitOptions& options);
  std::vector<Future> map_tasks(const std::string& op, std::vector<std::vector<Arg>> calls,
                                std::optional<std::vector<std::vector<std::string>>> tags);

  std::shared_ptr<detail::ClientImpl> impl_;
  std::shared_ptr<LocalCluster> owned_cluster_;
};

}  // namespace tessera::distributed
