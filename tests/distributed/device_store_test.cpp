// The data store's device tier with the fake device runtime: device values count against the
// device limit, move to host (least recently used first) when it is exceeded or when the pool
// runs short, then spill to disk like any host value; nothing is lost. Also the
// --device-memory-limit parser and values leaving a process as host data (wire::put_values).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "../support/fake_device.hpp"
#include "distributed/data_store.hpp"
#include "distributed/data_store_limits.hpp"
#include "distributed/wire.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {
namespace {

namespace fs = std::filesystem;
using tessera_test::FakeDeviceOptions;
using tessera_test::ScopedFakeDevice;

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("tessera-device-store-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

/** n doubles base, base+1, ... as host values (what the test compares against). */
std::vector<double> values_of(std::size_t n, double base) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), base);
  return v;
}

/** The same values in (fake) device memory. */
Value device_value(std::size_t n, double base) {
  Block host = Block::from_values<double>(values_of(n, base), {static_cast<std::int64_t>(n)});
  Block dev = to_device(host, 0);
  EXPECT_EQ(dev.memory_kind(), MemoryKind::Device);
  return Value(dev);
}

void expect_values(const std::optional<Value>& got, std::size_t n, double base, const std::string& key) {
  ASSERT_TRUE(got.has_value()) << key;
  ASSERT_TRUE(got->is_block()) << key;
  // Readable on the host whatever the tier (the fake's device memory is host memory).
  Block b = to_host(got->block());
  EXPECT_EQ(b.to_doubles(), values_of(n, base)) << key;
}

DataStoreOptions tiers(const ScratchDir& dir, std::size_t host_limit, std::size_t device_limit) {
  DataStoreOptions o;
  o.memory_limit = host_limit;  // spill to disk above 0.6 of it
  o.target = 0.6;
  o.pause = 0;                  // not under test here
  o.directory = dir.str();
  o.device_memory_limit = device_limit;
  return o;
}

constexpr std::size_t kN = 25;  // doubles: 200 bytes per value

TEST(DataStoreDevice, LeastRecentlyUsedGoDeviceToHostToDisk) {
  ScopedFakeDevice gpu;
  ScratchDir dir;
  DataStore s(tiers(dir, /*host: target 600 bytes*/ 1000, /*device*/ 400));

  s.put("d1", device_value(kN, 100));
  s.put("d2", device_value(kN, 200));
  EXPECT_EQ(s.device_bytes(), 400u);
  EXPECT_EQ(s.memory_bytes(), 0u);
  EXPECT_EQ(s.stats().device_spilled, 0u);

  s.put("d3", device_value(kN, 300));  // 600 > 400: d1 (least recently used) to host
  EXPECT_FALSE(s.on_device("d1"));
  EXPECT_TRUE(s.on_device("d2"));
  EXPECT_TRUE(s.on_device("d3"));
  EXPECT_EQ(s.device_bytes(), 400u);
  EXPECT_EQ(s.memory_bytes(), 200u);

  s.put("d4", device_value(kN, 400));  // d2 to host
  EXPECT_FALSE(s.on_device("d2"));
  expect_values(s.get("d3"), kN, 300, "d3");  // d3 is now more recently used than d4
  s.put("d5", device_value(kN, 500));  // d4 to host (not d3): host holds 600 = the target
  EXPECT_FALSE(s.on_device("d4"));
  EXPECT_TRUE(s.on_device("d3"));
  EXPECT_EQ(s.memory_bytes(), 600u);
  EXPECT_EQ(s.stats().spilled, 0u);

  s.put("d6", device_value(kN, 600));  // d3 to host; host 800 > 600: d1 (oldest on host) to disk
  EXPECT_FALSE(s.on_device("d3"));
  EXPECT_TRUE(s.is_spilled("d1"));
  for (const char* k : {"d2", "d3", "d4"}) EXPECT_FALSE(s.is_spilled(k) || s.on_device(k)) << k;
  EXPECT_TRUE(s.on_device("d5"));
  EXPECT_TRUE(s.on_device("d6"));

  EXPECT_EQ(s.device_bytes(), 400u);
  EXPECT_EQ(s.memory_bytes(), 600u);
  EXPECT_EQ(s.spilled_bytes(), 200u);
  const DataStoreStats st = s.stats();
  EXPECT_EQ(st.device_spilled, 4u);
  EXPECT_EQ(st.device_spilled_bytes, 800u);
  EXPECT_EQ(st.spilled, 1u);
  // The device buffers of moved values were freed: only d5 and d6 hold device memory.
  EXPECT_EQ(gpu->memory_in_use(0), 400u);

  // Nothing lost, every value equal; moved values come back as host blocks.
  EXPECT_EQ(s.size(), 6u);
  for (int i = 1; i <= 6; ++i) {
    const std::string k = "d" + std::to_string(i);
    auto v = s.get(k);
    expect_values(v, kN, 100.0 * i, k);
    EXPECT_EQ(v->block().memory_kind(), i >= 5 ? MemoryKind::Device : MemoryKind::Host) << k;
  }
  // Host values still spill by the host rules (d1 came back, something else went).
  EXPECT_LE(s.memory_bytes(), 600u);
  EXPECT_EQ(s.memory_bytes() + s.spilled_bytes() + s.device_bytes(), 6u * 200u);
}

