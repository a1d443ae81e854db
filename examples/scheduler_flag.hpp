#pragma once
// The examples' --scheduler flag: where their graphs run.
//   threads, sync    this process (the thread pool, or one task at a time)
//   distributed      a LocalCluster of this program's own (worker processes, stopped at exit)
//   tcp://HOST:PORT  a running scheduler (tessera-scheduler), any of its addresses
#include <cstdio>
#include <memory>
#include <string>

#include <tessera/tessera.hpp>

namespace tessera_examples {

/** The executor --scheduler names, and the client behind it when there is one. */
struct SchedulerChoice {
  std::unique_ptr<tessera::distributed::Client> client;
  tessera::Executor* executor = nullptr;  // null: the value was none of the above (said on stderr)
};

inline SchedulerChoice open_scheduler(const char* program, const std::string& scheduler) {
  using namespace tessera;
  SchedulerChoice c;
  if (scheduler == "distributed") {
    c.client = std::make_unique<distributed::Client>(std::make_shared<distributed::LocalCluster>());
  } else if (scheduler.find("://") != std::string::npos) {
    c.client = std::make_unique<distributed::Client>(scheduler);
  } else if (scheduler != "threads" && scheduler != "sync") {
    std::fprintf(stderr, "%s: --scheduler must be threads, sync, distributed or an address\n", program);
    return c;
  }
  c.executor = c.client ? static_cast<Executor*>(c.client.get()) : &local_executor(scheduler);
  return c;
}

}  // namespace tessera_examples
