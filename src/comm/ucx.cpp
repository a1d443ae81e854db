// ucx:// transport: a TCP connection on host:port first (the same hello as tcp://), then a
// negotiation over it, then UCX when both ends have it and a timed ping over UCX proves it works,
// else that TCP connection itself is the comm. See docs/ucx.md.
//
//   connector                                   listener
//   tcp connect + hello  ---------------------> accept + hello
//   "tessera.ucx-offer" {ucx, conn, cuda, worker address}
//                                               no UCX offered: the TCP comm is handed over
//                        <--------------------- "tessera.ucx-accept" {ucx, conn, cuda, worker | why}
//   UCX ping             ---------------------> (UCX) pong
//   "tessera.ucx-result" {ucx | why} ---------> the UCX comm (or the TCP one) is handed over
//
// After "result ucx": every message goes over UCX; the TCP connection stays open and only says
// goodbye (a clean close) or, by closing without one, that the peer's process is gone.
#include <algorithm>
#include <atomic>
#include <mutex>

#include <boost/asio/steady_timer.hpp>

#include "../core/logging.hpp"
#include "transports.hpp"
#include "ucx_engine.hpp"

namespace tessera::comm::detail {

namespace {

using boost::system::error_code;

constexpr const char* kOffer = "tessera.ucx-offer";
constexpr const char* kAccept = "tessera.ucx-accept";
constexpr const char* kResult = "tessera.ucx-result";

// "tcp://1.2.3.4:5" -> "ucx://1.2.3.4:5"
std::string with_scheme(const std::string& address, const std::string& scheme) {
  const auto pos = address.find("://");
  return pos == std::string::npos ? address : scheme + address.substr(pos);
}

// Says once per process that ucx:// runs as TCP here, and why.
void note_no_ucx(const UcxStatus& st) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (st.built)
      logging::warn("comm: UCX is not available in this process ({}); ucx:// connections use TCP", st.reason);
    else
      logging::warn("comm: {}; ucx:// connections use TCP", st.reason);
  });
}

Message offer_message(const ucx::Offer* o) {
  Message m(kOffer);
  m.set("ucx", o != nullptr);
  if (o) m.set("conn", o->conn).set("cuda", o->cuda).set("worker", o->worker_address);
  return m;
}

ucx::Offer read_offer(const Message& m) {
  ucx::Offer o;
  o.conn = m.get<std::uint64_t>("conn");
  o.cuda = m.get<bool>("cuda");
  o.worker_address = m.get<std::string>("worker");
  return o;
}

/** The connecting side: TCP, then the negotiation; calls done exactly once. */
class ClientSetup : public std::enable_shared_from_this<ClientSetup> {
 public:
  ClientSetup(std::string address, const CommOptions& options, ConnectHandler done)
      : address_(std::move(address)), options_(options), done_(std::move(done)),
        timer_(*CommRuntime::instance().io()) {}

  void start(const std::shared_ptr<Transport>& tcp) {
    tcp->connect(address_, options_, [self = shared_from_this()](std::shared_ptr<Comm> ctl, std::exception_ptr e) {
      if (e) return self->finish(nullptr, e);
      self->on_connected(std::move(ctl));
    });
  }

