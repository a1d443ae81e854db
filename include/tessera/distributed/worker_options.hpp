#pragma once
/**
 * @file
 * WorkerOptions: what a worker server is started with (tessera-worker's flags fill it;
 * docs/deployment.md). Apart from the server so that the code that checks or prints options
 * need not include it.
 */
#include <cstddef>
#include <map>
#include <string>

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
  /** Spill least-recently-used results while the process's resident memory (not only what the
   *  store counts: buffers in flight, the allocator's caches) is above this fraction of
   *  memory_limit, down to memory_target of it, as Dask's distributed.worker.memory.spill does.
   *  <= 0: off. */
  double memory_spill = 0.7;
  std::string local_directory;           ///< spill directory (default: the system temp directory)
  std::string token;
  /// tls:// (scheduler, listener and peers): CA file, certificate and key; fields left empty
  /// come from TESSERA_TLS_*. With a tls:// scheduler a tcp:// listen_address becomes tls://.
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

}  // namespace tessera::distributed
