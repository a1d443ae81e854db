// Task functions for the nanny tests (tests/distributed/nanny_test.cpp), loaded into the
// generic tessera-worker with --preload: a poison task that crashes its worker, one that takes
// more memory than the worker may hold, one that says which process ran it, and one that sleeps
// (restart_test.cpp).
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include <tessera/ops/function.hpp>

namespace {

int np_pid(int) { return static_cast<int>(::getpid()); }

// A segmentation fault (raised: a real bad access is undefined behaviour the compiler may drop).
int np_segv(int x) {
  std::raise(SIGSEGV);
  return x;
}

// Holds `mb` MiB, every page touched (resident), for a while; returns mb.
int np_hog(int mb) {
  std::vector<char> block(static_cast<std::size_t>(mb) << 20);
  std::memset(block.data(), 1, block.size());
  std::this_thread::sleep_for(std::chrono::seconds(20));
  return static_cast<int>(block[block.size() / 2]) * mb;
}

// Runs for `seconds` (a task a restart does not wait for).
int np_sleep(int seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return seconds;
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("nanny_plugin.pid", np_pid);
TESSERA_REGISTER_FUNCTION_AS("nanny_plugin.sleep", np_sleep);
TESSERA_REGISTER_FUNCTION_AS("nanny_plugin.segv", np_segv);
TESSERA_REGISTER_FUNCTION_AS("nanny_plugin.hog", np_hog);
