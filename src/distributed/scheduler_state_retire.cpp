// Graceful retirement (Dask's retire_workers) and the adaptive target (Dask's
// Scheduler.adaptive_target): what a cluster manager asks before it removes or adds workers.
// See docs/distributed.md, "Adaptive scaling and retiring workers".
#include <algorithm>
#include <cmath>
#include <tuple>

#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

namespace {
// Seconds after which a copy asked of a recipient that never reported it is asked again.
constexpr double kReplicaRetry = 10;
}  // namespace

void SchedulerStateImpl::on(RetireWorkers& e) {
  now = std::max(now, e.now);
  for (const auto& a : e.addresses) {
    Id wid = find_worker(a);
    if (wid == kNone) continue;
    WorkerRec& w = workers[wid];
    if (w.retiring || w.closing) continue;
    load_erase(wid);
    w.retiring = true;
    n_retiring++;
    log("worker", "retiring worker " + w.address + " (" + std::to_string(w.has_what.size()) + " keys, " +
                      std::to_string(w.processing.size()) + " tasks processing)");
  }
}

void SchedulerStateImpl::stop_retiring(Id wid, const std::string& why) {
  WorkerRec& w = workers[wid];
  w.retiring = false;
  n_retiring--;
  load_insert(wid);
  log("worker", "worker " + w.address + " is not retired: " + why);
  retry_no_worker();
  fill_pending.push_back(wid);
}

void SchedulerStateImpl::advance_retirement() {
  // Recipients are chosen by the bytes they hold plus what this pass already sent their way,
  // so that one retiring worker's data spreads over the others.
  std::unordered_map<Id, std::size_t> planned;
  std::unordered_map<Id, std::vector<WhoHas>> asks;
  auto recipient = [&](Id from) {
    Id best = kNone;
    std::size_t best_bytes = 0;
    for (Id wid = 0; wid < static_cast<Id>(workers.size()); ++wid) {
      const WorkerRec& w = workers[wid];
      if (wid == from || !w.alive || w.retiring || w.closing || w.paused || w.silent) continue;
      std::size_t bytes = w.nbytes + planned[wid];
      if (best == kNone || bytes < best_bytes) {
        best = wid;
        best_bytes = bytes;
      }
    }
    return best;
  };
  for (Id wid = 0; wid < static_cast<Id>(workers.size()) && n_retiring > 0; ++wid) {
    WorkerRec& w = workers[wid];
    if (!w.alive || !w.retiring) continue;
    // Tasks it is running finish first (it gets no new ones); their results move like the rest.
    bool settled = w.processing.empty();
    bool stuck = false;
    for (Id id : w.has_what) {
      const TaskRec& t = tasks[id];
      bool elsewhere = std::any_of(t.who_has.begin(), t.who_has.end(), [&](Id h) {
        return h != wid && workers[h].alive && !workers[h].retiring && !workers[h].closing;
      });
      if (elsewhere) {
        replica_requests.erase(id);
        continue;
      }
      settled = false;
      if (auto it = replica_requests.find(id); it != replica_requests.end()) {
        const WorkerRec& to = workers[it->second.first];
        if (to.alive && !to.retiring && !to.closing && now - it->second.second < kReplicaRetry) continue;
      }
      Id to = recipient(wid);
      if (to == kNone) {
        stuck = true;
        break;
      }
      replica_requests[id] = {to, now};
      planned[to] += t.nbytes;
      asks[to].push_back(WhoHas{t.key, {w.address}, t.nbytes});
    }
    if (stuck) {
      stop_retiring(wid, "no other worker can take the data only it holds");
      continue;
    }
    if (!settled) continue;
    w.retiring = false;
    n_retiring--;
    w.closing = true;
    log("worker", "retired worker " + w.address + ": closing it");
    out->push_back(CloseWorker{w.address, "retired"});
  }
  for (auto& [to, who_has] : asks) out->push_back(AcquireReplicas{workers[to].address, std::move(who_has)});
  if (n_retiring == 0) replica_requests.clear();
}