 private:
  void on_connected(std::shared_ptr<Comm> ctl) {
    ctl_ = std::move(ctl);
    const auto& theirs = ctl_->peer().transports;
    const bool peer_has_ucx = std::find(theirs.begin(), theirs.end(), "ucx") != theirs.end();
    if (ucx::engine_running() && peer_has_ucx)
      comm_ = ucx::make_comm(options_, with_scheme(ctl_->local_address(), "ucx"),
                             with_scheme(ctl_->peer_address(), "ucx"), ctl_->peer());
    if (!comm_) {
      ctl_->send(offer_message(nullptr), nullptr);
      logging::debug("comm: {}: over TCP ({})", address_,
                    ucx::engine_running() ? "the peer has no UCX" : "no UCX in this process");
      return finish(ctl_, nullptr);
    }
    // The setup holds itself through the handlers until they are replaced or the ctl closes.
    auto self = shared_from_this();
    std::weak_ptr<ClientSetup> weak = self;
    ctl_->set_handlers([self](Message m) { self->on_message(std::move(m)); },
                       [self](std::exception_ptr e) {
                         self->fail(std::make_exception_ptr(
                             HandshakeError("UCX negotiation with " + self->address_ + " failed: " + describe_exception(e))));
                       });
    const auto offer = comm_->offer();
    ctl_->send(offer_message(&offer), nullptr);
    timer_.expires_after(options_.handshake_timeout);
    timer_.async_wait([weak](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->finished_) return;
      self->fail(std::make_exception_ptr(HandshakeError(
          "no answer to the UCX offer from " + self->address_ + " within " +
          std::to_string(self->options_.handshake_timeout.count()) + " ms")));
    });
  }

  void on_message(Message m) {
    if (finished_ || answered_) return;
    if (m.op != kAccept)
      return fail(std::make_exception_ptr(ProtocolError("UCX negotiation with " + address_ + ": expected '" +
                                                        kAccept + "', got '" + m.op + "'")));
    answered_ = true;
    ucx::Offer theirs;
    try {
      if (!m.get<bool>("ucx")) return fall_back(m.get<std::string>("why"), false);
      theirs = read_offer(m);
      comm_->connect_peer(theirs);
    } catch (const std::exception& e) {
      return fall_back(e.what(), true);
    }
    // Half the handshake time: the listener gives up on the whole negotiation after all of it.
    const auto timeout = std::max(std::chrono::milliseconds(1), options_.handshake_timeout / 2);
    std::weak_ptr<ClientSetup> weak = shared_from_this();
    comm_->ping(timeout, [weak](std::exception_ptr e) {
      auto self = weak.lock();
      if (!self || self->finished_) return;
      if (e) return self->fall_back(describe_exception(e), true);
      self->succeed();
    });
  }

  void succeed() {
    Message r(kResult);
    r.set("ucx", true);
    ctl_->send(std::move(r), nullptr);
    comm_->start(ctl_);
    logging::info("comm: {}: over {}", address_, comm_->transport());
    finish(comm_, nullptr);
  }

  void fall_back(const std::string& why, bool failure) {
    Message r(kResult);
    r.set("ucx", false).set("why", why);
    ctl_->send(std::move(r), nullptr);
    comm_->abandon();
    comm_ = nullptr;
    ctl_->set_handlers(nullptr, nullptr);  // messages now wait for the owner
    if (failure) logging::warn("comm: {}: UCX did not work ({}); using TCP", address_, why);
    else logging::info("comm: {}: over TCP ({})", address_, why);
    finish(ctl_, nullptr);
  }

  void fail(std::exception_ptr e) {
    if (finished_) return;
    if (comm_) comm_->abandon();
    comm_ = nullptr;
    if (ctl_) ctl_->close();
    finish(nullptr, e);
  }

  void finish(std::shared_ptr<Comm> comm, std::exception_ptr e) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    auto done = std::move(done_);
    done_ = nullptr;
    try {
      done(std::move(comm), std::move(e));
    } catch (const std::exception& ex) {
      logging::error("comm: connect handler threw: {}", ex.what());
    }
  }

  std::string address_;
  CommOptions options_;
  ConnectHandler done_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<Comm> ctl_;
  std::shared_ptr<ucx::UcxCommBase> comm_;
  bool answered_ = false;
  bool finished_ = false;
};

/** What the listener's setups share; stopped is touched on the I/O thread only. */
struct ListenState {
  std::string address;
  CommOptions options;
  AcceptHandler on_comm;
  ListenErrorHandler on_error;
  bool stopped = false;
};

/** The accepting side of one connection: waits for the offer, answers, hands over the comm. */
class ServerSetup : public std::enable_shared_from_this<ServerSetup> {
 public:
  ServerSetup(std::shared_ptr<ListenState> listener, std::shared_ptr<Comm> ctl)
      : listener_(std::move(listener)), ctl_(std::move(ctl)), timer_(*CommRuntime::instance().io()) {}

  void start() {
    std::weak_ptr<ServerSetup> weak = shared_from_this();
    // The setup holds itself through the handlers until it finishes.
    auto self = shared_from_this();
    ctl_->set_handlers([self](Message m) { self->on_message(std::move(m)); },
                       [self, peer = ctl_->peer_address()](std::exception_ptr e) {
                         self->fail(std::make_exception_ptr(
                             HandshakeError("UCX negotiation with " + peer + " failed: " + describe_exception(e))));
                       });
    timer_.expires_after(listener_->options.handshake_timeout);
    timer_.async_wait([weak](error_code ec) {
      auto s = weak.lock();
      if (ec || !s || s->finished_) return;
      s->fail(std::make_exception_ptr(HandshakeError(
          "UCX negotiation with " + s->ctl_->peer_address() + " did not finish within " +
          std::to_string(s->listener_->options.handshake_timeout.count()) + " ms")));
    });
  }

 private:
  void on_message(Message m) {
    if (finished_) return;
    try {
      if (!offered_) {
        if (m.op != kOffer)
          throw ProtocolError("expected the ucx:// negotiation ('" + std::string(kOffer) + "'), got '" + m.op +
                              "' (a tcp:// client on a ucx:// port?)");
        offered_ = true;
        if (!m.get<bool>("ucx")) return deliver(ctl_);
        Message reply(kAccept);
        if (ucx::engine_running())
          comm_ = ucx::make_comm(listener_->options, with_scheme(ctl_->local_address(), "ucx"),
                                 with_scheme(ctl_->peer_address(), "ucx"), ctl_->peer());
        if (!comm_) {
          reply.set("ucx", false).set("why", std::string("the peer has no UCX running"));
        } else {
          try {
            comm_->connect_peer(read_offer(m));
            const auto ours = comm_->offer();
            reply.set("ucx", true).set("conn", ours.conn).set("cuda", ours.cuda).set("worker", ours.worker_address);
          } catch (const CommError& e) {
            comm_->abandon();
            comm_ = nullptr;
            reply = Message(kAccept);
            reply.set("ucx", false).set("why", std::string("the peer cannot reach us over UCX: ") + e.what());
          }
        }
        ctl_->send(std::move(reply), nullptr);
        return;
      }
      if (m.op != kResult) throw ProtocolError("expected '" + std::string(kResult) + "', got '" + m.op + "'");
      if (m.get<bool>("ucx") && comm_) {
        comm_->start(ctl_);
        logging::debug("comm: {} accepted {} over {}", listener_->address, ctl_->peer_address(), comm_->transport());
        return deliver(comm_);
      }
      if (comm_) comm_->abandon();
      comm_ = nullptr;
      logging::debug("comm: {} accepted {} over TCP ({})", listener_->address, ctl_->peer_address(),
                    m.has("why") ? m.get<std::string>("why") : std::string("no UCX"));
      deliver(ctl_);
    } catch (const CommError& e) {
      fail(std::make_exception_ptr(HandshakeError("UCX negotiation with " + ctl_->peer_address() + " failed: " + e.what())));
    }
  }

