#pragma once
/**
 * @file At most one log line per interval for events a peer can cause at will (refused
 * connections, accept failures), so an attacker or a storm fills no disk: the first event of an
 * interval is logged with the count of those left out since the last line.
 */
#include <chrono>
#include <cstddef>

namespace tessera::comm::detail {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogLimiter(Clock::duration interval) : interval_(interval) {}

  /** True when this event may be logged; then `suppressed` is how many were not since. */
  bool allow(std::size_t& suppressed, Clock::time_point now = Clock::now()) {
    if (logged_once_ && now - last_ < interval_) {
      ++skipped_;
      return false;
    }
    logged_once_ = true;
    last_ = now;
    suppressed = skipped_;
    skipped_ = 0;
    return true;
  }

 private:
  Clock::duration interval_;
  Clock::time_point last_{};
  bool logged_once_ = false;
  std::size_t skipped_ = 0;
};

}  // namespace tessera::comm::detail
