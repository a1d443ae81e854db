#pragma once
// A one-way ring of fixed-size slots in shared memory, for two processes on one host: the
// ucx:// link's way past the kernel's cross-process copy (docs/ucx.md, "The shared ring").
//
// The writer creates the ring in a sealed memfd (it can be neither shrunk nor grown, so the
// reader's mapping can never fault) and offers it to the reader over the link it already has:
// its pid, the descriptor's number and a random nonce. The reader opens the memfd through
// /proc/<pid>/fd/<fd> and takes the ring only when the seals, the size and the nonce inside are
// what the offer says: a peer on another host or in another pid namespace names a process that
// is not the writer, and is refused. Neither side trusts what the other writes into the
// mapping: counters and lengths are checked before use, and a ring that breaks them throws.
//
// One writer thread and one reader thread (each side's I/O thread). A slot holds a small
// header for the user (up to kUserHeader bytes), then up to payload_capacity() bytes of data.
// Waiting costs no system call: a side that found nothing to do raises its "asleep" flag and
// looks once more (reader_arm, writer_arm); the other side, after it moved a slot, takes the
// flag down (take_reader_wake, take_writer_wake) and wakes it by other means (a small message).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tessera::comm::detail {

/** What the reader needs to open a ring; sent as these bytes on one host. */
struct RingOffer {
  std::int64_t pid = 0;
  std::uint64_t nonce = 0;
  std::uint64_t slot_bytes = 0;
  std::uint32_t fd = 0;
  std::uint32_t slots = 0;
};
static_assert(sizeof(RingOffer) == 32);

class ShmRing {
 public:
  static constexpr std::size_t kSlotHeader = 64;  ///< per slot: the length, then the user's header
  static constexpr std::size_t kUserHeader = kSlotHeader - 8;
  static constexpr std::uint32_t kMaxSlots = 64;
  static constexpr std::size_t kMaxSlotBytes = std::size_t{4} << 20;

  /** One full slot, valid until pop(). */
  struct Slot {
    const std::uint8_t* header;  ///< kUserHeader bytes
    const std::uint8_t* data;
    std::size_t length;
  };

  /**
   * The writer's side: a new ring of `slots` slots of `slot_bytes` bytes each (header included).
   * Throws std::runtime_error when the system cannot make one (no memfd, no memory).
   */
  static std::unique_ptr<ShmRing> create(std::uint32_t slots, std::size_t slot_bytes);
  /** The reader's side of an offered ring; null with `why` when it is not the ring offered. */
  static std::unique_ptr<ShmRing> open(const RingOffer& offer, std::string& why);

  ShmRing(const ShmRing&) = delete;
  ShmRing& operator=(const ShmRing&) = delete;
  ~ShmRing();

  /** The writer's offer (its pid, descriptor and nonce). */
  RingOffer offer() const;
  /** The writer no longer needs its descriptor once the reader took (or refused) the offer. */
  void close_descriptor();

  std::size_t payload_capacity() const noexcept { return slot_bytes_ - kSlotHeader; }
  std::uint32_t slots() const noexcept { return slots_; }

  // ---- the writer ----
  /**
   * Copies `header` (at most kUserHeader bytes) and `n` bytes of `data` (at most
   * payload_capacity()) into the next slot and publishes it; false while the ring is full.
   */
  bool write(const void* header, std::size_t header_size, const void* data, std::size_t n);
  /** Writer about to wait for space: true when it may (the ring is still full; the reader will wake it). */
  bool writer_arm();
  /** After write(): whether the reader went to sleep and must be woken (the request is taken down). */
  bool take_reader_wake();

  // ---- the reader ----
  /** The oldest full slot, if any. Throws std::runtime_error when the writer broke the ring. */
  std::optional<Slot> peek();
  /** Frees the slot peek() returned. */
  void pop();
  /** Reader about to sleep: true when it may (nothing to read; the writer will wake it). */
  bool reader_arm();
  /** After pop(): whether the writer waits for space and must be woken (the request is taken down). */
  bool take_writer_wake();

 private:
  struct Control;
  ShmRing(int fd, std::uint8_t* base, std::size_t bytes, std::uint32_t slots, std::size_t slot_bytes, bool writer);
  std::uint64_t pending() const;  // full slots, checked
  std::uint8_t* slot(std::uint64_t n) const { return base_ + kControlBytes + (n % slots_) * slot_bytes_; }
  Control* control() const;

  static constexpr std::size_t kControlBytes = 4096;
  int fd_;
  std::uint8_t* base_;
  std::size_t bytes_;
  std::uint32_t slots_;
  std::size_t slot_bytes_;
  bool writer_;
  std::uint64_t mine_ = 0;  // the writer's published count, or the reader's consumed count
};

}  // namespace tessera::comm::detail
