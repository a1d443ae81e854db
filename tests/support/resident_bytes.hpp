// The resident set of a process (VmRSS in /proc/PID/status), for the tests that bound what a
// peer or a message costs a real scheduler process.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <fstream>
#include <string>

namespace tessera_test {

/** @brief VmRSS of process pid in bytes; 0 when it cannot be read. */
inline std::size_t resident_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

}  // namespace tessera_test
