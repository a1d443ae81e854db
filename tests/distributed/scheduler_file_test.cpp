// The scheduler-file parser (src/distributed/scheduler_file.cpp), with the inputs the fuzz target
// fuzz/scheduler_file_fuzz.cpp found or starts from.
#include "distributed/scheduler_file.hpp"

#include <string>

#include <gtest/gtest.h>

#include "../support/message_of.hpp"
#include "tessera/core/error.hpp"

using tessera::distributed::scheduler_address_from_text;
using tessera_test::message_of;

TEST(SchedulerFile, ReadsTheAddressOfTheFileTheSchedulerWrites) {
  const std::string text =
      "{\n  \"type\": \"Scheduler\",\n  \"id\": \"Scheduler-4f1e\",\n  \"address\": \"tcp://127.0.0.1:8786\",\n"
      "  \"pid\": 4242,\n  \"services\": {\"dashboard\": 8787}\n}\n";
  EXPECT_EQ(scheduler_address_from_text(text, "s.json"), "tcp://127.0.0.1:8786");
}

// A long address made std::regex_search recurse once per character: a stack overflow (SIGSEGV)
// at about 200,000 characters, found through the fuzz target.
TEST(SchedulerFile, ALongAddressDoesNotOverflowTheStack) {
  const std::string address = "tcp://" + std::string(1 << 20, 'a') + ":8786";
  EXPECT_EQ(scheduler_address_from_text("{\"address\": \"" + address + "\"}", "s.json"), address);
}

TEST(SchedulerFile, ATextWithoutAnAddressIsRefusedNamingTheFile) {
  for (const std::string text : {"{}", "{\"address\": \"\"}", "{\"address\": 8786}", "[\"address\"]", "null"})
    EXPECT_NE(message_of([&] { scheduler_address_from_text(text, "s.json"); }).find("s.json has no \"address\" entry"),
              std::string::npos)
        << text;
  EXPECT_NE(
      message_of([] { scheduler_address_from_text("{\"address\": \"tcp://", "s.json"); }).find("s.json is not JSON"),
      std::string::npos);
  EXPECT_THROW(scheduler_address_from_text(std::string(100000, '['), "s.json"), tessera::Error);
}
