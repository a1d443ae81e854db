// A tcp:// or tls:// connection's set-up, until it is a Comm (TcpSetup, tcp_internal.hpp): dialling
// (resolve, connect) or taking an accepted socket, then under one deadline the TLS handshake
// (tls:// only), the hellos and, with a token, the token proofs (docs/protocol.md,
// docs/security.md). The first failure finishes it, with a reason that says what to check.
#include <algorithm>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "../core/logging.hpp"
#include "tcp_internal.hpp"

namespace tessera::comm::detail::tcp_transport {

namespace {

// A hello's body is read in pieces of at most this much (TcpSetup::read_hello_body).
constexpr std::size_t kHelloPiece = 256;

}  // namespace

void TcpSetup::connect(const HostPort& hp) {
  timer_.expires_after(options_.connect_timeout);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->done_) return;
    self->fail(std::make_exception_ptr(CommError("cannot connect to " + self->peer_ + ": timed out after " +
                                                 std::to_string(self->options_.connect_timeout.count()) + " ms")));
  });
  resolver_.async_resolve(hp.host, hp.port, [self = shared_from_this(), host = hp.host](
                                                error_code ec, tcp::resolver::results_type results) {
    if (self->done_) return;
    if (ec)
      return self->fail(std::make_exception_ptr(
          CommError("cannot connect to " + self->peer_ + ": cannot resolve '" + host + "': " + ec.message())));
    asio::async_connect(self->socket_, results, [self](error_code ec, const tcp::endpoint&) {
      if (self->done_) return;
      if (ec)
        return self->fail(std::make_exception_ptr(CommError("cannot connect to " + self->peer_ + ": " + ec.message())));
      error_code ignored;
      self->socket_.set_option(tcp::no_delay(true), ignored);
      self->connector_ = true;
      self->begin(endpoint_address(self->socket_.local_endpoint(ignored), self->scheme_));
    });
  });
}

void TcpSetup::accept(tcp::socket socket, const std::string& listener_address, std::unique_ptr<ConnSlot> slot) {
  socket_ = std::move(socket);
  slot_ = std::move(slot);
  error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  begin(listener_address);
}

// The whole buffer out or in, over TLS when this is tls://.
template <typename Buffers, typename Handler>
void TcpSetup::write_all(const Buffers& b, Handler&& h) {
  if (tls_) asio::async_write(*tls_, b, std::forward<Handler>(h));
  else asio::async_write(socket_, b, std::forward<Handler>(h));
}

template <typename Buffers, typename Handler>
void TcpSetup::read_all(const Buffers& b, Handler&& h) {
  if (tls_) asio::async_read(*tls_, b, std::forward<Handler>(h));
  else asio::async_read(socket_, b, std::forward<Handler>(h));
}

// One deadline for all of it, the TLS handshake included: a peer that opens TCP and never
// finishes TLS costs its slot for handshake_timeout at most, as one that sends no hello.
void TcpSetup::begin(const std::string& our_address) {
  timer_.expires_after(options_.handshake_timeout);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->done_) return;
    self->fail(std::make_exception_ptr(HandshakeError("no handshake from " + self->peer_ + " within " +
                                                      std::to_string(self->options_.handshake_timeout.count()) +
                                                      " ms")));
  });
  if (!tls_ctx_) return handshake(our_address);
  tls_ = std::make_unique<TlsStream>(std::move(socket_), *tls_ctx_);
  const auto type = connector_ ? asio::ssl::stream_base::client : asio::ssl::stream_base::server;
  tls_->async_handshake(type, [self = shared_from_this(), our_address](error_code ec) {
    if (self->done_) return;
    if (ec) return self->io_failed("in", ec, "TLS handshake");
    self->handshake(our_address);
  });
}

