// Client::restart (Dask's Client.restart) over the `restart` request, and what a client does
// when the scheduler says the cluster was restarted: every future so far is cancelled, for good.
// The scheduler's side is in scheduler.cpp, the worker's and nanny's in worker.cpp and nanny.cpp;
// docs/nanny.md ("Restart on request") has the protocol.
#include <chrono>
#include <cmath>

#include "../core/logging.hpp"
#include "client_impl.hpp"
#include "tessera/distributed/client.hpp"
#include "wire.hpp"

namespace tessera::distributed {
namespace detail {

void ClientImpl::on_restarted(const comm::Message& m) {
  const std::string reason = m.has("reason") ? m.get<std::string>("reason") : "the cluster was restarted";
  DoneCallbacks fire;
  {
    std::lock_guard lock(mu);
    // Every key this client had is forgotten by the cluster. A key wanted again later starts a
    // new state; the futures of this epoch read as cancelled from now on (restart_error).
    restart_reasons.resize(epoch + 1);
    restart_reasons[epoch] = reason;
    ++epoch;
    for (auto& [key, ks] : keys) {
      for (auto& cb : ks.callbacks) fire.push_back(std::move(cb));
      // Released too: a graph this client sent just before it heard of the restart may have
      // reached the new state, which would keep it for a client that no longer asks for it.
      pending_release.push_back(key);
    }
    keys.clear();
  }
  logging::warn("client {}: {}: its futures are cancelled", id, reason);
  cv.notify_all();
  for (auto& [fn, f] : fire) run_callback(fn, f);
}

std::exception_ptr ClientImpl::restart_error(const Key& key, std::uint64_t future_epoch) const {
  if (future_epoch == epoch) return nullptr;
  const std::string& why =
      future_epoch < restart_reasons.size() ? restart_reasons[future_epoch] : std::string("the cluster was restarted");
  return std::make_exception_ptr(CancelledError("task " + key + " was cancelled: " + why +
                                                "; every result was forgotten (submit it again)"));
}

}  // namespace detail

RestartReport Client::restart(std::chrono::duration<double> timeout, bool wait_for_workers) {
  auto& impl = *live();
  impl.check_open();
  comm::Message req(wire::kRestart);
  req.set("timeout", timeout.count());
  req.set("wait_for_workers", wait_for_workers);
  // The scheduler answers at its deadline at the latest (its ticker checks it): a little longer.
  auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout.count() * 1000)) + 10000);
  comm::Message reply;
  try {
    reply = impl.rpc.call(impl.scheduler, std::move(req), wait);
  } catch (const RemoteError& e) {
    throw RestartError(e.what());
  }
  RestartReport r;
  r.restarted = reply.get<std::vector<std::string>>("restarted");
  r.closed = reply.get<std::vector<std::string>>("closed");
  r.workers = static_cast<std::size_t>(reply.get<std::uint64_t>("workers"));
  if (!r.closed.empty()) {
    std::string list;
    for (const auto& a : r.closed) list += (list.empty() ? "" : ", ") + a;
    logging::warn("client {}: restart closed workers without a nanny, which nothing here restarts: {}", impl.id, list);
  }
  impl.learn(impl.info());  // the workers now (their ops) for the next submit's check
  return r;
}

}  // namespace tessera::distributed
