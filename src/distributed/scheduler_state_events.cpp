// The scheduler's event handlers, one per SchedulerEvent (stealing's in
// scheduler_state_stealing.cpp): each updates the records and recommends transitions.
#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_set>

#include "tessera/graph/graph.hpp"
#include "tessera/ops/registry.hpp"
#include "scheduler_graph_check.hpp"
#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

void SchedulerStateImpl::on(AddWorker& e) {
  now = std::max(now, e.now);
  if (find_worker(e.address) != kNone) {
    log("worker", "worker " + e.address + " registered twice; replacing the old one");
    RemoveWorker r{e.address, "re-registered", true, e.now};
    on(r);
  }
  // A departed worker's slot is reused (remove_worker left nothing referring to it), so a
  // long-running scheduler holds records for its live workers only, not every worker ever seen.
  Id wid;
  if (free_worker_ids.empty()) {
    wid = static_cast<Id>(workers.size());
    workers.emplace_back();
  } else {
    wid = free_worker_ids.back();
    free_worker_ids.pop_back();
    workers[wid] = WorkerRec{};
  }
  WorkerRec& w = workers[wid];
  w.address = e.address;
  w.name = e.name.empty() ? e.address : e.name;
  w.nthreads = std::max(1, e.nthreads);
  w.memory_limit = e.memory_limit;
  w.last_seen = e.now;
  w.alive = true;
  for (const auto& [r, amount] : e.resources) {
    auto rid = intern(res_ids, res_names, r);
    if (w.res_total.size() <= static_cast<std::size_t>(rid)) w.res_total.resize(rid + 1, 0);
    w.res_total[rid] = amount;
  }
  w.res_used.assign(w.res_total.size(), 0);
  for (const auto& op : e.ops) {
    auto oid = intern(op_ids, op_names, op);
    if (w.ops.size() <= static_cast<std::size_t>(oid)) w.ops.resize(oid + 1, 0);
    if (!w.ops[oid]) {
      w.ops[oid] = 1;
      op_alive_workers[oid]++;
    }
  }
  worker_by_address[w.address] = wid;
  worker_by_name[w.name] = wid;
  n_alive_workers++;
  load_insert(wid);
  log("worker", "add worker " + w.address + " (" + std::to_string(w.nthreads) + " threads)");
  retry_no_worker();
  fill_pending.push_back(wid);
}

void SchedulerStateImpl::retry_no_worker() {
  for (Id id : no_worker) recommend(id, TaskStatus::Processing);
}

// The tasks left waiting for a worker that this one could have run: no live worker can (that
// is what no-worker means) and this one is not coming back, so they err now with the nanny's
// reason instead of waiting for ever. Tasks that were running on it when it died were counted
// against it (remove_worker) and are among them unless KilledWorker already failed them.
void SchedulerStateImpl::on(WorkerGivenUp& e) {
  now = std::max(now, e.now);
  // Its capabilities as a record the checks can read; never stored, so the ids are only looked
  // up (an op or resource no task names cannot matter).
  WorkerRec gone;
  gone.address = e.worker.address;
  gone.name = e.worker.name.empty() ? e.worker.address : e.worker.name;
  gone.nthreads = std::max(1, e.worker.nthreads);
  gone.alive = true;
  for (const auto& [r, amount] : e.worker.resources) {
    auto it = res_ids.find(r);
    if (it == res_ids.end()) continue;
    const auto rid = static_cast<std::size_t>(it->second);
    if (gone.res_total.size() <= rid) gone.res_total.resize(rid + 1, 0);
    gone.res_total[rid] = amount;
  }
  for (const auto& op : e.worker.ops) {
    auto it = op_ids.find(op);
    if (it == op_ids.end()) continue;
    const auto oid = static_cast<std::size_t>(it->second);
    if (gone.ops.size() <= oid) gone.ops.resize(oid + 1, 0);
    gone.ops[oid] = 1;
  }
  log("worker", "worker " + gone.address + " given up: " + e.reason);
  const std::vector<Id> waiting(no_worker.begin(), no_worker.end());
  for (Id id : waiting) {
    TaskRec& t = tasks[id];
    if (!can_run(t, gone, t.restricted && !t.loose)) continue;
    t.exception = "task " + t.key + " has no worker: " + e.reason;
    t.traceback.clear();
    t.blame = t.key;
    log("task", t.exception);
    recommend(id, TaskStatus::Erred, id);
  }
}

