#pragma once
/**
 * @file
 * Terminal progress bars, like dask.diagnostics.ProgressBar:
 *
 *     {
 *       tessera::ProgressBar bar;             // every local get() while it lives draws a bar
 *       x.sum().compute(tessera::local_executor());
 *     }
 *     [########################################] | 100% Completed |  1.2s
 *
 * The distributed client's progress(futures) draws the same bar (tessera/distributed/progress.hpp).
 */
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace tessera {

/**
 * @brief Told about the local executors' runs while registered (Dask's diagnostics Callback).
 * Called from executor threads, so implementations must be thread-safe and quick.
 */
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void run_started(std::size_t tasks) = 0;
  virtual void task_finished() = 0;  ///< a task that ran to its end
  /** @brief A task that raised; observers that do not tell the two apart count it as finished. */
  virtual void task_erred() { task_finished(); }
  virtual void run_finished(bool failed) = 0;
};

/** @brief Registers the observer of get() calls that start from now on (null: none); returns the previous one. */
std::shared_ptr<ExecutionObserver> set_execution_observer(std::shared_ptr<ExecutionObserver> observer);
/** @brief The one registered now (null when none). */
std::shared_ptr<ExecutionObserver> execution_observer();

/**
 * @brief One line of the bar, without the leading carriage return: "[####    ] | 10% Completed |  0.5s".
 * `width` is the number of characters between the brackets.
 */
std::string progress_bar_line(double fraction, double elapsed_s, int width = 40);

/**
 * @brief The line for `done` finished and `erred` failed of `total`, as Dask's bar shows an error:
 * finished cells '#', erred cells 'X' (at least one while any erred), and after the percentage
 * of finished ones "| N erred", so a run with failures never reads "100% Completed" alone:
 * "[#######XXX] |  70% Completed | 3 erred |  1.2s". With erred == 0 it is the line above.
 */
std::string progress_bar_line(std::size_t done, std::size_t erred, std::size_t total, double elapsed_s,
                              int width = 40);

struct ProgressBarOptions {
  int fd = 2;          ///< where to draw (stderr)
  int width = 40;      ///< characters between the brackets, as Dask's
  double dt = 0.1;     ///< seconds between redraws
  double minimum = 0;  ///< runs shorter than this draw nothing
};

/**
 * @brief Draws `done / total` on a terminal line, redrawn every dt by a thread of its own and
 * finished with the final state and a newline. Used by ProgressBar and distributed::progress.
 */
class ProgressDisplay {
 public:
  explicit ProgressDisplay(ProgressBarOptions options = {});
  ~ProgressDisplay();  ///< finish(false) if still drawing
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;
  /** @brief Starts drawing a bar of `total` steps; once per display (later calls do nothing). */
  void start(std::size_t total);
  void add_done(std::size_t n = 1) { done_.fetch_add(n, std::memory_order_relaxed); }
  void set_done(std::size_t n) { done_.store(n, std::memory_order_relaxed); }
  /** @brief Steps that failed: drawn apart from the finished ones (see progress_bar_line). */
  void add_erred(std::size_t n = 1) { erred_.fetch_add(n, std::memory_order_relaxed); }
  void set_erred(std::size_t n) { erred_.store(n, std::memory_order_relaxed); }
  /**
   * @brief Draws the last line and a newline; stops redrawing. Not failed: 100% (whatever was
   * counted); failed: what was counted, erred steps included.
   */
  void finish(bool failed);

 private:
  void draw(bool final_line);
  void loop();
  ProgressBarOptions opt_;
  std::atomic<std::size_t> done_{0}, erred_{0}, total_{0};
  std::chrono::steady_clock::time_point started_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false, shown_ = false;
  std::thread thread_;
};

/**
 * @brief While it lives, every get() of a local executor (sync or threads) draws a bar on the
 * terminal, as `with ProgressBar():` in Dask. One at a time: it replaces the observer that was
 * registered and puts it back when destroyed.
 */
class ProgressBar {
 public:
  explicit ProgressBar(ProgressBarOptions options = {});
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

 private:
  std::shared_ptr<ExecutionObserver> observer_, previous_;
};

}  // namespace tessera
