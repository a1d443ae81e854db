// Issue 29: what a peer that has not authenticated costs the scheduler. A hello's 12-byte
// prefix claiming a 64 KiB body made the listener allocate and zero the whole body before any of
// it arrived (10,000 such connections, 120 KB sent, held 649 MB, still resident after they were
// dropped). Now the body is read as it arrives and a claim above the 4 KiB cap is refused at
// once: a stranger costs what it sent plus a few KB, and what a burst of them held is reused by
// the next (glibc keeps it: Boost.Asio's per-socket records, pooled, pin its pages, so
// malloc_trim cannot give them back). A real tessera-scheduler, its resident set read from
// /proc/PID/status, and real sockets.
#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "../support/resident_bytes.hpp"
#include "comm/wire.hpp"
#include "distributed/util.hpp"
#include "tessera/distributed/scheduler.hpp"

namespace {

using tessera_test::Children;
using tessera_test::RawSocket;
using tessera_test::read_text;
using tessera_test::resident_bytes;
using tessera_test::wait_until;

constexpr int kConnections = 2000;
constexpr std::size_t kKB = 1024;
constexpr std::size_t kMaxPerStranger = 4 * kKB;  // issue 29's goal: at most 4 KB resident each
constexpr std::size_t kSlack = 6 * kKB * kKB;     // the process's own noise: code paths paged in, arenas

int open_descriptors(pid_t pid) {
  int n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n - 2;
}

// The 12 bytes of a hello before its body: magic, this build's version, the body length claimed.
std::vector<std::uint8_t> hello_prefix(std::uint32_t claimed) {
  std::vector<std::uint8_t> out;
  for (std::uint32_t v : {tessera::comm::wire::kHelloMagic, tessera::comm::wire::kProtocolVersion, claimed})
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  return out;
}

std::string mb(std::size_t bytes) { return std::to_string(static_cast<double>(bytes) / 1e6) + " MB"; }

}  // namespace

TEST(StrangerCost, HelloPrefixesClaimingLargeBodiesCostAtMostAFewKBEach) {
  const auto scheduler = (tessera_test::build_bin_dir() / "tessera-scheduler").string();
  if (!std::filesystem::exists(scheduler)) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  Children kids;
  const pid_t sched = kids.spawn({scheduler, "--port", "0", "--no-dashboard", "--scheduler-file", sfile, "--token",
                                  tessera::distributed::random_hex(32), "--log-level", "error"},
                                 tessera_test::child_env());
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10));
  const int port = tessera_test::port_of(tessera::distributed::read_scheduler_file(sfile));
  ASSERT_GT(port, 0);

  // Every code path once, so that its pages count in the baseline, not against the strangers.
  auto strangers = [&](std::uint32_t claimed, int n) {
    std::vector<std::unique_ptr<RawSocket>> peers;
    const auto prefix = hello_prefix(claimed);
    for (int i = 0; i < n; ++i) {
      peers.push_back(std::make_unique<RawSocket>(port, 0.05));
      peers.back()->send_all(prefix);
    }
    return peers;
  };
  strangers(64 * kKB, 50);
  strangers(static_cast<std::uint32_t>(tessera::comm::wire::kMaxHelloBody), 50);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int base_fds = open_descriptors(sched);
  const std::size_t base = resident_bytes(sched);
  ASSERT_GT(base, 0u);

  // The attack (a claim of 64 KiB, above the cap: refused at once), then claims of the
  // largest body the listener waits for (held until the handshake deadline), twice.
  const auto cap = static_cast<std::uint32_t>(tessera::comm::wire::kMaxHelloBody);
  std::size_t first_peak = 0;
  for (const std::uint32_t claimed : {static_cast<std::uint32_t>(64 * kKB), cap, cap}) {
    SCOPED_TRACE("each prefix claims a body of " + std::to_string(claimed) + " bytes");
    auto peers = strangers(claimed, kConnections);
    // Held (every one accepted and waiting for its body), or refused: whichever, within 2 s
    // and so before the 5 s handshake deadline closes them.
    wait_until([&] { return open_descriptors(sched) >= base_fds + kConnections; }, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::size_t held = resident_bytes(sched);
    const std::size_t growth = held > base ? held - base : 0;
    EXPECT_LT(growth, kConnections * kMaxPerStranger + kSlack)
        << kConnections << " strangers that sent 12 bytes each made the scheduler grow by " << mb(growth) << " ("
        << growth / kConnections << " bytes each), holding " << open_descriptors(sched) - base_fds << " of them";
    peers.clear();
    EXPECT_TRUE(wait_until([&] { return open_descriptors(sched) <= base_fds + 8; }, 10));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::size_t after = resident_bytes(sched);
    std::printf("stranger cost: claims of %u bytes: scheduler RSS %s before, %s with %d strangers (%zu bytes each), "
                "%s after they left\n",
                claimed, mb(base).c_str(), mb(held).c_str(), kConnections, growth / kConnections, mb(after).c_str());
    // What they held is free for the next ones, not kept per stranger: the same attack again
    // costs nothing more (before issue 29 each burst's 136 MB stayed resident).
    if (first_peak == 0 && claimed == cap) first_peak = held;
    else if (claimed == cap) {
      EXPECT_LT(held, first_peak + kSlack / 4) << "a second burst grew the scheduler again: " << mb(held) << " after "
                                               << mb(first_peak);
    }
    EXPECT_LT(after, base + kConnections * kMaxPerStranger + kSlack) << "after the strangers left: " << mb(after);
  }
  EXPECT_TRUE(kids.running(sched)) << "the scheduler died";
}

