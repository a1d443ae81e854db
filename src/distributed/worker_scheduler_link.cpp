// A worker's connection to its scheduler: the scheduler's messages, batched reports,
// heartbeats and the liveness probe.
#include "worker_impl.hpp"

#include <iomanip>
#include <sstream>

#include "../core/logging.hpp"
#include "nanny.hpp"
#include "util.hpp"
#include "worker_shuffle.hpp"

namespace tessera::distributed {
namespace {

// How long a worker asked to restart may take to close cleanly (its spill files removed) before
// the process ends anyway: a task cannot be interrupted, and restart() should not wait for it.
constexpr std::chrono::seconds kRestartGrace{2};

}  // namespace

bool Worker::Impl::more_work_queued() {
  std::lock_guard q(qmu);
  return !queue.empty();
}

// Queues an event for the scheduler off the state machine (no step); the flusher sends it with
// whatever else is reported within kBatchWindow.
void Worker::Impl::report_later(wire::WorkerToScheduler e) {
  std::lock_guard lock(mu);
  if (!scheduler) return;
  if (outbox.empty()) outbox_since = now();
  outbox.push_back(std::move(e));
  if (!flush_armed) {
    flush_armed = true;
    fcv.notify_one();
  }
}

void Worker::Impl::send_outbox() {  // under mu
  scheduler->send(wire::batch_message(wire::kWorkerEvents, outbox), nullptr);
  outbox.clear();
  flush_armed = false;
}

// Sends reports that step() held back once their batch window has passed.
void Worker::Impl::flush_loop() {
  std::unique_lock lock(mu);
  while (!closing_now()) {
    fcv.wait_for(lock, std::chrono::milliseconds(100), [&] { return flush_armed || closing_now(); });
    if (closing_now()) break;
    if (!flush_armed) continue;
    double due = outbox_since + kBatchWindow;
    while (flush_armed && now() < due && !closing_now())
      fcv.wait_for(lock, std::chrono::duration<double>(due - now()));
    if (flush_armed && !outbox.empty() && scheduler) send_outbox();
    flush_armed = false;
  }
}

void Worker::Impl::on_scheduler_message(const comm::Message& m) {
  last_heard_from_scheduler = now();
  if (m.op == wire::kReply) {
    // A liveness probe's answer (heartbeat_loop: hearing it was the point; its ids are negative,
    // never pending) or the answer to one of this worker's requests.
    if (m.has("id")) scheduler_rpc.complete(m);
  } else if (m.op == wire::kShuffleForget) {
    shuffle->forget(m.get<std::string>("token"), m.get<std::int64_t>("run"), m.get<std::string>("reason"));
  } else if (m.op == wire::kSchedulerEvents) {
    auto events = wire::batch_events<wire::SchedulerToWorker>(m);
    step([&] {
      for (auto& e : events) std::visit([&](auto& x) { handle(WorkerEvent(std::move(x))); }, e);
    });
  } else if (m.op == wire::kPeerGone) {
    peer_gone(m.get<std::string>("address"));
  } else if (m.op == wire::kCloseWorker) {
    // Before the connection's close, which follows at once: that one must not read as a
    // scheduler lost (worker_main would wait for it to come back).
    scheduler_said_close = true;
    close_async("the scheduler asked it to close", false);
  } else if (m.op == wire::kRestartWorker) {
    // Client::restart: this process exits kExitRestartRequested and its nanny starts it
    // again at once. A task still running cannot be stopped, and its result is forgotten
    // anyway: past a short grace the process ends without waiting for it.
    scheduler_said_close = true;
    if (opt.nanny_pid > 0)
      std::thread([] {
        std::this_thread::sleep_for(kRestartGrace);
        std::_Exit(kExitRestartRequested);
      }).detach();
    close_async(opt.nanny_pid > 0 ? kRestartRequestedReason : "the scheduler asked it to close", false);
  } else if (m.op == wire::kRegistered) {
    if (registration_answered.exchange(true)) return;  // answered once; a second is ignored
    if (m.has("error")) {
      // Refused (docs/security.md: a live worker has this address): start() fails with why.
      registered.set_exception(std::make_exception_ptr(
          Error("the scheduler at " + opt.scheduler_address + " refused this worker: " + m.get<std::string>("error"))));
      return;
    }
    {
      std::lock_guard l(cmu);
      if (m.has("secret")) registration_secret = m.get<std::string>("secret");
    }
    registered.set_value();
  } else {
    logging::warn("worker {}: unexpected message '{}' from the scheduler", address, m.op);
  }
}

void Worker::Impl::heartbeat_loop() {
  std::unique_lock l(cmu);
  while (!closing) {
    ccv.wait_for(l, std::chrono::duration<double>(opt.heartbeat_interval));
    if (closing) break;
    l.unlock();
    ProcessUsage u = measure_usage();  // outside the lock: NVML may take a moment
    step([&] {
      outbox.push_back(Heartbeat{address, now(), store.memory_bytes(), store.device_bytes(),
                                 store.stats().device_spilled_bytes, store.spilled_bytes(), fetched_bytes.load(),
                                 served_bytes.load(), u});
      check_memory();
    });
    probe_scheduler();
    l.lock();
  }
}

// Asks the scheduler something it always answers (who has nothing), or gives it up when it
// answered nothing for death_timeout.
void Worker::Impl::probe_scheduler() {
  // Never less than a few heartbeats: the last probe's answer may be one interval old.
  const double limit = std::max(opt.death_timeout, 3 * opt.heartbeat_interval);
  const double silent = now() - last_heard_from_scheduler.load();
  if (silent > limit) {
    std::ostringstream os;
    os << "lost the scheduler: it answered nothing for " << std::fixed << std::setprecision(1) << silent
       << " s (--death-timeout " << opt.death_timeout << " s)";
    close_async(os.str(), false);
    return;
  }
  comm::Message probe(wire::kWhoHas);
  probe.set("id", -(next_probe_id++));  // negative: never one of scheduler_rpc's ids
  probe.set("keys", std::vector<Key>{});
  scheduler->send(std::move(probe), nullptr);
}

}  // namespace tessera::distributed
