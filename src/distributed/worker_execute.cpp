// The worker's state machine driven (events in, actions out) and its tasks run.
#include "worker_impl.hpp"
#include "worker_shuffle.hpp"

#include "../core/logging.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera::distributed {

void Worker::Impl::handle(WorkerEvent e) {
  actions.clear();
  state.handle(std::move(e), actions);
  std::vector<WorkerAction> acts = std::move(actions);
  for (auto& a : acts) route(std::move(a));
}

void Worker::Impl::route(WorkerAction a) {
  std::visit(
      [&](auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, GatherDep>) {
          gathers.push_back(std::move(x));
        } else if constexpr (std::is_same_v<T, Execute>) {
          {
            std::lock_guard q(qmu);
            queue.push_back(std::move(x));
          }
          qcv.notify_one();
        } else if constexpr (std::is_same_v<T, ReleaseData>) {
          store.erase(x.key);
        } else {
          outbox.push_back(std::move(x));
        }
      },
      a);
}

// Pauses or resumes the state machine when the store crossed its pause threshold.
void Worker::Impl::check_memory() {
  spill_for_resident_memory();
  // Pausing waits for spilling to make room; when spilling fails (disk full, directory gone)
  // no room comes, and a paused worker would hold its clients forever. It runs on instead,
  // and each result it cannot hold fails its task with the reason (execute()).
  bool p = store.paused() && store.spill_error().empty();
  if (p != state.paused()) {
    logging::info("worker {}: {} ({} bytes in memory, {} spilled)", address, p ? "paused" : "resumed",
                 store.memory_bytes(), store.spilled_bytes());
    handle(PauseWorker{p});
  }
}

// What the store counts is not all a worker holds: messages being received and sent, a task's
// intermediate copies, the allocator's free lists. Dask spills by the process's resident memory
// too; without it a worker whose store sits at its target can pass its limit (measured: a 2 GB
// shuffle on two workers limited to 1 GB peaked at 1.0-1.2 GB resident with 600 MB in store).
void Worker::Impl::spill_for_resident_memory() {
  if (opt.memory_limit == 0 || opt.memory_spill <= 0) return;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  auto last = last_resident_check_ns.load();
  if (now - last < 50'000'000 || !last_resident_check_ns.compare_exchange_strong(last, now)) return;
  const double limit = static_cast<double>(opt.memory_limit);
  const double resident = static_cast<double>(resident_bytes());
  if (resident <= opt.memory_spill * limit) return;
  const double target = std::max(0.0, opt.memory_target) * limit;
  const auto want = static_cast<std::size_t>(resident - target);
  const std::size_t spilled = store.spill_least_recent(want);
  if (spilled > 0)
    logging::debug("worker {}: resident memory {:.0f} MB above {:.0f}% of its limit: spilled {} bytes", address,
                   resident / 1e6, 100 * opt.memory_spill, spilled);
}

void Worker::Impl::exec_loop(int thread) {
  while (true) {
    Execute ex;
    {
      std::unique_lock q(qmu);
      running_now[static_cast<std::size_t>(thread)].reset();
      qcv.wait(q, [&] { return !queue.empty() || closing_now(); });
      if (closing_now()) return;
      ex = std::move(queue.front());
      queue.pop_front();
      running_now[static_cast<std::size_t>(thread)] = ex.task;
    }
    run_task(ex, thread);
  }
}

void Worker::Impl::run_task(const Execute& ex, int thread) {
  const Task& task = *ex.task;
  std::vector<Value> args;
  args.reserve(task.args.size());
  std::string missing;
  for (const Arg& a : task.args) {
    if (auto* r = std::get_if<KeyRef>(&a)) {
      auto v = store.get(r->key);
      if (!v) {
        missing = r->key;
        break;
      }
      args.push_back(std::move(*v));
    } else {
      args.push_back(std::get<Value>(a));
    }
  }
  double t0 = now();
  Value result;
  std::string error;
  if (!missing.empty()) {
    error = "input " + missing + " of task " + task.key + " is not on worker " + address;
  } else {
    try {
      OpContext ctx;
      ctx.key = &task.key;
      ctx.target = task.annotations.target;
      ctx.device = device;  // this worker's GPU (-1 without one); run_op picks the stream
      ctx.shuffle = shuffle.get();
      result = run_op(task.op, ctx, args);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
  }
  double t1 = now();
  args.clear();
  std::size_t nbytes = 0;
  std::string type;
  if (error.empty()) {
    nbytes = result.nbytes();
    type = wire::value_type(result);
    store.put(task.key, std::move(result));
    std::string why = store.paused() ? store.spill_error() : std::string();
    if (!why.empty()) {
      store.erase(task.key);
      error = "worker " + address + " cannot hold the result of " + task.key +
              ": its memory is above the pause threshold and spilling to disk failed: " + why;
      // The store warned once already; one line per task would flood the log.
      logging::debug("{}", error);
    }
  }
  if (error.empty()) {
    executed++;
    step(
        [&] {
          handle(ExecuteSuccess{task.key, nbytes, std::move(type), t0, t1, thread});
          check_memory();
        },
        /*batch=*/true);
  } else {
    failed++;
    logging::debug("worker {}: task {} raised: {}", address, task.key, error);
    step([&] { handle(ExecuteFailure{task.key, error, "in operation '" + task.op + "' on worker " + address}); });
  }
}

}  // namespace tessera::distributed
