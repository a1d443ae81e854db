// Fetching values from the workers that hold them: get-data requests over one connection per
// worker, the prefetch of a result someone waits on, and gather.
#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "../core/logging.hpp"
#include "client_impl.hpp"

namespace tessera::distributed {
namespace detail {

std::shared_ptr<ClientImpl::WorkerConn> ClientImpl::worker_conn(const std::string& addr) {
  {
    std::lock_guard lock(wmu);
    if (auto it = worker_conns.find(addr); it != worker_conns.end() && !it->second->comm->is_closed())
      return it->second;
  }
  // Connected without wmu held: connect() waits for the I/O thread, which takes wmu itself (a
  // key finishing that a result() waits for is prefetched there). Held across it, the two
  // waited for each other for ever (two threads fetching while workers came and went: the
  // restart test). A worker that left (retired, or died after the scheduler said it held a key)
  // throws here, and leaves no slot behind.
  auto wc = std::make_shared<WorkerConn>();
  wc->comm = comm::connect(addr, comm_options());
  wc->comm->set_handlers([wc_raw = wc.get()](comm::Message m) { wc_raw->rpc.complete(m); },
                         [wcw = std::weak_ptr<WorkerConn>(wc)](std::exception_ptr reason) {
                           if (auto w = wcw.lock())
                             w->rpc.fail_all(reason ? reason
                                                    : std::make_exception_ptr(comm::CommClosedError("closed")));
                         });
  std::shared_ptr<WorkerConn> out;
  {
    std::lock_guard lock(wmu);
    auto& slot = worker_conns[addr];
    if (slot && !slot->comm->is_closed()) out = slot;  // another thread connected meanwhile: one is enough
    else slot = out = wc;
  }
  bool is_closed;
  {
    std::lock_guard lock(mu);
    is_closed = closed;
  }
  // Ours not kept, or the client closed (close() may have swept the connections already).
  if (out != wc || is_closed) wc->comm->close();
  if (is_closed) {
    std::lock_guard lock(mu);
    check_open();  // throws why
  }
  return out;
}

std::vector<std::string> ClientImpl::who_has(const Key& key) {
  comm::Message req(wire::kWhoHas);
  req.set("keys", std::vector<Key>{key});
  auto reply = rpc.call(scheduler, std::move(req));
  auto w = reply.get<std::vector<WhoHas>>("who_has");
  return w.empty() ? std::vector<std::string>{} : w[0].workers;
}

std::vector<Value> ClientImpl::fetch(const std::vector<Key>& want, std::uint64_t future_epoch) {
  std::vector<Value> out(want.size());
  std::vector<std::size_t> todo(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) todo[i] = i;
  std::unordered_map<std::size_t, std::vector<std::string>> located;
  auto deadline = Clock::now() + std::chrono::seconds(300);
  for (int round = 0; !todo.empty(); ++round) {
    if (round > 0) {
      if (Clock::now() > deadline) throw Error("client: could not fetch " + want[todo[0]] + " from any worker");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20 * round, 200)));
    }
    std::map<std::string, std::vector<std::size_t>> by_worker;
    {
      std::lock_guard lock(mu);
      check_open();
      // Restarted meanwhile: the keys are gone for good (who_has would find no one, for ever).
      if (auto e = restart_error(want[todo[0]], future_epoch)) std::rethrow_exception(e);
      for (std::size_t i : todo) {
        std::vector<std::string> ws;
        if (auto l = located.find(i); l != located.end()) ws = l->second;
        else if (auto it = keys.find(want[i]); it != keys.end()) ws = it->second.workers;
        if (ws.empty()) continue;
        by_worker[ws[i % ws.size()]].push_back(i);
      }
    }
    std::vector<std::pair<std::vector<std::size_t>, std::future<comm::Message>>> calls;
    for (auto& [addr, idx] : by_worker) {
      auto p = std::make_shared<std::promise<comm::Message>>();
      calls.push_back({idx, p->get_future()});
      try {
        auto wc = worker_conn(addr);
        comm::Message req(wire::kGetData);
        std::vector<Key> ks;
        for (auto i : idx) ks.push_back(want[i]);
        req.set("keys", ks);
        req.set(wire::kGetDataClient, id);  // the worker shows the reply in the task stream
        wc->rpc.request(wc->comm, std::move(req), [p](const comm::Message* r, std::exception_ptr e) {
          if (e) p->set_exception(e);
          else p->set_value(*r);
        });
      } catch (...) {
        p->set_exception(std::current_exception());
      }
    }
    std::vector<std::size_t> again;
    std::set<std::size_t> got;
    for (auto& [idx, fut] : calls) {
      try {
        comm::Message r = fut.get();
        auto ks = r.get<std::vector<Key>>("keys");
        auto vs = wire::get_values(r);
        std::unordered_map<Key, std::size_t> pos;
        for (std::size_t j = 0; j < ks.size() && j < vs.size(); ++j) pos[ks[j]] = j;
        for (auto i : idx) {
          auto it = pos.find(want[i]);
          if (it == pos.end()) continue;
          out[i] = std::move(vs[it->second]);
          got.insert(i);
        }
      } catch (const std::exception& e) {
        logging::debug("client: fetch failed: {}", e.what());
      }
    }
    for (std::size_t i : todo)
      if (!got.count(i)) again.push_back(i);
    // Ask the scheduler where the missing ones are now.
    for (std::size_t i : again) {
      FutureStatus st;
      {
        std::lock_guard lock(mu);
        auto it = keys.find(want[i]);
        st = it == keys.end() ? FutureStatus::Finished : it->second.status;
      }
      if (st == FutureStatus::Error || st == FutureStatus::Cancelled)
        std::rethrow_exception(error_of(want[i], future_epoch));
      located[i] = who_has(want[i]);
    }
    todo = std::move(again);
  }
  return out;
}