void SchedulerStateImpl::on(RemoveWorker& e) {
  now = std::max(now, e.now);
  Id wid = find_worker(e.address);
  if (wid == kNone) return;
  remove_worker(wid, e.reason, e.safe);
}

void SchedulerStateImpl::remove_worker(Id wid, const std::string& reason, bool safe) {
  WorkerRec& w = workers[wid];
  log("worker", "remove worker " + w.address + ": " + reason);
  load_erase(wid);
  w.alive = false;
  if (w.retiring) {
    w.retiring = false;
    n_retiring--;
  }
  worker_by_address.erase(w.address);
  if (auto it = worker_by_name.find(w.name); it != worker_by_name.end() && it->second == wid)
    worker_by_name.erase(it);
  n_alive_workers--;
  for (std::size_t oid = 0; oid < w.ops.size(); ++oid)
    if (w.ops[oid]) op_alive_workers[oid]--;
  std::vector<Id> processing = w.processing;
  for (Id id : processing) {
    TaskRec& t = tasks[id];
    unassign(id, false);
    if (!safe) t.suspicious++;
    if (!safe && t.suspicious >= cfg.allowed_failures) {
      t.exception = "KilledWorker: task " + t.key + " died on " + std::to_string(t.suspicious) +
                    " workers (last: " + w.address + ")";
      t.traceback.clear();
      t.blame = t.key;
      log("task", t.exception);
      recommend(id, TaskStatus::Erred, id);
    } else {
      recommend(id, TaskStatus::Released);
    }
  }
  for (Id id : w.has_what) {
    TaskRec& t = tasks[id];
    std::erase(t.who_has, wid);
    if (t.who_has.empty() && t.state == TaskStatus::Memory) recommend(id, TaskStatus::Released);
  }
  w.has_what.clear();
  w.nbytes = 0;
  w.processing.clear();
  w.evacuated.clear();
  w.occupancy = 0;
  free_batch.erase(wid);
  // Nothing may refer to the slot once it is reused: steals in flight toward this worker are
  // forgotten (the victim's answer re-places the task: on(StealResponse)), and so are copies
  // asked of it for a retirement (asked of another at the next Tick).
  for (const WorkerRec& v : workers)
    if (v.alive)
      for (Id id : v.processing)
        if (tasks[id].steal_thief == wid) tasks[id].steal_thief = kNone;
  w.steal_incoming = 0;
  std::erase_if(replica_requests, [&](const auto& r) { return r.second.first == wid; });
  std::erase(fill_pending, wid);
  std::unordered_set<Id>().swap(w.has_what);  // its buckets too
  std::vector<Id>().swap(w.processing);
  free_worker_ids.push_back(wid);
}

void SchedulerStateImpl::on(Heartbeat& e) {
  now = std::max(now, e.now);
  Id wid = find_worker(e.address);
  if (wid == kNone) {
    log("worker", "heartbeat from unknown worker " + e.address);
    return;
  }
  WorkerRec& w = workers[wid];
  w.last_seen = std::max(w.last_seen, e.now);
  w.memory = e.memory;
  if (w.silent) {
    // Heard from again (a stopped process continued): it takes tasks again, as on resume.
    w.silent = false;
    load_insert(wid);
    log("worker", "worker " + w.address + " is heard from again");
    retry_no_worker();
    fill_pending.push_back(wid);
  }
}

