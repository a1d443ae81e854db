// The tcp:// and tls:// listener: binding, accepting on the I/O thread, the cap on open
// connections (max_connections, or three quarters of the descriptor limit) and the notice a
// connection refused at the cap gets, the back-off after a failed accept, and rate-limited logs
// of refusals. Each accepted socket goes to a TcpSetup (tcp_setup.cpp) with its slot; the
// handshake deadline, and the first-message deadline of the comm, bound what a silent peer costs.
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>

#include "../core/logging.hpp"
#include "log_limiter.hpp"
#include "tcp_internal.hpp"

namespace tessera::comm::detail::tcp_transport {

namespace {

class TcpListenerImpl : public std::enable_shared_from_this<TcpListenerImpl> {
 public:
  TcpListenerImpl(std::shared_ptr<asio::io_context> io, const CommOptions& options, AcceptHandler on_comm,
                  ListenErrorHandler on_error, std::shared_ptr<asio::ssl::context> tls_ctx = nullptr)
      : io_(io), acceptor_(*io), retry_(*io), options_(options), on_comm_(std::move(on_comm)),
        on_error_(std::move(on_error)), tls_ctx_(std::move(tls_ctx)) {}

  void bind(const std::string& requested) {
    auto hp = parse_tcp_address(requested);
    if (hp.host.empty()) hp.host = "0.0.0.0";
    try {
      tcp::resolver resolver(*io_);
      const auto results = resolver.resolve(hp.host, hp.port, tcp::resolver::passive);
      const tcp::endpoint ep = results.begin()->endpoint();
      acceptor_.open(ep.protocol());
      acceptor_.set_option(tcp::acceptor::reuse_address(true));
      acceptor_.bind(ep);
      acceptor_.listen(asio::socket_base::max_listen_connections);
      // The requested scheme stays: a ucx:// listener is this TCP listener (see ucx.cpp).
      address_ = endpoint_address(acceptor_.local_endpoint(), address_scheme(requested));
    } catch (const boost::system::system_error& e) {
      throw CommError("cannot listen on " + requested + ": " + e.code().message());
    }
  }

  const std::string& address() const noexcept { return address_; }

