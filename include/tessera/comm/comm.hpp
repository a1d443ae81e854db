#pragma once
/**
 * @file
 * Comm (a connection), Listener, and the transports behind them, chosen by the address
 * scheme: tcp://host:port, tls://host:port (tcp:// inside mutual TLS), ucx://host:port,
 * inproc://name. See docs/protocol.md, docs/ucx.md and docs/security.md.
 */
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/message.hpp"
#include "tessera/comm/security.hpp"
#include "tessera/core/error.hpp"

namespace tessera::comm {

/** @brief Base of every comm error: connect failures, unknown schemes, closed comms. */
class CommError : public Error {
 public:
  using Error::Error;
};
/** @brief The comm is closed (locally, by the peer, or after an error); what() says why. */
class CommClosedError : public CommError {
 public:
  using CommError::CommError;
};
/** @brief The peer broke the wire protocol (bad magic, absurd sizes, corrupt header). */
class ProtocolError : public CommError {
 public:
  using CommError::CommError;
};
/** @brief Handshake refused: protocol version or token mismatch, or no hello in time. */
class HandshakeError : public CommError {
 public:
  using CommError::CommError;
};
/** @brief recv(timeout) found no message in time; the comm stays open. */
class CommTimeoutError : public CommError {
 public:
  using CommError::CommError;
};

/** @brief Settings of one connect() or listen(); the defaults suit a cluster. */
struct CommOptions {
  std::string token;                ///< shared secret; both ends must have the same one
  std::string name;                 ///< our name, told to the peer in the handshake
  std::string advertise_address;    ///< address told to the peer; default: listener's or socket's
  std::size_t max_header_bytes = std::size_t{64} << 20;
  std::size_t max_frame_bytes = std::size_t{4} << 30;
  std::size_t max_message_bytes = std::size_t{16} << 30;
  std::uint32_t max_frames = 1u << 16;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds handshake_timeout{5000};
  std::uint32_t protocol_version = 0;  ///< 0: this build's; set only to test refusals
  /// Receive back-pressure (tcp://): while the messages waiting for recv() (or for handlers
  /// not yet set) hold more than max_queued_bytes of frames and header, or number more than
  /// max_queued_messages, the comm stops reading its socket; TCP flow control then holds the
  /// sender back. A message is never split: one larger than the limit still arrives. 0: none.
  std::size_t max_queued_bytes = std::size_t{256} << 20;
  std::size_t max_queued_messages = 1u << 16;
  /// How long a closed tcp:// comm keeps writing what was queued before close() to a peer that
  /// reads too slowly; then it drops the connection and those sends fail. close() never waits.
  std::chrono::milliseconds close_timeout{2000};
  /// Listeners (tcp://, and ucx://'s TCP side): connections one listener holds at once, in the
  /// handshake or open; one more is closed as soon as it is accepted. 0: three quarters of the
  /// process's file-descriptor limit (RLIMIT_NOFILE), so refusing never needs a descriptor
  /// that is not there. See docs/security.md.
  std::size_t max_connections = 0;
  /// Listeners: an accepted connection whose first whole message has not arrived this long
  /// after its handshake is closed (a peer that connects and idles). 0: no limit.
  std::chrono::milliseconds first_message_timeout{0};
  /// tls://: the CA file, certificate and key (Security); other schemes ignore it.
  Security security;
};

/** @brief What the peer said in the handshake. */
struct PeerInfo {
  std::uint32_t version = 0;
  std::string name;
  std::string address;  ///< the address the peer says it has (its listener, or its socket)
  std::vector<std::string> transports;
};

namespace detail {
class Inbox;
}

/**
 * @brief One connection. Thread-safe. Dropping the last shared_ptr closes it.
 *
 * Receive with set_handlers() (callbacks on the I/O thread, in order) or with recv() (blocking,
 * any thread), not both. Messages that arrive before handlers are set wait for them.
 */
class Comm {
 public:
  using SendCallback = std::function<void(std::exception_ptr error)>;
  using MessageHandler = std::function<void(Message msg)>;
  /** @brief Called once when the comm closes; reason holds a CommError (rethrow to inspect). */
  using CloseHandler = std::function<void(std::exception_ptr reason)>;

  virtual ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  /** @brief Queues msg; done (may be empty) gets nullptr once sent, or the error. */
  void send(Message msg, SendCallback done);
  /** @brief Queues msg; the future throws CommError when it could not be sent. */
  std::future<void> send(Message msg);

  /** @brief Next message; blocks; throws the close reason (a CommError) once closed and drained. */
  Message recv();
  /** @brief Like recv(), or throws CommTimeoutError after timeout. */
  Message recv(std::chrono::milliseconds timeout);
  /** @brief Routes messages (and the close) to callbacks on the I/O thread. */
  void set_handlers(MessageHandler on_message, CloseHandler on_close = {});

