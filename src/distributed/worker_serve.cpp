// What a worker serves to peers and clients: get-data and run.
#include "worker_impl.hpp"

#include "../core/logging.hpp"
#include "tessera/ops/registry.hpp"
#include "util.hpp"
#include "worker_shuffle.hpp"

namespace tessera::distributed {

void Worker::Impl::on_accept(std::shared_ptr<comm::Comm> c) {
  std::weak_ptr<Impl> weak = shared_from_this();
  std::weak_ptr<comm::Comm> wc = c;
  c->set_handlers(
      [weak, wc](comm::Message m) {
        auto self = weak.lock();
        auto conn = wc.lock();
        if (self && conn) self->serve(conn, m);
      },
      [weak, wc](std::exception_ptr) {
        auto self = weak.lock();
        if (!self) return;
        std::lock_guard lock(self->mu);
        std::erase_if(self->served_conns, [&](const auto& x) { return x == wc.lock() || x->is_closed(); });
      });
  // Held here so that shutdown() can close it; dropped when it closes.
  std::lock_guard lock(mu);
  served_conns.push_back(c);
}

void Worker::Impl::serve(const std::shared_ptr<comm::Comm>& c, const comm::Message& m) {
  try {
    if (m.op == wire::kGetData) {
      const double asked = now();  // a client's transfer bar starts here
      auto keys = m.get<std::vector<Key>>("keys");
      std::vector<Key> found;
      std::vector<Value> values;
      for (auto& k : keys)
        if (auto v = store.get(k)) {
          found.push_back(k);
          values.push_back(std::move(*v));
        }
      served_keys += found.size();
      served_requests++;
      std::size_t nbytes = 0;
      for (const auto& v : values) nbytes += v.nbytes();
      served_bytes += nbytes;
      comm::Message reply = make_reply(m);
      reply.set("keys", found);
      const bool device_frames = m.has(wire::kTakesDeviceBlocks) && m.get<bool>(wire::kTakesDeviceBlocks) &&
                                 c->sends_device_frames();
      wire::put_values(reply, values, device_frames ? wire::DeviceBlocks::AsIs : wire::DeviceBlocks::ToHost);
      if (!m.has(wire::kGetDataClient)) {
        c->send(std::move(reply), nullptr);  // a peer's fetch: the peer reports it (TransferDone)
        return;
      }
      // A client's fetch: a transfer bar on this worker's row, from the request to the reply
      // written; it goes with whatever else this worker reports within the batch window.
      std::weak_ptr<Impl> weak = shared_from_this();
      c->send(std::move(reply), [weak, client = m.get<std::string>(wire::kGetDataClient), nkeys = found.size(),
                                 nbytes, asked](std::exception_ptr err) {
        auto self = weak.lock();
        if (err || !self) return;
        self->report_later(wire::TransferDone{{}, client, nkeys, nbytes, asked, self->now()});
      });
    } else if (m.op == wire::kShuffleReceive) {
      comm::Message reply = make_reply(m);
      try {
        shuffle->receive(m);
      } catch (const ShuffleRunLost& e) {
        reply = make_error_reply(m, std::string(wire::kShuffleLost) + e.what());
      } catch (const std::exception& e) {
        reply = make_error_reply(m, e.what());
      }
      c->send(std::move(reply), nullptr);
    } else if (m.op == wire::kRun) {
      auto op = m.get<std::string>("op");
      auto args = wire::get_values(m);
      comm::Message reply = make_reply(m);
      try {
        OpContext ctx;
        Value v = run_op(op, ctx, args);
        wire::put_values(reply, {v});
      } catch (const std::exception& e) {
        reply = make_error_reply(m, e.what());
      }
      c->send(std::move(reply), nullptr);
    } else {
      throw Error("unknown message '" + m.op + "'");
    }
  } catch (const std::exception& e) {
    logging::warn("worker {}: closing connection from {}: {}", address, c->peer_address(), e.what());
    if (m.has("id")) c->send(make_error_reply(m, e.what()), nullptr);
    c->close();
  }
}

}  // namespace tessera::distributed
