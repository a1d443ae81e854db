#include "tessera/graph/graph.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "graph_index.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

// ---- Graph ---------------------------------------------------------------------------------

void Graph::add(Task task) {
  if (task.key.empty()) throw Error("cannot add a task with an empty key");
  auto [it, inserted] = tasks_.try_emplace(task.key);
  if (!inserted) throw Error("graph already defines key '" + task.key + "'");
  it->second = std::move(task);
}

void Graph::set(Task task) {
  if (task.key.empty()) throw Error("cannot add a task with an empty key");
  Key k = task.key;
  tasks_.insert_or_assign(std::move(k), std::move(task));
}

void Graph::merge(const Graph& other) {
  if (this == &other) return;
  tasks_.reserve(tasks_.size() + other.tasks_.size());
  for (const auto& [k, t] : other.tasks_) tasks_.try_emplace(k, t);
}

const Task& Graph::at(const Key& key) const {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) throw Error("key '" + key + "' is not in the graph");
  return it->second;
}

std::vector<Key> Graph::external_keys() const {
  std::unordered_set<std::string_view> seen;
  std::vector<Key> out;
  for (const auto& [k, t] : tasks_)
    for (const auto& a : t.args)
      if (const auto* r = std::get_if<KeyRef>(&a))
        if (!tasks_.count(r->key) && seen.insert(r->key).second) out.push_back(r->key);
  std::sort(out.begin(), out.end());
  return out;
}

void Graph::check_acyclic() const { (void)detail::index_graph(*this, {}, true); }

// ---- Indexing and order --------------------------------------------------------------------

namespace detail {
namespace {

class Indexer {
 public:
  Indexer(const Graph& g, IndexedGraph& out) : g_(g), out_(out) {
    state_.reserve(g.size());
    out_.tasks.reserve(g.size());
    out_.dep_begin.reserve(g.size() + 1);
    out_.arg_begin.reserve(g.size() + 1);
    out_.dep_begin.push_back(0);
    out_.arg_begin.push_back(0);
  }

  const Task* find(const Key& k) const {
    auto it = g_.tasks().find(k);
    return it == g_.tasks().end() ? nullptr : &it->second;
  }

  void note_missing(const Key& k) {
    if (missing_.insert(k).second) out_.missing.push_back(k);
  }

  bool visited(const Task* t) const { return state_.count(t) != 0; }
  std::int64_t position(const Task* t) const { return state_.at(t); }

  /** Iterative post-order DFS from root; assigns positions at post-visit. */
  void visit(const Task* root) {
    if (state_.count(root)) return;
    push(root);
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      if (f.next < f.end) {
        const Task* d = pending_[f.next++];
        if (!d) continue;
        auto it = state_.find(d);
        if (it == state_.end()) {
          push(d);  // invalidates f
        } else if (it->second == kInProgress) {
          throw_cycle(d);
        }
        continue;
      }
      finish(f);
      pending_.resize(f.begin);
      stack_.pop_back();
    }
  }

 private:
  static constexpr std::int64_t kInProgress = -1;
  struct Frame {
    const Task* task;
    std::uint32_t begin, end, next;
  };

  void push(const Task* t) {
    state_.emplace(t, kInProgress);
    const auto begin = static_cast<std::uint32_t>(pending_.size());
    for (const auto& a : t->args)
      if (const auto* r = std::get_if<KeyRef>(&a)) {
        const Task* d = find(r->key);
        if (!d) note_missing(r->key);
        pending_.push_back(d);
      }
    const auto end = static_cast<std::uint32_t>(pending_.size());
    stack_.push_back(Frame{t, begin, end, begin});
  }

  void finish(const Frame& f) {
    const auto pos = static_cast<std::uint32_t>(out_.tasks.size());
    state_[f.task] = pos;
    out_.tasks.push_back(f.task);
    stamp_.push_back(UINT32_MAX);
    std::uint32_t k = f.begin;
    for (const auto& a : f.task->args) {
      if (!std::holds_alternative<KeyRef>(a)) {
        out_.arg_dep.push_back(-1);
        continue;
      }
      const Task* d = pending_[k++];
      if (!d) {
        out_.arg_dep.push_back(-1);  // missing: the caller reports it before running anything
        continue;
      }
      const auto dp = static_cast<std::uint32_t>(state_.find(d)->second);
      out_.arg_dep.push_back(static_cast<std::int32_t>(dp));
      if (stamp_[dp] != pos) {
        stamp_[dp] = pos;
        out_.deps.push_back(dp);
      }
    }
    out_.dep_begin.push_back(static_cast<std::uint32_t>(out_.deps.size()));
    out_.arg_begin.push_back(static_cast<std::uint32_t>(out_.arg_dep.size()));
  }

