#pragma once
// The built-in transports (registered by the registry in comm.cpp) and shared helpers.
#include <future>
#include <memory>

#include "runtime.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/wire.hpp"

namespace tessera::comm::detail {

/** tcp://; its connect and listen also take ucx:// addresses (the listener keeps the scheme). */
std::shared_ptr<Transport> make_tcp_transport();
std::shared_ptr<Transport> make_inproc_transport();
/** ucx://: TCP on host:port, then UCX when both ends have it (ucx.cpp, docs/ucx.md). */
std::shared_ptr<Transport> make_ucx_transport();
/** True once UCX has started in this process (never starts it). */
bool ucx_running() noexcept;
std::shared_ptr<Transport> transport_for(const std::string& address);

/** Our side of a handshake. */
wire::Hello make_hello(const CommOptions& options, std::string address);

/** Runs f on the I/O thread and waits for it (inline when already there). */
template <typename F>
void run_on_io_thread(F&& f) {
  auto& rt = CommRuntime::instance();
  if (rt.on_io_thread() || rt.io()->stopped()) {
    f();
    return;
  }
  std::promise<void> done;
  auto fut = done.get_future();
  rt.post([&] {
    f();
    done.set_value();
  });
  fut.wait();
}

}  // namespace tessera::comm::detail
