// fuse_linear: the graph layer's linear_chains as "tessera.fused" tasks (the op that runs them
// is builtin_ops.cpp's; the task-list encoding between the two is fused_tasks.hpp).
#include "tessera/ops/fuse.hpp"

#include <vector>

#include "fused_tasks.hpp"

namespace tessera {

Graph fuse_linear(const Graph& graph, const std::vector<Key>& outputs) {
  Graph out;
  std::vector<Task> chain;
  for (const auto& links : linear_chains(graph, outputs)) {
    const Task& tail = *links.back();
    if (links.size() == 1) {
      out.add(tail);
      continue;
    }
    chain.clear();
    for (const Task* t : links) chain.push_back(*t);
    Task fused;
    fused.key = tail.key;
    fused.op = kFusedOp;
    fused.annotations = tail.annotations;
    fused.args.emplace_back(encode_fused_tasks(chain));
    for (auto& k : fused_task_inputs(chain)) fused.args.emplace_back(KeyRef{std::move(k)});
    out.add(std::move(fused));
  }
  return out;
}

}  // namespace tessera
