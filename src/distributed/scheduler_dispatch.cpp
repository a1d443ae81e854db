// The scheduler's connections and their messages, and the state machine's actions routed to them.
#include "scheduler_impl.hpp"

#include <algorithm>
#include <mutex>
#include <optional>

#include "../core/logging.hpp"
#include "rpc.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "wire.hpp"
#include "worker_identity.hpp"

namespace tessera::distributed {

void Scheduler::Impl::handle(SchedulerEvent e) {
  // What a shuffle run needs to hear of, read before the event is moved into the machine.
  std::string removed_worker;
  Key finished;
  if (auto* r = std::get_if<RemoveWorker>(&e)) removed_worker = r->address;
  if (shuffles.size() > 0)
    if (auto* f = std::get_if<TaskFinished>(&e)) finished = f->key;
  actions.clear();
  state.handle(std::move(e), actions);
  for (auto& a : actions) route(std::move(a));
  if (!finished.empty()) shuffle_task_finished(finished);
  if (!removed_worker.empty()) shuffle_worker_removed(removed_worker);
}

void Scheduler::Impl::to_worker(const std::string& address, wire::SchedulerToWorker e) {
  if (Conn* c = worker_conn(address)) {
    c->to_worker.push_back(std::move(e));
    mark(c);
  }
}

void Scheduler::Impl::to_client(const std::string& name, wire::SchedulerToClient e) {
  if (Conn* c = client_conn(name)) {
    c->to_client.push_back(std::move(e));
    mark(c);
  }
}

void Scheduler::Impl::mark(Conn* c) {
  if (!c->dirty) {
    c->dirty = true;
    dirty.push_back(c);
  }
}

void Scheduler::Impl::route(SchedulerAction a) {
  std::visit(
      [&](auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ComputeTask> || std::is_same_v<T, FreeKeys> ||
                      std::is_same_v<T, StealRequest> || std::is_same_v<T, AcquireReplicas>) {
          std::string w = x.worker;
          to_worker(w, std::move(x));
        } else if constexpr (std::is_same_v<T, KeyInMemory>) {
          wire::KeyReady r{x.key, x.nbytes, x.type, state.who_has(x.key)};
          to_client(x.client, std::move(r));
        } else if constexpr (std::is_same_v<T, KeyErred> || std::is_same_v<T, OperationUnavailable> ||
                             std::is_same_v<T, KeyCancelled>) {
          std::string c = x.client;
          to_client(c, std::move(x));
        } else if constexpr (std::is_same_v<T, CloseWorker>) {
          // After this step's batch (flush): the worker sees its last events first.
          if (Conn* c = worker_conn(x.worker)) {
            c->leaving = true;
            closing.push_back(c->comm);
          }
        } else if constexpr (std::is_same_v<T, LogEvent>) {
          if (x.topic == "worker" || x.topic == "client")
            logging::info("scheduler: {}", x.message);
          else
            logging::debug("scheduler: [{}] {}", x.topic, x.message);
        }
      },
      a);
}

// Sends what this step produced, one batch message per connection.
void Scheduler::Impl::flush() {
  for (Conn* c : dirty) {
    c->dirty = false;
    if (!c->to_worker.empty()) {
      c->comm->send(wire::batch_message(wire::kSchedulerEvents, c->to_worker), nullptr);
      c->to_worker.clear();
    }
    if (!c->to_client.empty()) {
      c->comm->send(wire::batch_message(wire::kClientUpdates, c->to_client), nullptr);
      c->to_client.clear();
    }
  }
  dirty.clear();
  for (auto& c : closing) c->send(comm::Message(wire::kCloseWorker), nullptr);
  closing.clear();
}

void Scheduler::Impl::on_accept(std::shared_ptr<comm::Comm> c) {
  auto conn = std::make_shared<Conn>();
  conn->comm = c;
  {
    std::lock_guard lock(mu);
    if (stopping) {
      c->close();
      return;
    }
    conns.insert(conn);
    conn->accepted_at = now();
    if (opt.registration_timeout > 0) awaiting_registration.push_back(conn);
  }
  std::weak_ptr<Impl> weak = shared_from_this();
  // The handlers hold the connection weakly: `conns` owns it, and the connection owns the
  // comm that owns these handlers, so a strong capture is a cycle that outlives a scheduler
  // stopped before the comm reports its close (LeakSanitizer saw it, now and then).
  std::weak_ptr<Conn> weak_conn = conn;
  c->set_handlers(
      [weak, weak_conn](comm::Message m) {
        auto self = weak.lock();
        auto conn = weak_conn.lock();
        if (self && conn) self->on_message(conn, std::move(m));
      },
      [weak, weak_conn](std::exception_ptr reason) {
        auto self = weak.lock();
        auto conn = weak_conn.lock();
        if (self && conn) self->on_close(conn, reason);
      });
}

