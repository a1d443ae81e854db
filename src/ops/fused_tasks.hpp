#pragma once
/**
 * @file Private: the encoding of a "tessera.fused" task (fuse.cpp makes them, builtin_ops.cpp
 * runs them, tests look inside). Its first argument is the chain's task list, cereal-encoded; the rest are
 * KeyRefs to the keys the chain reads from outside, in the order fused_task_inputs gives.
 */
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "task_serialize.hpp"

namespace tessera {

/** @brief The op that runs a fused chain: literal arg 0 is encode_fused_tasks(), then inputs. */
inline constexpr const char* kFusedOp = "tessera.fused";

/** @brief The literal first argument of a "tessera.fused" task. */
inline Value encode_fused_tasks(const std::vector<Task>& tasks) {
  return Value(to_object(tasks, "tessera.fused_tasks"));
}

inline std::vector<Task> decode_fused_tasks(const Value& v) { return from_value<std::vector<Task>>(v); }

/**
 * @brief The keys a fused task list reads from outside: KeyRefs not produced by an earlier inner
 * task, in order of first appearance. A "tessera.fused" task passes them, in this order, as its
 * arguments after the task list.
 */
inline std::vector<Key> fused_task_inputs(const std::vector<Task>& tasks) {
  std::vector<Key> inputs;
  std::unordered_set<std::string_view> produced, seen;
  for (const auto& t : tasks) {
    for (const auto& a : t.args) {
      const auto* r = std::get_if<KeyRef>(&a);
      if (r && !produced.count(r->key) && seen.insert(r->key).second) inputs.push_back(r->key);
    }
    produced.insert(t.key);
  }
  return inputs;
}

}  // namespace tessera
