#include "tessera/comm/comm.hpp"

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include <openssl/ssl.h>

#include "../core/logging.hpp"
#include "inbox.hpp"
#include "runtime.hpp"
#include "transports.hpp"

namespace tessera::comm {

namespace detail {

// ---- CommRuntime ---------------------------------------------------------------------------

CommRuntime& CommRuntime::instance() {
  static CommRuntime runtime;
  return runtime;
}

CommRuntime::CommRuntime()
    : io_(std::make_shared<asio::io_context>(1)), guard_(asio::make_work_guard(*io_)) {
  // OpenSSL first: it registers its clean-up with atexit when first initialised, and exit runs
  // handlers in reverse order, so this runtime (a static whose destructor is registered once
  // this constructor returns) stops its I/O thread before OpenSSL frees its locks. The other
  // way round, a TLS stream released on the I/O thread during exit raced with that clean-up
  // (ThreadSanitizer, TlsTest.SilentPeerIsClosedAfterHandshakeTimeoutAndFreesItsSlot).
  OPENSSL_init_ssl(0, nullptr);
  thread_ = std::thread([io = io_] {
    for (;;) {
      try {
        io->run();
        return;
      } catch (const std::exception& e) {
        logging::error("comm: I/O thread: uncaught exception in a handler: {}", e.what());
      }
    }
  });
}

CommRuntime::~CommRuntime() {
  guard_.reset();
  io_->stop();
  if (thread_.joinable()) {
    if (on_io_thread()) thread_.detach();
    else thread_.join();
  }
}

// ---- Inbox ---------------------------------------------------------------------------------

namespace {
// Runs a message handler; an exception from it is logged, never lets the I/O thread die.
void deliver(const Comm::MessageHandler& handler, Message msg) {
  try {
    handler(std::move(msg));
  } catch (const std::exception& e) {
    logging::error("comm: message handler threw: {}", e.what());
  }
}
}  // namespace

void Inbox::push(Message msg) {
  std::unique_lock lk(mu_);
  if (closed_) return;
  if (on_message_ && queue_.empty() && !draining_) {
    auto handler = on_message_;
    lk.unlock();
    deliver(handler, std::move(msg));
    return;
  }
  queue_.push_back(std::move(msg));
  if (on_message_) schedule_drain_locked();
  lk.unlock();
  cv_.notify_one();
}

void Inbox::push_close(std::exception_ptr reason) {
  std::unique_lock lk(mu_);
  if (closed_) return;
  closed_ = true;
  reason_ = std::move(reason);
  if (on_message_ || on_close_) schedule_drain_locked();
  lk.unlock();
  cv_.notify_all();
}

void Inbox::set_handlers(Comm::MessageHandler on_message, Comm::CloseHandler on_close) {
  std::lock_guard lk(mu_);
  if (close_delivered_) return;
  on_message_ = std::move(on_message);
  on_close_ = std::move(on_close);
  if ((!queue_.empty() || closed_) && (on_message_ || on_close_)) schedule_drain_locked();
}

void Inbox::schedule_drain_locked() {
  if (draining_) return;
  draining_ = true;
  CommRuntime::instance().post([self = shared_from_this()] { self->drain(); });
}

void Inbox::drain() {
  for (;;) {
    std::unique_lock lk(mu_);
    if (!queue_.empty() && on_message_) {
      Message msg = std::move(queue_.front());
      queue_.pop_front();
      auto handler = on_message_;
      lk.unlock();
      deliver(handler, std::move(msg));
      continue;
    }
    if (queue_.empty() && closed_ && !close_delivered_ && (on_message_ || on_close_)) {
      close_delivered_ = true;
      draining_ = false;
      auto handler = std::move(on_close_);
      // Handlers often hold their own comm; dropping them here breaks that cycle.
      on_close_ = nullptr;
      auto old_message = std::move(on_message_);
      on_message_ = nullptr;
      auto reason = reason_;
      lk.unlock();
      old_message = nullptr;
      if (handler) {
        try {
          handler(reason);
        } catch (const std::exception& e) {
          logging::error("comm: close handler threw: {}", e.what());
        }
      }
      return;
    }
    draining_ = false;
    return;
  }
}

std::optional<Message> Inbox::pop(std::optional<std::chrono::milliseconds> timeout) {
  if (CommRuntime::instance().on_io_thread())
    throw CommError("recv() called on the comm I/O thread (from a handler) would block it forever");
  std::unique_lock lk(mu_);
  if (on_message_) throw CommError("recv() on a comm whose messages go to a handler");
  auto ready = [&] { return !queue_.empty() || closed_; };
  if (timeout) {
    if (!cv_.wait_for(lk, *timeout, ready)) return std::nullopt;
  } else {
    cv_.wait(lk, ready);
  }
  if (!queue_.empty()) {
    Message msg = std::move(queue_.front());
    queue_.pop_front();
    return msg;
  }
  std::rethrow_exception(reason_);
}

bool Inbox::closed() const {
  std::lock_guard lk(mu_);
  return closed_;
}

std::string Inbox::reason() const {
  std::lock_guard lk(mu_);
  return reason_ ? describe_exception(reason_) : std::string();
}

// ---- Registry ------------------------------------------------------------------------------

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Transport>> transports;
  Registry() {
    for (auto t : {make_tcp_transport(), make_tls_transport(), make_inproc_transport(), make_ucx_transport()}) transports[t->scheme()] = t;
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::shared_ptr<Transport> transport_for(const std::string& address) {
  const auto scheme = address_scheme(address);
  auto& r = registry();
  std::lock_guard lk(r.mu);
  auto it = r.transports.find(scheme);
  if (it != r.transports.end()) return it->second;
  std::string known;
  for (const auto& [name, t] : r.transports) known += (known.empty() ? "" : ", ") + name + "://";
  throw CommError("unknown comm scheme '" + scheme + "' in address '" + address + "'; supported: " + known);
}

}  // namespace detail

// ---- Comm ----------------------------------------------------------------------------------

Comm::Comm(std::string local_address, std::string peer_address, PeerInfo peer)
    : inbox_(std::make_shared<detail::Inbox>()),
      local_address_(std::move(local_address)),
      peer_address_(std::move(peer_address)),
      peer_(std::move(peer)) {}

Comm::~Comm() = default;

void Comm::send(Message msg, SendCallback done) { do_send(std::move(msg), std::move(done)); }

std::future<void> Comm::send(Message msg) {
  auto promise = std::make_shared<std::promise<void>>();
  auto future = promise->get_future();
  do_send(std::move(msg), [promise](std::exception_ptr error) {
    if (error) promise->set_exception(error);
    else promise->set_value();
  });
  return future;
}

Message Comm::recv() { return std::move(*inbox_->pop(std::nullopt)); }

Message Comm::recv(std::chrono::milliseconds timeout) {
  auto msg = inbox_->pop(timeout);
  if (!msg)
    throw CommTimeoutError("no message from " + peer_address_ + " within " +
                           std::to_string(timeout.count()) + " ms");
  return std::move(*msg);
}

void Comm::set_handlers(MessageHandler on_message, CloseHandler on_close) {
  inbox_->set_handlers(std::move(on_message), std::move(on_close));
}

bool Comm::is_closed() const { return inbox_->closed(); }

std::string Comm::transport() const {
  try {
    return address_scheme(local_address_);
  } catch (const CommError&) {
    return "unknown";
  }
}

std::string Comm::close_reason() const { return inbox_->reason(); }

Listener::~Listener() = default;
Transport::~Transport() = default;

// ---- Factories -----------------------------------------------------------------------------

std::string address_scheme(const std::string& address) {
  const auto pos = address.find("://");
  if (pos == std::string::npos || pos == 0)
    throw CommError("address '" + address + "' has no scheme; expected e.g. tcp://host:port or inproc://name");
  return address.substr(0, pos);
}

void register_transport(std::shared_ptr<Transport> transport) {
  auto& r = detail::registry();
  std::lock_guard lk(r.mu);
  r.transports[transport->scheme()] = std::move(transport);
}

std::vector<std::string> transport_schemes() {
  auto& r = detail::registry();
  std::lock_guard lk(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, t] : r.transports) out.push_back(name);
  return out;
}

void connect_async(const std::string& address, const CommOptions& options, ConnectHandler done) {
  std::shared_ptr<Transport> transport;
  try {
    transport = detail::transport_for(address);
  } catch (...) {
    detail::CommRuntime::instance().post([done, e = std::current_exception()] { done(nullptr, e); });
    return;
  }
  transport->connect(address, options, std::move(done));
}

std::shared_ptr<Comm> connect(const std::string& address, const CommOptions& options) {
  auto transport = detail::transport_for(address);
  if (detail::CommRuntime::instance().on_io_thread())
    throw CommError("connect() called on the comm I/O thread (from a handler) would block it; use connect_async");
  auto promise = std::make_shared<std::promise<std::shared_ptr<Comm>>>();
  auto future = promise->get_future();
  transport->connect(address, options, [promise](std::shared_ptr<Comm> comm, std::exception_ptr error) {
    if (error) promise->set_exception(error);
    else promise->set_value(std::move(comm));
  });
  return future.get();
}

std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm,
                                 const CommOptions& options, ListenErrorHandler on_error) {
  return detail::transport_for(address)->listen(address, std::move(on_comm), options, std::move(on_error));
}

}  // namespace tessera::comm

