// A task's arithmetic fault (SIGFPE) is an error of that task: locally, and on a cluster, where
// the worker that ran it lives on and runs the next task. Outside a task, SIGFPE still ends the
// process as it did before.
#include <sys/wait.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../distributed/cluster_fixture.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"

using namespace std::chrono_literals;
using namespace tessera;

namespace {

// A user's function with C++'s own integer division: traps for b == 0 and INT64_MIN / -1.
// Left out of UBSan (the asan preset), which would stop the test at the division it is about.
__attribute__((no_sanitize("undefined"))) std::int64_t af_divide(std::int64_t a, std::int64_t b) {
  volatile std::int64_t x = a, y = b;  // keep the division at run time
  return x / y;
}
TESSERA_REGISTER_FUNCTION_AS("arithmetic_fault_test.divide", af_divide);

__attribute__((no_sanitize("undefined"))) void raise_sigfpe_by_dividing() {
  // Both operands opaque: g++ turns 1 / z into compares, with no division to trap.
  volatile int seven = 7;
  volatile int zero = 0;
  volatile int x = seven / zero;
  (void)x;
}

std::int64_t call_divide(std::int64_t a, std::int64_t b) {
  std::vector<Value> args{Value(to_object(a)), Value(to_object(b))};
  return from_value<std::int64_t>(run_op("arithmetic_fault_test.divide", OpContext{}, args));
}

}  // namespace

TEST(ArithmeticFault, DivisionByZeroInATaskIsAnErrorAndTheNextTaskRuns) {
  try {
    call_divide(1, 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SIGFPE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("arithmetic_fault_test.divide"), std::string::npos) << e.what();
  }
  EXPECT_THROW(call_divide(INT64_MIN, -1), Error);
  EXPECT_EQ(call_divide(42, 6), 7);
  EXPECT_THROW(call_divide(5, 0), Error);  // the guard is armed again after a fault
}

TEST(ArithmeticFault, EachThreadCatchesItsOwnFault) {
  std::int64_t ok = 0;
  bool other_failed = false;
  std::thread t([&] {
    try {
      call_divide(7, 0);
    } catch (const Error&) {
      other_failed = true;
    }
  });
  ok = call_divide(9, 3);
  t.join();
  EXPECT_TRUE(other_failed);
  EXPECT_EQ(ok, 3);
}

TEST(ArithmeticFaultDeathTest, OutsideATaskSigfpeStillEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
#if defined(__SANITIZE_ADDRESS__)
  // The handler that was there first is AddressSanitizer's: it reports the FPE and ends the run.
  auto ends_as_before = [](int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); };
  const char* says = "FPE";
#else
  auto ends_as_before = ::testing::KilledBySignal(SIGFPE);
  const char* says = "";
#endif
  EXPECT_EXIT(
      {
        EXPECT_EQ(call_divide(4, 2), 2);  // installs the handler
        raise_sigfpe_by_dividing();
      },
      ends_as_before, says);
}

TEST(ArithmeticFault, OnAClusterTheTaskErrsAndTheWorkerLivesOn) {
  tessera_test::InProcessCluster c("fault-token");
  distributed::Worker worker(c.worker("w", distributed::GpuPolicy::Off));
  distributed::Client client(c.scheduler.address(), c.client());
  ASSERT_TRUE(client.wait_for_workers(1, 5s));

  auto bad = client.submit("arithmetic_fault_test.divide", std::int64_t{1}, std::int64_t{0});
  try {
    bad.result(10s);
    FAIL() << "expected a task error";
  } catch (const TaskError& e) {
    EXPECT_NE(std::string(e.what()).find("SIGFPE"), std::string::npos) << e.what();
  }
  auto good = client.submit("arithmetic_fault_test.divide", std::int64_t{42}, std::int64_t{7});
  EXPECT_EQ(good.result_as<std::int64_t>(), 6);
  EXPECT_EQ(client.scheduler_info().workers.size(), 1u);
}
