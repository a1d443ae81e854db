// parse_memory_limit, parse_device_memory_limit, system_memory and parse_resources: the worker's
// limits from their command-line forms.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

#include "distributed/data_store_limits.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {
namespace {

constexpr std::size_t GiB = std::size_t{1} << 30;

TEST(ParseMemoryLimit, AcceptsDasksForms) {
  const std::size_t total = 16 * GiB;
  EXPECT_EQ(parse_memory_limit("0", total), 0u);
  EXPECT_EQ(parse_memory_limit("none", total), 0u);
  EXPECT_EQ(parse_memory_limit("auto", total), total);
  EXPECT_EQ(parse_memory_limit("AUTO", total, 4), total / 4);
  EXPECT_EQ(parse_memory_limit("0.5", total), total / 2);
  EXPECT_EQ(parse_memory_limit("0.25", total, 4), total / 4);  // of the machine, not per worker
  EXPECT_EQ(parse_memory_limit("1", total), total);
  EXPECT_EQ(parse_memory_limit("4GB", total), 4'000'000'000u);
  EXPECT_EQ(parse_memory_limit("4 GB", total), 4'000'000'000u);
  EXPECT_EQ(parse_memory_limit(" 4gb ", total), 4'000'000'000u);
  EXPECT_EQ(parse_memory_limit("4G", total), 4'000'000'000u);
  EXPECT_EQ(parse_memory_limit("4GiB", total), 4 * GiB);
  EXPECT_EQ(parse_memory_limit("4gi", total), 4 * GiB);
  EXPECT_EQ(parse_memory_limit("512MiB", total), 512u << 20);
  EXPECT_EQ(parse_memory_limit("512mb", total), 512'000'000u);
  EXPECT_EQ(parse_memory_limit("10e9", total), 10'000'000'000u);
  EXPECT_EQ(parse_memory_limit("1kB", total), 1000u);
  EXPECT_EQ(parse_memory_limit("1KiB", total), 1024u);
  EXPECT_EQ(parse_memory_limit("2k", total), 2000u);
  EXPECT_EQ(parse_memory_limit("1.5GB", total), 1'500'000'000u);
  EXPECT_EQ(parse_memory_limit("1e3kB", total), 1'000'000u);
  EXPECT_EQ(parse_memory_limit("100", total), 100u);
  EXPECT_EQ(parse_memory_limit("1B", total), 1u);
  EXPECT_EQ(parse_memory_limit("0GB", total), 0u);
  EXPECT_EQ(parse_memory_limit("1TiB", total), total);  // capped to the machine, as Dask
  EXPECT_EQ(parse_memory_limit("1TiB", 0), std::size_t{1} << 40);  // unknown total: no cap
  EXPECT_EQ(parse_memory_limit("auto", 0), 0u);
}

TEST(ParseMemoryLimit, RejectsGarbageQuotingIt) {
  for (const std::string bad : {"", "   ", "abc", "GB", "4XB", "-1GB", "-0.5", "nan", "inf", "0x10",
                                "1e400", "4GB4", "auto2", "1..2GB", "4 GB B", "+4GB", "4,5GB"}) {
    try {
      parse_memory_limit(bad, 16 * GiB);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"" + bad + "\""), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_memory_limit("auto", 16 * GiB, 0), Error);
}

TEST(ParseMemoryLimit, SystemMemoryIsSensible) {
  const std::size_t m = system_memory();
  EXPECT_GT(m, std::size_t{16} << 20);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  EXPECT_LE(m, static_cast<std::size_t>(pages) * static_cast<std::size_t>(page));
  EXPECT_EQ(parse_memory_limit("auto", m, 2), m / 2);
}

TEST(ParseResources, AcceptsSpacesAndCommas) {
  const std::map<std::string, double> want = {{"GPU", 2.0}, {"MEM", 1e10}};
  EXPECT_EQ(parse_resources("GPU=2 MEM=10e9"), want);
  EXPECT_EQ(parse_resources("GPU=2,MEM=10e9"), want);
  EXPECT_EQ(parse_resources("  GPU=2, MEM=10e9  "), want);
  EXPECT_EQ(parse_resources("a=0.5"), (std::map<std::string, double>{{"a", 0.5}}));
  EXPECT_EQ(parse_resources("x=0"), (std::map<std::string, double>{{"x", 0.0}}));
  EXPECT_TRUE(parse_resources("").empty());
  EXPECT_TRUE(parse_resources(" , ").empty());
}

TEST(ParseResources, RejectsMalformedEntriesQuotingThem) {
  for (const std::string bad : {"GPU", "GPU=", "=2", "GPU=two", "GPU=2 GPU=3", "GPU=-1", "GPU=2=3", "GPU=nan",
                                "GPU = 2", "GPU=0x2"}) {
    try {
      parse_resources(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"" + bad + "\""), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera::distributed
