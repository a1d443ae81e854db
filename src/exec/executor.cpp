#include "tessera/exec/executor.hpp"
#include "tessera/exec/progress.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "../graph/graph_index.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/shuffle.hpp"
#include "core/blas_threads.hpp"

namespace tessera {
namespace {

thread_local ExecutionStats t_last_stats;

std::string list_keys(const std::vector<Key>& keys, std::size_t limit = 10) {
  std::string s;
  for (std::size_t i = 0; i < keys.size() && i < limit; ++i) s += (i ? ", " : "") + keys[i];
  if (keys.size() > limit) s += " (and " + std::to_string(keys.size() - limit) + " more)";
  return s;
}

/**
 * One get(): the indexed graph plus its scheduling state. Not synchronised: the thread pool
 * calls every member except execute() with its mutex held.
 */
struct Run {
  detail::IndexedGraph g;
  std::size_t n = 0;
  std::vector<Value> results;
  std::vector<std::uint32_t> waiting;          // unfinished dependencies
  std::vector<std::uint32_t> dependents_left;  // dependents not yet finished
  std::vector<std::uint32_t> dependent_begin, dependents;
  std::vector<char> is_output;
  std::vector<std::uint64_t> ready;  // min-heap of (inverted priority << 32 | position)
  std::size_t done = 0, running = 0, bytes = 0, peak = 0;
  bool failed = false;
  std::exception_ptr error;
  bool finished = false;             // thread pool: the caller may return
  std::condition_variable finished_cv;
  // A ProgressBar (or other observer) registered when this run started; null almost always,
  // so a run without one pays a null check per task.
  std::shared_ptr<ExecutionObserver> observer = execution_observer();

  Run(const Graph& graph, const std::vector<Key>& outputs) : g(detail::index_graph(graph, outputs, false)) {
    if (!g.missing.empty())
      throw Error("graph references " + std::to_string(g.missing.size()) +
                  " key(s) that no task defines: " + list_keys(g.missing));
    n = g.size();
    // Fail on an unknown op before anything runs.
    std::unordered_set<std::string_view> ops;
    for (const Task* t : g.tasks)
      if (ops.insert(t->op).second && !OpRegistry::global().contains(t->op)) {
        try {
          (void)OpRegistry::global().get(t->op);
        } catch (const UnknownOperationError& e) {
          throw UnknownOperationError("task " + t->key + ": " + e.what());
        }
      }
    results.resize(n);
    waiting.resize(n);
    dependents_left.assign(n, 0);
    is_output.assign(n, 0);
    for (auto p : g.root_pos) is_output[static_cast<std::size_t>(p)] = 1;
    for (std::size_t p = 0; p < n; ++p) {
      waiting[p] = g.dep_begin[p + 1] - g.dep_begin[p];
      for (auto i = g.dep_begin[p]; i < g.dep_begin[p + 1]; ++i) ++dependents_left[g.deps[i]];
    }
    dependent_begin.assign(n + 1, 0);
    for (std::size_t p = 0; p < n; ++p) dependent_begin[p + 1] = dependent_begin[p] + dependents_left[p];
    dependents.resize(g.deps.size());
    std::vector<std::uint32_t> fill(dependent_begin.begin(), dependent_begin.end() - 1);
    for (std::uint32_t p = 0; p < n; ++p)
      for (auto i = g.dep_begin[p]; i < g.dep_begin[p + 1]; ++i) dependents[fill[g.deps[i]]++] = p;
    for (std::uint32_t p = 0; p < n; ++p)
      if (waiting[p] == 0) ready.push_back(heap_key(p));
    std::make_heap(ready.begin(), ready.end(), std::greater<>());
    if (observer) observer->run_started(n);
  }

  std::uint64_t heap_key(std::uint32_t p) const {
    const auto prio = static_cast<std::uint32_t>(g.tasks[p]->annotations.priority) ^ 0x80000000u;
    return (static_cast<std::uint64_t>(~prio) << 32) | p;  // higher priority, then lower order
  }

