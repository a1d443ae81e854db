#include "tessera/distributed/progress.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace tessera::distributed {

void progress(const std::vector<Future>& futures, ProgressBarOptions options) {
  ProgressDisplay display(options);
  display.start(futures.size());
  // Futures finish in any order: count the done ones each round rather than waiting on each in
  // turn. The futures' states are local (the scheduler pushes them), so a round sends nothing.
  const auto pause = std::chrono::duration<double>(std::min(options.dt, 0.05));
  std::size_t first_pending = 0;  // futures before it are done
  while (true) {
    while (first_pending < futures.size() && futures[first_pending].done()) ++first_pending;
    std::size_t done = first_pending;
    for (std::size_t i = first_pending; i < futures.size(); ++i) done += futures[i].done() ? 1 : 0;
    display.set_done(done);
    if (done == futures.size()) break;
    std::this_thread::sleep_for(pause);
  }
  bool failed = false;
  for (const auto& f : futures) failed = failed || f.status() != FutureStatus::Finished;
  display.finish(failed);
}

}  // namespace tessera::distributed