void SchedulerStateImpl::on(WorkerStatusChange& e) {
  Id wid = find_worker(e.address);
  if (wid == kNone) return;
  WorkerRec& w = workers[wid];
  if (w.paused == e.paused) return;
  load_erase(wid);
  w.paused = e.paused;
  load_insert(wid);
  log("worker", "worker " + w.address + (e.paused ? " paused" : " resumed"));
  if (!e.paused) {
    retry_no_worker();
    fill_pending.push_back(wid);
  }
}

void SchedulerStateImpl::on(Tick& e) {
  now = std::max(now, e.now);
  std::vector<Id> dead;
  for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
    WorkerRec& w = workers[wid];
    if (!w.alive) continue;
    if (now - w.last_seen > cfg.worker_ttl) {
      dead.push_back(wid);
    } else if (cfg.worker_silent > 0 && !w.silent && now - w.last_seen > cfg.worker_silent) {
      // Stopped, hung or cut off: tasks sent to it would wait until worker_ttl; the others
      // get them instead.
      load_erase(wid);
      w.silent = true;
      log("worker", "worker " + w.address + " silent for " + std::to_string(now - w.last_seen) +
                        " s: no new tasks until it is heard from");
      evacuate_silent(wid);
    }
  }
  for (Id wid : dead) remove_worker(wid, "no heartbeat for " + std::to_string(now - workers[wid].last_seen) + " s", false);
  if (cfg.work_stealing) balance();
}

void SchedulerStateImpl::on(AddClient& e) { client_id(e.client); }

void SchedulerStateImpl::on(RemoveClient& e) {
  auto it = client_ids.find(e.client);
  if (it == client_ids.end()) return;
  Id cid = it->second;
  std::vector<Id> wants(clients[cid].wants.begin(), clients[cid].wants.end());
  std::sort(wants.begin(), wants.end());
  for (Id id : wants) drop_want(id, cid);
  log("client", "remove client " + e.client + " (released " + std::to_string(wants.size()) + " keys)");
  // No task names the client any more (drop_want took it out of every who_wants): its record
  // and name go, and the slot is reused, so a long-running scheduler holds only live clients.
  client_ids.erase(it);
  clients[cid] = ClientRec{};
  free_client_ids.push_back(cid);
}

void SchedulerStateImpl::drop_want(Id id, Id cid) {
  TaskRec& t = tasks[id];
  std::erase(t.who_wants, cid);
  clients[cid].wants.erase(id);
  if (needed(t)) return;
  switch (t.state) {
    case TaskStatus::Released:
    case TaskStatus::Erred:
      if (forgettable(t)) recommend(id, TaskStatus::Forgotten);
      break;
    case TaskStatus::Forgotten: break;
    default: recommend(id, TaskStatus::Released);
  }
}

