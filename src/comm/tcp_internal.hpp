#pragma once
// Private to tcp:// and tls:// (tcp*.cpp): what the transport's files share. tcp.cpp holds the
// Transport and the addresses, tcp_setup.cpp a connection's set-up (dialling or an accepted
// socket, the TLS handshake, the hellos and the token proofs), tcp_conn.cpp an open
// connection (framing, reading, writing) and its Comm, tcp_listener.cpp the listener
// (accepting, the connection cap, the back-off after failed accepts).
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "tls_context.hpp"
#include "transports.hpp"
#include "wire.hpp"

namespace tessera::comm::detail::tcp_transport {

using tcp = asio::ip::tcp;
using boost::system::error_code;

/** "scheme://host:port" of `ep` ([host] for IPv6). */
std::string endpoint_address(const tcp::endpoint& ep, const std::string& scheme = "tcp");

struct HostPort {
  std::string host;
  std::string port;
};

/** "scheme://host:port" (tcp://, or ucx://, whose connections start as TCP on that port). */
HostPort parse_tcp_address(const std::string& address);

/** One of a listener's max_connections, held from accept until the socket closes. */
class ConnSlot {
 public:
  explicit ConnSlot(std::shared_ptr<std::atomic<std::size_t>> open) : open_(std::move(open)) {}
  ~ConnSlot() { release(); }
  ConnSlot(const ConnSlot&) = delete;
  ConnSlot& operator=(const ConnSlot&) = delete;
  void release() {
    if (open_) --*open_;
    open_.reset();
  }

 private:
  std::shared_ptr<std::atomic<std::size_t>> open_;
};

/**
 * The Comm over a connection whose handshake succeeded, reading already (tcp_conn.cpp). `tls`
 * set: tls://, the stream over `socket`; `slot`: an accepted connection's, null for one we dialled.
 */
std::shared_ptr<Comm> start_comm(std::shared_ptr<asio::io_context> io, tcp::socket socket,
                                 std::unique_ptr<TlsStream> tls, const CommOptions& options, std::string local,
                                 std::string peer, PeerInfo info, std::unique_ptr<ConnSlot> slot);

/**
 * Connects (client) or takes an accepted socket (server), then handshakes; finishes once
 * (tcp_setup.cpp). Touched on the I/O thread only, after construction.
 */
class TcpSetup : public std::enable_shared_from_this<TcpSetup> {
 public:
  using Finish = std::function<void(std::shared_ptr<Comm>, std::exception_ptr)>;

  /** `tls_ctx` set: tls:// (the TLS handshake first); `scheme` names our and the peer's addresses. */
  TcpSetup(std::shared_ptr<asio::io_context> io, const CommOptions& options, std::string peer, Finish finish,
           std::string scheme = "tcp", std::shared_ptr<asio::ssl::context> tls_ctx = nullptr)
      : io_(io), socket_(*io), resolver_(*io), timer_(*io), options_(options), peer_(std::move(peer)),
        finish_(std::move(finish)), scheme_(std::move(scheme)), tls_ctx_(std::move(tls_ctx)) {}

  void connect(const HostPort& hp);
  void accept(tcp::socket socket, const std::string& listener_address, std::unique_ptr<ConnSlot> slot);

 private:
  tcp::socket& sock() { return tls_ ? tls_->next_layer() : socket_; }

  template <typename Buffers, typename Handler>
  void write_all(const Buffers& b, Handler&& h);
  template <typename Buffers, typename Handler>
  void read_all(const Buffers& b, Handler&& h);

  void begin(const std::string& our_address);
  void handshake(const std::string& our_address);
  void read_hello_body(std::uint32_t version, std::size_t n);
  void hello_arrived(std::uint32_t version);
  template <typename Next>
  void send_proof(Next next);
  void prove(wire::Hello theirs);
  void read_proof();

  void io_failed(const char* doing, error_code ec, const char* what = "hello");
  void refuse(const std::string& why);
  void succeed(wire::Hello theirs);
  void fail(std::exception_ptr e);
  void finish(std::shared_ptr<Comm> comm, std::exception_ptr e);

  std::shared_ptr<asio::io_context> io_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  CommOptions options_;
  std::string peer_;
  Finish finish_;
  bool done_ = false;
  bool connector_ = false;  // we dialled; else we accepted
  std::string scheme_;
  std::shared_ptr<asio::ssl::context> tls_ctx_;  // tls:// only
  std::unique_ptr<TlsStream> tls_;               // made from socket_ once TCP is up
  std::unique_ptr<ConnSlot> slot_;  // accepted: the listener's slot, handed on to the comm
  wire::Hello ours_, theirs_;
  std::vector<std::uint8_t> out_;
  std::vector<std::uint8_t> connector_hello_, listener_hello_;  // as sent, for the proofs
  std::vector<std::uint8_t> proof_out_, proof_in_, expected_;
  std::array<std::uint8_t, wire::kHelloFixedBytes> in_fixed_{};
  std::vector<std::uint8_t> in_body_;
};

/**
 * A listener on `address` (bound now; @throw CommError), accepting on the I/O thread
 * (tcp_listener.cpp). `tls_ctx` set: tls://, every accepted socket does TLS first.
 */
std::unique_ptr<Listener> start_listener(const std::string& address, AcceptHandler on_comm, const CommOptions& options,
                                         ListenErrorHandler on_error, std::shared_ptr<asio::ssl::context> tls_ctx);

}  // namespace tessera::comm::detail::tcp_transport