  [[noreturn]] void throw_cycle(const Task* d) {
    std::string path;
    bool on = false;
    for (const auto& f : stack_) {
      on = on || f.task == d;
      if (on) path += f.task->key + " -> ";
    }
    throw Error("graph has a cycle: " + path + d->key);
  }

  const Graph& g_;
  IndexedGraph& out_;
  std::unordered_map<const Task*, std::int64_t> state_;  // kInProgress or position
  std::unordered_set<Key> missing_;
  std::vector<Frame> stack_;
  std::vector<const Task*> pending_;
  std::vector<std::uint32_t> stamp_;  // stamp_[dep] == pos: dep already listed for pos
};

}  // namespace

IndexedGraph index_graph(const Graph& graph, const std::vector<Key>& roots, bool include_unreachable) {
  IndexedGraph out;
  Indexer ix(graph, out);
  for (const auto& k : roots) {
    if (const Task* t = ix.find(k)) {
      ix.visit(t);
      out.root_pos.push_back(ix.position(t));
    } else {
      ix.note_missing(k);
      out.root_pos.push_back(-1);
    }
  }
  if (include_unreachable && out.size() < graph.size()) {
    // Sinks of what is left first (so each is ordered depth-first like an output), in key order.
    std::unordered_set<const Task*> has_dependent;
    std::vector<const Task*> rest;
    for (const auto& [k, t] : graph.tasks()) {
      if (ix.visited(&t)) continue;
      rest.push_back(&t);
      for (const auto& a : t.args)
        if (const auto* r = std::get_if<KeyRef>(&a))
          if (const Task* d = ix.find(r->key)) has_dependent.insert(d);
    }
    std::sort(rest.begin(), rest.end(), [](const Task* a, const Task* b) { return a->key < b->key; });
    for (const Task* t : rest)
      if (!has_dependent.count(t)) ix.visit(t);
    for (const Task* t : rest) ix.visit(t);  // only cycles are left: this reports one
  }
  std::sort(out.missing.begin(), out.missing.end());
  return out;
}

}  // namespace detail

Graph cull(const Graph& graph, const std::vector<Key>& outputs) {
  const auto ix = detail::index_graph(graph, outputs, false);
  Graph out;
  for (const Task* t : ix.tasks) out.add(*t);
  return out;
}

std::unordered_map<Key, std::int64_t> order(const Graph& graph, const std::vector<Key>& outputs) {
  const auto ix = detail::index_graph(graph, outputs, true);
  std::unordered_map<Key, std::int64_t> out;
  out.reserve(ix.size());
  for (std::size_t p = 0; p < ix.size(); ++p) out.emplace(ix.tasks[p]->key, static_cast<std::int64_t>(p));
  return out;
}

// ---- Linear chains --------------------------------------------------------------------------------

std::vector<std::vector<const Task*>> linear_chains(const Graph& graph, const std::vector<Key>& outputs) {
  const auto ix = detail::index_graph(graph, outputs, true);
  const std::size_t n = ix.size();
  std::unordered_set<std::string_view> output_set(outputs.begin(), outputs.end());

  // Dependents of each task (counted once per dependent task) and the sole one when unique.
  std::vector<std::uint32_t> ndependents(n, 0), sole_dependent(n, UINT32_MAX);
  for (std::uint32_t p = 0; p < n; ++p)
    for (auto i = ix.dep_begin[p]; i < ix.dep_begin[p + 1]; ++i) {
      const auto d = ix.deps[i];
      ++ndependents[d];
      sole_dependent[d] = p;
    }
  auto ndeps = [&](std::uint32_t p) { return ix.dep_begin[p + 1] - ix.dep_begin[p]; };
  // fuses_into_next[p]: p is absorbed by its sole dependent (a link of a linear chain).
  std::vector<char> fuses_into_next(n, 0);
  for (std::uint32_t p = 0; p < n; ++p) {
    if (ndependents[p] != 1 || output_set.count(ix.tasks[p]->key)) continue;
    const auto q = sole_dependent[p];
    if (ndeps(q) == 1 && ix.tasks[q]->annotations == ix.tasks[p]->annotations) fuses_into_next[p] = 1;
  }

  std::vector<std::vector<const Task*>> chains;
  std::vector<std::uint32_t> links;
  for (std::uint32_t p = 0; p < n; ++p) {
    if (fuses_into_next[p]) continue;  // part of the chain its tail ends
    // Walk back from the tail p to the head of its chain.
    links.assign(1, p);
    for (auto q = p; ndeps(q) == 1 && fuses_into_next[ix.deps[ix.dep_begin[q]]];) {
      q = ix.deps[ix.dep_begin[q]];
      links.push_back(q);
    }
    auto& chain = chains.emplace_back();
    chain.reserve(links.size());
    for (auto it = links.rbegin(); it != links.rend(); ++it) chain.push_back(ix.tasks[*it]);
  }
  return chains;
}

}  // namespace tessera
