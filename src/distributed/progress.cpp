#include "tessera/distributed/progress.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace tessera::distributed {
namespace {

// Calls on_count(finished, erred) every `dt` until every future is done; true when one did not
// finish (erred, cancelled: both counted as erred). Futures finish in any order: the done ones
// are counted each round rather than waited on in turn. Their states are local (the scheduler
// pushes them): a round sends nothing.
bool count_until_done(const std::vector<Future>& futures, double dt,
                      const std::function<void(std::size_t, std::size_t)>& on_count) {
  const auto pause = std::chrono::duration<double>(std::min(dt, 0.05));
  const auto erred = [](const Future& f) {
    const FutureStatus s = f.status();
    return s == FutureStatus::Error || s == FutureStatus::Cancelled;
  };
  std::size_t first_pending = 0, erred_before = 0;  // futures before first_pending are done
  while (true) {
    for (; first_pending < futures.size() && futures[first_pending].done(); ++first_pending)
      erred_before += erred(futures[first_pending]) ? 1 : 0;
    std::size_t done = first_pending, failed = erred_before;
    for (std::size_t i = first_pending; i < futures.size(); ++i) {
      if (!futures[i].done()) continue;
      ++done;
      failed += erred(futures[i]) ? 1 : 0;
    }
    on_count(done - failed, failed);
    if (done == futures.size()) return failed > 0;
    std::this_thread::sleep_for(pause);
  }
}

}  // namespace

void progress(const std::vector<Future>& futures, ProgressBarOptions options) {
  ProgressDisplay display(options);
  display.start(futures.size());
  display.finish(count_until_done(futures, options.dt, [&](std::size_t finished, std::size_t erred) {
    display.set_done(finished);
    display.set_erred(erred);
  }));
}

std::vector<Future> progress(Client& client, const Array& array, ProgressBarOptions options) {
  std::vector<Key> chunks;
  Graph graph = array.to_graph(&chunks);
  std::vector<Future> futures = client.persist(graph, chunks);
  progress(futures, options);
  return futures;
}

void report_progress(const std::vector<Future>& futures, ExecutionObserver& observer, double dt) {
  observer.run_started(futures.size());
  std::size_t reported = 0, reported_erred = 0;
  const bool failed = count_until_done(futures, dt, [&](std::size_t finished, std::size_t erred) {
    for (; reported < finished; ++reported) observer.task_finished();
    for (; reported_erred < erred; ++reported_erred) observer.task_erred();
  });
  observer.run_finished(failed);
}

}  // namespace tessera::distributed
