#pragma once
/**
 * @file Request/reply over one Comm: a request carries an "id" field, the answer is a "reply"
 * message with the same id (and an "error" field when it failed). Private to the library.
 */
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "tessera/comm/comm.hpp"
#include "wire.hpp"

namespace tessera::distributed {

/** @brief The remote side answered a request with an error. */
class RemoteError : public Error {
 public:
  using Error::Error;
};

/** @brief Pending requests of one connection. Thread-safe. */
class RpcTable {
 public:
  /** @brief Gets the reply (nullptr and an error when it failed or the comm closed). */
  using Callback = std::function<void(const comm::Message* reply, std::exception_ptr error)>;

  /** @brief Sends msg as a request; cb runs once, on the I/O thread or the caller's. */
  void request(const std::shared_ptr<comm::Comm>& c, comm::Message msg, Callback cb) {
    std::int64_t id;
    {
      std::lock_guard lock(mu_);
      id = next_++;
      pending_.emplace(id, std::move(cb));
    }
    msg.set("id", id);
    c->send(std::move(msg), [this, id](std::exception_ptr e) {
      if (e) fail(id, e);
    });
  }

  /** @brief Blocking request; throws RemoteError, CommError or CommTimeoutError. */
  comm::Message call(const std::shared_ptr<comm::Comm>& c, comm::Message msg,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(60000)) {
    auto p = std::make_shared<std::promise<comm::Message>>();
    auto f = p->get_future();
    request(c, std::move(msg), [p](const comm::Message* reply, std::exception_ptr e) {
      if (e) p->set_exception(e);
      else p->set_value(*reply);
    });
    if (f.wait_for(timeout) != std::future_status::ready)
      throw comm::CommTimeoutError("no reply from " + c->peer_address() + " within " +
                                   std::to_string(timeout.count()) + " ms");
    return f.get();
  }

  /** @brief Completes the request this reply answers; false when msg is not a reply. */
  bool complete(const comm::Message& msg) {
    if (msg.op != wire::kReply) return false;
    std::int64_t id = msg.get<std::int64_t>("id");
    Callback cb;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return true;  // already failed (timeout or close)
      cb = std::move(it->second);
      pending_.erase(it);
    }
    if (msg.has("error"))
      cb(nullptr, std::make_exception_ptr(RemoteError(msg.get<std::string>("error"))));
    else
      cb(&msg, nullptr);
    return true;
  }

  /** @brief Fails every pending request (the comm closed). */
  void fail_all(std::exception_ptr e) {
    std::unordered_map<std::int64_t, Callback> pending;
    {
      std::lock_guard lock(mu_);
      pending.swap(pending_);
    }
    for (auto& [id, cb] : pending) cb(nullptr, e);
  }

 private:
  void fail(std::int64_t id, std::exception_ptr e) {
    Callback cb;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      cb = std::move(it->second);
      pending_.erase(it);
    }
    cb(nullptr, e);
  }

  std::mutex mu_;
  std::int64_t next_ = 1;
  std::unordered_map<std::int64_t, Callback> pending_;
};

/** @brief The reply to request `req`: same id, op "reply". */
inline comm::Message make_reply(const comm::Message& req) {
  comm::Message r(wire::kReply);
  r.fields["id"] = req.fields.at("id");
  return r;
}

/** @brief An error reply to request `req`. */
inline comm::Message make_error_reply(const comm::Message& req, const std::string& error) {
  comm::Message r = make_reply(req);
  r.set("error", error);
  return r;
}

}  // namespace tessera::distributed
