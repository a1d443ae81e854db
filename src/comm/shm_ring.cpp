// The shared ring of one host (shm_ring.hpp; docs/ucx.md, "The shared ring").
#include "shm_ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <random>
#include <stdexcept>

namespace tessera::comm::detail {

namespace {
constexpr std::uint64_t kRingMagic = 0x31474e4952535354ull;  // "TSSRING1"

std::uint64_t random_nonce() {
  std::uint64_t n = 0;
  if (::getrandom(&n, sizeof n, 0) == static_cast<ssize_t>(sizeof n)) return n;
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

std::string errno_text() { return std::strerror(errno); }
}  // namespace

// The first page of the mapping. Each counter has a cache line of its own: the writer's and the
// reader's stores would otherwise bounce one line between the two cores for every slot.
struct ShmRing::Control {
  std::uint64_t magic;
  std::uint64_t nonce;
  std::uint64_t slot_bytes;
  std::uint32_t slots;
  std::uint32_t reserved;
  alignas(64) std::atomic<std::uint64_t> written;  // slots published, by the writer
  alignas(64) std::atomic<std::uint64_t> read;     // slots freed, by the reader
  alignas(64) std::atomic<std::uint32_t> reader_asleep;
  alignas(64) std::atomic<std::uint32_t> writer_asleep;
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "the ring's counters are shared between processes: they must be lock-free");
static_assert(sizeof(ShmRing::Slot) > 0);

ShmRing::ShmRing(int fd, std::uint8_t* base, std::size_t bytes, std::uint32_t slots, std::size_t slot_bytes,
                 bool writer)
    : fd_(fd), base_(base), bytes_(bytes), slots_(slots), slot_bytes_(slot_bytes), writer_(writer) {}

ShmRing::~ShmRing() {
  ::munmap(base_, bytes_);
  close_descriptor();
}

ShmRing::Control* ShmRing::control() const { return reinterpret_cast<Control*>(base_); }

std::unique_ptr<ShmRing> ShmRing::create(std::uint32_t slots, std::size_t slot_bytes) {
  static_assert(sizeof(Control) <= kControlBytes);
  if (slots == 0 || slots > kMaxSlots || slot_bytes <= kSlotHeader || slot_bytes > kMaxSlotBytes ||
      slot_bytes % 64 != 0)
    throw std::invalid_argument("a ring of " + std::to_string(slots) + " slots of " + std::to_string(slot_bytes) +
                                " bytes");
  const std::size_t bytes = kControlBytes + std::size_t{slots} * slot_bytes;
  const int fd = ::memfd_create("tessera-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) throw std::runtime_error("memfd_create: " + errno_text());
  // Sealed against shrinking (and growing): the reader's mapping can never point past the end.
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const auto why = errno_text();
    ::close(fd);
    throw std::runtime_error("cannot size and seal a ring: " + why);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    const auto why = errno_text();
    ::close(fd);
    throw std::runtime_error("cannot map a ring: " + why);
  }
  auto* c = new (p) Control{};
  c->magic = kRingMagic;
  c->nonce = random_nonce();
  c->slot_bytes = slot_bytes;
  c->slots = slots;
  return std::unique_ptr<ShmRing>(new ShmRing(fd, static_cast<std::uint8_t*>(p), bytes, slots, slot_bytes, true));
}

std::unique_ptr<ShmRing> ShmRing::open(const RingOffer& offer, std::string& why) {
  if (offer.pid <= 0 || offer.slots == 0 || offer.slots > kMaxSlots || offer.slot_bytes <= kSlotHeader ||
      offer.slot_bytes > kMaxSlotBytes || offer.slot_bytes % 64 != 0) {
    why = "the offer is out of bounds";
    return nullptr;
  }
  const std::size_t bytes = kControlBytes + std::size_t{offer.slots} * offer.slot_bytes;
  const std::string path = "/proc/" + std::to_string(offer.pid) + "/fd/" + std::to_string(offer.fd);
  // Only a regular file is opened (a peer could name any descriptor of a process of this user: a
  // FIFO or a device must not be opened, let alone block us); O_NONBLOCK for the narrow race.
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) {
    why = "cannot open " + path + ": " + errno_text();
    return nullptr;
  }
  if (!S_ISREG(target.st_mode)) {
    why = path + " is not a ring of the offered size (not a regular file)";
    return nullptr;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    why = "cannot open " + path + ": " + errno_text();
    return nullptr;
  }
  struct stat st {};
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != bytes) {
    why = path + " is not a ring of the offered size";
  } else if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
    why = path + " is not sealed against shrinking";
  } else {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      why = "cannot map " + path + ": " + errno_text();
    } else {
      ::close(fd);  // the mapping keeps the memory
      std::unique_ptr<ShmRing> ring(
          new ShmRing(-1, static_cast<std::uint8_t*>(p), bytes, offer.slots, offer.slot_bytes, false));
      const Control* c = ring->control();
      if (c->magic != kRingMagic || c->nonce != offer.nonce || c->slots != offer.slots ||
          c->slot_bytes != offer.slot_bytes) {
        why = path + " is not the ring offered (another process of that number: another host or pid namespace)";
        return nullptr;
      }
      if (c->read.load() != 0 || c->written.load() != 0) {
        why = path + " has been used already";
        return nullptr;
      }
      return ring;
    }
  }
  ::close(fd);
  return nullptr;
}

