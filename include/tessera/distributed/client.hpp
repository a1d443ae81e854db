#pragma once
/**
 * @file Client and Future: the user's side of a cluster, like dask.distributed.Client.
 *
 *     tessera::distributed::LocalCluster cluster({.n_workers = 2});
 *     tessera::distributed::Client client(cluster);
 *     auto f = client.submit("inc", 41);          // "inc" registered with TESSERA_REGISTER_FUNCTION
 *     int v = f.result_as<int>();                 // 42
 *     auto fs = client.map("inc", std::vector<int>{1, 2, 3});
 *     auto values = client.gather(fs);
 *     double s = ((x + 1).sum()).compute(client).item<double>();   // any Array, unchanged
 *
 * Tasks run wherever the scheduler places them; values stay on the workers until a result()
 * or gather() fetches them straight from the worker that holds them.
 */
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/device.hpp"
#include "tessera/exec/executor.hpp"
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
  /** @brief result() decoded as T (a Block, or a cereal-serializable type). */
  template <typename T>
  T result_as() const {
    return tessera::detail::from_task_value<T>(result());
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

struct ClientOptions {
  std::string token;
  double timeout = 30;  ///< seconds to wait for the scheduler at connect
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

  /**
   * @brief Runs op(args...) on the cluster. Futures among args become the values they stand
   * for; other args travel as Blocks or cereal Objects.
   * @throw UnknownOperationError when no worker of the cluster can run op.
   */
  template <typename... A>
  Future submit(const std::string& op, A&&... args) {
    return submit_task(op, {to_arg(std::forward<A>(args))...}, {});
  }
  template <typename... A>
  Future submit_with(const SubmitOptions& options, const std::string& op, A&&... args) {
    return submit_task(op, {to_arg(std::forward<A>(args))...}, options);
  }
  /** @brief One task per item, sent as one graph. */
  template <typename T>
  std::vector<Future> map(const std::string& op, const std::vector<T>& items) {
    std::vector<std::vector<Arg>> calls;
    calls.reserve(items.size());
    for (const auto& item : items) calls.push_back({to_arg(item)});
    return map_tasks(op, std::move(calls));
  }
  /** @brief Submits a prepared task (its key must be new). */
  Future submit(Task task);

  /** @brief The values of the futures, fetched from their workers (several keys per message). */
  std::vector<Value> gather(const std::vector<Future>& futures);
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
  static Arg to_arg(T&& v) {
    using D = std::decay_t<T>;
    if constexpr (std::is_same_v<D, Future>) return KeyRef{v.key()};
    else if constexpr (std::is_same_v<D, KeyRef>) return v;
    else return tessera::detail::to_task_value(std::forward<T>(v));
  }
  Future submit_task(const std::string& op, std::vector<Arg> args, const SubmitOptions& options);
  std::vector<Future> map_tasks(const std::string& op, std::vector<std::vector<Arg>> calls);

  std::shared_ptr<detail::ClientImpl> impl_;
  std::shared_ptr<LocalCluster> owned_cluster_;
};

}  // namespace tessera::distributed
