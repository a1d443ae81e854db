// retire-workers and Client::restart on the scheduler.
#include "scheduler_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "../core/logging.hpp"
#include "rpc.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "wire.hpp"

namespace tessera::distributed {

void Scheduler::Impl::start_retirement(Conn& c, const comm::Message& m) {
  std::vector<std::string> addresses = m.get<std::vector<std::string>>("addresses");
  auto n = m.get<std::uint64_t>("n");
  if (n > 0) addresses = state.workers_to_close(static_cast<std::size_t>(n));
  double timeout = m.get<double>("timeout");
  handle(RetireWorkers{addresses, now()});
  Retirement r;
  for (auto& sp : conns)
    if (sp.get() == &c) r.conn = sp;
  r.request = m;
  r.addresses = std::move(addresses);
  r.deadline = now() + (timeout > 0 ? timeout : 60);
  retirements.push_back(std::move(r));
  answer_retirements();
}

void Scheduler::Impl::answer_retirements() {
  std::set<std::string> alive;
  for (const auto& w : state.workers()) alive.insert(w.address);
  const double t = now();
  for (auto it = retirements.begin(); it != retirements.end();) {
    std::vector<std::string> retired, kept;
    bool done = true;
    for (const auto& a : it->addresses) {
      if (!alive.count(a)) retired.push_back(a);
      else if (state.retiring(a)) done = false;
      else kept.push_back(a);
    }
    if (!done && t < it->deadline) {
      ++it;
      continue;
    }
    if (auto c = it->conn.lock()) {
      for (const auto& a : it->addresses)
        if (alive.count(a) && state.retiring(a)) kept.push_back(a);
      comm::Message reply = make_reply(it->request);
      reply.set("retired", retired);
      reply.set("kept", kept);
      c->comm->send(std::move(reply), nullptr);
    }
    it = retirements.erase(it);
  }
}

// "worker-1 (tcp://127.0.0.1:40123, pid 812)"; a worker named after its address: "tcp://... (pid 812)".
std::string Scheduler::Impl::describe(const OldWorker& w) {
  const std::string pid = "pid " + std::to_string(w.pid) + ")";
  if (w.name.empty() || w.name == w.address) return w.address + " (" + pid;
  return w.name + " (" + w.address + ", " + pid;
}

void Scheduler::Impl::refuse_request(Conn& c, const comm::Message& m, const std::string& error) {
  c.comm->send(make_error_reply(m, error), nullptr);
}

void Scheduler::Impl::start_restart(Conn& c, const comm::Message& m) {
  if (restart) return refuse_request(c, m, "restart: a restart is already under way");
  // Workers in this very process (an in-process LocalCluster's threads): nothing can start
  // them again, and closing them would leave a cluster with none. Refused, nothing changed.
  std::vector<std::string> in_process;
  for (const auto& [address, w] : workers)
    if (w->hello.pid == static_cast<int>(::getpid())) in_process.push_back(w->hello.add.name);
  if (!in_process.empty())
    return refuse_request(c, m,
                          "restart: worker" + std::string(in_process.size() > 1 ? "s " : " ") + join(in_process) +
                              " run" + (in_process.size() > 1 ? "" : "s") +
                              " in the scheduler's process (threads of an in-process LocalCluster, or Worker "
                              "objects): no nanny can restart them. Nothing was restarted; restart() needs worker "
                              "processes under a nanny (tessera-worker without --no-nanny)");
  Restart r;
  for (auto& sp : conns)
    if (sp.get() == &c) r.conn = sp;
  r.request = m;
  r.want = workers.size();
  r.wait_for_workers = m.get<bool>("wait_for_workers");
  r.timeout = m.get<double>("timeout");
  if (!(r.timeout > 0)) r.timeout = 60;
  r.deadline = now() + r.timeout;
  r.kill_at = now() + std::min(kRestartKillAfter, r.timeout / 2);
  std::vector<std::string> closed;
  for (auto& [address, w] : workers) {
    OldWorker o{address, w->hello.add.name, w->hello.pid, w->nanny_pid > 0,
                w->nanny_pid > 0 ? nanny_key(w->hello.host, w->nanny_pid) : std::string()};
    // Forgotten now: its close must not remove anything, and what it still sends is stale.
    w->restarting = true;
    w->role = Conn::Role::Unknown;
    w->to_worker.clear();
    if (o.nanny) {
      w->comm->send(comm::Message(wire::kRestartWorker), nullptr);
    } else {
      w->leaving = true;
      w->comm->send(comm::Message(wire::kCloseWorker), nullptr);
      closed.push_back(describe(o));
    }
    r.departing.push_back(w);
    r.old.push_back(std::move(o));
  }
  workers.clear();
  logging::warn("scheduler: restart asked by client {}: {} workers ({} with a nanny), every task forgotten", c.id,
                r.old.size(), r.old.size() - closed.size());
  if (!closed.empty())
    logging::warn("scheduler: restart: worker{} {} {} no nanny: closed, not restarted (something else must start "
                  "{} again)",
                  closed.size() > 1 ? "s" : "", join(closed), closed.size() > 1 ? "have" : "has",
                  closed.size() > 1 ? "them" : "it");
  // Every task and result forgotten: a fresh state machine, which knows the connected clients.
  state = SchedulerState(state_config(opt));
  shuffles = ShuffleRuns();  // their tasks are gone with the state machine
  const std::string reason = "the cluster was restarted (Client::restart by client " + c.id + ")";
  comm::Message note(wire::kRestarted);
  note.set("reason", reason);
  for (auto& [name, cc] : clients) {
    cc->to_client.clear();  // news of keys now forgotten
    handle(AddClient{name});
    cc->comm->send(note, nullptr);
  }
  restart = std::move(r);
  if (!retirements.empty()) answer_retirements();  // their workers are gone too
  answer_restart(nullptr);
}

// Answers the restart when it is done; at its deadline too when `to_close` is given (the
// ticker): the old workers still connected (stopped, or hung) are closed (by the caller,
// outside the lock) and named in the error.
void Scheduler::Impl::answer_restart(std::vector<std::shared_ptr<comm::Comm>>* to_close) {
  if (!restart) return;
  Restart& r = *restart;
  const std::size_t registered = state.worker_count();
  const bool done = r.departing.empty() && (!r.wait_for_workers || registered >= r.want);
  if (!done && to_close && !r.kill_asked && now() >= r.kill_at) kill_departing(r);
  if (!done && (!to_close || now() < r.deadline)) return;
  std::vector<std::string> restarted, closed;
  for (const auto& o : r.old) (o.nanny ? restarted : closed).push_back(o.address);
  comm::Message reply = make_reply(r.request);
  if (done) {
    reply.set("restarted", restarted);
    reply.set("closed", closed);
    reply.set("workers", static_cast<std::uint64_t>(registered));
    logging::info("scheduler: restart done: {} workers", registered);
  } else {
    std::set<std::string> stuck, names_now;
    for (const auto& d : r.departing) {
      stuck.insert(d->id);
      to_close->push_back(d->comm);
    }
    for (const auto& w : state.workers()) names_now.insert(w.name);
    std::vector<std::string> not_left, not_back, no_nanny;
    for (const auto& o : r.old) {
      if (stuck.count(o.address)) not_left.push_back(describe(o));
      else if (!o.nanny) no_nanny.push_back(describe(o));
      // A worker named after its address gets a new name with its new port: not told apart.
      else if (r.wait_for_workers && o.name != o.address && !names_now.count(o.name)) not_back.push_back(describe(o));
    }
    std::ostringstream os;
    os << "restart: after " << r.timeout << " s, ";
    if (r.wait_for_workers) os << registered << " of " << r.want << " workers are back";
    else os << "not every worker left";
    if (!not_left.empty())
      os << "; did not leave (stopped or hung; their connections are closed now): " << join(not_left);
    if (!not_back.empty()) os << "; did not register again: " << join(not_back);
    if (!no_nanny.empty())
      os << "; closed, not restarted, having no nanny (something else must start them again, or restart() "
            "waits in vain): "
         << join(no_nanny);
    os << ". Consider a longer timeout, or wait_for_workers = false";
    reply.set("error", os.str());
    logging::warn("scheduler: {}", os.str());
  }
  if (auto c = r.conn.lock()) c->comm->send(std::move(reply), nullptr);
  restart.reset();
}

// The old workers still connected past kill_at, through their nannies' connections: each is
// SIGKILLed and started again by its nanny (its connection then closes, restart_departed).
// One whose nanny has no connection is left for the deadline, which names it.
void Scheduler::Impl::kill_departing(Restart& r) {
  r.kill_asked = true;
  for (const auto& d : r.departing)
    for (const auto& o : r.old) {
      if (o.address != d->id || o.nanny_key.empty()) continue;
      auto n = nannies.find(o.nanny_key);
      if (n == nannies.end()) {
        logging::warn("scheduler: restart: {} did not leave, and its nanny has no connection to kill it",
                      describe(o));
        continue;
      }
      logging::warn("scheduler: restart: {} did not leave within {} s (stopped or hung): asking its nanny to kill "
                    "and start it again",
                    describe(o), kRestartKillAfter);
      comm::Message m(wire::kKillWorker);
      m.set("pid", o.pid);
      n->second->comm->send(std::move(m), nullptr);
    }
}

// An old worker of a restart closed its connection.
void Scheduler::Impl::restart_departed(const std::shared_ptr<Conn>& conn) {
  if (!restart) return;
  auto& d = restart->departing;
  d.erase(std::remove(d.begin(), d.end(), conn), d.end());
  answer_restart(nullptr);
}

}  // namespace tessera::distributed
