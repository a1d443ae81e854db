// Issue 19, departed workers' records: the state machine reuses a departed worker's record, so
// 200 workers joining and leaving (with tasks on them, and steals toward them in flight) leave
// its record count where it started. The state machine (SimCluster) and fake workers over real
// sockets to a scheduler.
#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "distributed/wire.hpp"
#include "sim_cluster.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tessera;
using namespace tessera::distributed;
using tessera::distributed::testing::make_task;
using tessera::distributed::testing::SimCluster;
using tessera_test::wait_until;

TEST(WorkerRecords, TwoHundredJoinsAndLeavesKeepTheStateMachinesRecords) {
  SimCluster c(SimCluster::default_config());
  c.add_worker("w-base");
  c.run();
  const std::size_t before = c.sched.worker_slot_count();
  for (int round = 0; round < 200; ++round) {
    const std::string w = "w-" + std::to_string(round);
    c.add_worker(w);
    c.workers[w]->hold = true;  // tasks on it when it leaves
    std::vector<Task> tasks;
    std::vector<Key> keys;
    for (int i = 0; i < 4; ++i) {
      tasks.push_back(make_task("r" + std::to_string(round) + "-" + std::to_string(i)));
      keys.push_back(tasks.back().key);
    }
    c.submit("client", tasks, keys);
    c.run();
    c.tick(static_cast<double>(round) * 0.01);  // steals toward the idle newcomer, perhaps
    c.run();
    c.kill(w);
    c.run();
    c.check_all();
    EXPECT_EQ(c.sched.worker_count(), 1u) << "round " << round;
    ASSERT_LE(c.sched.worker_slot_count(), before + 1) << "round " << round << ": a departed worker's record was kept";
    for (const auto& k : keys) EXPECT_TRUE(c.clients["client"].in_memory.count(k)) << k;
  }
  EXPECT_EQ(c.sched.worker_slot_count(), before + 1);
}

TEST(WorkerRecords, TwoHundredFakeWorkersOverSocketsLeaveNoRecords) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = "records-token";
  Scheduler sched(so);
  const std::size_t before = sched.worker_record_count();
  comm::CommOptions co;
  co.token = so.token;
  for (int i = 0; i < 200; ++i) {
    auto c = comm::connect(sched.address(), co);
    wire::WorkerHello hello;
    hello.add.address = "tcp://127.0.0.1:" + std::to_string(20000 + i);
    hello.add.name = "fake-" + std::to_string(i);
    hello.add.nthreads = 1;
    comm::Message m(wire::kRegisterWorker);
    m.set("worker", hello);
    c->send(std::move(m)).get();
    auto reply = c->recv(std::chrono::milliseconds(5000));
    ASSERT_EQ(reply.op, wire::kRegistered);
    ASSERT_FALSE(reply.has("error"));
    c->close();
    // Gone once the scheduler saw the close.
    ASSERT_TRUE(wait_until([&] { return sched.worker_record_count() <= before + 1; }, 5))
        << "after " << i + 1 << " workers: " << sched.worker_record_count() << " records, " << before << " before";
  }
  EXPECT_LE(sched.worker_record_count(), before + 1);
}

// The task stream's clock offsets (scheduler.cpp, clock_offsets): kept for a departed worker
// while a bar of it is in the ring, freed with its last bar. 200 fake workers each finish a
// task and leave; the ring holds 16 bars, so at most 16 workers' offsets may be kept (before:
// one per worker ever seen, 200).
TEST(WorkerRecords, DepartedWorkersClockOffsetsGoWithTheirLastBar) {
  SchedulerOptions so;
  so.address = "tcp://127.0.0.1:0";
  so.token = "offsets-token";
  so.task_stream_length = 16;
  Scheduler sched(so);
  comm::CommOptions co;
  co.token = so.token;
  for (int i = 0; i < 200; ++i) {
    auto c = comm::connect(sched.address(), co);
    wire::WorkerHello hello;
    hello.add.address = "tcp://127.0.0.1:" + std::to_string(30000 + i);
    hello.add.name = "bars-" + std::to_string(i);
    hello.add.nthreads = 1;
    comm::Message m(wire::kRegisterWorker);
    m.set("worker", hello);
    c->send(std::move(m)).get();
    ASSERT_EQ(c->recv(std::chrono::milliseconds(5000)).op, wire::kRegistered);
    TaskFinished done;
    done.key = "k-" + std::to_string(i);
    done.start = 1.0;
    done.stop = 1.5;
    done.thread = 0;
    c->send(wire::batch_message(wire::kWorkerEvents, std::vector<wire::WorkerToScheduler>{done})).get();
    c->close();
    ASSERT_TRUE(wait_until([&] { return sched.workers().empty(); }, 5)) << "worker " << i;
    ASSERT_LE(sched.task_stream_offset_count(), 16u) << "after " << i + 1 << " workers came and went";
  }
  EXPECT_EQ(sched.task_stream_offset_count(), 16u) << "the 16 workers whose bars are in the ring keep theirs";
}

}  // namespace