void Scheduler::Impl::on_message(const std::shared_ptr<Conn>& conn, comm::Message m) {
  std::vector<std::shared_ptr<comm::Comm>> close_now;
  bool bad = false;
  std::string why;
  {
    std::lock_guard lock(mu);
    if (stopping) return;
    try {
      dispatch(*conn, m);
    } catch (const std::exception& e) {
      bad = true;
      why = e.what();
    }
    flush();
    close_now.swap(close_after_dispatch);
  }
  for (auto& gone : close_now) gone->close();
  if (bad) {
    logging::warn("scheduler: closing connection from {}: bad message '{}': {}", conn->comm->peer_address(), m.op,
                 why);
    conn->comm->close();
  }
}

void Scheduler::Impl::dispatch(Conn& c, comm::Message& m) {
  const std::string& op = m.op;
  if (c.restarting) return;  // an old worker of a restart: all it could say is forgotten
  if (op == wire::kWorkerEvents && c.role == Conn::Role::Worker) {
    for (auto& e : wire::batch_events<wire::WorkerToScheduler>(m)) {
      std::visit(
          [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            // A worker speaks only for itself.
            if constexpr (std::is_same_v<T, wire::TransferDone>) {
              record_transfer(c, x);  // the task stream only: not a state-machine event
            } else if constexpr (std::is_same_v<T, Heartbeat>) {
              x.address = c.id;
              x.now = now();
              c.last_heartbeat = x.now;
              c.announced_silent = false;
              c.device_memory = x.device_memory;
              c.device_spilled_bytes = x.device_spilled_bytes;
              c.spilled = x.spilled;
              c.bytes_received = x.bytes_received;
              c.bytes_sent = x.bytes_sent;
              c.usage = std::move(x.usage);
            } else if constexpr (std::is_same_v<T, WorkerStatusChange>) {
              x.address = c.id;
            } else {
              x.worker = c.id;
              if constexpr (std::is_same_v<T, TaskFinished>) record_finished(c, x);
            }
            if constexpr (!std::is_same_v<T, wire::TransferDone>) handle(std::move(x));
          },
          e);
    }
  } else if (op == wire::kClientEvents && c.role == Conn::Role::Client) {
    for (auto& e : wire::batch_events<wire::ClientToScheduler>(m)) {
      std::visit(
          [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            x.client = c.id;
            if constexpr (std::is_same_v<T, UpdateGraph>) x.now = now();
            handle(std::move(x));
          },
          e);
    }
  } else if (op == wire::kRegisterWorker && c.role == Conn::Role::Unknown) {
    c.hello = m.get<wire::WorkerHello>("worker");
    AddWorker add = c.hello.add;
    if (add.address.empty()) throw Error("register-worker without an address");
    add.now = now();
    // The address is the worker's identity (tasks, peers' transfers): a second registration
    // for a live worker's address is refused unless it carries the secret that worker was
    // given (it is that worker, reconnecting before its old connection was seen to close),
    // or any peer could take a worker's place and close it. The old one is gone once its
    // connection closed or the TTL removed it (drop_removed_workers); one that said it is
    // leaving may be replaced at once.
    if (auto old = workers.find(add.address); old != workers.end() && old->second.get() != &c) {
      const std::shared_ptr<Conn> prev = old->second;
      const std::string given = m.has("secret") ? m.get<std::string>("secret") : std::string();
      if (prev->leaving) {
        logging::warn("scheduler: worker {} registered again while leaving; dropping its old connection",
                      add.address);
      } else if (registration_secret_matches(prev->secret, given)) {
        logging::warn("scheduler: worker {} registered again with its secret; replacing its old connection",
                      add.address);
        close_after_dispatch.push_back(prev->comm);  // outside the lock (on_message)
      } else {
        refuse_registration(c, add.address,
                            given.empty() ? "without the secret it was given" : "with a wrong secret");
        return;
      }
      prev->role = Conn::Role::Unknown;  // its close must not remove the new one
      workers.erase(old);
      // The state machine replaces a worker registered twice (its tasks are rescheduled:
      // the new process may hold none of the old one's results).
    }
    c.role = Conn::Role::Worker;
    c.id = add.address;
    if (m.has(wire::kNannyField)) {
      c.nanny_pid = m.get<int>(wire::kNannyField);
      c.hello.extra["nanny"] = std::to_string(c.nanny_pid);  // scheduler_info() shows it
    }
    for (auto& sp : conns)
      if (sp.get() == &c) workers[c.id] = sp;
    c.secret = new_registration_secret();
    c.last_heartbeat = add.now;
    comm::Message reply(wire::kRegistered);
    reply.set("id", id);
    reply.set("secret", c.secret);
    c.comm->send(std::move(reply), nullptr);
    handle(std::move(add));
    answer_restart(nullptr);  // one that restarted, perhaps the last awaited
  } else if (op == wire::kRegisterNanny && c.role == Conn::Role::Unknown) {
    // A nanny's own connection: authenticated as any peer (token proof, TLS). It is only ever
    // asked to kill its own children (it checks); a false one (it holds the token) can at most
    // take the real one's place here, so that a hung worker is named instead of killed.
    c.role = Conn::Role::Nanny;
    c.id = nanny_key(m.get<std::string>("host"), m.get<int>("pid"));
    for (auto& sp : conns)
      if (sp.get() == &c) nannies[c.id] = sp;  // a nanny that dialled again replaces its old one
  } else if (op == wire::kWorkerKilled && c.role == Conn::Role::Nanny) {
    if (m.get<bool>("killed"))
      logging::info("scheduler: nanny {} killed worker pid {} for the restart", c.id, m.get<int>("pid"));
    else
      logging::warn("scheduler: nanny {} has no worker pid {} to kill", c.id, m.get<int>("pid"));
  } else if (op == wire::kWorkerGivenUp && c.role == Conn::Role::Nanny) {
    worker_given_up(c, m.get<std::string>("name"), m.get<int>("pid"), m.get<std::string>("reason"));
  } else if (op == wire::kRegisterClient && c.role == Conn::Role::Unknown) {
    std::string name = m.get<std::string>("client");
    if (name.empty() || clients.count(name)) name += "-" + random_hex(16);
    c.role = Conn::Role::Client;
    c.id = name;
    for (auto& sp : conns)
      if (sp.get() == &c) clients[c.id] = sp;
    handle(AddClient{name});
    comm::Message reply(wire::kRegistered);
    reply.set("client", name);
    reply.set("info", info());
    c.comm->send(std::move(reply), nullptr);
  } else if (op == wire::kSchedulerInfo) {
    comm::Message reply = make_reply(m);
    reply.set("info", info());
    c.comm->send(std::move(reply), nullptr);
  } else if (op == wire::kTaskStream) {
    comm::Message reply = make_reply(m);
    auto limit = std::min<std::uint64_t>(m.get<std::uint64_t>("limit"), wire::kMaxTaskStreamPage);
    reply.set("page", task_stream_since(m.get<std::uint64_t>("since"), static_cast<std::size_t>(limit)));
    c.comm->send(std::move(reply), nullptr);
  } else if (op == wire::kRetireWorkers && c.role == Conn::Role::Client) {
    start_retirement(c, m);
  } else if (op == wire::kRestart && c.role == Conn::Role::Client) {
    start_restart(c, m);
  } else if (op == wire::kAdaptiveTarget) {
    comm::Message reply = make_reply(m);
    reply.set("target", static_cast<std::uint64_t>(state.adaptive_target(m.get<double>("target_duration"))));
    c.comm->send(std::move(reply), nullptr);
  } else if (op == wire::kWhoHas) {
    auto keys = m.get<std::vector<Key>>("keys");
    std::vector<WhoHas> out;
    for (auto& k : keys) out.push_back(WhoHas{k, state.who_has(k), 0});
    comm::Message reply = make_reply(m);
    reply.set("who_has", out);
    c.comm->send(std::move(reply), nullptr);
  } else if ((op == wire::kShuffleJoin || op == wire::kShuffleInputDone || op == wire::kShuffleBarrier) &&
             c.role == Conn::Role::Worker) {
    shuffle_request(c, m);
  } else if (op == wire::kUnregister && c.role == Conn::Role::Worker) {
    c.leaving = true;
  } else if (op == wire::kReply) {
    // nothing is asked of peers yet
  } else {
    throw Error(c.role == Conn::Role::Unknown ? "expected register-worker or register-client first, got '" + op + "'"
                                              : "unknown or misplaced message '" + op + "'");
  }
}

