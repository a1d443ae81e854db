// SchedulerState: the public class over SchedulerStateImpl, stimulus ids and the queries. The
// machine itself is split by idea: see scheduler_state_impl.hpp.
#include "tessera/distributed/scheduler_state.hpp"

#include <algorithm>

#include "scheduler_state_impl.hpp"

namespace tessera::distributed {

const char* task_status_name(TaskStatus s) noexcept {
  switch (s) {
    case TaskStatus::Released: return "released";
    case TaskStatus::Waiting: return "waiting";
    case TaskStatus::NoWorker: return "no-worker";
    case TaskStatus::Queued: return "queued";
    case TaskStatus::Processing: return "processing";
    case TaskStatus::Memory: return "memory";
    case TaskStatus::Erred: return "erred";
    case TaskStatus::Forgotten: return "forgotten";
  }
  return "?";
}

namespace detail {
namespace {

// Each event's stimulus id names its kind and who sent it.
const std::string* subject(const AddWorker& e) { return &e.address; }
const std::string* subject(const RemoveWorker& e) { return &e.address; }
const std::string* subject(const Heartbeat& e) { return &e.address; }
const std::string* subject(const WorkerStatusChange& e) { return &e.address; }
const std::string* subject(const Tick&) { return nullptr; }
const std::string* subject(const AddClient& e) { return &e.client; }
const std::string* subject(const RemoveClient& e) { return &e.client; }
const std::string* subject(const UpdateGraph& e) { return &e.client; }
const std::string* subject(const TaskFinished& e) { return &e.worker; }
const std::string* subject(const TaskErred& e) { return &e.worker; }
const std::string* subject(const AddKeys& e) { return &e.worker; }
const std::string* subject(const RemoveKeys& e) { return &e.worker; }
const std::string* subject(const MissingData& e) { return &e.worker; }
const std::string* subject(const ReleaseKeys& e) { return &e.client; }
const std::string* subject(const CancelKeys& e) { return &e.client; }
const std::string* subject(const StealResponse& e) { return &e.worker; }
const std::string* subject(const RetryKeys& e) { return &e.client; }
const std::string* subject(const RetireWorkers&) { return nullptr; }
const std::string* subject(const WorkerGivenUp& e) { return &e.worker.address; }
const std::string* subject(const PinTasks&) { return nullptr; }
const std::string* subject(const ForgetResults&) { return nullptr; }

// Indexed by SchedulerEvent's alternatives.
constexpr const char* kEventKinds[] = {
    "add-worker",  "remove-worker", "heartbeat",     "worker-status-change", "tick",
    "add-client",  "remove-client", "update-graph",  "task-finished",        "task-erred",
    "add-keys",    "remove-keys",   "missing-data",  "release-keys",         "cancel-keys",
    "steal-response", "retry-keys",   "retire-workers", "worker-given-up",
    "pin-tasks",   "forget-results"};
static_assert(std::size(kEventKinds) == std::variant_size_v<SchedulerEvent>);

}  // namespace

SchedulerStateImpl::SchedulerStateImpl(SchedulerConfig config) : cfg(config) {
  transition_log.set_capacity(cfg.transition_log_length);
}

void SchedulerStateImpl::begin_event(const char* kind, const std::string* subject) {
  ++event_seq_;
  event_kind_ = kind;
  event_subject_ = subject;
}

const std::string& SchedulerStateImpl::stimulus() {
  if (stimulus_seq_ != event_seq_) {
    stimulus_.assign(event_kind_);
    if (event_subject_ && !event_subject_->empty()) stimulus_.append("-").append(*event_subject_);
    stimulus_.append("-").append(std::to_string(event_seq_));
    stimulus_seq_ = event_seq_;
  }
  return stimulus_;
}

void SchedulerStateImpl::handle(SchedulerEvent& event, std::vector<SchedulerAction>& o) {
  out = &o;
  std::visit(
      [&](auto& e) {
        begin_event(kEventKinds[event.index()], subject(e));
        on(e);
      },
      event);
  if (n_retiring > 0) advance_retirement();
  run();
  flush();
  out = nullptr;
  event_subject_ = nullptr;  // the event dies with this call; its id stays built
  if (cfg.validate) check();
}

}  // namespace detail

using detail::Id;
using detail::kNone;

SchedulerState::SchedulerState(SchedulerConfig config)
    : impl_(std::make_unique<detail::SchedulerStateImpl>(config)) {}
SchedulerState::~SchedulerState() = default;
SchedulerState::SchedulerState(SchedulerState&&) noexcept = default;
SchedulerState& SchedulerState::operator=(SchedulerState&&) noexcept = default;

void SchedulerState::handle(SchedulerEvent event, std::vector<SchedulerAction>& out) {
  impl_->handle(event, out);
}

std::vector<SchedulerAction> SchedulerState::handle(SchedulerEvent event) {
  std::vector<SchedulerAction> out;
  handle(std::move(event), out);
  return out;
}

void SchedulerState::check_invariants() const { impl_->check(); }

std::vector<TransitionRecord> SchedulerState::story(const Key& key) const {
  return impl_->transition_log.story(key);
}

std::optional<TaskStatus> SchedulerState::status(const Key& key) const {
  Id id = impl_->find_task(key);
  if (id == kNone) return std::nullopt;
  return impl_->tasks[id].state;
}

std::vector<std::string> SchedulerState::who_has(const Key& key) const {
  std::vector<std::string> out;
  Id id = impl_->find_task(key);
  if (id == kNone) return out;
  for (Id w : impl_->tasks[id].who_has) out.push_back(impl_->workers[w].address);
  std::sort(out.begin(), out.end());
  return out;
}

std::string SchedulerState::processing_on(const Key& key) const {
  Id id = impl_->find_task(key);
  if (id == kNone || impl_->tasks[id].processing_on == kNone) return {};
  return impl_->workers[impl_->tasks[id].processing_on].address;
}

std::string SchedulerState::exception(const Key& key) const {
  Id id = impl_->find_task(key);
  return id == kNone ? std::string() : impl_->tasks[id].exception;
}

std::size_t SchedulerState::task_count() const noexcept { return impl_->n_alive_tasks; }

std::vector<std::size_t> SchedulerState::status_counts() const {
  std::vector<std::size_t> c(static_cast<std::size_t>(TaskStatus::Forgotten) + 1, 0);
  for (const auto& t : impl_->tasks)
    if (t.state != TaskStatus::Forgotten) c[static_cast<std::size_t>(t.state)]++;
  return c;
}

std::vector<std::pair<std::string, std::vector<std::size_t>>> SchedulerState::status_counts_by_op() const {
  const std::size_t n_states = static_cast<std::size_t>(TaskStatus::Forgotten) + 1;
  // Indexed by op id: no hashing in the loop over (up to millions of) tasks.
  std::vector<std::vector<std::size_t>> by_id(impl_->op_names.size());
  for (const auto& t : impl_->tasks) {
    if (t.state == TaskStatus::Forgotten || t.op < 0) continue;
    auto& c = by_id[static_cast<std::size_t>(t.op)];
    if (c.empty()) c.assign(n_states, 0);
    c[static_cast<std::size_t>(t.state)]++;
  }
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  for (std::size_t i = 0; i < by_id.size(); ++i)
    if (!by_id[i].empty()) out.emplace_back(impl_->op_names[i], std::move(by_id[i]));
  return out;
}

const std::string& SchedulerState::op_of(const Key& key) const {
  static const std::string none;
  Id id = impl_->find_task(key);
  if (id == kNone || impl_->tasks[id].op < 0) return none;
  return impl_->op_names[static_cast<std::size_t>(impl_->tasks[id].op)];
}

std::vector<WorkerSummary> SchedulerState::workers() const {
  std::vector<WorkerSummary> out;
  for (const auto& w : impl_->workers) {
    if (!w.alive) continue;
    WorkerSummary s;
    s.address = w.address;
    s.name = w.name;
    s.nthreads = w.nthreads;
    for (std::size_t r = 0; r < w.res_total.size(); ++r) {
      if (w.res_total[r] <= 0) continue;
      s.resources[impl_->res_names[r]] = w.res_total[r];
      s.resources_used[impl_->res_names[r]] = r < w.res_used.size() ? w.res_used[r] : 0;
    }
    s.memory_limit = w.memory_limit;
    s.memory = w.memory;
    s.nbytes = w.nbytes;
    s.processing = w.processing.size();
    s.has_what = w.has_what.size();
    s.occupancy = w.occupancy;
    s.paused = w.paused;
    s.last_seen = w.last_seen;
    out.push_back(std::move(s));
  }
  return out;
}

std::size_t SchedulerState::worker_count() const noexcept { return impl_->n_alive_workers; }
std::size_t SchedulerState::worker_slot_count() const noexcept { return impl_->workers.size(); }
std::size_t SchedulerState::client_count() const noexcept { return impl_->client_ids.size(); }
std::size_t SchedulerState::queued_count() const noexcept {
  return impl_->root_queue.size() + impl_->constrained_queue.size();
}
const SchedulerConfig& SchedulerState::config() const noexcept { return impl_->cfg; }

}  // namespace tessera::distributed