void ClientImpl::prefetch(const Key& key, const std::string& worker) {
  std::shared_ptr<WorkerConn> wc;
  {
    std::lock_guard lock(wmu);
    auto it = worker_conns.find(worker);
    if (it == worker_conns.end() || it->second->comm->is_closed()) return;
    wc = it->second;
  }
  {
    std::lock_guard lock(mu);
    auto it = keys.find(key);
    if (it == keys.end()) return;
    it->second.prefetch = KeyState::Prefetch::InFlight;
  }
  comm::Message req(wire::kGetData);
  req.set("keys", std::vector<Key>{key});
  req.set(wire::kGetDataClient, id);
  std::weak_ptr<ClientImpl> weak = shared_from_this();
  wc->rpc.request(wc->comm, std::move(req), [weak, key](const comm::Message* r, std::exception_ptr e) {
    auto self = weak.lock();
    if (!self) return;
    Value v;
    bool ok = false;
    if (!e) {
      try {
        auto ks = r->get<std::vector<Key>>("keys");
        auto vs = wire::get_values(*r);
        if (ks.size() == 1 && vs.size() == 1 && ks[0] == key) {
          v = std::move(vs[0]);
          ok = true;
        }
      } catch (const std::exception&) {
      }
    }
    {
      std::lock_guard lock(self->mu);
      auto it = self->keys.find(key);
      if (it == self->keys.end()) return;
      it->second.prefetch = ok ? KeyState::Prefetch::Done : KeyState::Prefetch::Failed;
      if (ok) it->second.value = std::move(v);
    }
    self->cv.notify_all();
  });
}

}  // namespace detail

std::vector<Value> Client::gather(const std::vector<Future>& futures) {
  const auto& impl = live();
  std::uint64_t epoch = 0;
  auto keys = detail::wait_finished(*impl, futures, &epoch);
  return impl->fetch(keys, epoch);
}

}  // namespace tessera::distributed
