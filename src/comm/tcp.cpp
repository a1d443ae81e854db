// tcp:// transport: Boost.Asio sockets on the comm runtime's I/O thread. tls:// is the same
// code over Boost.Asio's SSL stream (OpenSSL): a TLS handshake before the hello, and the
// stream's reads and writes where tcp:// uses the socket's (tls_context.hpp).
//
// This file holds the Transport (connect, listen) and the addresses; the rest is split by idea
// over tcp_internal.hpp: tcp_setup.cpp sets a connection up (dialling or an accepted socket, the
// TLS handshake, the hellos and the token proofs), tcp_conn.cpp runs an open connection (framing,
// reading, writing, its Comm), tcp_listener.cpp accepts (the connection cap, the back-off).
#include "tcp_internal.hpp"

namespace tessera::comm::detail {

namespace tcp_transport {

std::string endpoint_address(const tcp::endpoint& ep, const std::string& scheme) {
  const auto a = ep.address();
  if (a.is_v6()) return scheme + "://[" + a.to_string() + "]:" + std::to_string(ep.port());
  return scheme + "://" + a.to_string() + ":" + std::to_string(ep.port());
}

HostPort parse_tcp_address(const std::string& address) {
  const auto scheme = address_scheme(address);
  const std::string prefix = scheme + "://";
  std::string rest = address.substr(prefix.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  HostPort hp;
  std::size_t colon = std::string::npos;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) throw CommError("bad IPv6 address in '" + address + "'");
    hp.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') throw CommError("bad address '" + address + "'");
      colon = close + 1;
    }
  } else {
    colon = rest.rfind(':');
    hp.host = rest.substr(0, colon);
  }
  if (colon != std::string::npos) hp.port = rest.substr(colon + 1);
  const bool digits = !hp.port.empty() && hp.port.size() <= 5 &&
                      hp.port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoul(hp.port) > 65535)
    throw CommError("address '" + address + "' needs a port: " + scheme + "://host:port (port 0 picks a free one)");
  return hp;
}

namespace {

/** tcp://, and tls:// (the same over TLS; `tls` set). Also takes ucx:// addresses (ucx.cpp). */
class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(bool tls) : tls_(tls) {}
  std::string scheme() const override { return tls_ ? "tls" : "tcp"; }

  void connect(const std::string& address, const CommOptions& options, ConnectHandler done) override {
    auto& rt = CommRuntime::instance();
    HostPort hp;
    std::string scheme;
    std::shared_ptr<asio::ssl::context> ctx;
    try {
      hp = parse_tcp_address(address);
      if (address_scheme(address) == "tls") ctx = tls_context(options.security, /*for_listener=*/false);
      scheme = ctx ? "tls" : "tcp";  // a ucx:// connection's TCP start says tcp (Comm::transport())
    } catch (...) {
      rt.post([done, e = std::current_exception()] { done(nullptr, e); });
      return;
    }
    auto setup = std::make_shared<TcpSetup>(rt.io(), options, address, std::move(done), scheme, std::move(ctx));
    rt.post([setup, hp] { setup->connect(hp); });
  }

  std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm, const CommOptions& options,
                                   ListenErrorHandler on_error) override {
    std::shared_ptr<asio::ssl::context> ctx;
    if (address_scheme(address) == "tls") ctx = tls_context(options.security, /*for_listener=*/true);
    return start_listener(address, std::move(on_comm), options, std::move(on_error), std::move(ctx));
  }

 private:
  bool tls_;
};

}  // namespace

}  // namespace tcp_transport

std::shared_ptr<Transport> make_tcp_transport() { return std::make_shared<tcp_transport::TcpTransport>(false); }
std::shared_ptr<Transport> make_tls_transport() { return std::make_shared<tcp_transport::TcpTransport>(true); }

}  // namespace tessera::comm::detail
