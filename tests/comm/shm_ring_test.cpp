// The shared ring of one host (src/comm/shm_ring.hpp): what a reader in another process gets,
// the offers it refuses, the counters it does not trust, and the sleep/wake handshake.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/shm_ring.hpp"

using tessera::comm::detail::RingOffer;
using tessera::comm::detail::ShmRing;

namespace {

std::uint8_t pattern(std::uint64_t slot, std::size_t i) { return static_cast<std::uint8_t>(slot * 131 + i * 7); }

// The child reads `count` slots through the ring it opens from the offer, checking each; its exit
// code says what went wrong (0: all right).
// It says on `ready` when it has opened the ring (the writer writes only after that, as the UCX
// link writes only once the peer took its offer).
int read_in_child(const RingOffer& offer, std::uint64_t count, int ready) {
  std::string why;
  auto ring = ShmRing::open(offer, why);
  if (!ring) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 2;
  }
  const char ok = 1;
  if (::write(ready, &ok, 1) != 1) return 6;
  ::usleep(20000);  // the writer fills the ring meanwhile and must wait for room
  for (std::uint64_t n = 0; n < count;) {
    auto slot = ring->peek();
    if (!slot) continue;  // the writer is behind: spin, as a reader with work does
    std::uint64_t id = 0;
    std::memcpy(&id, slot->header, sizeof id);
    if (id != n) return 3;
    if (slot->length != (n % 3 == 0 ? ring->payload_capacity() : 1000 + n)) return 4;
    for (std::size_t i = 0; i < slot->length; i += 97)
      if (slot->data[i] != pattern(n, i)) return 5;
    ring->pop();
    ++n;
  }
  return 0;
}

}  // namespace

TEST(ShmRing, AnotherProcessReadsEverySlotInOrderThroughTheOfferedDescriptor) {
  auto ring = ShmRing::create(4, 64 * 1024);
  const auto offer = ring->offer();
  constexpr std::uint64_t kCount = 200;  // fifty times round the ring: the writer waits for the reader
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(read_in_child(offer, kCount, ready[1]));
  ::close(ready[1]);
  char opened = 0;
  const bool child_opened = ::read(ready[0], &opened, 1) == 1;
  ::close(ready[0]);
  if (!child_opened) {
    int status = 0;
    ::waitpid(child, &status, 0);
    FAIL() << "the reader could not open the ring (exit status " << status << ")";
  }
  std::vector<std::uint8_t> data(ring->payload_capacity());
  std::uint64_t full = 0;
  int status = -1;
  for (std::uint64_t n = 0; n < kCount; ++n) {
    const std::size_t length = n % 3 == 0 ? ring->payload_capacity() : 1000 + n;
    for (std::size_t i = 0; i < length; ++i) data[i] = pattern(n, i);
    while (!ring->write(&n, sizeof n, data.data(), length)) {
      // A reader that gave up would leave us waiting for ever.
      if (++full % 4096 == 0 && ::waitpid(child, &status, WNOHANG) == child) break;
    }
    if (status != -1) break;
  }
  if (status == -1) {
    ASSERT_EQ(::waitpid(child, &status, 0), child);
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: open refused, 3: order, 4: length, 5: bytes";
  EXPECT_GT(full, 0u) << "a 4-slot ring of 200 slots' worth must have been full at first";
}

TEST(ShmRing, OffersThatNameAnotherFileOrProcessAreRefused) {
  auto ring = ShmRing::create(2, 4096);
  std::string why;

  auto wrong_nonce = ring->offer();
  wrong_nonce.nonce ^= 1;
  EXPECT_EQ(ShmRing::open(wrong_nonce, why), nullptr);
  EXPECT_NE(why.find("not the ring offered"), std::string::npos) << why;

  auto wrong_size = ring->offer();
  wrong_size.slots = 3;
  EXPECT_EQ(ShmRing::open(wrong_size, why), nullptr);
  EXPECT_NE(why.find("size"), std::string::npos) << why;

  auto no_such_process = ring->offer();
  no_such_process.pid = 0x3ffffff0;  // above any pid_max
  EXPECT_EQ(ShmRing::open(no_such_process, why), nullptr);
  EXPECT_NE(why.find("cannot open"), std::string::npos) << why;

  auto out_of_bounds = ring->offer();
  out_of_bounds.slot_bytes = std::size_t{1} << 40;
  EXPECT_EQ(ShmRing::open(out_of_bounds, why), nullptr);
  EXPECT_NE(why.find("out of bounds"), std::string::npos) << why;

  // A descriptor that is not a regular file (a pipe) is not even opened.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto pipe_offer = ring->offer();
  pipe_offer.fd = static_cast<std::uint32_t>(fds[0]);
  EXPECT_EQ(ShmRing::open(pipe_offer, why), nullptr);
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  ::close(fds[0]);
  ::close(fds[1]);

  // A memfd the right size but without seals: its owner could shrink it under our mapping.
  const int fd = ::memfd_create("not-a-ring", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096 + 2 * 4096), 0);
  auto unsealed = ring->offer();
  unsealed.fd = static_cast<std::uint32_t>(fd);
  EXPECT_EQ(ShmRing::open(unsealed, why), nullptr);
  EXPECT_NE(why.find("sealed"), std::string::npos) << why;
  ::close(fd);

  // The true offer opens, once.
  auto reader = ShmRing::open(ring->offer(), why);
  ASSERT_NE(reader, nullptr) << why;
  EXPECT_EQ(reader->peek(), std::nullopt);
  const char byte = 'x';
  ASSERT_TRUE(ring->write(nullptr, 0, &byte, 1));
  ASSERT_TRUE(reader->peek().has_value());
  reader->pop();
  EXPECT_EQ(ShmRing::open(ring->offer(), why), nullptr) << "a ring already in use is not offered twice";
}

