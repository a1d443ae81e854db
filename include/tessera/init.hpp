#pragma once
/**
 * @file tessera::init: lets an application be its own worker.
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
 */

namespace tessera {

/** @brief Runs as a worker and exits when argv asks for it; otherwise returns. */
void init(int argc, char** argv);

/** @brief True once init() ran in this process (LocalCluster then starts this program). */
bool initialized_as_app() noexcept;

/** @brief The flag that makes init() run a worker. */
inline constexpr const char* kWorkerModeFlag = "--tessera-worker";

namespace distributed {
/** @brief The tessera-worker command line (argv[0] is the program name). Returns the exit code. */
int worker_main(int argc, char** argv);
/** @brief The tessera-scheduler command line. Returns the exit code. */
int scheduler_main(int argc, char** argv);
}  // namespace distributed

}  // namespace tessera
