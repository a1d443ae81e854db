#pragma once
// Where a comm's incoming messages and its close go: a queue for recv() or the handlers.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

#include "tessera/comm/comm.hpp"

namespace tessera::comm::detail {

class Inbox : public std::enable_shared_from_this<Inbox> {
 public:
  /** Called by the transport on the I/O thread, in arrival order. */
  void push(Message msg);
  /** First call wins; later ones are ignored. Any thread. */
  void push_close(std::exception_ptr reason);

  void set_handlers(Comm::MessageHandler on_message, Comm::CloseHandler on_close);
  /** nullopt on timeout; throws the close reason once closed and drained. */
  std::optional<Message> pop(std::optional<std::chrono::milliseconds> timeout);

  bool closed() const;
  std::string reason() const;
  /** Messages waiting for recv() or a handler (taken in arrival order). Any thread. */
  std::size_t queued() const {
    std::lock_guard lk(mu_);
    return queue_.size();
  }

 private:
  void drain();  // on the I/O thread: hands queued messages (then the close) to the handlers
  void schedule_drain_locked();  // with mu_ held: posts one drain() unless one is pending
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> queue_;
  bool closed_ = false;
  bool close_delivered_ = false;
  bool draining_ = false;
  std::exception_ptr reason_;
  Comm::MessageHandler on_message_;
  Comm::CloseHandler on_close_;
};

/**
 * Receive back-pressure bookkeeping of one comm (CommOptions::max_queued_bytes and
 * max_queued_messages), kept on the I/O thread. It remembers the size of each message pushed to
 * the inbox and not yet known to be taken. The inbox hands messages out in order, so the oldest
 * are the ones taken; counting taken ones too only overestimates the backlog, and the inbox (a
 * lock its reader may be waking up to take) is asked only when that estimate reaches a limit, or
 * every kTrimEvery messages to keep the record short.
 */
class Backlog {
 public:
  explicit Backlog(const CommOptions& options)
      : max_messages_(options.max_queued_messages), max_bytes_(options.max_queued_bytes) {}
  /** A message of `bytes` (header and frames) went to the inbox. */
  void pushed(std::size_t bytes) {
    sizes_.push_back(bytes);
    bytes_ += bytes;
  }
  /** pushed() and forgets what the owner took, for a transport that does not ask over() each time. */
  void pushed(std::size_t bytes, const Inbox& inbox) {
    pushed(bytes);
    if (sizes_.size() >= kTrimEvery) trim(inbox);
  }
  /**
   * Whether the owner has not taken enough yet: the transport should stop taking in data.
   * arriving_messages, arriving_bytes: what the transport took in that is not in the inbox yet
   * (counted as queued).
   */
  bool over(const Inbox& inbox, std::size_t arriving_messages = 0, std::size_t arriving_bytes = 0) {
    if (sizes_.size() < kTrimEvery && !over_limits(arriving_messages, arriving_bytes)) return false;
    trim(inbox);
    return over_limits(arriving_messages, arriving_bytes) && !inbox.closed();  // once closed nobody takes them
  }
  /** Messages remembered as possibly still waiting (for tests: the record stays short). */
  std::size_t recorded() const noexcept { return sizes_.size(); }

 private:
  void trim(const Inbox& inbox) {
    const std::size_t waiting = inbox.queued();
    while (sizes_.size() > waiting) {
      bytes_ -= sizes_.front();
      sizes_.pop_front();
    }
  }
  static constexpr std::size_t kTrimEvery = 64;
  bool over_limits(std::size_t arriving_messages, std::size_t arriving_bytes) const {
    return (max_messages_ && sizes_.size() + arriving_messages >= max_messages_) ||
           (max_bytes_ && bytes_ + arriving_bytes >= max_bytes_);
  }
  std::size_t max_messages_, max_bytes_;
  std::deque<std::size_t> sizes_;
  std::size_t bytes_ = 0;
};

}  // namespace tessera::comm::detail
