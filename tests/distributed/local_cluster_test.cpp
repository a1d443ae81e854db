// LocalCluster's lifetime (src/distributed/local_cluster.cpp). With its scheduler as a process,
// a LocalCluster keeps a comm to it; closing the cluster closes that comm, whose close handler
// runs later on the comm I/O thread. The handler used to reach into the cluster through `this`
// and could run while the cluster was being destroyed: ThreadSanitizer (the tsan stage of
// scripts/test.sh) reported the handler writing the request table that ~Impl was freeing. This
// test makes that window wide (several clusters, each destroyed at once after a request); under
// ThreadSanitizer or AddressSanitizer it fails on the old code.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tessera/distributed/local_cluster.hpp"

using namespace tessera::distributed;

TEST(LocalClusterLifetime, AClusterWithASchedulerProcessIsDestroyedWhileItsCommCloses) {
  for (int round = 0; round < 3; ++round) {
    LocalClusterOptions o;
    o.processes = true;
    o.scheduler_process = true;
    o.n_workers = 1;
    o.threads_per_worker = 1;
    o.timeout = 30;
    o.log_level = "error";
    {
      LocalCluster cluster(o);
      EXPECT_EQ(cluster.worker_count(), 1u) << "round " << round;  // a request over the comm
    }
    // The close handler runs on the I/O thread after the destructor: give it the time to.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}
