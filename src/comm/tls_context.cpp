// tls:// contexts (OpenSSL through Boost.Asio's ssl::context) and the start-time file checks.
#include "tls_context.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include <boost/asio/ssl/error.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tessera/comm/comm.hpp"

namespace tessera::comm {

namespace {

// The last OpenSSL error, for messages; empty when there is none.
std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return {};
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

void check_readable(const std::string& path, const char* what) {
  if (::access(path.c_str(), R_OK) != 0)
    throw CommError(std::string("TLS ") + what + " '" + path + "' cannot be read: " + std::strerror(errno));
}

}  // namespace

Security Security::with_env_defaults() const {
  Security s = *this;
  auto fill = [](std::string& field, const char* name) {
    if (!field.empty()) return;
    if (const char* v = std::getenv(name)) field = v;
  };
  fill(s.tls_ca_file, "TESSERA_TLS_CA_FILE");
  fill(s.tls_cert, "TESSERA_TLS_CERT");
  fill(s.tls_key, "TESSERA_TLS_KEY");
  return s;
}

void check_security(const Security& security, bool for_listener) {
  (void)detail::tls_context(security, for_listener);
}

namespace detail {

namespace {

std::shared_ptr<asio::ssl::context> make_context(const Security& s, bool for_listener) {
  if (s.tls_ca_file.empty())
    throw CommError("tls:// needs a CA file (--tls-ca-file, TESSERA_TLS_CA_FILE, Security::tls_ca_file)");
  if (s.tls_cert.empty() != s.tls_key.empty())
    throw CommError(s.tls_cert.empty() ? "a TLS key was given without its certificate (--tls-cert)"
                                       : "a TLS certificate was given without its key (--tls-key)");
  if (for_listener && s.tls_cert.empty())
    throw CommError("a tls:// listener needs a certificate and its key (--tls-cert, --tls-key)");
  check_readable(s.tls_ca_file, "CA file");
  if (!s.tls_cert.empty()) {
    check_readable(s.tls_cert, "certificate");
    check_readable(s.tls_key, "key");
  }
  ERR_clear_error();
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression);
  if (SSL_CTX_load_verify_locations(native, s.tls_ca_file.c_str(), nullptr) != 1)
    throw CommError("TLS CA file '" + s.tls_ca_file + "' holds no usable certificate: " + openssl_error());
  if (!s.tls_cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(native, s.tls_cert.c_str()) != 1)
      throw CommError("TLS certificate '" + s.tls_cert + "' cannot be used: " + openssl_error());
    if (SSL_CTX_use_PrivateKey_file(native, s.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
      // OpenSSL compares the key with the certificate as it loads it.
      if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH)
        throw CommError("TLS key '" + s.tls_key + "' does not belong to the certificate '" + s.tls_cert +
                        "': " + openssl_error());
      throw CommError("TLS key '" + s.tls_key + "' cannot be used: " + openssl_error());
    }
    if (SSL_CTX_check_private_key(native) != 1)
      throw CommError("TLS key '" + s.tls_key + "' does not belong to the certificate '" + s.tls_cert +
                      "': " + openssl_error());
  }
  // Both directions: a listener asks for the client's certificate and refuses a client without.
  ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  return ctx;
}

}  // namespace

std::shared_ptr<asio::ssl::context> tls_context(const Security& security, bool for_listener) {
  // Connections to the same peers reuse one context: loading the files per connect would cost
  // more than the TLS handshake. Keyed by file names; a process restarted sees new files.
  static std::mutex mu;
  static std::map<std::tuple<std::string, std::string, std::string, bool>, std::shared_ptr<asio::ssl::context>> cache;
  const auto key = std::make_tuple(security.tls_ca_file, security.tls_cert, security.tls_key, for_listener);
  std::lock_guard lk(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto ctx = make_context(security, for_listener);
  cache.emplace(key, ctx);
  return ctx;
}

bool is_tls_error(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() || ec.category() == asio::ssl::error::get_stream_category();
}

}  // namespace detail

}  // namespace tessera::comm
