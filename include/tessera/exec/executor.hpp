#pragma once
/** @file
 * Executors: run a task graph and return the values of the requested keys. */
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/graph/graph.hpp"

namespace tessera {

/**
 * @brief Results an executor keeps for later graphs (Executor::keep; Array::persist holds one).
 * Dropping the last reference lets the executor release them.
 */
struct KeptResults {
  /** The executor that holds them (see Executor::holds); null when only `values` exist. */
  std::shared_ptr<const void> holder;
  std::vector<Key> keys;
  /** Their values in this process, in key order (for graphs run by any other executor). */
  std::function<std::vector<Value>()> values;
};

/**
 * @brief Something that computes graphs: the local executors and the distributed Client.
 * Array::compute() takes any Executor, so one expression runs anywhere unchanged.
 */
class Executor {
 public:
  virtual ~Executor() = default;
  /**
   * @brief Runs what `outputs` need and returns their values, in order.
   * @throw TaskError when a task raises (the first failure, naming its key); UnknownOperationError
   *        for an op no registry entry provides; Error for keys neither in the graph nor held.
   */
  virtual std::vector<Value> get(const Graph& graph, const std::vector<Key>& outputs) = 0;
  /**
   * @brief Runs what `outputs` need and keeps the results for later graphs; throws as get().
   * The default (local executors) keeps the values in this process; the distributed Client
   * leaves them on its workers, where later graphs read them (Dask's persist).
   */
  virtual std::shared_ptr<const KeptResults> keep(const Graph& graph, const std::vector<Key>& outputs);
  /** @brief Whether graphs given to this executor may use `kept.keys` without defining them. */
  virtual bool holds(const KeptResults& kept) const { return false; }
  /** @brief Human-readable name ("sync", "threads(8)"). */
  virtual std::string name() const = 0;
};

/** @brief Runs tasks one at a time in the calling thread, in memory-friendly order. */
class SyncExecutor final : public Executor {
 public:
  std::vector<Value> get(const Graph& graph, const std::vector<Key>& outputs) override;
  std::string name() const override { return "sync"; }
};

/**
 * @brief Runs tasks on a pool of threads (default: every core).
 *
 * Ready tasks run in dask.order-style priority so one chunk's chain finishes before many new
 * chunks start; each intermediate is released as soon as its last dependent has run, so peak
 * memory stays near (threads x chain footprint). The pool lives as long as the executor.
 */
class ThreadPoolExecutor final : public Executor {
 public:
  explicit ThreadPoolExecutor(std::size_t threads = 0);
  ~ThreadPoolExecutor() override;
  std::vector<Value> get(const Graph& graph, const std::vector<Key>& outputs) override;
  std::string name() const override;
  std::size_t threads() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** @brief Statistics of the last run, for tests and benchmarks. */
struct ExecutionStats {
  std::size_t tasks_run = 0;
  std::size_t peak_bytes = 0;  ///< most bytes of intermediate results held at once
};
/** @brief Statistics of the calling thread's last get() on a local executor. */
ExecutionStats last_execution_stats();

/** @brief A shared default executor: "threads" (all cores) or "sync"/"single-threaded". */
Executor& local_executor(const std::string& kind = "threads");

}  // namespace tessera
