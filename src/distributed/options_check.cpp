// Options refused at start. A worker whose spill directory cannot be written would otherwise
// learn it at its first spill, with its memory already full, and pause for good; a TTL of 0
// removes every worker as soon as it joins; an interval of 0 spins.
#include "options_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "tessera/comm/comm.hpp"
#include "tessera/core/error.hpp"
#include "util.hpp"

namespace tessera::distributed {

namespace fs = std::filesystem;

namespace {

void require_positive(double v, const char* what) {
  if (!(v > 0)) throw Error(std::string(what) + " must be more than zero, got " + std::to_string(v));
}
void require_not_negative(double v, const char* what) {
  if (!(v >= 0)) throw Error(std::string(what) + " must not be negative, got " + std::to_string(v));
}

bool is_tls(const std::string& address) { return address.rfind("tls://", 0) == 0; }

// tls:// only: the files (flags, else TESSERA_TLS_*) exist, parse and match, told at start.
comm::Security checked_security(const comm::Security& given, bool uses_tls, const char* who) {
  if (!uses_tls) return given;
  auto s = given.with_env_defaults();
  try {
    comm::check_security(s, /*for_listener=*/true);
  } catch (const comm::CommError& e) {
    throw Error(std::string(who) + " on tls://: " + e.what());
  }
  return s;
}

}  // namespace

SchedulerOptions checked_options(SchedulerOptions options) {
  const bool tls = is_tls(options.address) || std::any_of(options.also_listen.begin(), options.also_listen.end(), is_tls);
  options.security = checked_security(options.security, tls, "scheduler");
  require_positive(options.state.worker_ttl, "worker_ttl (--worker-ttl)");
  require_positive(options.tick_interval, "tick_interval");
  require_not_negative(options.idle_timeout, "idle_timeout (--idle-timeout)");
  require_not_negative(options.worker_silent, "worker_silent (--worker-silent)");
  require_not_negative(options.state.worker_silent, "state.worker_silent");
  require_not_negative(options.registration_timeout, "registration_timeout (--registration-timeout)");
  return options;
}

WorkerOptions checked_options(WorkerOptions options) {
  // Peers reach a worker the way they reach the scheduler: a tls:// cluster has no plain
  // listener, so a tcp:// listen address (the default) becomes tls:// on the same host and port.
  if (is_tls(options.scheduler_address) && options.listen_address.rfind("tcp://", 0) == 0)
    options.listen_address = "tls://" + options.listen_address.substr(6);
  options.security =
      checked_security(options.security, is_tls(options.scheduler_address) || is_tls(options.listen_address), "worker");
  require_positive(options.heartbeat_interval, "heartbeat_interval (--heartbeat-interval)");
  require_not_negative(options.death_timeout, "death_timeout (--death-timeout)");
  if (options.nthreads > kMaxWorkerThreads)
    throw Error("nthreads (--nthreads) must be at most " + std::to_string(kMaxWorkerThreads) + ", got " +
                std::to_string(options.nthreads));
  if (!options.local_directory.empty() || options.memory_limit > 0) check_spill_directory(options.local_directory);
  return options;
}

void check_spill_directory(const std::string& directory) {
  std::error_code ec;
  fs::path dir = directory.empty() ? fs::temp_directory_path(ec) : fs::path(directory);
  if (ec) throw Error("spill directory: no temporary directory: " + ec.message());
  const std::string what = "spill directory " + dir.string() + " (--local-directory)";
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error(what + " is not a directory");
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create " + what + ": " + ec.message());
  }
  // Permission bits say too little (root, ACLs, a read-only mount): write a file and remove it.
  const fs::path probe = dir / (".tessera-probe-" + std::to_string(::getpid()) + "-" + random_hex(8));
  {
    errno = 0;
    std::ofstream out(probe, std::ios::binary);
    if (!out || !(out << "probe") || !out.flush()) {
      const int err = errno;
      out.close();
      fs::remove(probe, ec);
      throw Error(what + " is not writable" + (err ? std::string(": ") + std::strerror(err) : std::string()));
    }
  }
  fs::remove(probe, ec);
}

}  // namespace tessera::distributed
