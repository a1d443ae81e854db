// The transition log: every task state change with the stimulus that caused it, for story()
// and for the errors that need to say how a task got where it is.
#include <cstdio>

#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

void TransitionLog::record(const Key& key, TaskStatus from, TaskStatus to, std::string_view stimulus, Time time) {
  if (capacity_ == 0) return;
  TransitionRecord* r;
  if (ring_.size() < capacity_) {
    r = &ring_.emplace_back();
  } else {
    r = &ring_[next_];
    next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
  }
  r->key.assign(key);
  r->from = from;
  r->to = to;
  r->stimulus.assign(stimulus);
  r->time = time;
}

std::vector<TransitionRecord> TransitionLog::story(const Key& key) const {
  std::vector<TransitionRecord> out;
  const std::size_t n = ring_.size();
  const std::size_t first = n < capacity_ ? 0 : next_;
  for (std::size_t i = 0; i < n; ++i) {
    const TransitionRecord& r = ring_[(first + i) % n];
    if (r.key == key) out.push_back(r);
  }
  return out;
}

std::string format_story(const Key& key, const std::vector<TransitionRecord>& story) {
  std::string s = "story of " + key + ":";
  if (story.empty()) s += " (no transitions logged)";
  char time[32];
  for (const auto& r : story) {
    std::snprintf(time, sizeof time, "%.6f", r.time);
    s += std::string("\n  ") + task_status_name(r.from) + " -> " + task_status_name(r.to) + "  " + r.stimulus +
         "  t=" + time;
  }
  return s;
}

}  // namespace tessera::distributed::detail
