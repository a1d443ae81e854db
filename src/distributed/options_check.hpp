#pragma once
/**
 * @file Checks of SchedulerOptions and WorkerOptions made before a scheduler or worker starts,
 * so that a value that cannot work (a TTL of 0, an unwritable spill directory) is an error at
 * start, not a misbehaviour later. Private to the library (src/); tests include it directly.
 */
#include <string>

#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"

namespace tessera::distributed {

/** @brief Throws tessera::Error naming the field when an interval or TTL is not > 0. */
SchedulerOptions checked_options(SchedulerOptions options);

/**
 * @brief Throws tessera::Error naming the field when an interval is not > 0 or a timeout < 0,
 * and checks the spill directory (check_spill_directory) where the worker may spill: when
 * local_directory is set, or memory_limit > 0 (the system temp directory then).
 */
WorkerOptions checked_options(WorkerOptions options);

/**
 * @brief Makes `directory` (and its parents) if missing, and proves it is a writable directory
 * by creating and removing a probe file in it. Empty: the system temp directory. Throws
 * tessera::Error saying which and why (not a directory, read-only, cannot create).
 */
void check_spill_directory(const std::string& directory);

}  // namespace tessera::distributed
