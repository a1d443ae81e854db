#pragma once
// Test support: a plain POSIX socket to 127.0.0.1, for sending what no Tessera peer would (not
// cluster_fixture.hpp's RawSocket, a different class: one name for two would break the one
// definition rule in the one test binary).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tessera_test {

class LoopbackSocket {
 public:
  explicit LoopbackSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("raw connect failed");
  }
  ~LoopbackSocket() { ::close(fd_); }
  void write(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const auto k = ::send(fd_, c, n, MSG_NOSIGNAL);
      if (k <= 0) return;  // the server may already have closed: fine for these tests
      c += k;
      n -= static_cast<std::size_t>(k);
    }
  }
  void write(const std::vector<std::uint8_t>& v) { write(v.data(), v.size()); }
  // True when the server closes the connection within timeout (bytes it sent are skipped).
  bool wait_closed(std::chrono::milliseconds timeout) {
    timeval tv{0, 20000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      const auto k = ::recv(fd_, buf, sizeof buf, 0);
      if (k == 0) return true;
      if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
};

}  // namespace tessera_test
