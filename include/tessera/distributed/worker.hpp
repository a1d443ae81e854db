#pragma once
/**
 * @file
 * Worker: the worker server. It registers with the scheduler, runs tasks on its threads,
 * fetches inputs straight from peer workers, serves its data to peers and clients, and
 * spills to disk near its memory limit. See docs/distributed.md.
 */
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/security.hpp"

namespace tessera::distributed {

/** @brief Whether a worker uses a GPU. */
enum class GpuPolicy {
  Auto,  ///< device 0 when the device runtime has one (after CUDA_VISIBLE_DEVICES), else none
  Off,   ///< never: a host-only worker even on a GPU machine
};

struct WorkerOptions {
  std::string scheduler_address;        ///< "tcp://127.0.0.1:8786"
  std::string listen_address = "tcp://127.0.0.1:0";  ///< for peers and clients; port 0 = any free
  std::string name;                      ///< default: the listen address
  int nthreads = 1;
  std::map<std::string, double> resources;  ///< e.g. {"GPU", 1}
  std::size_t memory_limit = 0;          ///< bytes of results held in memory; 0 = no limit
  double memory_target = 0.6;            ///< spill least-recently-used results above this fraction
  double memory_pause = 0.8;             ///< stop starting tasks above this fraction
  std::string local_directory;           ///< spill directory (default: the system temp directory)
  std::string token;
  /// tls:// (scheduler, listener and peers): CA file, certificate and key; fields left empty
  /// come from TESSERA_TLS_*. A tls:// scheduler with a tcp:// listen_address is refused.
  comm::Security security;
  double heartbeat_interval = 0.5;       ///< seconds
  double death_timeout = 60;             ///< seconds to keep trying to reach the scheduler at start
  std::map<std::string, std::string> extra;  ///< shown in scheduler_info()
  GpuPolicy gpu = GpuPolicy::Auto;
  /** Serve /metrics and /health here (":0" picks a free port on the listen address's host,
   *  "0.0.0.0:9000"); empty: none, the default. Its URL is in scheduler_info()'s extra as
   *  "dashboard". See docs/dashboard.md. */
  std::string dashboard_address;
  /** Bytes of results kept in device memory before the least recently used move to host memory;
   *  also caps the device pool (DeviceRuntime::set_memory_limit). 0 = no limit (the pool may use
   *  the whole device; values move to host only when it runs short). The binaries' default is
   *  0.8 of the device: parse_device_memory_limit("auto", total) (src/distributed/data_store.hpp). */
  std::size_t device_memory_limit = 0;
  /** The secret a previous registration at this same address was given (Worker::registration_secret()):
   *  lets this worker replace that registration while the scheduler still thinks it connected
   *  (a reconnect). Empty: a first registration, refused while a live worker has the address. */
  std::string registration_secret;
  /** The pid of the nanny that starts this worker's process again when it exits (tessera-worker
   *  sets it; 0: none). The scheduler's restart (Client::restart) asks such a worker to exit 4
   *  for its nanny to restart it, and closes a worker without one (docs/nanny.md). */
  int nanny_pid = 0;
};

/** @brief Counters of one worker, for tests and benchmarks. */
struct WorkerStats {
  std::size_t executed = 0;
  std::size_t failed = 0;
  std::size_t fetched_keys = 0;
  std::size_t fetched_bytes = 0;
  std::size_t fetches = 0;          ///< get-data requests to peers answered (transfers in)
  std::size_t served_keys = 0;
  std::size_t served_requests = 0;  ///< get-data requests answered (transfers out)
  std::size_t served_bytes = 0;
  std::size_t memory_bytes = 0;
  std::size_t spilled_bytes = 0;
  std::size_t spilled = 0;  ///< values written to disk so far
  bool paused = false;
  int device = -1;                     ///< this worker's GPU (CUDA ordinal), -1 without one
  std::size_t device_bytes = 0;        ///< bytes of results held in device memory
  std::size_t device_spilled = 0;      ///< results moved from device to host memory so far
  std::size_t device_spilled_bytes = 0;
};

/**
 * @brief The worker server. The constructor connects and registers (throws CommError when the
 * scheduler cannot be reached within death_timeout); the worker then runs until the scheduler
 * tells it to close, the scheduler connection is lost, or close() is called.
 */
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /** @brief The address peers and clients reach it at. */
  const std::string& address() const;
  /** @brief "http://127.0.0.1:40123", where its dashboard serves; empty without one. */
  std::string dashboard_url() const;
  /** @brief Blocks until the worker has closed; returns why. */
  std::string wait();
  /** @brief Leaves the cluster cleanly (the scheduler does not count it as a failure). */
  void close();
  bool closed() const;
  WorkerStats stats() const;
  /** @brief The secret the scheduler gave this registration (docs/security.md): a worker
   *  started again at the same address passes it in WorkerOptions::registration_secret. */
  std::string registration_secret() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tessera::distributed
