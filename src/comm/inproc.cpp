// inproc:// transport: both ends in this process; messages (frames included) move by pointer.
#include <atomic>
#include <map>
#include <mutex>

#include "../core/logging.hpp"
#include "inbox.hpp"
#include "transports.hpp"

namespace tessera::comm::detail {

namespace {

class InprocComm final : public Comm {
 public:
  InprocComm(std::string local, std::string peer, PeerInfo info)
      : Comm(std::move(local), std::move(peer), std::move(info)) {}
  ~InprocComm() override { close(); }

  static void link(InprocComm& a, InprocComm& b) {
    a.peer_inbox_ = b.inbox();
    b.peer_inbox_ = a.inbox();
  }

  void close() override {
    if (closed_locally_.exchange(true)) return;
    inbox()->push_close(
        std::make_exception_ptr(CommClosedError("comm to " + peer_address() + " was closed locally")));
    // Posted, so the peer gets everything sent before the close first.
    CommRuntime::instance().post([peer = peer_inbox_, me = local_address()] {
      peer->push_close(std::make_exception_ptr(CommClosedError("comm to " + me + ": peer closed the connection")));
    });
  }

 protected:
  void do_send(Message msg, SendCallback done) override {
    if (is_closed()) {
      if (done)
        done(std::make_exception_ptr(CommClosedError("comm to " + peer_address() + " is closed: " + close_reason())));
      return;
    }
    CommRuntime::instance().post(
        [peer = peer_inbox_, msg = std::move(msg), done = std::move(done), to = peer_address()]() mutable {
          std::exception_ptr error;
          if (peer->closed()) error = std::make_exception_ptr(CommClosedError("comm to " + to + " is closed"));
          else peer->push(std::move(msg));
          if (done) done(error);
        });
  }

 private:
  std::shared_ptr<Inbox> peer_inbox_;
  std::atomic<bool> closed_locally_{false};
};

struct InprocListenerState {
  std::string name;
  std::string address;
  CommOptions options;
  AcceptHandler on_comm;
  ListenErrorHandler on_error;
  bool stopped = false;  // I/O thread only
  std::atomic<std::uint64_t> next_client{0};
};

struct InprocRegistry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<InprocListenerState>> listeners;
  std::atomic<std::uint64_t> next_name{0};
};

InprocRegistry& inproc_registry() {
  static InprocRegistry r;
  return r;
}

std::string inproc_name(const std::string& address) {
  const std::string prefix = "inproc://";
  if (address.rfind(prefix, 0) != 0) throw CommError("not an inproc:// address: '" + address + "'");
  return address.substr(prefix.size());
}

class InprocListener final : public Listener {
 public:
  explicit InprocListener(std::shared_ptr<InprocListenerState> state) : state_(std::move(state)) {}
  ~InprocListener() override { stop(); }
  const std::string& address() const override { return state_->address; }
  void stop() override {
    if (stopped_.exchange(true)) return;
    {
      auto& r = inproc_registry();
      std::lock_guard lk(r.mu);
      r.listeners.erase(state_->name);
    }
    run_on_io_thread([s = state_] { s->stopped = true; });
  }

 private:
  std::shared_ptr<InprocListenerState> state_;
  std::atomic<bool> stopped_{false};
};

class InprocTransport final : public Transport {
 public:
  std::string scheme() const override { return "inproc"; }

  void connect(const std::string& address, const CommOptions& options, ConnectHandler done) override {
    auto& rt = CommRuntime::instance();
    auto fail = [&](std::exception_ptr e) { rt.post([done, e] { done(nullptr, e); }); };
    std::shared_ptr<InprocListenerState> listener;
    try {
      const auto name = inproc_name(address);
      auto& r = inproc_registry();
      std::lock_guard lk(r.mu);
      auto it = r.listeners.find(name);
      if (it == r.listeners.end())
        throw CommError("cannot connect to " + address + ": no listener of that name in this process");
      listener = it->second;
    } catch (...) {
      return fail(std::current_exception());
    }
    const auto client_address = listener->address + "#" + std::to_string(++listener->next_client);
    const auto ours = make_hello(options, client_address);
    const auto theirs = make_hello(listener->options, listener->address);
    // One process: no proofs to trade (nothing crosses a network); the tokens are compared.
    const char* token_why = wire::tokens_equal(options.token, listener->options.token)
                                ? nullptr
                                : "handshake token mismatch (the peer uses another shared secret)";
    auto why = wire::check_hello(ours, theirs);
    if (why.empty() && token_why) why = token_why;
    if (!why.empty()) {
      // Each side words the refusal from where it stands, as over tcp://.
      auto server_why = wire::check_hello(theirs, ours);
      if (server_why.empty() && token_why) server_why = token_why;
      logging::warn("comm: {} refused a connection from {}: {}", listener->address, client_address, server_why);
      auto server_error =
          std::make_exception_ptr(HandshakeError("handshake with " + client_address + " refused: " + server_why));
      rt.post([listener, client_address, server_error] {
        if (listener->on_error && !listener->stopped) listener->on_error(client_address, server_error);
      });
      return fail(std::make_exception_ptr(HandshakeError("handshake with " + address + " refused: " + why)));
    }
    auto info = [](const wire::Hello& h) { return PeerInfo{h.version, h.name, h.address, h.transports}; };
    auto client = std::make_shared<InprocComm>(client_address, listener->address, info(theirs));
    auto server = std::make_shared<InprocComm>(listener->address, client_address, info(ours));
    InprocComm::link(*client, *server);
    rt.post([listener, server, client, done] {
      if (listener->stopped) {
        server->close();
        done(nullptr, std::make_exception_ptr(CommError("cannot connect to " + listener->address + ": listener stopped")));
        return;
      }
      try {
        listener->on_comm(server);
      } catch (const std::exception& e) {
        logging::error("comm: accept handler of {} threw: {}", listener->address, e.what());
      }
      done(client, nullptr);
    });
  }

  std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm, const CommOptions& options,
                                   ListenErrorHandler on_error) override {
    auto state = std::make_shared<InprocListenerState>();
    state->name = inproc_name(address);
    auto& r = inproc_registry();
    if (state->name.empty()) state->name = "listener-" + std::to_string(++r.next_name);
    state->address = "inproc://" + state->name;
    state->options = options;
    state->on_comm = std::move(on_comm);
    state->on_error = std::move(on_error);
    std::lock_guard lk(r.mu);
    if (!r.listeners.emplace(state->name, state).second)
      throw CommError("cannot listen on " + state->address + ": another listener has that name");
    return std::make_unique<InprocListener>(state);
  }
};

}  // namespace

std::shared_ptr<Transport> make_inproc_transport() { return std::make_shared<InprocTransport>(); }

}  // namespace tessera::comm::detail