// Hellos first (nonces, no secret), then, with a token, the connector's proof of it and, once
// the listener has checked that, the listener's (prove()); a side goes on only after checking
// the other's proof. See docs/protocol.md.
void TcpSetup::handshake(const std::string& our_address) {
  try {
    ours_ = make_hello(options_, our_address);
  } catch (const CommError& e) {
    return refuse(e.what());
  }
  // Write first, then read: a refusal then never discards our hello, so the peer learns why too.
  out_ = wire::encode_hello(ours_);
  write_all(asio::buffer(out_), [self = shared_from_this()](error_code ec, std::size_t) {
    if (self->done_) return;
    if (ec) return self->io_failed("sending", ec);
    self->read_all(asio::buffer(self->in_fixed_), [self](error_code ec, std::size_t) {
      if (self->done_) return;
      if (ec) return self->io_failed("reading", ec);
      std::uint32_t version = 0, n = 0;
      try {
        n = wire::decode_hello_fixed(self->in_fixed_.data(), version);
      } catch (const ProtocolError& e) {
        return self->refuse(e.what());
      }
      self->in_body_.clear();
      self->read_hello_body(version, n);  // n is at most kMaxHelloBody
    });
  });
}

// The peer's hello body, `n` bytes, in pieces: the buffer grows with what has arrived, at most
// kHelloPiece ahead of it, never with what the prefix claims. A stranger that claims the
// largest body and sends none of it costs one piece (issue 29: the whole claimed body was
// allocated and zeroed up front, 64 KiB for 12 bytes sent).
void TcpSetup::read_hello_body(std::uint32_t version, std::size_t n) {
  const std::size_t have = in_body_.size();
  if (have == n) return hello_arrived(version);
  in_body_.resize(std::min(n, have + kHelloPiece));
  auto on_read = [self = shared_from_this(), version, n, have](error_code ec, std::size_t k) {
    if (self->done_) return;
    if (ec) return self->io_failed("reading", ec);
    self->in_body_.resize(have + k);
    self->read_hello_body(version, n);
  };
  const auto room = asio::buffer(in_body_.data() + have, in_body_.size() - have);
  if (tls_) tls_->async_read_some(room, std::move(on_read));
  else socket_.async_read_some(room, std::move(on_read));
}

void TcpSetup::hello_arrived(std::uint32_t version) {
  wire::Hello theirs;
  try {
    theirs = wire::decode_hello_body(version, in_body_.data(), in_body_.size());
  } catch (const ProtocolError& e) {
    return refuse(e.what());
  }
  if (auto why = wire::check_hello(ours_, theirs); !why.empty()) return refuse(why);
  if (!(ours_.flags & wire::kHelloProves)) return succeed(std::move(theirs));
  prove(std::move(theirs));
}

// Ours, under our role; then `next`.
template <typename Next>
void TcpSetup::send_proof(Next next) {
  try {
    proof_out_ = wire::handshake_proof(options_.token, connector_ ? wire::Role::connector : wire::Role::listener,
                                       connector_hello_, listener_hello_);
  } catch (const CommError& e) {
    return refuse(e.what());
  }
  write_all(asio::buffer(proof_out_), [self = shared_from_this(), next = std::move(next)](error_code ec, std::size_t) {
    if (self->done_) return;
    if (ec) return self->io_failed("sending", ec, "token proof");
    next();
  });
}

// The token proofs, connector first (docs/protocol.md): the connector sends its proof and
// then checks the listener's; the listener checks the connector's and only then computes and
// sends its own. A listener that answered first handed every stranger an HMAC of the token
// over known bytes, against which token guesses can be tested offline (issue 29).
void TcpSetup::prove(wire::Hello theirs) {
  theirs_ = std::move(theirs);
  std::vector<std::uint8_t> their_hello(in_fixed_.begin(), in_fixed_.end());
  their_hello.insert(their_hello.end(), in_body_.begin(), in_body_.end());
  connector_hello_ = connector_ ? out_ : their_hello;
  listener_hello_ = connector_ ? std::move(their_hello) : out_;
  try {
    expected_ = wire::handshake_proof(options_.token, connector_ ? wire::Role::listener : wire::Role::connector,
                                      connector_hello_, listener_hello_);
  } catch (const CommError& e) {
    return refuse(e.what());
  }
  proof_in_.assign(wire::kProofBytes, 0);
  if (connector_) return send_proof([self = shared_from_this()] { self->read_proof(); });
  read_proof();
}