RingOffer ShmRing::offer() const {
  RingOffer o;
  o.pid = ::getpid();
  o.nonce = control()->nonce;
  o.slot_bytes = slot_bytes_;
  o.fd = static_cast<std::uint32_t>(fd_);
  o.slots = slots_;
  return o;
}

void ShmRing::close_descriptor() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::uint64_t ShmRing::pending() const {
  // Our own counter is ours; the other side's is read from shared memory and may be anything.
  // seq_cst loads (plain loads on x86): the arm functions need them ordered after their store.
  const std::uint64_t w = writer_ ? mine_ : control()->written.load(std::memory_order_seq_cst);
  const std::uint64_t r = writer_ ? control()->read.load(std::memory_order_seq_cst) : mine_;
  if (w < r || w - r > slots_)
    throw std::runtime_error("the shared ring's counters are impossible (" + std::to_string(w) + " written, " +
                             std::to_string(r) + " read, " + std::to_string(slots_) + " slots)");
  return w - r;
}

bool ShmRing::write(const void* header, std::size_t header_size, const void* data, std::size_t n) {
  if (header_size > kUserHeader || n > payload_capacity())
    throw std::invalid_argument("a slot of " + std::to_string(n) + " bytes with a header of " +
                                std::to_string(header_size));
  if (pending() == slots_) return false;
  std::uint8_t* s = slot(mine_);
  const std::uint64_t length = n;
  std::memcpy(s, &length, sizeof length);
  if (header_size) std::memcpy(s + 8, header, header_size);
  if (n) std::memcpy(s + kSlotHeader, data, n);
  ++mine_;
  // seq_cst, not only release: the store must be ordered before take_reader_wake's load
  // (reader_arm does the mirror image), or both sides could miss each other and sleep.
  control()->written.store(mine_, std::memory_order_seq_cst);
  return true;
}

bool ShmRing::writer_arm() {
  auto& flag = control()->writer_asleep;
  flag.store(1, std::memory_order_seq_cst);
  if (pending() < slots_) {
    flag.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool ShmRing::take_reader_wake() {
  auto& flag = control()->reader_asleep;
  return flag.load(std::memory_order_seq_cst) != 0 && flag.exchange(0) != 0;
}

std::optional<ShmRing::Slot> ShmRing::peek() {
  if (pending() == 0) return std::nullopt;
  const std::uint8_t* s = slot(mine_);
  std::uint64_t length = 0;
  std::memcpy(&length, s, sizeof length);
  if (length > payload_capacity())
    throw std::runtime_error("a slot of the shared ring claims " + std::to_string(length) + " bytes");
  return Slot{s + 8, s + kSlotHeader, static_cast<std::size_t>(length)};
}

void ShmRing::pop() {
  ++mine_;
  control()->read.store(mine_, std::memory_order_seq_cst);  // seq_cst: see write()
}

bool ShmRing::reader_arm() {
  auto& flag = control()->reader_asleep;
  flag.store(1, std::memory_order_seq_cst);
  if (pending() > 0) {
    flag.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool ShmRing::take_writer_wake() {
  auto& flag = control()->writer_asleep;
  return flag.load(std::memory_order_seq_cst) != 0 && flag.exchange(0) != 0;
}

}  // namespace tessera::comm::detail
