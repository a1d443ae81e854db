#include "tessera/graph/task.hpp"

#include <algorithm>

namespace tessera {

std::vector<Key> Task::dependencies() const {
  std::vector<Key> deps;
  for (const auto& a : args)
    if (const auto* r = std::get_if<KeyRef>(&a))
      if (std::find(deps.begin(), deps.end(), r->key) == deps.end()) deps.push_back(r->key);
  return deps;
}

}  // namespace tessera
