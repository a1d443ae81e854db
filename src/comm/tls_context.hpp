#pragma once
// OpenSSL contexts of tls:// (private: keeps Boost and OpenSSL out of public headers).
#include <memory>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "runtime.hpp"
#include "tessera/comm/security.hpp"

namespace tessera::comm::detail {

using TlsStream = asio::ssl::stream<asio::ip::tcp::socket>;

/**
 * @brief The context for `security` (checked with check_security), made once per set of file
 * names and shared: TLS 1.2 at least (1.3 when both ends have it), the peer's certificate
 * required and verified against the CA file; no host-name check (peers are reached by IP, as in
 * Dask: the CA is the identity). @throw CommError.
 */
std::shared_ptr<asio::ssl::context> tls_context(const Security& security, bool for_listener);

/** @brief Whether `ec` is a TLS error (then its text says what TLS refused). */
bool is_tls_error(const boost::system::error_code& ec);

}  // namespace tessera::comm::detail
