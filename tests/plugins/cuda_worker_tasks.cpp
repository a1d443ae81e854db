// Task functions for the tessera-cuda-worker tests, loaded into the generic binaries with
// --preload (tests/distributed/cuda_worker_test.cpp). Each says where it ran, so a test can check
// placement without a GPU: pid and CUDA_VISIBLE_DEVICES of the worker process.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <tessera/core/gpus.hpp>
#include <tessera/ops/function.hpp>

namespace {

std::string here() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return std::to_string(::getpid()) + "@" + (v ? v : "unset");
}

// The value of an environment variable in the worker ("<unset>" when it is not set).
std::string cw_getenv(std::string name) {
  const char* v = std::getenv(name.c_str());
  return v ? v : "<unset>";
}
int cw_pid() { return static_cast<int>(::getpid()); }
// The CPUs the task's thread may run on ("0-3"): shows the worker's pinning. The argument is
// ignored (it lets the tests' run-with-a-string helper call this too).
std::string cw_cpus(std::string) { return tessera::format_cpu_list(tessera::allowed_cpus()); }

// The seed's foo -> bar -> baz: each appends "<step>:<pid>@<CUDA_VISIBLE_DEVICES>;".
std::string cw_foo(int i) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // spread over the workers
  return "foo" + std::to_string(i) + ":" + here() + ";";
}
std::string cw_bar(std::string s) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return s + "bar:" + here() + ";";
}
std::string cw_baz(std::string s) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return s + "baz:" + here() + ";";
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("cuda_plugin.getenv", cw_getenv);
TESSERA_REGISTER_FUNCTION_AS("cuda_plugin.pid", cw_pid);
TESSERA_REGISTER_FUNCTION_AS("cuda_plugin.cpus", cw_cpus);
TESSERA_REGISTER_FUNCTION_AS("cuda_plugin.foo", cw_foo);
TESSERA_REGISTER_FUNCTION_AS("cuda_plugin.bar", cw_bar);
TESSERA_REGISTER_FUNCTION_AS("cuda_plugin.baz", cw_baz);