  void accept_next() {
    acceptor_.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
      if (self->stopped_) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        // Out of file descriptors and the like: back off (doubling up to a second) instead of
        // spinning, and say so at most once per interval.
        self->accept_backoff_ = std::min(std::max(self->accept_backoff_ * 2, kAcceptBackoffMin), kAcceptBackoffMax);
        if (std::size_t more = 0; self->accept_log_.allow(more))
          logging::warn("comm: accept on {} failed: {}; retrying in {} ms{}", self->address_, ec.message(),
                        self->accept_backoff_.count(), suppressed_text(more, "accept failures"));
        self->retry_.expires_after(self->accept_backoff_);
        self->retry_.async_wait([self](error_code ec) {
          if (!ec && !self->stopped_) self->accept_next();
        });
        return;
      }
      self->accept_backoff_ = std::chrono::milliseconds(0);
      error_code ignored;
      const auto peer = endpoint_address(socket.remote_endpoint(ignored), self->scheme_);
      if (self->open_->load() >= self->max_connections_) {
        if (!self->tls_ctx_) tell_full(socket, self->max_connections_);
        socket.close(ignored);  // at the cap: the descriptor goes back at once
        self->log_refusal(peer, std::to_string(self->max_connections_) +
                                    " connections are open, the limit (max_connections)");
        return self->accept_next();
      }
      ++*self->open_;
      auto slot = std::make_unique<ConnSlot>(self->open_);
      auto setup = std::make_shared<TcpSetup>(
          self->io_, self->options_, peer, [self, peer](std::shared_ptr<Comm> comm, std::exception_ptr e) {
            if (e) {
              self->log_refusal(peer, describe_exception(e));
              if (self->on_error_ && !self->stopped_) self->on_error_(peer, e);
              return;
            }
            if (self->stopped_) return comm->close();
            self->on_comm_(std::move(comm));
          },
          self->scheme_, self->tls_ctx_);
      setup->accept(std::move(socket), self->address_, std::move(slot));
      self->accept_next();
    });
  }

  /** Connections this listener holds now (in the handshake or open). */
  std::size_t open_connections() const noexcept { return open_->load(); }

  void stop() {
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
  }

 private:
  std::shared_ptr<asio::io_context> io_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  CommOptions options_;
  AcceptHandler on_comm_;
  ListenErrorHandler on_error_;
  std::string address_;
  std::shared_ptr<asio::ssl::context> tls_ctx_;  // tls://: every accepted socket does TLS first
  // Of the connections' addresses: "tls", or "tcp" (also under ucx://, see Comm::transport()).
  std::string scheme_ = tls_ctx_ ? "tls" : "tcp";
  bool stopped_ = false;
  std::size_t max_connections_ = effective_max_connections(options_);
  std::shared_ptr<std::atomic<std::size_t>> open_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::chrono::milliseconds accept_backoff_{0};
  LogLimiter accept_log_{kLogInterval};
  LogLimiter refusal_log_{std::chrono::seconds(1)};

  static constexpr std::chrono::milliseconds kAcceptBackoffMin{50}, kAcceptBackoffMax{1000};
  static constexpr std::chrono::seconds kLogInterval{10};

  static std::size_t effective_max_connections(const CommOptions& options) {
    if (options.max_connections > 0) return options.max_connections;
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 65536;
    return std::max<std::size_t>(16, static_cast<std::size_t>(lim.rlim_cur) / 4 * 3);
  }

  // A connection refused at the cap is told so (wire::kFullMagic), where its connector reads the
  // listener's hello: before issue 29 it only saw the connection close ("a tls:// address
  // reached with tcp://?"). 12 bytes fit any socket buffer, so the send never waits; what the
  // peer already sent is read first so that the close is a FIN rather than a reset. tls://
  // connections cannot be told before their TLS handshake, which is not worth doing at the cap.
  static void tell_full(tcp::socket& socket, std::size_t max_connections) {
    const int fd = socket.native_handle();
    char sink[4096];
    [[maybe_unused]] auto got = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    const auto cap = static_cast<std::uint32_t>(std::min<std::size_t>(max_connections, UINT32_MAX));
    const auto notice = wire::encode_full_notice(cap);
    [[maybe_unused]] auto sent = ::send(fd, notice.data(), notice.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  static std::string suppressed_text(std::size_t n, const char* what) {
    return n ? " (" + std::to_string(n) + " more " + what + " not logged)" : std::string();
  }

  void log_refusal(const std::string& peer, const std::string& why) {
    if (std::size_t more = 0; refusal_log_.allow(more))
      logging::warn("comm: {} refused a connection from {}: {}{}", address_, peer, why,
                    suppressed_text(more, "refusals"));
  }
};

class TcpListener final : public Listener {
 public:
  explicit TcpListener(std::shared_ptr<TcpListenerImpl> impl) : impl_(std::move(impl)), address_(impl_->address()) {}
  ~TcpListener() override { stop(); }
  const std::string& address() const override { return address_; }
  void stop() override {
    if (stopped_.exchange(true)) return;
    run_on_io_thread([impl = impl_] { impl->stop(); });
  }

 private:
  std::shared_ptr<TcpListenerImpl> impl_;
  std::string address_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

std::unique_ptr<Listener> start_listener(const std::string& address, AcceptHandler on_comm, const CommOptions& options,
                                         ListenErrorHandler on_error, std::shared_ptr<asio::ssl::context> tls_ctx) {
  auto& rt = CommRuntime::instance();
  auto impl = std::make_shared<TcpListenerImpl>(rt.io(), options, std::move(on_comm), std::move(on_error),
                                                std::move(tls_ctx));
  impl->bind(address);
  rt.post([impl] { impl->accept_next(); });
  return std::make_unique<TcpListener>(std::move(impl));
}

}  // namespace tessera::comm::detail::tcp_transport
