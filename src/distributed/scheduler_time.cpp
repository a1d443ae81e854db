// The scheduler's ticker: the state machine's clock, registration deadlines, silent and removed
// workers.
#include "scheduler_impl.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "../core/logging.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "wire.hpp"

namespace tessera::distributed {

void Scheduler::Impl::tick_loop() {
  std::unique_lock lock(mu);
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.tick_interval));
  while (!stopping) {
    const auto due = Clock::now() + interval;
    cv.wait_until(lock, due);
    if (stopping) break;
    // After the lock is taken again: a tick kept waiting by a long message handler is late.
    const auto woke = Clock::now();
    double t = now();
    record_tick(t, woke > due ? std::chrono::duration<double>(woke - due).count() : 0.0);
    handle(Tick{t});
    close_unregistered(t, lock);
    announce_silent_workers(t);
    flush();
    drop_removed_workers(lock);
    if (!retirements.empty()) answer_retirements();
    if (restart) {
      std::vector<std::shared_ptr<comm::Comm>> stuck;
      answer_restart(&stuck);
      if (!stuck.empty()) {
        lock.unlock();
        for (auto& c : stuck) c->close();
        lock.lock();
      }
    }
    if (opt.idle_timeout > 0) {
      bool busy = !clients.empty() || state.task_count() > 0;
      if (busy || idle_since == 0) idle_since = t;
      if (!busy && t - idle_since > opt.idle_timeout) {
        logging::info("scheduler: idle for {:.0f} s, closing", t - idle_since);
        lock.unlock();
        std::thread([self = shared_from_this()] { self->stop(true); }).detach();
        return;
      }
    }
  }
}

// Connections that did not register within registration_timeout of being accepted are
// closed: each holds one of the listener's max_connections, and before issue 29 766 idle
// authenticated ones held a cap of 768 for ever, locking clients out. Called with the lock
// held; releases it while closing.
void Scheduler::Impl::close_unregistered(double t, std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<comm::Comm>> late;
  while (!awaiting_registration.empty()) {
    auto conn = awaiting_registration.front().lock();
    if (conn && t - conn->accepted_at < opt.registration_timeout) break;
    awaiting_registration.pop_front();
    // Registered, closed already, or an old worker of a restart (closed by the restart).
    if (!conn || conn->role != Conn::Role::Unknown || conn->restarting || !conns.count(conn)) continue;
    late.push_back(conn->comm);
  }
  if (late.empty()) return;
  std::size_t suppressed = 0;
  if (refusal_log.allow(suppressed))
    logging::warn("scheduler: closing {} connection(s) that did not register within {} s (--registration-timeout), "
                  "e.g. from {}{}",
                  late.size(), opt.registration_timeout, late.front()->peer_address(),
                  suppressed ? " (" + std::to_string(suppressed) + " more not logged)" : std::string());
  lock.unlock();
  for (auto& c : late) c->close();
  lock.lock();
}

// A worker silent past worker_silent has its results counted as lost (the state machine's
// evacuate_silent): its peers are told it is gone, so that their fetches from it fail now
// (and they report the data missing) instead of waiting for a stopped process. Told once per
// silence; it is fetched from again once heard from and given data.
void Scheduler::Impl::announce_silent_workers(double t) {
  const double after = state_config(opt).worker_silent;
  if (after <= 0) return;
  for (auto& [address, c] : workers) {
    if (c->announced_silent || c->leaving || t - c->last_heartbeat <= after) continue;
    c->announced_silent = true;
    comm::Message m(wire::kPeerGone);
    m.set("address", address);
    for (auto& [other, oc] : workers)
      if (oc != c) oc->comm->send(m, nullptr);
  }
}

// A worker the state machine removed on its own (no heartbeat within worker_ttl) may still
// be connected (stopped, or cut off): close its connection, so that a process that wakes
// up leaves instead of lingering unknown, and tell the other workers, whose transfers from
// it would otherwise wait forever. Called with the lock held; releases it while closing.
void Scheduler::Impl::drop_removed_workers(std::unique_lock<std::mutex>& lock) {
  // Connections and live workers come and go together except after a Tick expired a worker:
  // nothing to do (the common case, every tick) unless the counts differ.
  if (workers.size() == state.worker_count()) return;
  std::set<std::string> alive;
  for (const auto& w : state.workers()) alive.insert(w.address);
  std::vector<std::shared_ptr<Conn>> gone;
  for (auto it = workers.begin(); it != workers.end();) {
    if (alive.count(it->first)) {
      ++it;
      continue;
    }
    gone.push_back(it->second);
    it = workers.erase(it);
  }
  if (gone.empty()) return;
  for (auto& g : gone) {
    logging::warn("scheduler: closing the connection of removed worker {}", g->id);
    comm::Message m(wire::kPeerGone);
    m.set("address", g->id);
    for (auto& [a, c] : workers) c->comm->send(m, nullptr);
  }
  lock.unlock();
  for (auto& g : gone) g->comm->close();
  lock.lock();
}

}  // namespace tessera::distributed
