#pragma once
/** @file Small helpers shared by the distributed layer's servers, client and cluster. Private. */
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "tessera/comm/comm.hpp"
#include "tessera/core/error.hpp"  // describe_exception

namespace tessera::distributed {

/**
 * @brief Header limit on cluster connections: one UpdateGraph carries a whole graph (about
 * 500 bytes per task), and tasks may carry large literal values (scatter).
 */
inline constexpr std::size_t kClusterMaxHeaderBytes = std::size_t{1} << 30;


/**
 * @brief Connects to the scheduler at `address`, trying again every 100 ms while the connection
 * fails (the scheduler may be starting) until `timeout` has passed; a refused handshake (a wrong
 * token) is not retried. `who` ("client", "worker") begins the error's text.
 * @throw comm::CommError naming the address, the timeout and the last failure.
 */
std::shared_ptr<comm::Comm> connect_to_scheduler(const std::string& address, const comm::CommOptions& options,
                                                 std::chrono::duration<double> timeout, const std::string& who);

/** @brief n random hex digits (ids, key prefixes, tokens). */
std::string random_hex(int n);

/** @brief This machine's host name ("" when it cannot be read). */
std::string host_name();

/** @brief How a child process ended, from waitpid's status: "exited with code 1", "killed by signal 9". */
std::string describe_status(int status);

/** @brief `token`, or $TESSERA_TOKEN when it is empty. */
std::string token_or_env(std::string token);

/**
 * @brief Starts argv[0] (searched in PATH when it has no slash) with this process's
 * environment plus `env` (which overrides). Never forks. Throws Error when it cannot start.
 */
pid_t spawn_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});

/**
 * @brief The resources of a GPU worker: GPU=1 plus those of `extra` ("GPU=2 MEM=1e9"; a GPU
 * entry replaces the 1), as text parse_resources reads back ("GPU=1,MEM=1000000000").
 */
std::string gpu_worker_resources(const std::string& extra);

/**
 * @brief Checks a --device-memory-limit value (auto, default, 0, none, a fraction <= 1, bytes
 * such as 10GB) without the device's size; throws Error quoting it when it is invalid.
 */
void check_device_memory_limit(const std::string& text);

}  // namespace tessera::distributed
