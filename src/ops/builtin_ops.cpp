/** @file Built-in graph-level ops: "tessera.identity" and "tessera.fused". */
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "fused_tasks.hpp"

namespace tessera {
namespace {

Value identity_op(const OpContext& ctx, std::span<const Value> args) {
  if (args.size() != 1)
    throw Error("tessera.identity takes 1 argument, got " + std::to_string(args.size()));
  return args[0];
}

/**
 * Runs a fused chain: args[0] is the encoded task list, args[1..] the values of
 * fused_task_inputs(tasks). Each inner result is dropped right after its last use.
 */
Value fused_op(const OpContext& ctx, std::span<const Value> args) {
  if (args.empty()) throw Error("tessera.fused: missing the task list argument");
  const std::vector<Task> tasks = decode_fused_tasks(args[0]);
  if (tasks.empty()) throw Error("tessera.fused: empty task list");
  const std::vector<Key> inputs = fused_task_inputs(tasks);
  if (inputs.size() != args.size() - 1)
    throw Error("tessera.fused: task list reads " + std::to_string(inputs.size()) + " inputs, got " +
                std::to_string(args.size() - 1));

  // Environment: the inputs, then one slot per inner task. Resolve every KeyRef to a slot first.
  const std::size_t ni = inputs.size();
  std::vector<Value> env(ni + tasks.size());
  for (std::size_t i = 0; i < ni; ++i) env[i] = args[i + 1];
  std::vector<std::vector<std::size_t>> slots(tasks.size());
  std::vector<std::size_t> last_use(env.size(), SIZE_MAX);
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    for (const auto& a : tasks[t].args) {
      const auto* r = std::get_if<KeyRef>(&a);
      if (!r) continue;
      std::size_t slot = SIZE_MAX;
      for (std::size_t j = t; j-- > 0;)  // the latest inner producer first: chains read t-1
        if (tasks[j].key == r->key) {
          slot = ni + j;
          break;
        }
      if (slot == SIZE_MAX)
        for (std::size_t i = 0; i < ni; ++i)
          if (inputs[i] == r->key) slot = i;
      slots[t].push_back(slot);
      last_use[slot] = t;
    }
  }

  std::vector<Value> call_args;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const Task& task = tasks[t];
    call_args.clear();
    std::size_t k = 0;
    for (const auto& a : task.args) {
      if (const auto* v = std::get_if<Value>(&a)) call_args.push_back(*v);
      else call_args.push_back(env[slots[t][k++]]);
    }
    OpContext inner = ctx;
    inner.key = &task.key;
    env[ni + t] = run_op(task.op, inner, call_args);
    call_args.clear();
    for (std::size_t s : slots[t])
      if (last_use[s] == t) env[s] = Value();
  }
  return std::move(env.back());
}

const bool builtin_ops_registered = [] {
  register_op("tessera.identity", identity_op);
  register_op(kFusedOp, fused_op);
  // Both only pass values along (or run other ops with the same context), so the same code is
  // their device variant: device values stay on the device.
  register_device_op("tessera.identity", identity_op);
  register_device_op(kFusedOp, fused_op);
  return true;
}();

}  // namespace
}  // namespace tessera
