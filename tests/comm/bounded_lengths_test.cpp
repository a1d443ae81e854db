// No peer costs more memory than it has sent (issue 19): a length inside a message header (a
// cereal string, vector or block size) may not claim more than the header holds, and a
// preamble announcing a huge header makes resident only what actually arrives. Peak RSS of
// this process (VmHWM, reset through /proc/self/clear_refs) is the measure: the listener runs in
// it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <gtest/gtest.h>

#include "../support/raw_socket.hpp"
#include "comm/wire.hpp"
#include "comm_test_util.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/comm/message.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using namespace tessera_comm_test;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Peak resident memory since the last reset_peak_rss(), in bytes (VmHWM).
std::size_t peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// The header bytes of an op whose string length field claims `claimed` bytes: 8 + 2 + 36 = 46
// bytes in all, as the message in the issue.
std::string header_claiming_string(std::uint64_t claimed) {
  std::string h = encode_header(Message("op"));
  h.resize(46, 'x');
  for (int i = 0; i < 8; ++i) h[static_cast<std::size_t>(i)] = static_cast<char>(claimed >> (8 * i));
  return h;
}

// A header whose one field is a Block of shape {n} float64 without its bytes.
std::string header_claiming_block(std::int64_t n) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(std::string("op"), cereal::make_size_tag(static_cast<cereal::size_type>(1)), std::string("b"));
    ar(std::uint8_t{1}, true, static_cast<std::uint8_t>(DType::Float64), std::vector<std::int64_t>{n});
  }
  return std::move(os).str();
}

// A raw socket that has said hello (no token), then sends what it is given.
class RawPeer : public tessera_test::LoopbackSocket {
 public:
  explicit RawPeer(int port) : LoopbackSocket(port) {
    wire::Hello h;
    h.nonce = wire::make_nonce();
    h.name = "raw";
    write(wire::encode_hello(h));
  }
};

std::vector<std::uint8_t> framed(const std::string& header) {
  auto out = wire::encode_preamble(header.size(), {});
  out.insert(out.end(), header.begin(), header.end());
  return out;
}

}  // namespace

TEST(BoundedLengths, AStringLengthBeyondTheHeaderIsRefusedWithoutAllocatingIt) {
  const auto header = header_claiming_string(std::uint64_t{3} << 29);  // 1.5 GiB
  ASSERT_EQ(header.size(), 46u);
  ASSERT_TRUE(reset_peak_rss());
  const auto before = peak_rss();
  Message m;
  const auto error = what([&] { decode_header(header.data(), header.size(), m); });
  EXPECT_NE(error.find("corrupt message header"), std::string::npos) << error;
  EXPECT_LT(peak_rss(), before + 64 * kMiB) << "decoding 46 bytes made " << (peak_rss() - before) / kMiB
                                            << " MiB resident";
}

TEST(BoundedLengths, ABlockLargerThanTheHeaderIsRefusedWithoutAllocatingIt) {
  const auto header = header_claiming_block(std::int64_t{1} << 27);  // 1 GiB of float64
  ASSERT_TRUE(reset_peak_rss());
  const auto before = peak_rss();
  Message m;
  const auto error = what([&] { decode_header(header.data(), header.size(), m); });
  EXPECT_NE(error.find("corrupt message header"), std::string::npos) << error;
  EXPECT_LT(peak_rss(), before + 64 * kMiB) << (peak_rss() - before) / kMiB << " MiB resident";
  // 128 TiB: refused for what it claims, before any allocation is tried (not a bad_alloc).
  const auto huge = header_claiming_block(std::int64_t{1} << 44);
  const auto why = what([&] { decode_header(huge.data(), huge.size(), m); });
  EXPECT_NE(why.find("needs 140737488355328 bytes; only 0 are left"), std::string::npos) << why;
}

TEST(BoundedLengths, TheSameMessagesWithTheirBytesStillDecode) {
  Message m("op");
  m.set("s", std::string(1000, 'y'));
  m.set("b", Block::from_values<double>({1, 2, 3}, {3}));
  m.set("v", std::vector<std::int64_t>{4, 5, 6});
  const auto header = encode_header(m);
  Message back;
  decode_header(header.data(), header.size(), back);
  EXPECT_EQ(back.op, "op");
  EXPECT_EQ(back.get<std::string>("s"), std::string(1000, 'y'));
  EXPECT_EQ(back.fields.at("b").block().to_doubles(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(back.get<std::vector<std::int64_t>>("v"), (std::vector<std::int64_t>{4, 5, 6}));
}

TEST(BoundedLengths, A46ByteMessageClaimingAHugeStringClosesOnlyThatConnection) {
  EchoServer server("tcp://127.0.0.1:0");
  ASSERT_TRUE(reset_peak_rss());
  const auto before = peak_rss();
  {
    RawPeer raw(server.port());
    raw.write(framed(header_claiming_string(std::uint64_t{3} << 29)));
    EXPECT_TRUE(raw.wait_closed(2000ms));
  }
  const auto why = server.wait_close();
  EXPECT_NE(why.find("corrupt message header"), std::string::npos) << why;
  EXPECT_LT(peak_rss(), before + 64 * kMiB) << (peak_rss() - before) / kMiB << " MiB resident";
  auto comm = connect(server.address());
  comm->send(Message("still-serving")).get();
  EXPECT_EQ(comm->recv(1000ms).op, "still-serving");
}

TEST(BoundedLengths, AnAnnouncedHeaderCostsOnlyTheBytesThatArrived) {
  // Within the limit (the cluster's is 1 GiB), three peers announce 1 GiB headers and send 1 KiB.
  CommOptions opts;
  opts.max_header_bytes = std::size_t{1} << 30;
  EchoServer server("tcp://127.0.0.1:0", opts);
  ASSERT_TRUE(reset_peak_rss());
  const auto before = peak_rss();
  {
    std::vector<std::unique_ptr<RawPeer>> peers;
    for (int i = 0; i < 3; ++i) {
      peers.push_back(std::make_unique<RawPeer>(server.port()));
      auto bytes = wire::encode_preamble(std::uint64_t{1} << 30, {});
      bytes.resize(bytes.size() + 1024, 0);
      peers.back()->write(bytes);
    }
    std::this_thread::sleep_for(300ms);
    EXPECT_LT(peak_rss(), before + 128 * kMiB)
        << "three announced 1 GiB headers made " << (peak_rss() - before) / kMiB << " MiB resident";
  }
  EXPECT_NE(server.wait_close().find("middle of a message"), std::string::npos);
  // Over the limit, the preamble alone closes the connection.
  RawPeer over(server.port());
  over.write(wire::encode_preamble((std::uint64_t{1} << 30) + 1, {}));
  EXPECT_TRUE(over.wait_closed(2000ms));
}
