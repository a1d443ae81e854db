#pragma once
/**
 * @file Checks of SchedulerOptions and WorkerOptions made before a scheduler or worker starts,
 * so that a value that cannot work (a TTL of 0, an unwritable spill directory) is an error at
 * start, not a misbehaviour later. Private to the library (src/); tests include it directly.
 */
#include <string>

#include "tessera/distributed/scheduler_options.hpp"
#include "tessera/distributed/worker_options.hpp"

namespace tessera::distributed {

/**
 * @brief The most task threads one worker may run (--nthreads, WorkerOptions::nthreads). Far
 * more than any machine has cores (Dask's default is one per core; I/O-bound tasks may want a
 * few times that), and low enough that a mistyped count is refused with a clear message instead
 * of the worker dying with "Resource temporarily unavailable" when the system's thread limit
 * (ulimit -u, kernel.threads-max) or its memory for 8 MiB stacks runs out. A fixed number, not
 * a multiple of the cores: a container may see few CPUs and still be asked for many threads.
 */
inline constexpr int kMaxWorkerThreads = 4096;

/** @brief Throws tessera::Error naming the field when an interval or TTL is not > 0. */
SchedulerOptions checked_options(SchedulerOptions options);

/**
 * @brief Throws tessera::Error naming the field when an interval is not > 0, a timeout < 0 or
 * nthreads above kMaxWorkerThreads, and checks the spill directory (check_spill_directory) where the worker may spill: when
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