  /**
   * @brief Closes the connection (idempotent). Messages already queued get up to
   * CommOptions::close_timeout to go out; then the connection is reset and they fail.
   */
  virtual void close() = 0;
  /** @brief True once closed by either side or by an error. */
  bool is_closed() const;
  /** @brief Why the comm closed, empty while open. */
  std::string close_reason() const;

  /** @brief "tcp://127.0.0.1:40123": the other end of this connection. */
  const std::string& peer_address() const noexcept { return peer_address_; }
  const std::string& local_address() const noexcept { return local_address_; }
  /** @brief The peer's handshake: its name, advertised address and transports. */
  const PeerInfo& peer() const noexcept { return peer_; }
  /**
   * @brief What carries this connection: "tcp", "inproc", or "ucx" with the UCX transports in
   * use ("ucx (sysv/memory, cma/memory)"). A ucx:// address that fell back to TCP gives "tcp".
   */
  virtual std::string transport() const;
  /**
   * @brief Whether send() takes frames in device memory. ucx:// over UCX does: it sends them
   * directly when both ends' UCX has CUDA, else stages them through pinned host buffers (the
   * receiver then gets host frames). tcp:// and inproc:// take host frames only.
   */
  virtual bool sends_device_frames() const { return false; }

 protected:
  Comm(std::string local_address, std::string peer_address, PeerInfo peer);
  virtual void do_send(Message msg, SendCallback done) = 0;
  const std::shared_ptr<detail::Inbox>& inbox() const noexcept { return inbox_; }

 private:
  std::shared_ptr<detail::Inbox> inbox_;
  std::string local_address_;
  std::string peer_address_;
  PeerInfo peer_;
};

/** @brief Accepts connections until destroyed or stopped. */
class Listener {
 public:
  virtual ~Listener();
  /** @brief The bound address, with the real port when 0 was asked for. */
  virtual const std::string& address() const = 0;
  /** @brief Stops accepting; once it returns no new comm is delivered. Comms already made stay. */
  virtual void stop() = 0;
};

/** @brief Receives each new comm (after a good handshake), on the I/O thread. */
using AcceptHandler = std::function<void(std::shared_ptr<Comm> comm)>;
/** @brief Told about each refused or failed incoming connection (peer, reason). */
using ListenErrorHandler = std::function<void(const std::string& peer, std::exception_ptr reason)>;
/** @brief Gets the comm or the error of an asynchronous connect, on the I/O thread. */
using ConnectHandler = std::function<void(std::shared_ptr<Comm> comm, std::exception_ptr error)>;

/** @brief One scheme's implementation (tcp, inproc, later ucx). */
class Transport {
 public:
  virtual ~Transport();
  /** @brief "tcp", "inproc", ... */
  virtual std::string scheme() const = 0;
  /** @brief Whether this process offers it to peers in its hello now (ucx: once UCX runs). */
  virtual bool offered() const { return true; }
  /** @brief Connects to address (with its scheme) and handshakes; calls done exactly once. */
  virtual void connect(const std::string& address, const CommOptions& options, ConnectHandler done) = 0;
  virtual std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm,
                                           const CommOptions& options, ListenErrorHandler on_error) = 0;
};

/** @brief Adds or replaces the transport for its scheme. tcp and inproc are always there. */
void register_transport(std::shared_ptr<Transport> transport);
/** @brief The registered schemes, sorted. */
std::vector<std::string> transport_schemes();

/**
 * @brief Connects and handshakes; blocks at most about connect_timeout + handshake_timeout.
 * @throw CommError (unknown scheme, refused, timed out), HandshakeError.
 */
std::shared_ptr<Comm> connect(const std::string& address, const CommOptions& options = {});
/** @brief The same without blocking: done runs on the I/O thread. */
void connect_async(const std::string& address, const CommOptions& options, ConnectHandler done);
/**
 * @brief Starts accepting on address ("tcp://127.0.0.1:0", "inproc://name").
 * @throw CommError when the scheme is unknown or the address cannot be bound.
 */
std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm,
                                 const CommOptions& options = {}, ListenErrorHandler on_error = {});

/** @brief "tcp" from "tcp://host:port"; throws CommError when there is no "://". */
std::string address_scheme(const std::string& address);

/** @brief Whether this process can move data over UCX (docs/ucx.md). */
struct UcxStatus {
  bool built = false;      ///< this build has UCX (TESSERA_HAS_UCX)
  bool available = false;  ///< UCX started: ucx:// connections try it, then fall back to TCP
  std::string version;     ///< of the UCX library loaded ("1.13.1"), when built
  std::string reason;      ///< why not available (not built, TESSERA_UCX=0, ucp_init failed...)
  bool cuda = false;       ///< UCX can send device memory directly (built with CUDA)
};
/**
 * @brief Starts UCX in this process if it has not been tried yet (ucx:// listen and connect do
 * the same) and says whether it works. Never throws; a failure is logged once as a warning.
 */
UcxStatus ucx_status();

}  // namespace tessera::comm
