#pragma once
/** @file
 * Task: one node of a task graph. */
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tessera/core/device.hpp"
#include "tessera/core/key.hpp"
#include "tessera/core/value.hpp"

namespace tessera {

/**
 * @brief Scheduling hints carried by a task, like dask.annotate.
 *
 * Local executors carry them but only honour priority; the distributed scheduler honours all.
 */
struct Annotations {
  std::map<std::string, double> resources;  ///< e.g. {"GPU", 1}: consumed while the task runs
  int priority = 0;                         ///< higher runs first
  int retries = 0;                          ///< extra attempts after a failure
  std::vector<std::string> workers;         ///< restrict to these worker names or addresses
  bool allow_other_workers = false;         ///< restrictions are only a preference
  /// Device: run the op's GPU variant on a worker that has a GPU (set by lowering for arrays on
  /// the device, or by the user); the scheduler routes such tasks to GPU workers only.
  Target target = Target::Host;
  bool operator==(const Annotations&) const = default;
};

/** @brief A reference to the value another task produces. */
struct KeyRef {
  Key key;
  bool operator==(const KeyRef&) const = default;
};

/** @brief A task argument: a literal Value or a reference to another task's result. */
using Arg = std::variant<KeyRef, Value>;

/**
 * @brief An operation to run: the registered op name and its arguments.
 *
 * Arguments that are KeyRefs are replaced by the referenced results before the op runs, in order.
 * Array ops take their parameters as one literal Object (a cereal-encoded struct) followed by
 * the blocks they read.
 */
struct Task {
  Key key;
  std::string op;
  std::vector<Arg> args;
  Annotations annotations;

  /** @brief Keys this task reads, in argument order, duplicates removed. */
  std::vector<Key> dependencies() const;
};

}  // namespace tessera