void SchedulerStateImpl::on(UpdateGraph& e) {
  now = std::max(now, e.now);
  // Checked whole before any of it is taken: a graph the transitions could not settle (an
  // unknown dependency, a cycle) or beyond the limits is refused to its client alone.
  std::string refused = check_graph(e, [&](const Key& k) { return find_task(k) != kNone; });
  if (!refused.empty()) {
    log("client", "graph of " + std::to_string(e.tasks.size()) + " tasks from " + e.client + " refused: " + refused);
    for (const Key& k : e.keys) out->push_back(KeyErred{e.client, k, k, "the graph was refused: " + refused, ""});
    return;
  }
  Id cid = client_id(e.client);
  std::int64_t gen = ++generation;
  // Without dependencies (client.map) submission order is graph order; otherwise order the
  // graph here unless the client did.
  bool flat = e.order.empty();
  if (flat)
    for (const auto& t : e.tasks)
      if (!t.dependencies().empty()) {
        flat = false;
        break;
      }
  if (!flat && e.order.empty() && !e.tasks.empty()) {
    Graph g;
    for (const auto& t : e.tasks) g.set(t);
    e.order = tessera::order(g, e.keys);
  }
  std::vector<Id> fresh;
  fresh.reserve(e.tasks.size());
  std::int64_t position = -1;
  for (auto& task : e.tasks) {
    ++position;
    if (find_task(task.key) != kNone) continue;
    Id id;
    if (!free_ids.empty()) {
      id = free_ids.back();
      free_ids.pop_back();
    } else {
      id = static_cast<Id>(tasks.size());
      tasks.emplace_back();
    }
    TaskRec& t = tasks[id];
    t.key = task.key;
    t.state = TaskStatus::Released;  // created, not a transition: a story starts after this
    const Annotations& a = task.annotations;
    // Device tasks need a worker with a GPU: such workers advertise "<op>@device" as well.
    t.op = a.target == Target::Device ? intern(op_ids, op_names, task.op + kDeviceOpSuffix)
                                      : intern(op_ids, op_names, task.op);
    std::int64_t ord = position;
    if (!flat) {
      auto it = e.order.find(task.key);
      ord = it == e.order.end() ? 0 : it->second;
    }
    // Higher user priorities run first, so the key holds its negation; INT_MIN has none in an
    // int, and a client may send it (found by fuzz/state_events_fuzz.cpp): it ranks last, as
    // INT_MIN + 1 does.
    const std::int32_t user =
        a.priority == std::numeric_limits<std::int32_t>::min() ? std::numeric_limits<std::int32_t>::max() : -a.priority;
    t.priority = Priority{user, gen, ord};
    t.retries = a.retries;
    t.suspicious = 0;
    t.restricted = !a.workers.empty();
    t.loose = a.allow_other_workers;
    t.pinned = false;
    for (const auto& [r, amount] : a.resources)
      if (amount > 0) t.resources.push_back({intern(res_ids, res_names, r), amount});
    t.spec = std::make_shared<const Task>(std::move(task));
    t.n_dependents = 0;
    t.waiters = 0;
    t.waiting_on = 0;
    t.registered = false;
    t.nbytes = 0;
    key_ids.emplace(t.key, id);
    n_alive_tasks++;
    fresh.push_back(id);
  }
  for (Id id : fresh) {
    TaskRec& t = tasks[id];
    std::string missing;
    for (const Key& dk : t.spec->dependencies()) {
      Id did = find_task(dk);
      if (did == kNone) {
        missing = dk;
        continue;
      }
      t.deps.push_back(did);
      tasks[did].dependents.push_back({id, t.inc});
      tasks[did].n_dependents++;
    }
    t.root = t.deps.empty() && t.resources.empty() && !t.restricted;
    if (!missing.empty()) {
      t.exception = "dependency " + missing + " of task " + t.key + " is not known to the scheduler";
      t.blame = t.key;
      recommend(id, TaskStatus::Erred, id);
    }
  }
  for (const Key& k : e.keys) {
    Id id = find_task(k);
    if (id == kNone) {
      KeyErred err{e.client, k, k, "task " + k + " failed: key is not defined in the graph", ""};
      out->push_back(std::move(err));
      continue;
    }
    TaskRec& t = tasks[id];
    if (std::find(t.who_wants.begin(), t.who_wants.end(), cid) == t.who_wants.end()) t.who_wants.push_back(cid);
    clients[cid].wants.insert(id);
    if (t.state == TaskStatus::Memory) out->push_back(KeyInMemory{e.client, t.key, t.nbytes, t.type});
    else if (t.state == TaskStatus::Erred) out->push_back(erred_message(t, cid));
  }
  if (n_alive_workers > 0) {
    for (Id id : fresh) {
      TaskRec& t = tasks[id];
      if (op_alive_workers[t.op] > 0 || !t.exception.empty()) continue;
      const std::string& name = op_names[t.op];
      if (name.ends_with(kDeviceOpSuffix))
        t.exception = "no worker with a GPU can run operation '" +
                      name.substr(0, name.size() - std::string_view(kDeviceOpSuffix).size()) + "' (task " + t.key +
                      " targets the device)";
      else
        t.exception = "no worker can run operation '" + name + "' (task " + t.key + ")";
      t.blame = t.key;
      out->push_back(OperationUnavailable{e.client, t.key, op_names[t.op], t.exception});
      log("task", t.exception);
      recommend(id, TaskStatus::Erred, id);
    }
  }
  run();  // errors settle before anything is scheduled
  for (const Key& k : e.keys) {
    Id id = find_task(k);
    if (id != kNone && tasks[id].state == TaskStatus::Released) recommend(id, TaskStatus::Waiting);
  }
  run();
  for (Id id : fresh)
    if (tasks[id].state != TaskStatus::Forgotten && forgettable(tasks[id])) recommend(id, TaskStatus::Forgotten);
}

