#pragma once
// The built-in transports (registered by the registry in comm.cpp) and shared helpers.
#include <future>
#include <memory>

#include "runtime.hpp"
#include "tessera/comm/comm.hpp"
#include "wire.hpp"

namespace tessera::comm::detail {

/** tcp://; its connect and listen also take ucx:// addresses (the listener keeps the scheme). */
std::shared_ptr<Transport> make_tcp_transport();
/** tls://: tcp:// inside mutual TLS (tcp*.cpp, tls_context.hpp, docs/security.md). */
std::shared_ptr<Transport> make_tls_transport();
std::shared_ptr<Transport> make_inproc_transport();
/** ucx://: TCP on host:port, then UCX when both ends have it (ucx.cpp, docs/ucx.md). */
std::shared_ptr<Transport> make_ucx_transport();
std::shared_ptr<Transport> transport_for(const std::string& address);

/** Our side of a handshake. */
wire::Hello make_hello(const CommOptions& options, std::string address);

// ---- shared by the byte-stream transports (tcp_conn.cpp, ucx_engine.cpp) ------------------------

/** The error a send gets on a closed comm. */
std::exception_ptr closed_error(const std::string& peer, const std::string& why);

/** Calls a send callback (when set) with `e`; a callback that throws is logged, not propagated. */
void call_done(const Comm::SendCallback& done, std::exception_ptr e);

/**
 * @brief What a transport checks and encodes before it sends `msg` to `peer`: the frame count;
 * each frame present, within max_frame_bytes and, when it holds device memory, allowed (a
 * non-null `device_refusal` refuses device frames with bytes, saying why); then the encoded
 * header and the message within their limits. Returns the error for the send callback, or null
 * with `header` and `lens` (the frame sizes) filled.
 */
std::exception_ptr prepare_send(const Message& msg, const CommOptions& options, const std::string& peer,
                                const char* device_refusal, std::string& header, std::vector<std::uint64_t>& lens);

/**
 * @brief Checks a received preamble against `options`: magic, version, frame count, header size.
 * Returns the protocol error, or empty.
 */
std::string check_preamble(const wire::Preamble& pre, const CommOptions& options);

/**
 * @brief Reads the frame sizes that follow the fixed preamble at `p` into `lens`, and the
 * message's size (header and frames) into `total`, checking each frame and the whole message
 * against `options`. Returns the protocol error, or empty.
 */
std::string read_frame_sizes(const std::uint8_t* p, const wire::Preamble& pre, const CommOptions& options,
                             std::vector<std::uint64_t>& lens, std::uint64_t& total);

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
