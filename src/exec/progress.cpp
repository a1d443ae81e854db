#include "tessera/exec/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>

namespace tessera {
namespace {

std::mutex g_observer_mu;
std::shared_ptr<ExecutionObserver> g_observer;

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed terminal is no reason to fail a computation
    off += static_cast<std::size_t>(n);
  }
}

// Each run of a local executor gets a display of its own: runs one after another each draw
// their line, as Dask's ProgressBar does for each compute() in its block.
class BarObserver final : public ExecutionObserver {
 public:
  explicit BarObserver(ProgressBarOptions o) : opt_(o) {}
  void run_started(std::size_t tasks) override {
    std::lock_guard l(mu_);
    display_ = std::make_unique<ProgressDisplay>(opt_);
    display_->start(tasks);
  }
  void task_finished() override {
    std::lock_guard l(mu_);
    if (display_) display_->add_done();
  }
  void task_erred() override {
    std::lock_guard l(mu_);
    if (display_) display_->add_erred();
  }
  void run_finished(bool failed) override {
    std::lock_guard l(mu_);
    if (display_) display_->finish(failed);
    display_.reset();
  }

 private:
  ProgressBarOptions opt_;
  std::mutex mu_;
  std::unique_ptr<ProgressDisplay> display_;
};

}  // namespace

std::shared_ptr<ExecutionObserver> set_execution_observer(std::shared_ptr<ExecutionObserver> observer) {
  std::lock_guard l(g_observer_mu);
  std::swap(g_observer, observer);
  return observer;
}

std::shared_ptr<ExecutionObserver> execution_observer() {
  std::lock_guard l(g_observer_mu);
  return g_observer;
}

std::string progress_bar_line(double fraction, double elapsed_s, int width) {
  fraction = std::isfinite(fraction) ? std::min(1.0, std::max(0.0, fraction)) : 0.0;
  width = std::max(1, width);
  const int filled = static_cast<int>(std::floor(fraction * width));
  std::string line = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                     std::string(static_cast<std::size_t>(width - filled), ' ') + "] | ";
  char tail[64];
  std::snprintf(tail, sizeof tail, "%3d%% Completed | %4.1fs", static_cast<int>(std::floor(fraction * 100)),
                elapsed_s);
  return line + tail;
}

std::string progress_bar_line(std::size_t done, std::size_t erred, std::size_t total, double elapsed_s, int width) {
  if (erred == 0 || total == 0) {
    return progress_bar_line(total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total), elapsed_s,
                             width);
  }
  width = std::max(1, width);
  done = std::min(done, total);
  erred = std::min(erred, total - done);
  const auto cells = [&](std::size_t n) {
    return static_cast<int>(std::floor(static_cast<double>(n) / static_cast<double>(total) * width));
  };
  const int filled = cells(done);
  // At least one 'X' while anything erred (one failure in 10,000 must still show), never past the end.
  const int failed = std::min(width - filled, std::max(1, cells(done + erred) - filled));
  std::string line = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                     std::string(static_cast<std::size_t>(failed), 'X') +
                     std::string(static_cast<std::size_t>(width - filled - failed), ' ') + "] | ";
  char tail[96];
  std::snprintf(tail, sizeof tail, "%3d%% Completed | %zu erred | %4.1fs",
                static_cast<int>(std::floor(static_cast<double>(done) / static_cast<double>(total) * 100)), erred,
                elapsed_s);
  return line + tail;
}

ProgressDisplay::ProgressDisplay(ProgressBarOptions options) : opt_(options) {}

ProgressDisplay::~ProgressDisplay() {
  bool running;
  {
    std::lock_guard l(mu_);
    running = running_;
  }
  if (running) finish(false);
}

void ProgressDisplay::start(std::size_t total) {
  std::lock_guard l(mu_);
  if (running_ || thread_.joinable()) return;  // one bar per display: its thread starts once
  total_ = total;
  done_ = 0;
  erred_ = 0;
  started_ = std::chrono::steady_clock::now();
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void ProgressDisplay::loop() {
  std::unique_lock l(mu_);
  while (running_) {
    cv_.wait_for(l, std::chrono::duration<double>(opt_.dt));
    if (!running_) break;
    draw(false);
  }
}

void ProgressDisplay::draw(bool final_line) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (!shown_ && elapsed < opt_.minimum) return;
  const std::size_t total = total_.load(), done = std::min(done_.load(), total);
  write_all(opt_.fd, "\r" + progress_bar_line(done, erred_.load(), total, elapsed, opt_.width) + (final_line ? "\n" : ""));
  shown_ = true;
}

void ProgressDisplay::finish(bool failed) {
  {
    std::lock_guard l(mu_);
    if (!running_) return;
    running_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard l(mu_);
  if (!failed) {  // a finished run is 100%, whatever was counted
    done_ = total_.load();
    erred_ = 0;
  }
  draw(true);
}

ProgressBar::ProgressBar(ProgressBarOptions options) : observer_(std::make_shared<BarObserver>(options)) {
  previous_ = set_execution_observer(observer_);
}

ProgressBar::~ProgressBar() { set_execution_observer(previous_); }

}  // namespace tessera