// A nanny gave up restarting its worker `pid` (docs/nanny.md): the tasks that only it could
// run err with the reason (WorkerGivenUp) instead of waiting for a worker that will not come.
void Scheduler::Impl::worker_given_up(Conn& nanny, const std::string& name, int pid, const std::string& reason) {
  std::optional<wire::WorkerHello> last;
  auto of_this_nanny = [&](const Conn& w) {
    return w.hello.pid == pid && w.nanny_pid > 0 && nanny_key(w.hello.host, w.nanny_pid) == nanny.id;
  };
  // Its connection normally closed before its nanny saw it die; if not yet, it is dead anyway.
  for (auto it = workers.begin(); it != workers.end(); ++it) {
    Conn& w = *it->second;
    if (!of_this_nanny(w)) continue;
    last = w.hello;
    close_after_dispatch.push_back(w.comm);
    w.role = Conn::Role::Unknown;  // its close must not remove it again
    const std::string address = it->first;
    workers.erase(it);
    handle(RemoveWorker{address, "its nanny gave it up", false, now()});
    break;
  }
  for (auto d = departed.rbegin(); !last && d != departed.rend(); ++d)
    if (d->nanny_key == nanny.id && d->hello.pid == pid) last = d->hello;
  if (!last) {
    logging::warn("scheduler: nanny {} gave up worker {} (pid {}), which never registered here: {}", nanny.id, name,
                  pid, reason);
    return;
  }
  const std::string why = "worker " + last->add.address + " (" + name + ", pid " + std::to_string(pid) + " on " +
                          last->host + ") was given up by its nanny: " + reason;
  logging::warn("scheduler: {}", why);
  handle(WorkerGivenUp{last->add, why, now()});
}