void SchedulerStateImpl::on(TaskFinished& e) {
  Id wid = find_worker(e.worker);
  Id id = find_task(e.key);
  if (wid == kNone) return;
  if (!workers[wid].evacuated.empty() && workers[wid].evacuated.erase(e.key)) {
    // Finished by a worker that was silent, after its task went elsewhere: the FreeKeys it was
    // sent drops the result there, so it is not a copy to count on.
    free_key_on(wid, e.key);
    log("task", "result of " + e.key + " from " + e.worker + " dropped: taken from it while it was silent");
    return;
  }
  if (id == kNone) {
    free_key_on(wid, e.key);
    return;
  }
  TaskRec& t = tasks[id];
  WorkerRec& w = workers[wid];
  if (t.state == TaskStatus::Memory) {
    add_replica(id, wid);
    return;
  }
  if (t.state != TaskStatus::Processing) {
    free_key_on(wid, e.key);
    return;
  }
  if (t.processing_on != wid) unassign(id, true);  // a stale assignment elsewhere
  else unassign(id, false);
  if (e.stop > e.start && t.op >= 0) {
    double d = e.stop - e.start;
    auto& n = op_samples[t.op];
    double& mean = op_duration[t.op];
    mean = n == 0 ? d : mean + (d - mean) / static_cast<double>(std::min<std::int64_t>(n + 1, 20));
    n++;
  }
  t.nbytes = e.nbytes;
  t.type = e.type;
  set_state(id, TaskStatus::Memory);
  t.who_has.push_back(wid);
  w.has_what.insert(id);
  w.nbytes += t.nbytes;
  unregister_waiter(t);
  for_dependents(t, [&](Id did, TaskRec& d) {
    if (d.state == TaskStatus::Waiting && --d.waiting_on == 0) recommend(did, TaskStatus::Processing);
  });
  for (Id c : t.who_wants) out->push_back(KeyInMemory{clients[c].name, t.key, t.nbytes, t.type});
  if (!needed(t)) recommend(id, TaskStatus::Released);
}

void SchedulerStateImpl::add_replica(Id id, Id wid) {
  TaskRec& t = tasks[id];
  if (std::find(t.who_has.begin(), t.who_has.end(), wid) != t.who_has.end()) return;
  t.who_has.push_back(wid);
  workers[wid].has_what.insert(id);
  workers[wid].nbytes += t.nbytes;
}

void SchedulerStateImpl::on(TaskErred& e) {
  Id wid = find_worker(e.worker);
  Id id = find_task(e.key);
  if (wid == kNone || id == kNone) return;
  TaskRec& t = tasks[id];
  if (t.state != TaskStatus::Processing || t.processing_on != wid) return;
  if (t.retries > 0) {
    t.retries--;
    log("task", "task " + t.key + " failed on " + e.worker + ", retrying (" + std::to_string(t.retries) +
                    " retries left): " + e.exception);
    recommend(id, TaskStatus::Released);
    return;
  }
  t.exception = e.exception;
  t.traceback = e.traceback;
  t.blame = t.key;
  recommend(id, TaskStatus::Erred, id);
}

void SchedulerStateImpl::on(AddKeys& e) {
  Id wid = find_worker(e.worker);
  if (wid == kNone) return;
  for (auto& [k, nbytes] : e.keys) {
    Id id = find_task(k);
    if (id != kNone && tasks[id].state == TaskStatus::Memory) add_replica(id, wid);
    else free_key_on(wid, k);
  }
}

