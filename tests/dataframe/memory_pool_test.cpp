// Arrow's default pool in a program linking the dataframe layer (src/dataframe/memory_pool.cpp):
// jemalloc unless ARROW_DEFAULT_MEMORY_POOL said otherwise before the program started.
#include <gtest/gtest.h>

#include <arrow/memory_pool.h>

#include <cstdlib>
#include <string>

TEST(ArrowMemoryPool, IsJemallocUnlessTheEnvironmentChoseAnother) {
  const char* chosen = std::getenv("ARROW_DEFAULT_MEMORY_POOL");
  ASSERT_NE(chosen, nullptr) << "the dataframe layer did not choose Arrow's pool";
  EXPECT_EQ(arrow::default_memory_pool()->backend_name(), std::string(chosen));
  if (std::string(chosen) == "jemalloc") {
    // A buffer from the default pool really comes from jemalloc (what the shuffle's memory
    // figures rest on), not a fallback.
    std::uint8_t* data = nullptr;
    ASSERT_TRUE(arrow::default_memory_pool()->Allocate(1 << 20, &data).ok());
    EXPECT_GE(arrow::default_memory_pool()->bytes_allocated(), 1 << 20);
    arrow::default_memory_pool()->Free(data, 1 << 20);
  }
}
