#pragma once
// The process's one I/O thread (private: keeps Boost out of public headers).
#include <memory>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace tessera::comm::detail {

namespace asio = boost::asio;

/**
 * Runs one io_context on a background thread, started on first use. Sockets hold the
 * io_context by shared_ptr so one that outlives the runtime (at exit) is still destroyed safely.
 */
class CommRuntime {
 public:
  static CommRuntime& instance();

  const std::shared_ptr<asio::io_context>& io() const noexcept { return io_; }
  bool on_io_thread() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }

  template <typename F>
  void post(F&& f) {
    asio::post(*io_, std::forward<F>(f));
  }

  ~CommRuntime();
  CommRuntime(const CommRuntime&) = delete;
  CommRuntime& operator=(const CommRuntime&) = delete;

 private:
  CommRuntime();
  std::shared_ptr<asio::io_context> io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

}  // namespace tessera::comm::detail