// A registration for a live worker's address that does not prove it is that worker: the
// peer is told why (a worker that gets this exits with the message) and closed. Logged at
// most once a second (a peer may cause this at will), with the count of those left out.
void Scheduler::Impl::refuse_registration(Conn& c, const std::string& address, const std::string& why) {
  const std::string error = "worker address " + address + " belongs to a live worker; registration " + why +
                            " refused";
  std::size_t suppressed = 0;
  if (refusal_log.allow(suppressed))
    logging::warn("scheduler: {} (from {}){}", error, c.comm->peer_address(),
                  suppressed ? " (" + std::to_string(suppressed) + " more refusals not logged)" : std::string());
  comm::Message reply(wire::kRegistered);
  reply.set("error", error);
  // close() sends what was queued before it: the reply reaches the peer.
  c.comm->send(std::move(reply), nullptr);
  close_after_dispatch.push_back(c.comm);
}

void Scheduler::Impl::on_close(const std::shared_ptr<Conn>& conn, std::exception_ptr reason) {
  const std::string why = reason ? describe_exception(reason) : "connection closed";
  std::lock_guard lock(mu);
  conns.erase(conn);
  if (stopping) return;
  if (conn->restarting) {
    restart_departed(conn);
  } else if (conn->role == Conn::Role::Worker) {
    if (auto it = workers.find(conn->id); it != workers.end() && it->second == conn) {
      workers.erase(it);
      handle(RemoveWorker{conn->id, conn->leaving ? "worker closed" : why, conn->leaving, now()});
      if (conn->nanny_pid > 0) {
        departed.push_back({nanny_key(conn->hello.host, conn->nanny_pid), conn->hello});
        if (departed.size() > kDepartedKept) departed.pop_front();
      }
    }
  } else if (conn->role == Conn::Role::Client) {
    if (auto it = clients.find(conn->id); it != clients.end() && it->second == conn) {
      clients.erase(it);
      handle(RemoveClient{conn->id});
    }
  } else if (conn->role == Conn::Role::Nanny) {
    if (auto it = nannies.find(conn->id); it != nannies.end() && it->second == conn) nannies.erase(it);
  }
  flush();
}

}  // namespace tessera::distributed
