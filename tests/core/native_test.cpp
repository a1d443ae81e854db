// Native values: a test codec's object through cereal (task literals), the wire (frames, no
// copy) and a spill file, and the errors for a type with no codec or corrupt packed bytes.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <unistd.h>

#include "distributed/data_store_spill_file.hpp"
#include "distributed/wire.hpp"
#include "ops/task_serialize.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/native.hpp"
#include "tessera/core/value.hpp"

namespace tessera {
namespace {

// The test type: a name plus two byte buffers, one of which may be absent.
struct Pair {
  std::string name;
  std::shared_ptr<Buffer> first, second;
};

std::shared_ptr<Buffer> bytes_buffer(const std::string& s) {
  auto b = Buffer::allocate_host(s.size());
  std::memcpy(b->data(), s.data(), s.size());
  return b;
}

std::string text(const std::shared_ptr<Buffer>& b) {
  return b ? std::string(static_cast<const char*>(b->data()), b->size()) : "<absent>";
}

const char* kPairType = "test.pair";

void register_pair_codec() {
  static const bool once = [] {
    register_native_codec(kPairType,
                          {[](const Native& n) {
                             const auto& p = *static_cast<const Pair*>(n.object.get());
                             return NativeParts{p.name, {p.first, p.second}};
                           },
                           [](const std::string& header, std::vector<std::shared_ptr<Buffer>> frames) {
                             if (frames.size() != 2) throw Error("a pair has two frames");
                             auto p = std::make_shared<Pair>(Pair{header, frames[0], frames[1]});
                             return Native{kPairType, p, 0};
                           }});
    return true;
  }();
  (void)once;
}

Value make_pair_value(std::shared_ptr<Buffer>* first_out = nullptr) {
  register_pair_codec();
  auto p = std::make_shared<Pair>(Pair{"left-right", bytes_buffer("left bytes"), nullptr});
  if (first_out) *first_out = p->first;
  return Value(Native{kPairType, p, 10});
}

const Pair& pair_of(const Value& v) {
  EXPECT_TRUE(v.is_native());
  EXPECT_EQ(v.native().type, kPairType);
  return *static_cast<const Pair*>(v.native().object.get());
}

TEST(Native, ValueDescribesAndCountsIt) {
  Value v = make_pair_value();
  EXPECT_EQ(v.describe(), "native test.pair");
  EXPECT_EQ(v.nbytes(), 10u);
  EXPECT_THROW(v.block(), Error);
  EXPECT_THROW(Value(Block::scalar(1.0)).native(), Error);
}

TEST(Native, RoundTripsThroughCereal) {
  Value v = make_pair_value();
  std::stringstream ss;
  {
    cereal::BinaryOutputArchive ar(ss);
    ar(v);
  }
  Value back;
  {
    cereal::BinaryInputArchive ar(ss);
    ar(back);
  }
  const Pair& p = pair_of(back);
  EXPECT_EQ(p.name, "left-right");
  EXPECT_EQ(text(p.first), "left bytes");
  EXPECT_EQ(p.second, nullptr);
}

TEST(Native, CrossesTheWireAsFramesWithoutACopy) {
  std::shared_ptr<Buffer> first;
  Value v = make_pair_value(&first);
  comm::Message m("test");
  distributed::wire::put_values(m, {v, Value()});
  ASSERT_EQ(m.frames.size(), 1u);  // the absent buffer takes no frame
  EXPECT_EQ(m.frames[0].get(), first.get());
  auto back = distributed::wire::get_values(m);
  ASSERT_EQ(back.size(), 2u);
  const Pair& p = pair_of(back[0]);
  EXPECT_EQ(p.first.get(), first.get());
  EXPECT_EQ(p.second, nullptr);
  EXPECT_TRUE(back[1].empty());
}

TEST(Native, AFrameIndexOutOfRangeIsAProtocolError) {
  Value v = make_pair_value();
  comm::Message m("test");
  distributed::wire::put_values(m, {v});
  m.frames.clear();
  EXPECT_THROW(distributed::wire::get_values(m), comm::ProtocolError);
}

TEST(Native, RoundTripsThroughASpillFile) {
  Value v = make_pair_value();
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessera-native-test-" + std::to_string(::getpid()) + ".spill");
  std::filesystem::remove(path);
  // A record 100 bytes into its segment (after another record's place).
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  std::uint64_t length = 0;
  ASSERT_EQ(distributed::detail::write_spill_record(fd, path, 100, v, &length), "");
  ::close(fd);
  EXPECT_EQ(std::filesystem::file_size(path), 100 + length);
  Value back = distributed::detail::read_spill_record(path, 100, length, "k");
  EXPECT_THROW(distributed::detail::read_spill_record(path, 100, length - 1, "k"), Error);  // not that record
  std::filesystem::remove(path);
  const Pair& p = pair_of(back);
  EXPECT_EQ(p.name, "left-right");
  EXPECT_EQ(text(p.first), "left bytes");
  // Frames unpacked from one buffer start at 64-byte boundaries (Arrow expects aligned buffers).
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.first->data()) % 64, 0u);
}

TEST(Native, UnknownTypeAndCorruptBytesAreNamedErrors) {
  try {
    native_codec("no.such.type");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no.such.type"), std::string::npos);
  }
  register_pair_codec();
  std::string packed = pack_native(make_pair_value().native());
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{12}, packed.size() - 1}) {
    auto b = Buffer::allocate_host(cut);
    if (cut) std::memcpy(b->data(), packed.data(), cut);  // an empty Buffer has no data pointer
    EXPECT_THROW(unpack_native(kPairType, b), Error) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace tessera
