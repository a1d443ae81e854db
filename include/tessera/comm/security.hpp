#pragma once
/**
 * @file
 * Security: the files of mutual TLS for tls:// addresses (Dask's `Security`, its
 * `--tls-ca-file`, `--tls-cert` and `--tls-key`). See docs/security.md.
 */
#include <string>

namespace tessera::comm {

/**
 * @brief Mutual TLS for tls://: both ends present a certificate signed by the CA in
 * tls_ca_file and verify the other's. A listener needs all three files; a connecting side
 * needs the CA file, and a certificate with its key for any listener that checks clients
 * (every tls:// listener of Tessera does). PEM files. Empty: no TLS (tcp://, ucx://).
 */
struct Security {
  std::string tls_ca_file;  ///< CA certificate(s) that sign every peer's certificate
  std::string tls_cert;     ///< our certificate (chain), signed by that CA
  std::string tls_key;      ///< the certificate's private key (unencrypted PEM)

  /** @brief Whether any file is set. */
  bool has_tls() const noexcept { return !tls_ca_file.empty() || !tls_cert.empty() || !tls_key.empty(); }

  /** @brief Each field left empty taken from TESSERA_TLS_CA_FILE, TESSERA_TLS_CERT, TESSERA_TLS_KEY. */
  Security with_env_defaults() const;
};

/**
 * @brief Checks the files at start, so a mistake is told before the first connection: each set
 * file exists and is readable and parses (CA and certificate as PEM certificates, the key as a
 * private key), the key belongs to the certificate, a certificate comes with its key, and a
 * listener (`for_listener`) has all three.
 * @throw CommError saying which file and what is wrong.
 */
void check_security(const Security& security, bool for_listener);

}  // namespace tessera::comm
