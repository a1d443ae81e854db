#pragma once
// Certificates for the tls:// tests, made at run time with the `openssl` command in a temporary
// directory that is removed with the object. EC P-256 keys: each takes milliseconds.
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "tessera/comm/security.hpp"

namespace tessera_test {

class TestPki {
 public:
  TestPki() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tessera-tls-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~TestPki() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  /** Whether the openssl command runs here (else the tests skip, saying so). */
  static bool available() { return std::system("openssl version >/dev/null 2>&1") == 0; }

  const std::filesystem::path& dir() const { return dir_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /** A self-signed CA: <ca>.pem and <ca>.key. */
  void make_ca(const std::string& ca) {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" + ca +
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign -keyout " +
        path(ca + ".key") + " -out " + path(ca + ".pem"));
  }

  /** <name>.pem signed by `ca`, with <name>.key; returns the Security that uses them. */
  tessera::comm::Security make_cert(const std::string& ca, const std::string& name) {
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + name + " -keyout " +
        path(name + ".key") + " -out " + path(name + ".csr"));
    run("openssl x509 -req -days 2 -in " + path(name + ".csr") + " -CA " + path(ca + ".pem") + " -CAkey " +
        path(ca + ".key") + " -CAcreateserial -out " + path(name + ".pem"));
    return {path(ca + ".pem"), path(name + ".pem"), path(name + ".key")};
  }

 private:
  static void run(const std::string& cmd) {
    if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  std::filesystem::path dir_;
};

}  // namespace tessera_test
