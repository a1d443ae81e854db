#pragma once
/**
 * @file
 * ClusterManager: what every cluster that starts its processes somewhere else has in common
 * (SSHCluster, SLURMCluster, ...), like Dask's SpecCluster seen from a user: where the
 * scheduler is, the token to join it, how many workers to run, and closing it all.
 *
 * Kept minimal on purpose: each manager has its own options and constructor; adaptive scaling
 * drives a manager only through scale(n) and workers().
 */
#include <cstddef>
#include <string>
#include <vector>

namespace tessera::distributed {

class ClusterManager {
 public:
  virtual ~ClusterManager() = default;
  ClusterManager() = default;
  ClusterManager(const ClusterManager&) = delete;
  ClusterManager& operator=(const ClusterManager&) = delete;

  /** @brief The scheduler's address, reachable from the client's machine (tcp://host:port). */
  virtual std::string scheduler_address() const = 0;
  /** @brief The shared secret of the cluster (ClientOptions::token). */
  virtual std::string token() const = 0;
  /**
   * @brief Asks for `n` workers: starts the missing ones or stops the newest extra ones. Returns
   * once the request was made (started workers may register later). Throws tessera::Error when
   * the manager cannot run that many (e.g. more than its hosts allow).
   */
  virtual void scale(std::size_t n) = 0;
  /** @brief Names of the workers this manager started and that have not been stopped. */
  virtual std::vector<std::string> workers() const = 0;
  /** @brief Stops every worker and the scheduler it started. Idempotent; the destructor calls it. */
  virtual void close() = 0;
};

}  // namespace tessera::distributed