  void deliver(std::shared_ptr<Comm> comm) {
    finished_ = true;
    timer_.cancel();
    if (comm == ctl_) ctl_->set_handlers(nullptr, nullptr);  // messages now wait for the owner
    auto listener = listener_;
    if (listener->stopped) return comm->close();
    try {
      listener->on_comm(std::move(comm));
    } catch (const std::exception& e) {
      logging::error("comm: accept handler of {} threw: {}", listener->address, e.what());
    }
    ctl_.reset();
    comm_.reset();
  }

  void fail(std::exception_ptr e) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    if (comm_) comm_->abandon();
    comm_ = nullptr;
    const auto peer = ctl_->peer_address();
    ctl_->close();
    ctl_.reset();
    logging::warn("comm: {} refused a connection from {}: {}", listener_->address, peer, describe_exception(e));
    if (listener_->on_error && !listener_->stopped) listener_->on_error(peer, e);
  }

  std::shared_ptr<ListenState> listener_;
  std::shared_ptr<Comm> ctl_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<ucx::UcxCommBase> comm_;
  bool offered_ = false;
  bool finished_ = false;
};

class UcxListener final : public Listener {
 public:
  UcxListener(std::unique_ptr<Listener> tcp, std::shared_ptr<ListenState> state)
      : tcp_(std::move(tcp)), state_(std::move(state)) {}
  ~UcxListener() override { stop(); }
  const std::string& address() const override { return state_->address; }
  void stop() override {
    if (stopped_.exchange(true)) return;
    tcp_->stop();
    run_on_io_thread([s = state_] { s->stopped = true; });
  }

 private:
  std::unique_ptr<Listener> tcp_;
  std::shared_ptr<ListenState> state_;
  std::atomic<bool> stopped_{false};
};

class UcxTransport final : public Transport {
 public:
  UcxTransport() : tcp_(make_tcp_transport()) {}
  std::string scheme() const override { return "ucx"; }
  // Always registered (it falls back to TCP), offered only when UCX really runs.
  bool offered() const override { return ucx::engine_running(); }

  void connect(const std::string& address, const CommOptions& options, ConnectHandler done) override {
    const auto st = ucx::engine_status();  // starts UCX here the first time
    if (!st.available) note_no_ucx(st);
    auto setup = std::make_shared<ClientSetup>(address, options, std::move(done));
    setup->start(tcp_);
  }

  std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm, const CommOptions& options,
                                   ListenErrorHandler on_error) override {
    const auto st = ucx::engine_status();
    if (!st.available) note_no_ucx(st);
    auto state = std::make_shared<ListenState>();
    state->options = options;
    state->on_comm = std::move(on_comm);
    state->on_error = std::move(on_error);
    auto tcp = tcp_->listen(
        address,
        [state](std::shared_ptr<Comm> ctl) {
          if (state->stopped) return ctl->close();
          std::make_shared<ServerSetup>(state, std::move(ctl))->start();
        },
        options,
        [state](const std::string& peer, std::exception_ptr e) {
          if (state->on_error && !state->stopped) state->on_error(peer, e);
        });
    state->address = tcp->address();  // ucx://host:port, the real port
    return std::make_unique<UcxListener>(std::move(tcp), std::move(state));
  }

 private:
  std::shared_ptr<Transport> tcp_;
};

}  // namespace

std::shared_ptr<Transport> make_ucx_transport() { return std::make_shared<UcxTransport>(); }

#ifndef TESSERA_HAS_UCX
namespace ucx {
UcxStatus engine_status() {
  UcxStatus s;
  s.reason = "this build of Tessera has no UCX (libucx-dev was not found when it was built)";
  return s;
}
bool engine_running() noexcept { return false; }
std::shared_ptr<UcxCommBase> make_comm(const CommOptions&, std::string, std::string, PeerInfo) { return nullptr; }
RingTraffic ring_traffic() noexcept { return {}; }
}  // namespace ucx
#endif

}  // namespace tessera::comm::detail

namespace tessera::comm {
UcxStatus ucx_status() { return detail::ucx::engine_status(); }
}  // namespace tessera::comm
