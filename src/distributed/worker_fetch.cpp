// Fetching a task's dependencies from the peer workers that hold them.
#include "worker_impl.hpp"

#include "../core/logging.hpp"
#include "tessera/core/error.hpp"
#include "util.hpp"

namespace tessera::distributed {

void Worker::Impl::start_gather(GatherDep g) {
  comm::Message req(wire::kGetData);
  req.set("keys", g.keys);
  if (device >= 0) req.set(wire::kTakesDeviceBlocks, true);
  std::weak_ptr<Impl> weak = shared_from_this();
  std::string peer_addr = g.peer;
  const double asked = now();  // the transfer's bar starts here (connecting included)
  RpcTable::Callback cb = [weak, peer_addr, asked](const comm::Message* reply, std::exception_ptr err) {
    auto self = weak.lock();
    if (!self) return;
    if (err) {
      std::string why = describe_exception(err);
      logging::warn("worker {}: fetching from {} failed: {}", self->address, peer_addr, why);
      self->step([&] { self->handle(GatherDepFailure{peer_addr, why}); });
      return;
    }
    std::vector<std::pair<Key, std::size_t>> got;
    std::size_t got_bytes = 0;
    try {
      auto keys = reply->get<std::vector<Key>>("keys");
      auto values = wire::get_values(*reply);
      if (values.size() != keys.size()) throw Error("get-data reply has " + std::to_string(keys.size()) +
                                                    " keys but " + std::to_string(values.size()) + " values");
      for (std::size_t i = 0; i < keys.size(); ++i) {
        std::size_t nb = values[i].nbytes();
        self->fetched_bytes += nb;
        got_bytes += nb;
        self->store.put(keys[i], std::move(values[i]));
        got.push_back({keys[i], nb});
      }
      self->fetched_keys += keys.size();
      self->fetches++;
    } catch (const std::exception& e) {
      std::string why = e.what();
      self->step([&] { self->handle(GatherDepFailure{peer_addr, why}); });
      return;
    }
    const double arrived = self->now();
    const std::size_t nkeys = got.size();
    self->step([&] {
      self->outbox.push_back(wire::TransferDone{{}, peer_addr, nkeys, got_bytes, asked, arrived});
      self->handle(GatherDepSuccess{peer_addr, std::move(got)});
      self->check_memory();
    });
  };

  request_peer(g.peer, std::move(req), std::move(cb));
}

// Sends a request to a peer worker over the one connection this worker keeps to it, opened on
// first use; requests made while it connects wait for it (and fail with it).
void Worker::Impl::request_peer(const std::string& peer, comm::Message req, RpcTable::Callback cb) {
  std::weak_ptr<Impl> weak = shared_from_this();
  std::shared_ptr<WorkerPeer> p;
  bool connect = false;
  {
    std::lock_guard lock(mu);
    auto& slot = peers[peer];
    if (!slot || slot->failed) {
      slot = std::make_shared<WorkerPeer>();
      connect = true;
    }
    p = slot;
    if (!p->comm) {
      p->waiting.push_back({std::move(req), std::move(cb)});
    }
  }
  if (p->comm) {
    p->rpc.request(p->comm, std::move(req), std::move(cb));
    return;
  }
  if (!connect) return;
  comm::CommOptions co;
  co.token = opt.token;
  co.security = opt.security;
  co.name = address;
  co.max_header_bytes = kClusterMaxHeaderBytes;
  comm::connect_async(peer, co, [weak, p](std::shared_ptr<comm::Comm> c, std::exception_ptr err) {
    auto self = weak.lock();
    if (!err && !self) err = std::make_exception_ptr(comm::CommClosedError("worker closed"));
    std::vector<std::pair<comm::Message, RpcTable::Callback>> waiting;
    {
      std::unique_lock<std::mutex> lock;
      if (self) lock = std::unique_lock(self->mu);
      if (!err && p->failed)  // peer_gone came while it connected
        err = std::make_exception_ptr(comm::CommClosedError("the scheduler reported the peer gone"));
      if (err) {
        p->failed = true;
      } else {
        p->comm = c;
      }
      waiting.swap(p->waiting);
    }
    if (err && c) c->close();
    if (err) {
      for (auto& [m, cb] : waiting) cb(nullptr, err);
      return;
    }
    // The handlers hold the peer weakly: `peers` owns it and it owns the comm that owns
    // them, so a strong capture is a cycle that outlives a worker stopped before the comm
    // reports its close (LeakSanitizer saw it, now and then, with in-process workers).
    std::weak_ptr<WorkerPeer> weak_peer = p;
    c->set_handlers(
        [weak_peer](comm::Message m) {
          if (auto peer = weak_peer.lock()) peer->rpc.complete(m);
        },
        [weak, weak_peer](std::exception_ptr reason) {
          auto peer = weak_peer.lock();
          if (!peer) return;
          if (auto s = weak.lock()) {
            std::lock_guard lock(s->mu);
            peer->failed = true;
          }
          peer->rpc.fail_all(reason ? reason : std::make_exception_ptr(comm::CommClosedError("peer closed")));
        });
    for (auto& [m, cb] : waiting) p->rpc.request(c, std::move(m), std::move(cb));
  });
}

// The scheduler removed `peer` (or counts it silent): transfers from it fail now instead of
// waiting for a stopped process. Three places may hold such a transfer: a connection open to
// it (closed: its requests fail), a connection still being made (a stopped process's kernel
// completes the TCP handshake, so only the hello timeout would end it: its waiting requests
// fail now and the connection is dropped when it arrives), and fetches queued in the state
// machine that name it as a holder (a GatherDepFailure forgets it for all of them).
void Worker::Impl::peer_gone(const std::string& peer) {
  std::shared_ptr<comm::Comm> c;
  std::vector<std::pair<comm::Message, RpcTable::Callback>> waiting;
  {
    std::lock_guard lock(mu);
    if (auto it = peers.find(peer); it != peers.end() && it->second) {
      c = it->second->comm;
      it->second->failed = true;
      waiting.swap(it->second->waiting);
    }
  }
  if (c) c->close();
  auto why = std::make_exception_ptr(comm::CommClosedError("the scheduler reported " + peer + " gone"));
  for (auto& [req, cb] : waiting) cb(nullptr, why);
  step([&] { handle(GatherDepFailure{peer, "the scheduler reported it gone"}); });
}

}  // namespace tessera::distributed