TEST(ShmRing, CountersAndLengthsWrittenByAPeerAreChecked) {
  auto ring = ShmRing::create(2, 4096);
  std::string why;
  auto reader = ShmRing::open(ring->offer(), why);
  ASSERT_NE(reader, nullptr) << why;
  // A third mapping of the same memory plays the hostile peer.
  const std::string path = "/proc/self/fd/" + std::to_string(ring->offer().fd);
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  auto* raw = static_cast<std::uint8_t*>(::mmap(nullptr, 4096 + 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(raw, MAP_FAILED);
  ::close(fd);
  auto* written = reinterpret_cast<std::atomic<std::uint64_t>*>(raw + 64);
  auto* read = reinterpret_cast<std::atomic<std::uint64_t>*>(raw + 128);

  written->store(1000);  // more full slots than the ring has
  EXPECT_THROW(reader->peek(), std::runtime_error);
  written->store(0);

  ASSERT_TRUE(ring->write(nullptr, 0, "abc", 3));
  const std::uint64_t huge = std::uint64_t{1} << 40;
  std::memcpy(raw + 4096, &huge, sizeof huge);  // the slot's length, rewritten
  EXPECT_THROW(reader->peek(), std::runtime_error);

  read->store(5);  // the reader "freed" slots never written
  EXPECT_THROW(ring->write(nullptr, 0, "abc", 3), std::runtime_error);
  ::munmap(raw, 4096 + 2 * 4096);

  EXPECT_THROW(ring->write(nullptr, 0, nullptr, ring->payload_capacity() + 1), std::invalid_argument);
  EXPECT_THROW(ShmRing::create(0, 4096), std::invalid_argument);
}

TEST(ShmRing, ASleepingSideIsAskedToBeWokenExactlyOnce) {
  auto ring = ShmRing::create(1, 4096);
  std::string why;
  auto reader = ShmRing::open(ring->offer(), why);
  ASSERT_NE(reader, nullptr) << why;

  EXPECT_TRUE(reader->reader_arm()) << "nothing to read: the reader may sleep";
  ASSERT_TRUE(ring->write(nullptr, 0, "a", 1));
  EXPECT_TRUE(ring->take_reader_wake()) << "the reader slept: the writer must wake it";
  EXPECT_FALSE(ring->take_reader_wake()) << "once";
  EXPECT_FALSE(reader->reader_arm()) << "a full slot: the reader may not sleep";
  EXPECT_FALSE(ring->take_reader_wake()) << "and did not ask to be woken";

  EXPECT_TRUE(ring->writer_arm()) << "the one slot is full: the writer may sleep";
  EXPECT_FALSE(ring->write(nullptr, 0, "b", 1));
  ASSERT_TRUE(reader->peek().has_value());
  reader->pop();
  EXPECT_TRUE(reader->take_writer_wake()) << "the writer slept: the reader must wake it";
  EXPECT_FALSE(reader->take_writer_wake()) << "once";
  EXPECT_FALSE(ring->writer_arm()) << "room again: the writer may not sleep";
}
