#pragma once
// A raw HTTP/1.1 client for the dashboard tests: one request per connection, read to the close.
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster_fixture.hpp"
#include "distributed/scheduler_file.hpp"

namespace tessera_test {

struct Reply {
  int status = 0;
  std::string headers;
  std::string body;
};

// Everything the server sends until it closes the connection (or timeout_s passes).
inline std::string read_until_closed(RawSocket& s, double timeout_s = 5) {
  std::string out;
  auto deadline = tessera_test::Clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  while (tessera_test::Clock::now() < deadline) {
    ssize_t r = ::recv(s.fd(), buf, sizeof buf, 0);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

inline Reply parse_reply(const std::string& raw) {
  Reply r;
  auto end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos)
    throw std::runtime_error("not an HTTP response: '" + raw.substr(0, 200) + "'");
  r.status = std::atoi(raw.c_str() + 9);
  r.headers = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  return r;
}

// Sends `bytes` as they are and reads the reply up to the server's close.
inline Reply http_exchange(int port, const std::string& bytes) {
  RawSocket s(port);
  if (!s.send_all(bytes)) throw std::runtime_error("send failed");
  return parse_reply(read_until_closed(s));
}

inline Reply http_get(int port, const std::string& path, const std::string& method = "GET") {
  return http_exchange(port, method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
}

// The dashboard's port from a scheduler file ("services": {"dashboard": port}, as Dask's); 0 when
// it has none. Waits up to 10 s for the file.
inline int dashboard_port_from(const std::string& sfile) {
  tessera::distributed::read_scheduler_file(sfile, 10);
  auto j = nlohmann::json::parse(read_text(sfile));
  if (!j.contains("services")) return 0;
  return j["services"]["dashboard"].get<int>();
}

}  // namespace tessera_test
