#include "distributed/scheduler_graph_check.hpp"

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace tessera::distributed {
namespace {

/** A key as a message shows it: quoted, and cut short when long. */
std::string shown(std::string_view key) {
  constexpr std::size_t kShown = 80;
  std::string s = "'";
  s += key.substr(0, kShown);
  if (key.size() > kShown) s += "...";
  return s + "'";
}

std::string key_too_long(std::string_view what, std::string_view key, const GraphLimits& limits) {
  return std::string(what) + " " + shown(key) + " is a key of " + std::to_string(key.size()) + " bytes (at most " +
         std::to_string(limits.max_key_bytes) + ")";
}

}  // namespace

std::string check_graph(const UpdateGraph& graph, const std::function<bool(const Key&)>& known,
                        const GraphLimits& limits) {
  if (graph.tasks.size() > limits.max_tasks)
    return "a graph of " + std::to_string(graph.tasks.size()) + " tasks (at most " + std::to_string(limits.max_tasks) +
           " in one submit)";
  for (const Key& k : graph.keys)
    if (k.size() > limits.max_key_bytes) return key_too_long("the wanted key", k, limits);

  // The tasks the scheduler will take (the first of a key; one it already holds is kept as it is).
  std::unordered_map<std::string_view, std::uint32_t> index;
  index.reserve(graph.tasks.size());
  std::vector<const Task*> fresh;
  fresh.reserve(graph.tasks.size());
  for (const Task& t : graph.tasks) {
    if (t.key.size() > limits.max_key_bytes) return key_too_long("task", t.key, limits);
    if (index.count(t.key) || known(t.key)) continue;
    index.emplace(t.key, static_cast<std::uint32_t>(fresh.size()));
    fresh.push_back(&t);
  }

  // Every dependency is in the graph or held by the scheduler; edges within the graph are kept
  // for the cycle search.
  std::vector<std::vector<std::uint32_t>> edges(fresh.size());
  for (std::uint32_t i = 0; i < fresh.size(); ++i) {
    const Task& t = *fresh[i];
    // Counted before dependencies() takes out the repeats, which costs a set of them.
    std::size_t refs = 0;
    for (const auto& a : t.args) refs += std::holds_alternative<KeyRef>(a) ? 1 : 0;
    if (refs > limits.max_dependencies)
      return "task " + shown(t.key) + " has " + std::to_string(refs) + " dependencies (at most " +
             std::to_string(limits.max_dependencies) + ")";
    std::vector<Key> deps = t.dependencies();
    for (const Key& d : deps) {
      if (d.size() > limits.max_key_bytes) return key_too_long("a dependency of task " + shown(t.key) + ",", d, limits);
      auto it = index.find(d);
      if (it != index.end()) {
        edges[i].push_back(it->second);
      } else if (!known(d)) {
        return "dependency " + shown(d) + " of task " + shown(t.key) +
               " is neither in the graph nor known to the scheduler";
      }
    }
  }

  // No cycle: an iterative depth-first search (a graph may be millions of tasks deep), colouring
  // each task unvisited (0), on the current path (1) or done (2).
  std::vector<std::uint8_t> colour(fresh.size(), 0);
  std::vector<std::pair<std::uint32_t, std::size_t>> path;  // task, next edge to follow
  for (std::uint32_t start = 0; start < fresh.size(); ++start) {
    if (colour[start] != 0) continue;
    colour[start] = 1;
    path.push_back({start, 0});
    while (!path.empty()) {
      auto& [node, next] = path.back();
      if (next == edges[node].size()) {
        colour[node] = 2;
        path.pop_back();
        continue;
      }
      std::uint32_t dep = edges[node][next++];
      if (colour[dep] == 0) {
        colour[dep] = 1;
        path.push_back({dep, 0});
      } else if (colour[dep] == 1) {
        // dep is on the path: the cycle is the path from dep to here, then dep again.
        std::size_t from = 0;
        while (path[from].first != dep) ++from;
        constexpr std::size_t kShownKeys = 10;
        std::string cycle;
        for (std::size_t i = from; i < path.size() && i - from < kShownKeys; ++i)
          cycle += shown(fresh[path[i].first]->key) + " -> ";
        if (path.size() - from > kShownKeys) cycle += "... -> ";
        cycle += shown(fresh[dep]->key);
        return "the graph has a cycle of " + std::to_string(path.size() - from) + " tasks: " + cycle +
               " (each depends on the next)";
      }
    }
  }
  return {};
}

}  // namespace tessera::distributed
