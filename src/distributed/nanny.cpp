// The nanny: see nanny.hpp and docs/nanny.md.
#include "nanny.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "../core/logging.hpp"
#include "tessera/core/error.hpp"
#include "util.hpp"

namespace tessera::distributed {

using Clock = std::chrono::steady_clock;

namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string format_seconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

void tell_nanny_ready() {
  const char* v = std::getenv(kNannyReadyFdEnv);
  if (!v || !*v) return;
  const int fd = std::atoi(v);
  ::unsetenv(kNannyReadyFdEnv);  // once; and not passed on to anything this process starts
  if (fd <= 2) return;
  const char byte = 1;
  [[maybe_unused]] auto n = ::write(fd, &byte, 1);
  ::close(fd);
}

void check_memory_at_rest(std::size_t memory_limit) {
  const char* v = std::getenv(kNannyKillBytesEnv);
  if (!v || !*v) return;
  const std::size_t kill_at = static_cast<std::size_t>(std::strtoull(v, nullptr, 10));
  ::unsetenv(kNannyKillBytesEnv);  // not passed on to anything this process starts
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer's shadow memory counts in the resident size (an idle ASan worker holds about
  // 580 MB): the check would refuse the small limits the tests give. Release builds check.
  (void)kill_at;
  (void)memory_limit;
  return;
#endif
  if (memory_limit == 0) return;
  const std::size_t rss = process_rss(::getpid());
  if (kill_at == 0 || rss < kill_at) return;
  auto mb = [](double bytes) { return std::to_string(static_cast<long long>(std::ceil(bytes / 1e6))); };
  // A limit at which the resting size is half of what the nanny allows: as much again for tasks.
  const double enough = 2.0 * static_cast<double>(rss) * static_cast<double>(memory_limit) / static_cast<double>(kill_at);
  throw Error("this worker holds " + mb(static_cast<double>(rss)) +
              " MB at rest (libraries loaded, no task run) and its nanny kills it past " +
              mb(static_cast<double>(kill_at)) + " MB (--memory-terminate-fraction of --memory-limit " +
              std::to_string(memory_limit) + " bytes): it would be killed as soon as it registered; give at least " +
              "--memory-limit " + mb(enough) + "MB, or 0 for no limit");
}

int nanny_pid() {
  const char* v = std::getenv(kNannyPidEnv);
  if (!v || !*v) return 0;
  const int pid = std::atoi(v);
  // Inherited by a grandchild (a task that starts a worker of its own): not its nanny.
  return pid > 0 && pid == static_cast<int>(::getppid()) ? pid : 0;
}

std::size_t process_rss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  std::size_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::string signal_description(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  const char* text = ::strsignal(sig);
  std::string out = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

struct Nanny::Slot {
  std::size_t index = 0;
  pid_t pid = 0;       // 0 between lives
  int ready_fd = -1;   // read end of this life's ready pipe
  bool ready = false;  // this life registered
  bool done = false;   // ended for good
  bool killed_for_memory = false;
  std::string memory_note;
  Clock::time_point next_start{}, last_memory_check{};
  std::deque<Clock::time_point> restarts;  // within the last minute

  void poll_ready() {
    if (ready_fd < 0) return;
    char buf[16];
    ssize_t n = ::read(ready_fd, buf, sizeof buf);
    if (n > 0) ready = true;
    if (n == 0 || ready) {  // the byte came, or every writer is gone
      ::close(ready_fd);
      ready_fd = -1;
    }
  }
};

Nanny::Nanny(NannyOptions options, std::vector<NannyChild> children)
    : opt_(std::move(options)),
      children_(std::move(children)),
      pids_(children_.size(), 0),
      kill_requested_(children_.size(), 0) {}

bool Nanny::kill_for_restart(pid_t pid) {
  std::lock_guard lock(mu_);
  if (pid <= 0 || stop_signal_ || !opt_.restart) return false;
  for (std::size_t i = 0; i < pids_.size(); ++i)
    if (pids_[i] == pid) {
      kill_requested_[i] = 1;
      logging::warn("{}: worker {} (pid {}) did not leave for a restart (stopped or hung): the scheduler asked to "
                    "kill it; SIGKILL",
                    opt_.program, children_[i].name, pid);
      ::kill(pid, SIGKILL);  // a stopped process dies of it too
      return true;
    }
  return false;
}

std::vector<pid_t> Nanny::pids() const {
  std::lock_guard lock(mu_);
  return pids_;
}

void Nanny::stop(int sig) {
  std::lock_guard lock(mu_);
  stop_signal_ = sig;
  for (pid_t p : pids_)
    if (p > 0) ::kill(p, sig);
}

// Starts one life of a child; the caller holds no lock. A spawn that fails ends the slot.
void Nanny::start(Slot& s) {
  const NannyChild& c = children_[s.index];
  auto env = c.env;
  env["TESSERA_PARENT_PID"] = std::to_string(::getpid());  // the child dies with us, even of SIGKILL
  if (opt_.restart) env[kNannyPidEnv] = std::to_string(::getpid());  // restart() may ask it to restart
  if (c.memory_limit > 0 && opt_.memory_terminate_fraction > 0)  // the worker checks it at start
    env[kNannyKillBytesEnv] = std::to_string(
        static_cast<std::size_t>(opt_.memory_terminate_fraction * static_cast<double>(c.memory_limit)));
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) == 0) {
    // Only the write end crosses exec; the read end polls without blocking.
    ::fcntl(fds[1], F_SETFD, 0);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    env[kNannyReadyFdEnv] = std::to_string(fds[1]);
  }
  std::lock_guard lock(mu_);
  if (stop_signal_) {
    s.done = true;
  } else {
    try {
      s.pid = spawn_process(c.argv, env);
      pids_[s.index] = s.pid;
      kill_requested_[s.index] = 0;
      s.ready = false;
      s.killed_for_memory = false;
      s.ready_fd = fds[0];
      fds[0] = -1;
      s.last_memory_check = Clock::now();
    } catch (const std::exception& e) {
      logging::error("{}: cannot start worker {}: {}", opt_.program, c.name, e.what());
      s.done = true;
    }
  }
  if (fds[0] >= 0) ::close(fds[0]);
  if (fds[1] >= 0) ::close(fds[1]);
}