// The peer's, checked in constant time; a listener answers with its own only after that.
void TcpSetup::read_proof() {
  read_all(asio::buffer(proof_in_), [self = shared_from_this()](error_code ec, std::size_t) {
    if (self->done_) return;
    if (ec) return self->io_failed("reading", ec, "token proof");
    if (!wire::proofs_equal(self->proof_in_, self->expected_)) {
      if (self->connector_) {
        const std::vector<std::uint8_t> refused(wire::kProofRefused, wire::kProofRefused + wire::kProofBytes);
        return self->refuse(wire::proofs_equal(self->proof_in_, refused)
                                ? "handshake token mismatch (the peer refused our proof: it holds another shared "
                                  "secret)"
                                : "handshake token mismatch (the peer proved another shared secret)");
      }
      // The connector learns why, and nothing that depends on the token.
      return self->write_all(asio::buffer(wire::kProofRefused, wire::kProofBytes), [self](error_code, std::size_t) {
        self->refuse("handshake token mismatch (the peer proved another shared secret)");
      });
    }
    if (self->connector_) return self->succeed(std::move(self->theirs_));
    self->send_proof([self] { self->succeed(std::move(self->theirs_)); });
  });
}

void TcpSetup::io_failed(const char* doing, error_code ec, const char* what) {
  std::string why;
  if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated) {
    why = "the peer closed the connection";
    // A tls:// listener closes a plain connection at once; a tcp:// one never answers TLS.
    if (!tls_ctx_ && std::string(doing) == "reading" && std::string(what) == "hello")
      why += " (a tls:// address reached with tcp://? Its listener closes plain connections)";
    else if (tls_ctx_ && connector_)
      why += " (TLS: a listener closes a connection whose certificate it refuses, or when it is at its limit of "
             "connections; is ours signed by its CA?)";
  } else if (is_tls_error(ec)) {
    why = "TLS refused: " + ec.message();
    if (tls_ && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER)
      why += " (the peer does not speak TLS: a tcp:// listener?)";
  } else {
    why = ec.message();
  }
  fail(std::make_exception_ptr(
      HandshakeError("handshake with " + peer_ + " failed while " + doing + " its " + what + ": " + why)));
}

void TcpSetup::refuse(const std::string& why) {
  fail(std::make_exception_ptr(HandshakeError("handshake with " + peer_ + " refused: " + why)));
}

void TcpSetup::succeed(wire::Hello theirs) {
  done_ = true;
  timer_.cancel();
  error_code ec;
  const auto local = endpoint_address(sock().local_endpoint(ec), scheme_);
  const auto remote = endpoint_address(sock().remote_endpoint(ec), scheme_);
  if (ec) return finish(nullptr, std::make_exception_ptr(CommError("connection to " + peer_ + " lost: " + ec.message())));
  PeerInfo info{theirs.version, std::move(theirs.name), std::move(theirs.address), std::move(theirs.transports)};
  auto comm = start_comm(io_, std::move(socket_), std::move(tls_), options_, local, remote, std::move(info),
                         std::move(slot_));
  finish(std::move(comm), nullptr);
}

void TcpSetup::fail(std::exception_ptr e) {
  if (done_) return;
  done_ = true;
  timer_.cancel();
  resolver_.cancel();
  error_code ignored;
  sock().close(ignored);
  if (slot_) slot_->release();
  finish(nullptr, std::move(e));
}

void TcpSetup::finish(std::shared_ptr<Comm> comm, std::exception_ptr e) {
  auto f = std::move(finish_);
  finish_ = nullptr;
  try {
    f(std::move(comm), std::move(e));
  } catch (const std::exception& ex) {
    logging::error("comm: connect handler threw: {}", ex.what());
  }
}

}  // namespace tessera::comm::detail::tcp_transport