TEST(DataStoreDevice, NoDeviceLimitKeepsValuesOnTheDevice) {
  ScopedFakeDevice gpu;
  ScratchDir dir;
  DataStore s(tiers(dir, 1000, 0));
  for (int i = 0; i < 10; ++i) s.put("k" + std::to_string(i), device_value(kN, i));
  EXPECT_EQ(s.device_bytes(), 2000u);  // above the host limit: device bytes do not count there
  EXPECT_EQ(s.memory_bytes(), 0u);
  EXPECT_EQ(s.stats().device_spilled, 0u);
  EXPECT_EQ(s.stats().spilled, 0u);
}

TEST(DataStoreDevice, ReplacingAndErasingFreeDeviceMemory) {
  ScopedFakeDevice gpu;
  ScratchDir dir;
  DataStore s(tiers(dir, 1000, 1000));
  s.put("a", device_value(kN, 1));
  s.put("b", device_value(kN, 2));
  EXPECT_EQ(gpu->memory_in_use(0), 400u);
  s.put("a", device_value(2 * kN, 3));  // replaced: the old buffer is freed
  EXPECT_EQ(gpu->memory_in_use(0), 600u);
  EXPECT_EQ(s.device_bytes(), 600u);
  s.put("b", Value(Block::from_values<double>(values_of(kN, 4), {kN})));  // device -> a host value
  EXPECT_EQ(s.device_bytes(), 400u);
  EXPECT_EQ(s.memory_bytes(), 200u);
  EXPECT_TRUE(s.erase("a"));
  EXPECT_EQ(s.device_bytes(), 0u);
  EXPECT_EQ(gpu->memory_in_use(0), 0u);
  expect_values(s.get("b"), kN, 4, "b");
}

TEST(DataStoreDevice, PressureHandlerMovesUnusedValuesAndFreesDeviceMemory) {
  ScopedFakeDevice gpu;
  ScratchDir dir;
  DataStore s(tiers(dir, 1 << 20, 0));  // no device limit: only the pool's pressure moves values
  gpu->set_memory_limit(0, 1000);
  gpu->set_pressure_handler([&](int device, std::size_t bytes) { return s.relieve_device_pressure(device, bytes); });

  for (int i = 1; i <= 4; ++i) s.put("v" + std::to_string(i), device_value(kN, i));
  EXPECT_EQ(gpu->memory_in_use(0), 800u);

  // 400 more bytes need 200 freed: the least recently used value goes to host.
  {
    auto buffer = gpu->allocate(400, 0);
    EXPECT_EQ(gpu->pressure_calls(), 1u);
    EXPECT_FALSE(s.on_device("v1"));
    EXPECT_TRUE(s.on_device("v2"));
    EXPECT_EQ(gpu->memory_in_use(0), 1000u);
  }
  EXPECT_EQ(s.stats().device_spilled, 1u);
  EXPECT_EQ(s.stats().device_pressure_calls, 1u);

  // A value someone else still reads (a running task's argument) would free nothing: skipped.
  std::optional<Value> in_use = s.get("v2");
  {
    auto buffer = gpu->allocate(600, 0);  // 600 in use, 1200 wanted: v2 is held, v3 goes
    EXPECT_TRUE(s.on_device("v2"));
    EXPECT_FALSE(s.on_device("v3"));
  }

  // Everything left on the device is in use: the allocation fails cleanly and nothing is lost.
  std::optional<Value> also = s.get("v4");
  EXPECT_THROW(gpu->allocate(800, 0), DeviceMemoryError);
  EXPECT_EQ(gpu->failed_allocations(), 1u);
  EXPECT_TRUE(s.on_device("v2"));
  EXPECT_TRUE(s.on_device("v4"));
  in_use.reset();
  also.reset();
  for (int i = 1; i <= 4; ++i) expect_values(s.get("v" + std::to_string(i)), kN, i, "v" + std::to_string(i));

  // Once free again, the whole pool can be had by moving them.
  auto buffer = gpu->allocate(1000, 0);
  EXPECT_EQ(s.device_bytes(), 0u);
  EXPECT_EQ(s.memory_bytes(), 800u);
  EXPECT_EQ(s.stats().device_spilled, 4u);
  gpu->set_pressure_handler(nullptr);
}