int Nanny::run() {
  std::vector<Slot> slots(children_.size());
  bool failed = false, scheduler_gone = false;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    slots[i].index = i;
    start(slots[i]);
    if (slots[i].done) {
      std::lock_guard lock(mu_);
      if (!stop_signal_) failed = true;  // could not spawn
    }
  }
  std::optional<Clock::time_point> stop_since;
  bool killed_after_grace = false;
  while (true) {
    const auto now = Clock::now();
    int stop_signal;
    {
      std::lock_guard lock(mu_);
      stop_signal = stop_signal_;
    }
    if (stop_signal && !stop_since) stop_since = now;
    bool all_done = true;
    for (auto& s : slots) {
      if (s.done) continue;
      const NannyChild& c = children_[s.index];
      if (s.pid == 0) {  // waiting out its back-off
        if (stop_signal) s.done = true;
        else if (now >= s.next_start) start(s);
        if (!s.done) all_done = false;
        continue;
      }
      s.poll_ready();
      int status = 0;
      pid_t r = ::waitpid(s.pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        all_done = false;
        // The memory terminate threshold, checked a few times a second once the worker runs
        // (one killed before it registered would count as failing to start).
        if (!stop_signal && s.ready && !s.killed_for_memory && c.memory_limit > 0 && opt_.memory_terminate_fraction > 0 &&
            seconds_between(s.last_memory_check, now) >= opt_.memory_poll_interval) {
          s.last_memory_check = now;
          const std::size_t rss = process_rss(s.pid);
          const double threshold = opt_.memory_terminate_fraction * static_cast<double>(c.memory_limit);
          if (static_cast<double>(rss) > threshold) {
            s.killed_for_memory = true;
            s.memory_note = "its memory, " + std::to_string(rss) + " bytes, passed " +
                            format_seconds(opt_.memory_terminate_fraction) + " of its memory limit (" +
                            std::to_string(c.memory_limit) + " bytes)";
            logging::warn("{}: worker {} (pid {}): {}: killing it", opt_.program, c.name, s.pid, s.memory_note);
            ::kill(s.pid, SIGKILL);
          }
        }
        continue;
      }
      // It ended (or, r < 0, is not ours to wait for any more).
      const pid_t old = s.pid;
      if (s.ready_fd >= 0) {
        s.poll_ready();  // a byte written just before it died
        if (s.ready_fd >= 0) ::close(s.ready_fd);
        s.ready_fd = -1;
      }
      bool killed_on_request;
      {
        std::lock_guard lock(mu_);
        pids_[s.index] = 0;
        stop_signal = stop_signal_;
        killed_on_request = kill_requested_[s.index] != 0;
        kill_requested_[s.index] = 0;
      }
      s.pid = 0;
      if (r != old) {
        logging::warn("{}: lost worker {} (pid {})", opt_.program, c.name, old);
        s.done = true;
        failed = true;
        continue;
      }
      std::string why;
      if (s.killed_for_memory) why = "was killed: " + s.memory_note;
      else if (WIFSIGNALED(status)) why = "died of " + signal_description(WTERMSIG(status));
      else why = describe_status(status);
      const bool exit_zero = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (stop_signal) {
        s.done = true;
        const bool by_our_signal = WIFSIGNALED(status) && WTERMSIG(status) == stop_signal && !killed_after_grace;
        if (exit_zero || by_our_signal) {
          logging::info("{}: worker {} (pid {}) stopped: {}", opt_.program, c.name, old, why);
        } else {
          logging::warn("{}: worker {} (pid {}) stopped: {}", opt_.program, c.name, old, why);
          failed = true;
        }
        continue;
      }
      if (killed_on_request && opt_.restart) {
        // Client::restart, for a worker too hung to exit 4 itself: as a requested restart.
        logging::info("{}: worker {} (pid {}) killed for a restart (Client::restart); starting it again now",
                      opt_.program, c.name, old);
        s.next_start = now;
        ++requested_restarts_;
        all_done = false;
        continue;
      }
      if (exit_zero) {
        logging::info("{}: worker {} (pid {}) {}", opt_.program, c.name, old, why);
        s.done = true;
        continue;
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == kExitRestartRequested && opt_.restart) {
        // Client::restart: asked for, not a failure; started again now, outside the cap.
        logging::info("{}: worker {} (pid {}) restarted on request (Client::restart); starting it again now",
                      opt_.program, c.name, old);
        s.next_start = now;
        ++requested_restarts_;
        all_done = false;
        continue;
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == kExitSchedulerGone) {
        logging::error("{}: worker {} (pid {}) gave up on the scheduler ({}); not restarted", opt_.program, c.name,
                       old, why);
        s.done = true;
        scheduler_gone = true;
        continue;
      }
      if (!s.ready || !opt_.restart) {
        logging::error("{}: worker {} (pid {}) {}{}; not restarted", opt_.program, c.name, old, why,
                       s.ready ? "" : " before it registered");
        s.done = true;
        failed = true;
        continue;
      }
      while (!s.restarts.empty() && seconds_between(s.restarts.front(), now) > 60) s.restarts.pop_front();
      const int recent = static_cast<int>(s.restarts.size());
      if (recent >= opt_.max_restarts_per_minute) {
        logging::error("{}: worker {} (pid {}) {}; restarted {} times in the last minute already: giving up",
                       opt_.program, c.name, old, why, recent);
        s.done = true;
        failed = true;
        if (opt_.on_given_up) {
          GivenUpWorker g{c.name, old,
                          "it was restarted " + std::to_string(recent) + " times in the last minute; it last " + why};
          try {
            opt_.on_given_up(g);
          } catch (const std::exception& e) {
            logging::warn("{}: could not report that worker {} was given up: {}", opt_.program, c.name, e.what());
          }
        }
        continue;
      }
      const double delay = std::min(opt_.max_backoff, opt_.first_backoff * std::pow(2.0, recent));
      s.restarts.push_back(now);
      s.next_start = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
      ++restarts_;
      logging::warn("{}: worker {} (pid {}) {}; restarting it in {} s ({} of at most {} a minute)", opt_.program,
                    c.name, old, why, format_seconds(delay), recent + 1, opt_.max_restarts_per_minute);
      all_done = false;
    }
    if (all_done) break;
    if (stop_since && !killed_after_grace && seconds_between(*stop_since, Clock::now()) >= opt_.stop_grace) {
      // Asked to stop, and still running after the grace period: no longer asked.
      killed_after_grace = true;
      std::lock_guard lock(mu_);
      for (pid_t p : pids_)
        if (p > 0) {
          logging::warn("{}: worker pid {} still running {} s after the signal: SIGKILL", opt_.program, p,
                        format_seconds(opt_.stop_grace));
          ::kill(p, SIGKILL);  // a stopped (SIGSTOP) process dies of it too
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (failed || killed_after_grace) return 1;
  return scheduler_gone ? kExitSchedulerGone : 0;
}

}  // namespace tessera::distributed
