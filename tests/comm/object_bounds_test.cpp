// (In tests/comm/ beside bounded_lengths_test.cpp: it is what a peer's message field costs.)
// from_object decodes with the bounded archive: a length inside an Object's bytes that claims more
// than they hold is refused before anything is allocated for it. Objects arrive from peers inside
// messages (a field's value, a task's parameters); before, a 9-byte object claiming 2^40 strings
// threw std::bad_alloc instead of SerializationError, and one claiming a 512 MiB string made the
// process touch 512 MiB (fuzz/object_fuzz.cpp's first finding).
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"
#include "tessera/ops/serialize.hpp"

using namespace tessera;

namespace {

Object claiming(std::uint64_t n, std::string rest = {}) {
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);  // cereal's size tag, little-endian
  return Object{"test", std::make_shared<const std::string>(bytes + rest)};
}

// Peak resident memory of this process, in kB (VmHWM).
long peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

}  // namespace

TEST(ObjectBounds, AClaimBeyondTheBytesIsASerializationError) {
  EXPECT_THROW(from_object<std::vector<std::string>>(claiming(std::uint64_t{1} << 40)), SerializationError);
  EXPECT_THROW(from_object<std::string>(claiming(std::uint64_t{1} << 62)), SerializationError);
  EXPECT_THROW((from_object<std::map<std::string, double>>(claiming(std::uint64_t{1} << 50))), SerializationError);
  EXPECT_THROW(from_object<std::vector<double>>(claiming(std::uint64_t{1} << 61)), SerializationError);
  EXPECT_THROW(from_object<std::vector<bool>>(claiming(5, "ab")), SerializationError);
}

TEST(ObjectBounds, AnObjectCostsNoMoreMemoryThanItsBytes) {
  const long before = peak_rss_kb();
  ASSERT_GT(before, 0);
  EXPECT_THROW(from_object<std::string>(claiming(std::uint64_t{512} << 20)), SerializationError);
  EXPECT_LT(peak_rss_kb() - before, 64 * 1024) << "a 512 MiB claim in 8 bytes was allocated";
}

TEST(ObjectBounds, WhatToObjectWritesStillDecodes) {
  const std::vector<std::string> keys{"('x', 0)", "", std::string(1000, 'k')};
  EXPECT_EQ(from_object<std::vector<std::string>>(to_object(keys)), keys);
  const std::vector<bool> bits{true, false, true, true};
  EXPECT_EQ(from_object<std::vector<bool>>(to_object(bits)), bits);
  const std::map<std::string, std::vector<double>> m{{"a", {1.5, -2}}, {"b", {}}};
  EXPECT_EQ((from_object<std::map<std::string, std::vector<double>>>(to_object(m))), m);
  EXPECT_EQ(from_object<std::string>(to_object(std::string())), "");
}

// fuzz/message_fuzz.cpp's crash (build-fuzz/artifacts/message-crash-42ac25ea...): a task-stream
// request whose last field is an Object with a has-bytes flag of 255, which was loaded into a bool
// (undefined behaviour; UBSan stops there) and taken as true. Now the header is refused.
TEST(ObjectBounds, ABoolThatIsNeitherZeroNorOneIsACorruptHeader) {
  const std::string header(
      "\x0b\x00\x00\x00\x00\x00\x00\x00\x74\x61\x73\x6b\x2d\x73\x74\x72\x65\x61\x6d\x02\x00\x00\x00\x00\x00\x00"
      "\x00\x05\x00\x00\x00\x00\x00\x00\x00\x6c\x69\x6d\x69\x74\x02\x01\x00\x00\x00\x00\x00\x00\x00\x6d\x01\x08"
      "\x00\x00\x00\x00\x00\x00\x00\xe8\x03\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x73\x69\x6e"
      "\x63\x61\x02\x01\x00\x00\x00\x00\x00\x00\x00\x93\xff\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00",
      107);
  comm::Message msg;
  try {
    comm::decode_header(header.data(), header.size(), msg);
    FAIL() << "a bool of 255 was accepted";
  } catch (const comm::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("a bool of value 255"), std::string::npos) << e.what();
  }
  // The same through from_object: 0 and 1 only.
  EXPECT_EQ(from_object<bool>(Object{"b", std::make_shared<const std::string>("\x01", 1)}), true);
  EXPECT_THROW(from_object<bool>(Object{"b", std::make_shared<const std::string>("\x02", 1)}), SerializationError);
}