TEST(DataStoreDevice, ConcurrentAllocationsUnderPressureLoseNothing) {
  // Threads allocate device memory (the pool calls the handler, which takes the store's lock)
  // while others put and get: no deadlock, every value intact.
  ScopedFakeDevice gpu;
  ScratchDir dir;
  DataStore s(tiers(dir, 8000, 2000));
  gpu->set_memory_limit(0, 2200);  // the store's 2000 plus the values being made: the pool must spill
  gpu->set_pressure_handler([&](int device, std::size_t bytes) { return s.relieve_device_pressure(device, bytes); });
  constexpr int kThreads = 4, kPerThread = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string k = "t" + std::to_string(t) + "-" + std::to_string(i);
        try {
          s.put(k, device_value(kN, t * 1000 + i));
          if (i > 0) {
            auto v = s.get("t" + std::to_string(t) + "-" + std::to_string(i - 1));
            if (!v || to_host(v->block()).to_doubles() != values_of(kN, t * 1000 + i - 1)) ++failures;
          }
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(s.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_LE(s.device_bytes(), 2000u);
  EXPECT_LE(gpu->peak_in_use(0), 2200u);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) {
      const std::string k = "t" + std::to_string(t) + "-" + std::to_string(i);
      expect_values(s.get(k), kN, t * 1000 + i, k);
    }
  gpu->set_pressure_handler(nullptr);
}

TEST(DataStoreDevice, ParseDeviceMemoryLimit) {
  const std::size_t total = std::size_t{16} << 30;
  EXPECT_EQ(parse_device_memory_limit("auto", total), static_cast<std::size_t>(0.8 * total));
  EXPECT_EQ(parse_device_memory_limit("default", total), static_cast<std::size_t>(0.8 * total));
  EXPECT_EQ(parse_device_memory_limit("0", total), 0u);
  EXPECT_EQ(parse_device_memory_limit("none", total), 0u);
  EXPECT_EQ(parse_device_memory_limit("0.5", total), total / 2);
  EXPECT_EQ(parse_device_memory_limit("1", total), total);
  EXPECT_EQ(parse_device_memory_limit("10GB", total), 10'000'000'000u);
  EXPECT_EQ(parse_device_memory_limit("512 MiB", total), std::size_t{512} << 20);
  EXPECT_EQ(parse_device_memory_limit("1e9", total), 1'000'000'000u);
  EXPECT_EQ(parse_device_memory_limit("20GB", total), total);  // capped to the device
  EXPECT_EQ(parse_device_memory_limit("auto", 0), 0u);          // no device: no limit
  for (const std::string bad : {"", "abc", "-1", "10XB", "nan", "0.5.5"}) {
    try {
      parse_device_memory_limit(bad, total);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("invalid device memory limit \"" + bad + "\""), std::string::npos)
          << e.what();
    }
  }
  // The host parser is unchanged: "auto" is the machine's memory over the workers.
  EXPECT_EQ(parse_memory_limit("auto", 1000, 4), 250u);
}

TEST(DataStoreDevice, ValuesLeaveTheProcessAsHostBlocks) {
  ScopedFakeDevice gpu;
  comm::Message m("test");
  Value dev = device_value(kN, 7);
  Value host(Block::from_values<double>(values_of(3, 1), {3}));
  wire::put_values(m, {dev, host, Value()});
  auto got = wire::get_values(m);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(got[0].is_block());
  EXPECT_EQ(got[0].block().memory_kind(), MemoryKind::Host);
  EXPECT_EQ(got[0].block().to_doubles(), values_of(kN, 7));
  EXPECT_EQ(got[1].block().to_doubles(), values_of(3, 1));
  EXPECT_EQ(got[1].block().buffer(), host.block().buffer()) << "host blocks are framed without a copy";
  EXPECT_TRUE(got[2].empty());
}

}  // namespace
}  // namespace tessera::distributed
