// The worker's data store: spilling to disk (LRU), pausing, and the --memory-limit / --resources parsers.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

#include "distributed/data_store.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {
namespace {

namespace fs = std::filesystem;

/** A fresh directory under the system temp directory, removed with everything in it. */
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("tessera-data-store-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// Spilled values are records appended to segment files (data_store_spill_file.hpp): a file
// stays while any of its records is needed.
std::size_t count_files(const fs::path& dir) {
  if (dir.empty() || !fs::exists(dir)) return 0;
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

std::uintmax_t bytes_in_files(const fs::path& dir) {
  std::uintmax_t bytes = 0;
  if (dir.empty() || !fs::exists(dir)) return 0;
  for (const auto& f : fs::directory_iterator(dir)) bytes += fs::file_size(f.path());
  return bytes;
}

/** A host block of the dtype and shape, filled with random bits (0/1 for bool; NaN payloads,
 *  infinities and negative zeros are likely for floats). */
Block random_block(DType dtype, Shape shape, std::uint32_t seed) {
  Block b(dtype, std::move(shape));
  std::mt19937 rng(seed);
  auto* p = static_cast<unsigned char*>(b.raw());
  for (std::size_t i = 0; i < b.nbytes(); ++i)
    p[i] = dtype == DType::Bool ? static_cast<unsigned char>(rng() & 1u) : static_cast<unsigned char>(rng());
  return b;
}

/** A block of n bytes (int32, n a multiple of 4). */
Value bytes_block(std::size_t n, std::uint32_t seed = 0) {
  return Value(random_block(DType::Int32, {static_cast<std::int64_t>(n / 4)}, seed));
}

Value object(std::string type, std::string bytes) {
  return Value(Object{std::move(type), std::make_shared<const std::string>(std::move(bytes))});
}

/** Same kind, dtype/shape or type name, and bytes. */
void expect_same(const Value& a, const Value& b) {
  ASSERT_EQ(a.is_block(), b.is_block());
  ASSERT_EQ(a.is_object(), b.is_object());
  if (a.is_block()) {
    const Block &x = a.block(), &y = b.block();
    EXPECT_EQ(x.dtype(), y.dtype());
    EXPECT_EQ(x.shape(), y.shape());
    ASSERT_EQ(x.nbytes(), y.nbytes());
    EXPECT_EQ(y.memory_kind(), MemoryKind::Host);
    if (x.nbytes()) {
      EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0);
    }
  } else if (a.is_object()) {
    EXPECT_EQ(a.object().type, b.object().type);
    ASSERT_TRUE(b.object().bytes);
    EXPECT_EQ(*a.object().bytes, *b.object().bytes);
  }
}

DataStoreOptions small(const TempDir& dir, std::size_t limit = 1000, double target = 0.6, double pause = 0.8) {
  DataStoreOptions o;
  o.memory_limit = limit;
  o.target = target;
  o.pause = pause;
  o.directory = dir.str();
  return o;
}

TEST(DataStore, DefaultsAreDasks) {
  DataStoreOptions o;
  EXPECT_EQ(o.memory_limit, 0u);
  EXPECT_DOUBLE_EQ(o.target, 0.6);
  EXPECT_DOUBLE_EQ(o.pause, 0.8);
  DataStore s;
  EXPECT_EQ(s.size(), 0u);
  EXPECT_FALSE(s.get("x").has_value());
  EXPECT_FALSE(s.contains("x"));
  EXPECT_FALSE(s.erase("x"));
  EXPECT_EQ(s.nbytes("x"), 0u);
  EXPECT_FALSE(s.paused());
}

TEST(DataStore, BlocksOfEveryDtypeRoundTripThroughDisk) {
  TempDir dir;
  const std::vector<Shape> shapes = {{}, {7}, {3, 5}, {2, 3, 4}, {1, 1, 9}};
  const std::vector<DType> dtypes = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};
  std::uint32_t seed = 1;
  for (DType dt : dtypes) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_to_string(shape));
      // limit 1: every value of at least one byte is larger than target * limit, so goes straight to disk.
      DataStore s(small(dir, 1, 0.6, 0.8));
      Value v(random_block(dt, shape, seed++));
      s.put("k", v);
      EXPECT_TRUE(s.is_spilled("k"));
      EXPECT_EQ(s.memory_bytes(), 0u);
      EXPECT_EQ(s.spilled_bytes(), v.nbytes());
      EXPECT_EQ(s.nbytes("k"), v.nbytes());
      auto back = s.get("k");
      ASSERT_TRUE(back.has_value());
      expect_same(v, *back);
      EXPECT_EQ(s.stats().unspilled, 1u);
    }
  }
  // Special float values survive bit for bit.
  DataStore s(small(dir, 1));
  const double dnan = std::bit_cast<double>(std::uint64_t{0x7ff8dead'beef0001});
  Value d(Block::from_values<double>({-0.0, std::numeric_limits<double>::infinity(), dnan,
                                      std::numeric_limits<double>::denorm_min()},
                                     {2, 2}));
  const float fnan = std::bit_cast<float>(std::uint32_t{0xffc0'1234});
  Value f(Block::from_values<float>({-0.0f, fnan, -std::numeric_limits<float>::infinity()}, {3}));
  s.put("d", d);
  s.put("f", f);
  EXPECT_EQ(s.stats().spilled, 2u);
  expect_same(d, *s.get("d"));
  expect_same(f, *s.get("f"));
}

TEST(DataStore, SpilledValueComesBackIntoMemoryAndItsFileGoes) {
  TempDir dir;
  DataStore s(small(dir));  // spill above 600 bytes
  for (DType dt : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Value v(random_block(dt, {10, 4}, 7));  // 40..320 bytes
    s.put("x", v);
    // Push x out with newer values.
    for (int i = 0; i < 4; ++i) s.put("fill" + std::to_string(i), bytes_block(200, i));
    ASSERT_TRUE(s.is_spilled("x"));
    EXPECT_EQ(count_files(s.spill_directory()), 1u);  // x and fill0, in one segment
    auto back = s.get("x");
    ASSERT_TRUE(back.has_value());
    expect_same(v, *back);
    EXPECT_FALSE(s.is_spilled("x"));
    EXPECT_LE(s.memory_bytes(), 600u);
    // x's record is no longer needed; the segment stays for the fillers on disk, if any.
    const bool fillers_on_disk =
        s.is_spilled("fill0") || s.is_spilled("fill1") || s.is_spilled("fill2") || s.is_spilled("fill3");
    EXPECT_EQ(count_files(s.spill_directory()), fillers_on_disk ? 1u : 0u);
    for (int i = 0; i < 4; ++i) s.erase("fill" + std::to_string(i));
    s.erase("x");
    EXPECT_EQ(count_files(s.spill_directory()), 0u);
  }
}

TEST(DataStore, ObjectsRoundTripThroughDisk) {
  TempDir dir;
  DataStore s(small(dir, 1));
  std::string binary;
  for (int i = 0; i < 1000; ++i) binary.push_back(static_cast<char>(i * 37));
  const std::vector<std::pair<Key, Value>> values = {
      {"plain", object("std::string", "hello")},
      {std::string("nul\0in/key", 10), object("std::vector<double>", binary)},
      {"../../etc/passwd", object("", "x")},
      {"k,1,2", object(std::string("type\0with nul", 13), binary + binary)},
  };
  for (const auto& [k, v] : values) s.put(k, v);
  EXPECT_EQ(s.stats().spilled, values.size());
  EXPECT_EQ(count_files(s.spill_directory()), 1u);  // one segment holds them all
  EXPECT_EQ(s.size(), values.size());
  for (const auto& [k, v] : values) {
    EXPECT_TRUE(s.is_spilled(k));
    auto back = s.get(k);
    ASSERT_TRUE(back.has_value());
    expect_same(v, *back);
  }
  // Nothing escaped the spill directory.
  EXPECT_EQ(count_files(dir.path()), 1u);
  // Empty objects and empty blocks have nothing to spill.
  s.put("empty", object("none", ""));
  s.put("empty-block", Value(Block(DType::Float64, {0, 3})));
  s.put("nothing", Value());
  EXPECT_FALSE(s.is_spilled("empty"));
  EXPECT_FALSE(s.is_spilled("empty-block"));
  EXPECT_FALSE(s.is_spilled("nothing"));
  expect_same(object("none", ""), *s.get("empty"));
  EXPECT_TRUE(s.get("nothing")->empty());
}

TEST(DataStore, LeastRecentlyUsedIsSpilledFirst) {
  TempDir dir;
  DataStore s(small(dir));  // target: 600 bytes
  s.put("a", bytes_block(200, 1));
  s.put("b", bytes_block(200, 2));
  s.put("c", bytes_block(200, 3));
  EXPECT_EQ(s.memory_bytes(), 600u);  // not above the target: nothing spilled
  EXPECT_EQ(s.stats().spilled, 0u);
  EXPECT_TRUE(s.spill_directory().empty());  // made lazily
  ASSERT_TRUE(s.get("a"));  // order now b, c, a
  s.put("d", bytes_block(200, 4));
  EXPECT_TRUE(s.is_spilled("b"));
  EXPECT_FALSE(s.is_spilled("a"));
  EXPECT_FALSE(s.is_spilled("c"));
  EXPECT_EQ(s.memory_bytes(), 600u);
  EXPECT_EQ(s.spilled_bytes(), 200u);
  s.put("e", bytes_block(200, 5));  // c is now the oldest
  EXPECT_TRUE(s.is_spilled("c"));
  EXPECT_FALSE(s.is_spilled("a"));
  // Reading b back brings it in and pushes out the least recent of a, d, e: a.
  ASSERT_TRUE(s.get("b"));
  EXPECT_FALSE(s.is_spilled("b"));
  EXPECT_TRUE(s.is_spilled("a"));
  EXPECT_FALSE(s.is_spilled("d"));
  EXPECT_FALSE(s.is_spilled("e"));
  EXPECT_EQ(s.memory_bytes(), 600u);
  EXPECT_EQ(s.spilled_bytes(), 400u);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(s.keys(), (std::vector<Key>{"a", "b", "c", "d", "e"}));
  const auto st = s.stats();
  EXPECT_EQ(st.spilled, 3u);
  EXPECT_EQ(st.unspilled, 1u);
  EXPECT_EQ(st.spill_bytes_written, 600u);
  // Replacing a value refreshes it too.
  s.put("d", bytes_block(200, 9));
  s.put("f", bytes_block(200, 6));
  EXPECT_TRUE(s.is_spilled("e"));
  EXPECT_FALSE(s.is_spilled("d"));
}

TEST(DataStore, SpillingForResidentMemoryTakesTheLeastRecentUntilEnoughWent) {
  TempDir dir;
  DataStore s(small(dir));  // target: 600 bytes
  s.put("a", bytes_block(200, 1));
  s.put("b", bytes_block(200, 2));
  s.put("c", bytes_block(200, 3));
  ASSERT_TRUE(s.get("a"));  // order now b, c, a
  // 250 bytes asked for: two values of 200 go, the least recent first, though the store is at
  // its target (the worker asks when the process, not the store, is over its limit).
  EXPECT_EQ(s.spill_least_recent(250), 400u);
  EXPECT_TRUE(s.is_spilled("b"));
  EXPECT_TRUE(s.is_spilled("c"));
  EXPECT_FALSE(s.is_spilled("a"));
  EXPECT_EQ(s.memory_bytes(), 200u);
  // More than is held: all of it goes, and no more than that is said.
  EXPECT_EQ(s.spill_least_recent(10'000), 200u);
  EXPECT_EQ(s.memory_bytes(), 0u);
  EXPECT_EQ(s.spill_least_recent(1), 0u);
  expect_same(bytes_block(200, 2), *s.get("b"));  // comes back as it was
  // Without a memory limit nothing is ever spilled.
  DataStore unlimited;
  unlimited.put("x", bytes_block(200, 1));
  EXPECT_EQ(unlimited.spill_least_recent(100), 0u);
  EXPECT_FALSE(unlimited.is_spilled("x"));
}

TEST(DataStore, LargeValueGoesStraightToDisk) {
  TempDir dir;
  DataStore s(small(dir));
  s.put("a", bytes_block(200, 1));
  s.put("b", bytes_block(200, 2));
  Value big = bytes_block(800, 3);
  s.put("big", big);  // > 600 bytes: written at once, a and b stay
  EXPECT_TRUE(s.is_spilled("big"));
  EXPECT_FALSE(s.is_spilled("a"));
  EXPECT_FALSE(s.is_spilled("b"));
  EXPECT_EQ(s.memory_bytes(), 400u);
  // Reading it gives the value but keeps it on disk (it would be spilled again at once).
  expect_same(big, *s.get("big"));
  EXPECT_TRUE(s.is_spilled("big"));
  EXPECT_EQ(s.memory_bytes(), 400u);
  expect_same(big, *s.get("big"));
  // Replacing a spilled value with a small one deletes its file.
  s.put("big", bytes_block(100, 4));
  EXPECT_FALSE(s.is_spilled("big"));
  EXPECT_EQ(s.spilled_bytes(), 0u);
  EXPECT_EQ(count_files(s.spill_directory()), 0u);
  EXPECT_EQ(s.nbytes("big"), 100u);
}

TEST(DataStore, MemoryStaysUnderTargetWithSmallValues) {
  TempDir dir;
  const std::size_t limit = 100000;
  DataStore s(small(dir, limit));
  std::mt19937 rng(42);
  std::map<Key, Value> expected;
  for (int i = 0; i < 2000; ++i) {
    const int op = static_cast<int>(rng() % 10);
    const Key k = "k" + std::to_string(rng() % 300);
    if (op < 5) {
      Value v = (rng() & 1) ? bytes_block(4 * (1 + rng() % 500), static_cast<std::uint32_t>(i))
                            : object("blob", std::string(1 + rng() % 2000, static_cast<char>(i)));
      s.put(k, v);
      expected[k] = v;
    } else if (op < 9) {
      auto got = s.get(k);
      ASSERT_EQ(got.has_value(), expected.count(k) == 1);
      if (got) expect_same(expected[k], *got);
    } else {
      EXPECT_EQ(s.erase(k), expected.erase(k) == 1);
    }
    ASSERT_LE(s.memory_bytes(), limit * 6 / 10) << "after op " << i;
    EXPECT_FALSE(s.paused());
  }
  std::size_t total = 0;
  for (const auto& [k, v] : expected) total += v.nbytes();
  EXPECT_EQ(s.memory_bytes() + s.spilled_bytes(), total);
  EXPECT_EQ(s.size(), expected.size());
  std::size_t on_disk = 0;
  for (const auto& [k, v] : expected) on_disk += s.is_spilled(k);
  EXPECT_EQ(count_files(s.spill_directory()), on_disk > 0 ? 1u : 0u);  // one segment while any is on disk
  for (const auto& [k, v] : expected) expect_same(v, *s.get(k));
}

TEST(DataStore, PausedTogglesAroundThePauseThreshold) {
  TempDir dir;
  // Target above pause, so memory can reach the pause threshold without spilling.
  DataStore s(small(dir, 1000, 0.95, 0.8));
  s.put("a", bytes_block(400));
  EXPECT_FALSE(s.paused());
  s.put("b", bytes_block(400));
  EXPECT_FALSE(s.paused());  // 800 is not above 800
  s.put("c", bytes_block(4));
  EXPECT_TRUE(s.paused());
  s.erase("a");
  EXPECT_FALSE(s.paused());
  s.put("a", bytes_block(400));  // order now b, c, a
  EXPECT_TRUE(s.paused());
  s.put("c", bytes_block(120));  // 920: still under the target; order b, a, c
  EXPECT_TRUE(s.paused());
  s.put("d", bytes_block(40));  // 960 > 950: spills the oldest (b), back to 560
  EXPECT_TRUE(s.is_spilled("b"));
  EXPECT_FALSE(s.paused());

  // Without a limit: never pauses, never spills.
  DataStoreOptions none;
  none.directory = dir.str();
  DataStore u(none);
  for (int i = 0; i < 100; ++i) u.put("k" + std::to_string(i), bytes_block(4000));
  EXPECT_FALSE(u.paused());
  EXPECT_EQ(u.memory_bytes(), 400000u);
  EXPECT_EQ(u.stats().spilled, 0u);
  EXPECT_TRUE(u.spill_directory().empty());
}

TEST(DataStore, EraseOfSpilledKeyRemovesItsFile) {
  TempDir dir;
  DataStore s(small(dir, 1));
  s.put("a", bytes_block(40, 1));
  s.put("b", bytes_block(40, 2));
  ASSERT_EQ(count_files(s.spill_directory()), 1u);  // both in one segment
  EXPECT_TRUE(s.erase("a"));
  EXPECT_EQ(count_files(s.spill_directory()), 1u);  // b's record keeps it
  EXPECT_FALSE(s.contains("a"));
  EXPECT_TRUE(s.contains("b"));
  EXPECT_EQ(s.spilled_bytes(), 40u);
  EXPECT_FALSE(s.erase("a"));
  EXPECT_TRUE(s.erase("b"));
  EXPECT_EQ(count_files(s.spill_directory()), 0u);
  EXPECT_EQ(s.spilled_bytes(), 0u);
  EXPECT_EQ(s.size(), 0u);
}

TEST(DataStore, DestructorRemovesItsDirectory) {
  TempDir dir;
  fs::path made;
  {
    DataStore s(small(dir, 1));
    s.put("a", bytes_block(40));
    made = s.spill_directory();
    ASSERT_FALSE(made.empty());
    EXPECT_EQ(made.parent_path(), dir.path());
    EXPECT_TRUE(fs::is_directory(made));
    // A second store gets its own directory.
    DataStore t(small(dir, 1));
    t.put("a", bytes_block(40));
    EXPECT_NE(t.spill_directory(), made);
    EXPECT_EQ(count_files(dir.path()), 2u);
  }
  EXPECT_FALSE(fs::exists(made));
  EXPECT_TRUE(fs::is_directory(dir.path()));  // the root is left alone
  EXPECT_EQ(count_files(dir.path()), 0u);
  // The root is created when missing.
  {
    DataStoreOptions o = small(dir, 1);
    o.directory = (dir.path() / "not" / "yet").string();
    DataStore s(o);
    s.put("a", bytes_block(40));
    EXPECT_TRUE(s.is_spilled("a"));
    EXPECT_EQ(s.spill_directory().parent_path(), dir.path() / "not" / "yet");
  }
}

TEST(DataStore, UnwritableDirectoryKeepsEverythingInMemory) {
  TempDir dir;
  const fs::path file = dir.path() / "regular-file";
  std::ofstream(file) << "not a directory";
  DataStoreOptions o = small(dir);
  o.directory = (file / "spill").string();
  DataStore s(o);
  std::map<Key, Value> expected;
  for (int i = 0; i < 20; ++i) {
    const Key k = "k" + std::to_string(i);
    expected[k] = i % 2 ? bytes_block(200, i) : object("blob", std::string(200, static_cast<char>(i)));
    EXPECT_NO_THROW(s.put(k, expected[k]));
  }
  Value big = bytes_block(4000, 99);
  EXPECT_NO_THROW(s.put("big", big));  // larger than the target, cannot be spilled either
  expected["big"] = big;
  EXPECT_EQ(s.stats().spilled, 0u);
  EXPECT_EQ(s.spilled_bytes(), 0u);
  EXPECT_EQ(s.memory_bytes(), 20u * 200u + 4000u);
  EXPECT_TRUE(s.paused());
  EXPECT_TRUE(s.spill_directory().empty());
  for (const auto& [k, v] : expected) {
    EXPECT_FALSE(s.is_spilled(k));
    auto got = s.get(k);
    ASSERT_TRUE(got.has_value()) << k;
    expect_same(v, *got);
  }
  EXPECT_EQ(s.size(), expected.size());
}

/** Files in this process may grow to `bytes` at most (writes past it fail with EFBIG, as on a
 *  full disk, and SIGXFSZ is ignored); the previous limit and signal action come back after. */
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &r) == 0;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ignore, &saved_action_);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::sigaction(SIGXFSZ, &saved_action_, nullptr);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  struct sigaction saved_action_ {};
  bool ok_ = false;
};

TEST(DataStore, DiskFullMidWriteKeepsTheValueInMemoryAndLeavesNoFile) {
  // A spill file that cannot be written whole (the disk fills up part way) is removed and its
  // value stays in memory, readable; values whose files fit still spill.
  TempDir dir;
  DataStore s(small(dir, 10000));
  std::map<Key, Value> expected;
  {
    FileSizeLimit full(4096);
    ASSERT_TRUE(full.ok()) << "setrlimit(RLIMIT_FSIZE) failed";
    for (int i = 0; i < 10; ++i) {
      const Key k = "k" + std::to_string(i);
      expected[k] = bytes_block(1000, i);
      ASSERT_NO_THROW(s.put(k, expected[k]));
    }
    const std::size_t spilled_before = s.stats().spilled;
    EXPECT_GT(spilled_before, 0u) << "1000-byte values past the 6000-byte target should spill";
    // Records of about 1 KB: a segment of at most 4096 bytes holds three, then the next record
    // fails (EFBIG) and goes to a fresh segment.
    EXPECT_GE(count_files(s.spill_directory()), (spilled_before + 2) / 3);
    const auto bytes_before = bytes_in_files(s.spill_directory());
    // Larger than the target, so it goes straight to disk: 4096 bytes are written, then EFBIG.
    expected["big"] = bytes_block(8000, 99);
    ASSERT_NO_THROW(s.put("big", expected["big"]));
    EXPECT_FALSE(s.is_spilled("big"));
    EXPECT_EQ(s.stats().spilled, spilled_before);
    EXPECT_EQ(bytes_in_files(s.spill_directory()), bytes_before) << "a partial record was left behind";
  }
  for (const auto& [k, v] : expected) {
    auto got = s.get(k);
    ASSERT_TRUE(got.has_value()) << k;
    expect_same(v, *got);
  }
}

TEST(DataStore, DeviceBlocksStayOnTheDeviceWithoutADeviceLimit) {
  TempDir dir;
  DataStore s(small(dir));
  // Host memory tagged as device memory (no device runtime): the store must not touch its bytes.
  // Device values count in device_bytes(), not against the host limit; with no device limit they
  // leave the device only when the pool asks (tests/distributed/device_store_test.cpp).
  void* p = std::malloc(800);
  auto buffer = Buffer::adopt(p, 800, MemoryKind::Device, 0, [](void* q, std::size_t) { std::free(q); });
  s.put("gpu", Value(Block(DType::Float64, {100}, buffer)));
  EXPECT_FALSE(s.is_spilled("gpu"));
  EXPECT_TRUE(s.on_device("gpu"));
  s.put("host", bytes_block(100));
  EXPECT_FALSE(s.is_spilled("host"));  // 100 bytes of host memory: under the target
  EXPECT_EQ(s.memory_bytes(), 100u);
  EXPECT_EQ(s.device_bytes(), 800u);
  EXPECT_FALSE(s.paused());
  EXPECT_EQ(s.get("gpu")->block().memory_kind(), MemoryKind::Device);
}

TEST(DataStore, MissingSpillFileIsAnError) {
  TempDir dir;
  DataStore s(small(dir, 1));
  s.put("lost key", bytes_block(40));
  for (const auto& f : fs::directory_iterator(s.spill_directory())) fs::remove(f.path());
  try {
    s.get("lost key");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lost key"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.erase("lost key"));
}

TEST(DataStore, ConcurrentPutsAndGets) {
  TempDir dir;
  DataStore s(small(dir, 20000));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const Key k = "t" + std::to_string(t) + "-" + std::to_string(i % 50);
        Value v = bytes_block(400, static_cast<std::uint32_t>(t * 1000 + i));
        s.put(k, v);
        auto got = s.get(k);
        if (!got || std::memcmp(got->block().raw(), v.block().raw(), 400) != 0) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(s.size(), 200u);
  EXPECT_LE(s.memory_bytes(), 12000u);
  EXPECT_EQ(s.memory_bytes() + s.spilled_bytes(), 200u * 400u);
}

}  // namespace
}  // namespace tessera::distributed