void SchedulerStateImpl::lose_replica(Id id, Id wid) {
  TaskRec& t = tasks[id];
  auto it = std::find(t.who_has.begin(), t.who_has.end(), wid);
  if (it == t.who_has.end()) return;
  t.who_has.erase(it);
  workers[wid].has_what.erase(id);
  workers[wid].nbytes -= t.nbytes;
  if (t.who_has.empty() && t.state == TaskStatus::Memory) recommend(id, TaskStatus::Released);
}

void SchedulerStateImpl::on(RemoveKeys& e) {
  Id wid = find_worker(e.worker);
  if (wid == kNone) return;
  for (const Key& k : e.keys)
    if (Id id = find_task(k); id != kNone) lose_replica(id, wid);
}

void SchedulerStateImpl::on(MissingData& e) {
  Id id = find_task(e.key);
  if (id == kNone) return;
  log("task", e.worker + " could not get " + e.key + " from " + e.errant_worker);
  if (Id errant = find_worker(e.errant_worker); errant != kNone) lose_replica(id, errant);
  // Re-send the dependents waiting on this worker with fresh locations.
  Id wid = find_worker(e.worker);
  for_dependents(tasks[id], [&](Id did, TaskRec& d) {
    if (d.state == TaskStatus::Processing && d.processing_on == wid) recommend(did, TaskStatus::Released);
  });
}

void SchedulerStateImpl::on(ReleaseKeys& e) {
  auto it = client_ids.find(e.client);
  if (it == client_ids.end()) return;
  for (const Key& k : e.keys)
    if (Id id = find_task(k); id != kNone) drop_want(id, it->second);
}

void SchedulerStateImpl::on(CancelKeys& e) {
  auto it = client_ids.find(e.client);
  if (it == client_ids.end()) return;
  for (const Key& k : e.keys) {
    Id id = find_task(k);
    if (id == kNone) continue;
    std::vector<Id> drop = e.force ? tasks[id].who_wants : std::vector<Id>{it->second};
    for (Id c : drop) {
      if (std::find(tasks[id].who_wants.begin(), tasks[id].who_wants.end(), c) == tasks[id].who_wants.end()) continue;
      out->push_back(KeyCancelled{clients[c].name, k});
      drop_want(id, c);
    }
  }
}

void SchedulerStateImpl::on(RetryKeys& e) {
  std::vector<Id> stack, roots;
  std::unordered_set<Id> seen;
  for (const Key& k : e.keys)
    if (Id id = find_task(k); id != kNone && tasks[id].state == TaskStatus::Erred) {
      stack.push_back(id);
      roots.push_back(id);
    }
  std::vector<Id> reset;
  while (!stack.empty()) {
    Id id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    reset.push_back(id);
    for (Id d : tasks[id].deps)
      if (tasks[d].state == TaskStatus::Erred) stack.push_back(d);
  }
  for (Id id : reset) {
    TaskRec& t = tasks[id];
    set_state(id, TaskStatus::Released);
    t.exception.clear();
    t.traceback.clear();
    t.blame.clear();
    t.suspicious = 0;
    t.retries = t.spec->annotations.retries;
  }
  for (Id id : reset)
    for_dependents(tasks[id], [&](Id did, TaskRec& d) {
      if (d.state == TaskStatus::Erred && !seen.count(did)) recommend(did, TaskStatus::Released);
    });
  for (Id id : reset) post_release(id);
}

void SchedulerStateImpl::flush() {
  if (free_batch.empty()) return;
  std::vector<Id> wids;
  for (auto& [wid, keys] : free_batch) wids.push_back(wid);
  std::sort(wids.begin(), wids.end());
  for (Id wid : wids) {
    auto& keys = free_batch[wid];
    if (workers[wid].alive && !keys.empty()) out->push_back(FreeKeys{workers[wid].address, std::move(keys)});
  }
  free_batch.clear();
}

}  // namespace tessera::distributed::detail