// Issue 29, item 2: a peer past the handshake (the scheduler has no token, so every peer is one)
// announces 65,536 frames of 16 KiB (a 524 KB preamble) and sends 64 KiB of them. Before, the
// scheduler allocated all 65,536 frames at the preamble (about 260 MB touched: each 16 KiB
// block's malloc header on a page of its own) and kept them after the connection closed; eight
// such connections killed a scheduler limited to 2 GiB. Now frames are allocated as their bytes
// arrive: each connection costs about what it sent.
TEST(PeerCost, ManySmallFramesCostOnlyTheBytesThatArrived) {
  const auto scheduler = (tessera_test::build_bin_dir() / "tessera-scheduler").string();
  if (!std::filesystem::exists(scheduler)) GTEST_SKIP() << "tessera-scheduler not built next to the tests";
  tessera_test::TempDir dir;
  const std::string sfile = (dir.path() / "s.json").string();
  Children kids;
  const pid_t sched = kids.spawn(
      {scheduler, "--port", "0", "--no-dashboard", "--scheduler-file", sfile, "--log-level", "error"},
      tessera_test::child_env());
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(sfile); }, 10));
  const int port = tessera_test::port_of(tessera::distributed::read_scheduler_file(sfile));
  ASSERT_GT(port, 0);

  constexpr int kPeers = 8;
  constexpr std::uint32_t kFrames = 65536;
  constexpr std::size_t kFrameBytes = 16 * kKB, kSent = 64 * kKB;
  auto message_start = [&] {
    const std::string header(64, 'h');  // never decoded: the message is never finished
    auto bytes = tessera::comm::wire::encode_preamble(header.size(), std::vector<std::uint64_t>(kFrames, kFrameBytes));
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.resize(bytes.size() + kSent, 0x5a);
    return bytes;
  }();
  auto peers_sending = [&](int n) {
    std::vector<std::unique_ptr<RawSocket>> peers;
    for (int i = 0; i < n; ++i) {
      peers.push_back(std::make_unique<RawSocket>(port, 0.05));
      tessera::comm::wire::Hello h;
      h.nonce = tessera::comm::wire::make_nonce();
      h.name = "raw";
      peers.back()->send_all(tessera::comm::wire::encode_hello(h));
      peers.back()->send_all(message_start);
    }
    return peers;
  };
  peers_sending(1);  // every code path once, so that its pages count in the baseline
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::size_t base = resident_bytes(sched);
  ASSERT_GT(base, 0u);
  std::size_t held = 0;
  {
    auto peers = peers_sending(kPeers);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // before the 5 s first-message deadline
    held = resident_bytes(sched);
  }
  const std::size_t growth = held > base ? held - base : 0;
  const std::size_t sent = message_start.size();
  std::printf("peer cost: %d peers announcing %u frames of %zu bytes, %zu bytes sent each: scheduler RSS %s before, "
              "%s with them (%zu bytes each)\n",
              kPeers, kFrames, kFrameBytes, sent, mb(base).c_str(), mb(held).c_str(), growth / kPeers);
  // Issue 29's goal: at most the bytes sent plus 64 KB each (with the process's own noise).
  EXPECT_LT(growth, kPeers * (sent + 64 * kKB) + kSlack)
      << kPeers << " peers that sent " << sent << " bytes each made the scheduler grow by " << mb(growth);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const std::size_t after = resident_bytes(sched);
  EXPECT_LT(after, base + kSlack) << "after the peers left the scheduler still holds " << mb(after - base);
  EXPECT_TRUE(kids.running(sched)) << "the scheduler died";
}