std::vector<std::string> SchedulerStateImpl::workers_to_close(std::size_t n) const {
  // Idle workers first, then those holding the least data: the cheapest to retire.
  std::vector<std::tuple<bool, std::size_t, std::string>> order;
  for (const WorkerRec& w : workers)
    if (w.alive && !w.retiring && !w.closing) order.emplace_back(!w.processing.empty(), w.nbytes, w.address);
  std::sort(order.begin(), order.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < order.size() && i < n; ++i) out.push_back(std::get<2>(order[i]));
  return out;
}

std::size_t SchedulerStateImpl::adaptive_target(double target_duration) const {
  if (!(target_duration > 0)) target_duration = 5;
  // Work held on the scheduler (queued, and runnable with no worker that fits), at each
  // operation's measured duration: the first 100 tasks looked at, the rest assumed alike.
  double queued_occupancy = 0;
  std::size_t seen = 0;
  auto add = [&](Id id) {
    if (seen >= 100) return;
    queued_occupancy += duration_estimate(tasks[id]);
    seen++;
  };
  for (const auto& [p, id] : root_queue) add(id);
  for (const auto& [p, id] : constrained_queue) add(id);
  for (Id id : no_worker) add(id);
  const std::size_t ready = root_queue.size() + constrained_queue.size() + no_worker.size();
  if (seen > 0 && ready > seen) queued_occupancy *= static_cast<double>(ready) / static_cast<double>(seen);

  double occupancy = 0, threads = 0;
  std::size_t processing = 0, n = 0, busy = 0;
  std::size_t limit = 0, used = 0;
  for (const WorkerRec& w : workers) {
    if (!w.alive || w.closing) continue;
    n++;
    occupancy += w.occupancy;
    threads += w.nthreads;
    processing += w.processing.size();
    busy += !w.processing.empty();
    limit += w.memory_limit;
    used += w.nbytes;
  }
  // Threads wanted to finish the known work in target_duration; a few long tasks ask for no
  // more threads than there are tasks.
  double cpu = std::ceil((occupancy + queued_occupancy) / target_duration);
  cpu = std::min(cpu, static_cast<double>(ready + processing));
  // Threads to workers, at this cluster's threads per worker (one per worker with none yet).
  if (n > 0 && threads > 0) cpu = std::ceil(cpu / threads * static_cast<double>(n));
  if (ready > 0) cpu = std::max(cpu, 1.0);
  // Memory: the data held above 60% of the workers' limits asks for twice the workers.
  std::size_t memory = (limit > 0 && static_cast<double>(used) > 0.6 * static_cast<double>(limit)) ? 2 * n : 0;
  std::size_t target = std::max(static_cast<std::size_t>(cpu), memory);
  if (target >= n) return target;
  // Fewer workers: keep the busy ones, and enough to hold the data under 60% of their limits
  // (at least one while any data is held).
  std::size_t keep = busy;
  if (used > 0) {
    std::size_t hold = 1;
    if (limit > 0) {
      double per_worker = static_cast<double>(limit) / static_cast<double>(n);
      hold = static_cast<std::size_t>(std::ceil(static_cast<double>(used) / (0.6 * per_worker)));
    }
    keep = std::max(keep, hold);
  }
  return std::min(n, std::max(target, keep));
}

}  // namespace tessera::distributed::detail

namespace tessera::distributed {

std::vector<std::string> SchedulerState::workers_to_close(std::size_t n) const { return impl_->workers_to_close(n); }

std::size_t SchedulerState::adaptive_target(double target_duration) const {
  return impl_->adaptive_target(target_duration);
}

bool SchedulerState::retiring(const std::string& address) const {
  detail::Id wid = impl_->find_worker(address);
  return wid != detail::kNone && (impl_->workers[wid].retiring || impl_->workers[wid].closing);
}

}  // namespace tessera::distributed