  bool has_ready() const noexcept { return !failed && !ready.empty(); }
  bool over() const noexcept { return done == n || (failed && running == 0); }

  std::uint32_t pop() {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    const auto p = static_cast<std::uint32_t>(ready.back() & 0xffffffffu);
    ready.pop_back();
    return p;
  }

  /** Resolves arguments and runs the op; safe to call concurrently for different ready tasks. */
  Value execute(std::uint32_t p, std::vector<Value>& args) const {
    const Task& t = *g.tasks[p];
    args.clear();
    const std::int32_t* dep = g.arg_dep.data() + g.arg_begin[p];
    for (std::size_t k = 0; k < t.args.size(); ++k) {
      if (dep[k] < 0) args.push_back(std::get<Value>(t.args[k]));
      else args.push_back(results[static_cast<std::size_t>(dep[k])]);
    }
    OpContext ctx;
    ctx.key = &t.key;
    ctx.target = t.annotations.target;  // the local GPU (device 0) for device tasks
    ctx.shuffle = &local_shuffle_exchange();
    return run_op(t.op, ctx, args);
  }

  /** Stores a result, readies dependents and moves released inputs into `released`. */
  void complete(std::uint32_t p, Value&& v, std::vector<Value>& released) {
    ++done;
    if (observer) observer->task_finished();
    bytes += v.nbytes();
    peak = std::max(peak, bytes);
    results[p] = std::move(v);
    for (auto i = dependent_begin[p]; i < dependent_begin[p + 1]; ++i) {
      const auto q = dependents[i];
      if (--waiting[q] == 0 && !failed) {
        ready.push_back(heap_key(q));
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
    for (auto i = g.dep_begin[p]; i < g.dep_begin[p + 1]; ++i) {
      const auto d = g.deps[i];
      if (--dependents_left[d] == 0 && !is_output[d]) {
        bytes -= results[d].nbytes();
        released.push_back(std::move(results[d]));
        results[d] = Value();
      }
    }
  }

  void fail(std::exception_ptr e) {
    if (observer) observer->task_erred();
    if (!failed) {
      failed = true;
      error = std::move(e);
      ready.clear();
    }
  }

  std::vector<Value> take_outputs() {
    std::vector<Value> out;
    out.reserve(g.root_pos.size());
    for (auto p : g.root_pos) out.push_back(results[static_cast<std::size_t>(p)]);
    return out;
  }

  void record_stats() const {
    t_last_stats.tasks_run = done;
    t_last_stats.peak_bytes = peak;
    if (observer) observer->run_finished(failed);
  }
};

/** The error a failed task reports: call inside a catch block. */
std::exception_ptr task_failure(const Task& t) {
  try {
    throw;
  } catch (const UnknownOperationError& e) {
    return std::make_exception_ptr(UnknownOperationError("task " + t.key + ": " + e.what()));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(TaskError(t.key, e.what()));
  } catch (...) {
    return std::make_exception_ptr(TaskError(t.key, "unknown exception"));
  }
}

std::vector<Value> run_inline(const Graph& graph, const std::vector<Key>& outputs) {
  t_last_stats = {};
  Run run(graph, outputs);
  std::vector<Value> args, released;
  while (run.has_ready()) {
    const auto p = run.pop();
    try {
      Value v = run.execute(p, args);
      args.clear();
      run.complete(p, std::move(v), released);
      released.clear();
    } catch (...) {
      args.clear();
      run.fail(task_failure(*run.g.tasks[p]));
    }
  }
  run.record_stats();
  if (run.error) std::rethrow_exception(run.error);
  return run.take_outputs();
}

}  // namespace

// ---- Executor ------------------------------------------------------------------------------

std::shared_ptr<const KeptResults> Executor::keep(const Graph& graph, const std::vector<Key>& outputs) {
  auto kept = std::make_shared<KeptResults>();
  kept->keys = outputs;
  kept->values = [values = get(graph, outputs)] { return values; };
  return kept;
}

// ---- SyncExecutor --------------------------------------------------------------------------

std::vector<Value> SyncExecutor::get(const Graph& graph, const std::vector<Key>& outputs) {
  return run_inline(graph, outputs);
}

// ---- ThreadPoolExecutor --------------------------------------------------------------------

struct ThreadPoolExecutor::Impl {
  std::mutex mu;
  std::condition_variable work_cv;
  std::vector<Run*> runs;  // active get() calls, oldest first
  std::vector<std::thread> threads;
  std::size_t idle = 0;
  bool stop = false;

