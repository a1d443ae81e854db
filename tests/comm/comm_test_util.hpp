#pragma once
// Shared by the comm tests (comm_test, tcp_flow_test, ucx_test): byte patterns for frames, and
// an echo server on any transport.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/comm/comm.hpp"

namespace tessera_comm_test {

using tessera::Buffer;
using tessera::comm::Comm;
using tessera::comm::CommOptions;
using tessera::comm::Frame;
using tessera::comm::Listener;
using tessera::comm::Message;

/** n bytes that differ with the seed, the position and the MiB (so a swapped chunk shows). */
inline Frame pattern_frame(std::size_t n, std::uint8_t seed) {
  auto f = Buffer::allocate_host(n);
  auto* p = static_cast<std::uint8_t*>(f->data());
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 131 + seed + (i >> 20));
  return f;
}

inline bool same_bytes(const Frame& a, const Frame& b) {
  // memcmp may not be given the null data of an empty frame, even for 0 bytes.
  return a && b && a->size() == b->size() && (a->size() == 0 || std::memcmp(a->data(), b->data(), a->size()) == 0);
}

/** What f throws, or "(no exception)". */
inline std::string what(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

/** Sends n messages "m" {i} carrying `frame`; `sent` counts those that completed without error. */
inline void send_numbered(Comm& comm, int n, const Frame& frame, std::atomic<int>& sent) {
  for (int i = 0; i < n; ++i) {
    Message m("m");
    m.set("i", i);
    m.add_frame(frame);
    comm.send(std::move(m), [&sent](std::exception_ptr e) {
      if (!e) ++sent;
    });
  }
}

/**
 * Serves a listener: every message comes back as is, except "sink" (answered by "ack", frames
 * dropped) and "send" {bytes} (answered by "data" with a frame of that many bytes). Keeps every
 * comm until destroyed, then closes them. Handlers hold the shared state, not the server: a
 * close handler may run after it is gone.
 */
class EchoServer {
 public:
  explicit EchoServer(const std::string& address, CommOptions options = {}) : s_(std::make_shared<State>()) {
    listener_ = tessera::comm::listen(
        address,
        [s = s_](std::shared_ptr<Comm> comm) {
          std::weak_ptr<Comm> weak = comm;
          comm->set_handlers([weak](Message m) { answer(weak, std::move(m)); },
                             [s](std::exception_ptr reason) {
                               std::lock_guard lk(s->mu);
                               s->closes.push_back(reason);
                             });
          std::lock_guard lk(s->mu);
          s->comms.push_back(std::move(comm));
          ++s->accepted;
        },
        options,
        [s = s_](const std::string&, std::exception_ptr reason) {
          std::lock_guard lk(s->mu);
          s->refusals.push_back(reason);
        });
  }
  ~EchoServer() {
    listener_->stop();
    std::vector<std::shared_ptr<Comm>> comms;
    {
      std::lock_guard lk(s_->mu);
      comms.swap(s_->comms);
    }
    for (auto& c : comms) c->close();
  }
  const std::string& address() const { return listener_->address(); }
  int port() const { return std::stoi(address().substr(address().rfind(':') + 1)); }
  int accepted() {
    std::lock_guard lk(s_->mu);
    return s_->accepted;
  }
  /** Comm::transport() of each accepted comm. */
  std::vector<std::string> transports() {
    std::lock_guard lk(s_->mu);
    std::vector<std::string> out;
    for (auto& c : s_->comms) out.push_back(c->transport());
    return out;
  }
  /** Waits for the first refusal (listener side) and returns its message, "" on timeout. */
  std::string wait_refusal(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    return wait_reason(s_->refusals, timeout);
  }
  /** Waits for the first accepted comm to close and returns why, "" on timeout. */
  std::string wait_close(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    return wait_reason(s_->closes, timeout);
  }

 private:
  struct State {
    std::mutex mu;
    std::vector<std::shared_ptr<Comm>> comms;
    std::vector<std::exception_ptr> closes, refusals;
    int accepted = 0;
  };
  static void answer(const std::weak_ptr<Comm>& weak, Message m) {
    auto c = weak.lock();
    if (!c) return;
    if (m.op == "sink") {
      c->send(Message("ack"), nullptr);
    } else if (m.op == "send") {
      Message r("data");
      auto n = static_cast<std::size_t>(m.get<std::uint64_t>("bytes"));
      auto f = Buffer::allocate_host(n);
      std::memset(f->data(), 7, n);
      r.add_frame(f);
      c->send(std::move(r), nullptr);
    } else {
      c->send(std::move(m), nullptr);
    }
  }
  std::string wait_reason(std::vector<std::exception_ptr>& v, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lk(s_->mu);
        if (!v.empty()) {
          try {
            std::rethrow_exception(v.front());
          } catch (const std::exception& e) {
            return e.what();
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return {};
  }
  std::shared_ptr<State> s_;
  std::unique_ptr<Listener> listener_;
};

/**
 * Many comms at once: `threads` threads each open `comms` comms to the echo server at `address`
 * and send `messages` pings on each (message i with a frame of 100 + i * frame_step bytes), then
 * check every echo. Returns how many came back with the right id and bytes.
 */
inline int concurrent_echoes(const std::string& address, int threads, int comms, int messages, std::size_t frame_step,
                             std::chrono::milliseconds timeout) {
  std::atomic<int> ok{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<std::shared_ptr<Comm>> open;
      for (int c = 0; c < comms; ++c) open.push_back(tessera::comm::connect(address));
      auto frame = [&](int c, int i) { return pattern_frame(100 + i * frame_step, static_cast<std::uint8_t>(c)); };
      for (int i = 0; i < messages; ++i)
        for (int c = 0; c < comms; ++c) {
          Message m("ping");
          m.set("id", t * 1000000 + c * 1000 + i);
          m.add_frame(frame(c, i));
          open[c]->send(std::move(m), nullptr);
        }
      for (int c = 0; c < comms; ++c)
        for (int i = 0; i < messages; ++i) {
          auto m = open[c]->recv(timeout);
          if (m.get<int>("id") == t * 1000000 + c * 1000 + i && same_bytes(m.frames.at(0), frame(c, i))) ++ok;
        }
    });
  }
  for (auto& w : workers) w.join();
  return ok.load();
}

}  // namespace tessera_comm_test
