#pragma once
/**
 * @file
 * tessera::init: lets an application be its own worker.
 *
 *     TESSERA_REGISTER_FUNCTION(train);          // the application's task functions
 *     int main(int argc, char** argv) {
 *       tessera::init(argc, argv);               // first thing in main
 *       tessera::distributed::LocalCluster cluster;   // workers are this same program
 *       ...
 *     }
 *
 * When a LocalCluster (or a job script) starts the program as a worker, `program
 * --tessera-worker ADDRESS [tessera-worker flags]`, init() runs the worker and exits the
 * process when it closes; otherwise it returns at once and records that this program can
 * serve as its own worker, so LocalCluster starts copies of it (with exec, never fork).
 * `program --tessera-cuda-worker ADDRESS [flags]` runs tessera-cuda-worker instead: one such
 * worker per GPU.
 */

namespace tessera {

/** @brief Runs as a worker and exits when argv asks for it; otherwise returns. */
void init(int argc, char** argv);

/** @brief True once init() ran in this process (LocalCluster then starts this program). */
bool initialized_as_app() noexcept;

/** @brief The flag that makes init() run a worker. */
inline constexpr const char* kWorkerModeFlag = "--tessera-worker";
/**
 * @brief The flag that makes init() run tessera-cuda-worker: one worker per GPU, each this same
 * program started with --tessera-worker and its own CUDA_VISIBLE_DEVICES.
 */
inline constexpr const char* kCudaWorkerModeFlag = "--tessera-cuda-worker";

namespace distributed {
/** @brief The tessera-worker command line (argv[0] is the program name). Returns the exit code. */
int worker_main(int argc, char** argv);
/** @brief The tessera-scheduler command line. Returns the exit code. */
int scheduler_main(int argc, char** argv);
/**
 * @brief The tessera-cuda-worker command line: starts one worker process per GPU of
 * CUDA_VISIBLE_DEVICES (every GPU NVML finds when unset) and waits for them. Returns the exit
 * code (1 when there is no GPU).
 */
int cuda_worker_main(int argc, char** argv);
}  // namespace distributed

}  // namespace tessera