namespace tessera::comm::detail {

wire::Hello make_hello(const CommOptions& options, std::string address) {
  wire::Hello h;
  h.version = options.protocol_version ? options.protocol_version : wire::kProtocolVersion;
  h.nonce = wire::make_nonce();
  if (!options.token.empty()) h.flags |= wire::kHelloProves;
  h.name = options.name;
  h.address = options.advertise_address.empty() ? std::move(address) : options.advertise_address;
  auto& r = registry();
  std::lock_guard lk(r.mu);
  for (const auto& [name, t] : r.transports)
    if (t->offered()) h.transports.push_back(name);
  return h;
}

std::exception_ptr closed_error(const std::string& peer, const std::string& why) {
  return std::make_exception_ptr(CommClosedError("comm to " + peer + " is closed: " + why));
}

void call_done(const Comm::SendCallback& done, std::exception_ptr e) {
  if (!done) return;
  try {
    done(std::move(e));
  } catch (const std::exception& ex) {
    logging::error("comm: send callback threw: {}", ex.what());
  }
}

std::exception_ptr prepare_send(const Message& msg, const CommOptions& options, const std::string& peer,
                                const char* device_refusal, std::string& header, std::vector<std::uint64_t>& lens) {
  // The message text is built only for a refusal (this runs for every message sent).
  auto what = [&](const std::string& why) { return "cannot send message '" + msg.op + "' to " + peer + ": " + why; };
  auto limit = [&](const std::string& why) { return std::make_exception_ptr(ProtocolError(what(why))); };
  auto refuse = [&](const std::string& why) { return std::make_exception_ptr(CommError(what(why))); };
  if (msg.frames.size() > options.max_frames)
    return limit(std::to_string(msg.frames.size()) + " frames exceed the limit of " +
                 std::to_string(options.max_frames));
  lens.clear();
  lens.reserve(msg.frames.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < msg.frames.size(); ++i) {
    const auto& f = msg.frames[i];
    if (!f) return refuse("frame " + std::to_string(i) + " is null");
    if (f->size() > options.max_frame_bytes)
      return limit("frame " + std::to_string(i) + " of " + std::to_string(f->size()) +
                   " bytes exceeds the limit of " + std::to_string(options.max_frame_bytes));
    if (device_refusal && f->kind() == MemoryKind::Device && f->size() > 0)
      return refuse("frame " + std::to_string(i) + " is in device memory; " + device_refusal);
    lens.push_back(f->size());
    total += f->size();
  }
  try {
    header = encode_header(msg);
  } catch (...) {
    return std::current_exception();
  }
  total += header.size();
  if (header.size() > options.max_header_bytes || total > options.max_message_bytes)
    return limit("header of " + std::to_string(header.size()) + " bytes / message of " + std::to_string(total) +
                 " bytes exceeds the limits (" + std::to_string(options.max_header_bytes) + " / " +
                 std::to_string(options.max_message_bytes) + ")");
  return nullptr;
}

}  // namespace tessera::comm::detail
