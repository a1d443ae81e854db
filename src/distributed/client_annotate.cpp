// Annotate scopes: the annotations in force in a thread, given to what it submits.
#include <utility>
#include <vector>

#include "client_impl.hpp"

namespace tessera::distributed {
namespace {

// The annotations of the enclosing Annotate scopes, innermost last.
thread_local std::vector<Annotations> annotate_stack;

Annotations merge(Annotations base, const Annotations& over) {
  if (!over.resources.empty()) base.resources = over.resources;
  if (over.priority != 0) base.priority = over.priority;
  if (over.retries != 0) base.retries = over.retries;
  if (!over.workers.empty()) base.workers = over.workers;
  if (over.allow_other_workers) base.allow_other_workers = true;
  if (over.target != Target::Host) base.target = over.target;
  return base;
}

}  // namespace

void apply_annotate_scope(Task& t, const Annotations& scope) {
  if (scope == Annotations{}) return;
  t.annotations = merge(scope, t.annotations);
}

Annotate::Annotate(Annotations annotations) { annotate_stack.push_back(std::move(annotations)); }
Annotate::~Annotate() { annotate_stack.pop_back(); }
Annotations Annotate::current() {
  Annotations a;
  for (const auto& s : annotate_stack) a = merge(a, s);
  return a;
}

}  // namespace tessera::distributed
