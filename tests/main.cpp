// The suite's main: tessera::init() first, so that a LocalCluster started by a test can run
// this very binary as its workers (with the test's registered functions), as applications do.
#include <gtest/gtest.h>

#include "tessera/init.hpp"

int main(int argc, char** argv) {
  tessera::init(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
