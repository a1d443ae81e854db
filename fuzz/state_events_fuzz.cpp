// Decoded messages past the handshake, into the handlers that act on them: the scheduler's state
// machine (src/distributed/scheduler_state*.cpp, the graph check of scheduler_graph_check.cpp)
// and the worker's (worker_state.cpp), driven as the servers drive them (scheduler.cpp's dispatch,
// worker.cpp's on_scheduler_message). A message that the handlers refuse with an exception is
// fine (the server closes that connection); a crash, undefined behaviour, a hang (libFuzzer's
// -timeout), an allocation past -malloc_limit_mb, or a state that breaks the machine's invariants
// afterwards (check_invariants, whether the message was refused or not) is a bug.
//
// Input: one byte choosing the path (its value mod 3: a client's events to the scheduler, a
// worker's events to the scheduler, the scheduler's events to a worker), then a message header as
// it comes off the wire (comm::decode_header).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include "distributed/wire.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler_state.hpp"
#include "tessera/distributed/worker_state.hpp"

using namespace tessera;
using namespace tessera::distributed;

namespace {

constexpr const char* kWorkerA = "tcp://127.0.0.1:40001";
constexpr const char* kWorkerB = "tcp://127.0.0.1:40002";
constexpr const char* kClient = "client-fuzz";

// The cluster every input lands in: two workers (one with a GPU), one client, a finished task.
SchedulerState small_cluster() {
  SchedulerConfig config;
  config.transition_log_length = 64;
  SchedulerState s(config);
  for (const char* address : {kWorkerA, kWorkerB}) {
    AddWorker w;
    w.address = address;
    w.nthreads = 2;
    if (address == kWorkerB) w.resources = {{"GPU", 1.0}};
    w.ops = {"tessera.add", "tessera.sum"};
    s.handle(w);
  }
  s.handle(AddClient{kClient});
  UpdateGraph u;
  u.client = kClient;
  Task t;
  t.key = "x-0";
  t.op = "tessera.add";
  u.tasks.push_back(t);
  u.keys = {"x-0"};
  s.handle(std::move(u));
  return s;
}

void to_scheduler_from_client(const comm::Message& m) {
  SchedulerState s = small_cluster();
  try {
    for (auto& e : wire::batch_events<wire::ClientToScheduler>(m))
      std::visit(
          [&](auto& x) {
            x.client = kClient;  // as dispatch does: a client speaks for itself
            s.handle(std::move(x));
          },
          e);
  } catch (const std::exception&) {
    // refused: the scheduler closes the connection and goes on with this state
  }
  s.check_invariants();
}

void to_scheduler_from_worker(const comm::Message& m) {
  SchedulerState s = small_cluster();
  try {
    for (auto& e : wire::batch_events<wire::WorkerToScheduler>(m))
      std::visit(
          [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, wire::TransferDone>) {
              return;  // the task stream only, not a state-machine event
            } else {
              if constexpr (std::is_same_v<T, Heartbeat> || std::is_same_v<T, WorkerStatusChange>)
                x.address = kWorkerA;
              else
                x.worker = kWorkerA;
              s.handle(std::move(x));
            }
          },
          e);
  } catch (const std::exception&) {
  }
  s.check_invariants();
}

void to_worker(const comm::Message& m) {
  WorkerConfig config;
  config.address = kWorkerA;
  config.nthreads = 2;
  config.resources = {{"GPU", 1.0}};
  WorkerState w(config);
  try {
    for (auto& e : wire::batch_events<wire::SchedulerToWorker>(m))
      std::visit([&](auto& x) { w.handle(WorkerEvent(std::move(x))); }, e);
  } catch (const std::exception&) {
  }
  w.check_invariants();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  comm::Message m;
  try {
    comm::decode_header(data + 1, size - 1, m);
  } catch (const comm::ProtocolError&) {
    return 0;
  }
  switch (data[0] % 3) {
    case 0: to_scheduler_from_client(m); break;
    case 1: to_scheduler_from_worker(m); break;
    default: to_worker(m); break;
  }
  return 0;
}
