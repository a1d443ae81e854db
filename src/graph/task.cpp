#include "tessera/graph/task.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace tessera {

std::vector<Key> Task::dependencies() const {
  std::vector<Key> deps;
  // A linear search per argument is fastest for the few a task usually has; a task of many
  // (a tree reduction's combine, or a hostile message: issue 29) uses a set, so that this stays
  // linear in the arguments instead of quadratic.
  constexpr std::size_t kLinearSearchArgs = 32;
  if (args.size() <= kLinearSearchArgs) {
    for (const auto& a : args)
      if (const auto* r = std::get_if<KeyRef>(&a))
        if (std::find(deps.begin(), deps.end(), r->key) == deps.end()) deps.push_back(r->key);
    return deps;
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(args.size());
  for (const auto& a : args)
    if (const auto* r = std::get_if<KeyRef>(&a))
      if (seen.insert(r->key).second) deps.push_back(r->key);
  return deps;
}

}  // namespace tessera
