#include "tessera/distributed/progress.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace tessera::distributed {
namespace {

// Calls on_count(done) every `dt` until every future is done; true when one did not finish
// (erred, cancelled). Futures finish in any order: the done ones are counted each round rather
// than waited on in turn. Their states are local (the scheduler pushes them): a round sends nothing.
bool count_until_done(const std::vector<Future>& futures, double dt, const std::function<void(std::size_t)>& on_count) {
  const auto pause = std::chrono::duration<double>(std::min(dt, 0.05));
  std::size_t first_pending = 0;  // futures before it are done
  while (true) {
    while (first_pending < futures.size() && futures[first_pending].done()) ++first_pending;
    std::size_t done = first_pending;
    for (std::size_t i = first_pending; i < futures.size(); ++i) done += futures[i].done() ? 1 : 0;
    on_count(done);
    if (done == futures.size()) break;
    std::this_thread::sleep_for(pause);
  }
  bool failed = false;
  for (const auto& f : futures) failed = failed || f.status() != FutureStatus::Finished;
  return failed;
}

}  // namespace

void progress(const std::vector<Future>& futures, ProgressBarOptions options) {
  ProgressDisplay display(options);
  display.start(futures.size());
  display.finish(count_until_done(futures, options.dt, [&](std::size_t done) { display.set_done(done); }));
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
  std::size_t reported = 0;
  const bool failed = count_until_done(futures, dt, [&](std::size_t done) {
    for (; reported < done; ++reported) observer.task_finished();
  });
  observer.run_finished(failed);
}

}  // namespace tessera::distributed
