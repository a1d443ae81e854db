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

}  // namespace tessera::comm::detail
