#pragma once
/**
 * @file
 * What ran where and when: the scheduler's record of finished tasks (Dask's task stream),
 * served at /api/v1/task-stream, shown on /status and returned by Client::get_task_stream().
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/key.hpp"

namespace tessera::distributed {

/**
 * @brief One finished task. Times are seconds on the scheduler's clock (since it started): the
 * worker measures start and stop on its own clock and the scheduler shifts them, when they are
 * read, by the smallest (receive time - stop) it has seen from that worker, so bars of different
 * workers line up to within the fastest message latency, and one worker's bars keep their order.
 */
struct TaskStreamEntry {
  std::uint64_t id = 0;  ///< 1, 2, ... in the order the scheduler heard of them
  Key key;             ///< the task's key; for a transfer, the peer the data came from
  std::string prefix;  ///< the task's operation (Task::op): what a bar is coloured by; "transfer" for a fetch
  std::string worker;  ///< address (for a transfer: the worker that fetched)
  int thread = -1;     ///< the worker's execution thread (0 .. nthreads-1); -1 for transfers
  double start = 0;
  double stop = 0;
  std::size_t nbytes = 0;  ///< size of the result; for a transfer, the bytes fetched
  template <class A>
  void serialize(A& ar) {
    ar(id, key, prefix, worker, thread, start, stop, nbytes);
  }
};

/** @brief A piece of the task stream: entries after some id, oldest first. */
struct TaskStreamPage {
  std::vector<TaskStreamEntry> entries;
  std::uint64_t newest = 0;   ///< id of the newest entry the scheduler holds (0: none yet)
  std::uint64_t dropped = 0;  ///< entries after the id asked for that fell out of the ring
  template <class A>
  void serialize(A& ar) {
    ar(entries, newest, dropped);
  }
};

}  // namespace tessera::distributed
