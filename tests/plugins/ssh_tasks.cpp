// Task functions for the SSHCluster tests (tests/distributed/ssh_cluster_test.cpp), loaded into
// the remote tessera-worker processes with --preload: a slow task (so a link can be cut while
// tasks run), a block of real bytes to move between hosts, and what a worker saw of its input.
#include <unistd.h>

#include <chrono>
#include <thread>

#include <tessera/core/block.hpp>
#include <tessera/ops/function.hpp>

namespace {

// x + 1 after `ms` milliseconds.
int sp_slow_inc(int x, int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return x + 1;
}

int sp_add(int a, int b) { return a + b; }

// n doubles 0, 1, ..., n - 1.
tessera::Block sp_block(int n) {
  tessera::Block b(tessera::DType::Float64, {n});
  for (int i = 0; i < n; ++i) b.data<double>()[i] = i;
  return b;
}

// The sum of a block's values (read on the worker that runs it).
double sp_block_sum(tessera::Block b) {
  double s = 0;
  for (double v : b.values<double>()) s += v;
  return s;
}

}  // namespace

TESSERA_REGISTER_FUNCTION_AS("ssh_plugin.slow_inc", sp_slow_inc);
TESSERA_REGISTER_FUNCTION_AS("ssh_plugin.add", sp_add);
TESSERA_REGISTER_FUNCTION_AS("ssh_plugin.block", sp_block);
TESSERA_REGISTER_FUNCTION_AS("ssh_plugin.block_sum", sp_block_sum);
