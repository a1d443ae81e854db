// The transition log: every task state change with the stimulus that caused it, for story()
// and for the errors that need to say how a task got where it is.
#include <cstdio>

#include "scheduler_state_impl.hpp"

namespace tessera::distributed::detail {

void TransitionLog::name_event(std::uint64_t event, std::string_view stimulus) {
  if (capacity_ == 0) return;
  Event& e = events_.push(capacity_);
  e.number = event;
  e.stimulus.assign(stimulus);
}

void TransitionLog::record(const Key& key, TaskStatus from, TaskStatus to, std::uint64_t event, Time time) {
  if (capacity_ == 0) return;
  Change& c = changes_.push(capacity_);
  c.key.assign(key);
  c.from = from;
  c.to = to;
  c.event = event;
  c.time = time;
}

std::vector<TransitionRecord> TransitionLog::story(const Key& key) const {
  std::vector<TransitionRecord> out;
  std::size_t e = 0;  // events are in the ring in the order of their changes: walk both once
  for (std::size_t i = 0; i < changes_.slots.size(); ++i) {
    const Change& c = changes_.at(i);
    if (c.key != key) continue;
    while (e < events_.slots.size() && events_.at(e).number < c.event) ++e;
    const bool named = e < events_.slots.size() && events_.at(e).number == c.event;
    out.push_back(TransitionRecord{c.key, c.from, c.to, named ? events_.at(e).stimulus : std::string("?"), c.time});
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