  static thread_local const Impl* current;  // the pool whose worker this thread is

  void wake(std::size_t count) {
    for (std::size_t i = 0; i < count && i < idle; ++i) work_cv.notify_one();
  }

  void worker() {
    current = this;
    std::vector<Value> args, released;
    std::unique_lock lk(mu);
    for (;;) {
      Run* run = nullptr;
      for (Run* r : runs)
        if (r->has_ready()) {
          run = r;
          break;
        }
      if (!run) {
        if (stop) return;
        ++idle;
        work_cv.wait(lk);
        --idle;
        continue;
      }
      const auto p = run->pop();
      ++run->running;
      lk.unlock();
      Value v;
      std::exception_ptr err;
      try {
        v = run->execute(p, args);
      } catch (...) {
        err = task_failure(*run->g.tasks[p]);
      }
      args.clear();
      lk.lock();
      --run->running;
      if (err) {
        run->fail(std::move(err));
      } else {
        const std::size_t before = run->ready.size();
        run->complete(p, std::move(v), released);
        const std::size_t added = run->ready.size() - before;
        if (added > 1) wake(added - 1);  // this thread takes one of them itself
      }
      if (run->over()) {
        runs.erase(std::find(runs.begin(), runs.end(), run));
        run->finished = true;
        run->finished_cv.notify_all();  // run may be destroyed once the lock is released
      }
      if (!released.empty()) {  // free memory outside the lock
        lk.unlock();
        released.clear();
        lk.lock();
      }
    }
  }
};

thread_local const ThreadPoolExecutor::Impl* ThreadPoolExecutor::Impl::current = nullptr;

ThreadPoolExecutor::ThreadPoolExecutor(std::size_t threads) : impl_(std::make_unique<Impl>()) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (threads > 1) detail::single_thread_blas();
  impl_->threads.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) impl_->threads.emplace_back([im = impl_.get()] { im->worker(); });
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  for (auto& t : impl_->threads) t.join();
}

std::size_t ThreadPoolExecutor::threads() const noexcept { return impl_->threads.size(); }

std::string ThreadPoolExecutor::name() const { return "threads(" + std::to_string(threads()) + ")"; }

std::vector<Value> ThreadPoolExecutor::get(const Graph& graph, const std::vector<Key>& outputs) {
  // A task calling get() on its own pool would wait for workers it occupies: run it inline.
  if (Impl::current == impl_.get()) return run_inline(graph, outputs);
  t_last_stats = {};
  Run run(graph, outputs);
  if (run.n == 0) {
    run.record_stats();
    return {};
  }
  {
    std::unique_lock lk(impl_->mu);
    impl_->runs.push_back(&run);
    impl_->wake(run.ready.size());
    run.finished_cv.wait(lk, [&] { return run.finished; });
  }
  run.record_stats();
  if (run.error) std::rethrow_exception(run.error);
  return run.take_outputs();
}

// ---- Shared executors and stats ------------------------------------------------------------

ExecutionStats last_execution_stats() { return t_last_stats; }

Executor& local_executor(const std::string& kind) {
  if (kind == "threads" || kind == "threading" || kind == "threaded") {
    static ThreadPoolExecutor pool;
    return pool;
  }
  if (kind == "sync" || kind == "single-threaded" || kind == "synchronous") {
    static SyncExecutor sync;
    return sync;
  }
  throw Error("unknown local executor '" + kind +
              "' (expected \"threads\", \"sync\", \"single-threaded\" or \"synchronous\")");
}

}  // namespace tessera
