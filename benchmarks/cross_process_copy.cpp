// benchmarks/cross_process_copy: how fast bytes can move between two processes of one host, by
// the ways a transport could move them, beside memcpy in one process. It bounds what ucx:// (whose
// large messages go by UCX's cma rendezvous, process_vm_readv) can reach here, and tells whether
// a shared-memory path would beat it (docs/ucx.md, "The 256 MiB figure on another machine").
//
//   cross_process_copy [--megabytes 256] [--rounds 5]
//
// One JSON line per way and round. The source and destination are 2 MiB-aligned buffers with
// transparent huge pages asked for (as Tessera's frame pool and host Buffers are), touched before
// timing. Ways:
//   memcpy        one process, source to destination
//   cma           the child reads the parent's buffer with process_vm_readv (what UCX's cma does)
//   ring_<K>k     the parent copies into a shared-memory ring of 8 K-KiB slots (a memfd the child
//                 opened through /proc/<pid>/fd), the child copies out: two copies, overlapped
//   into_shared   the parent copies straight into a shared mapping of the child's destination
//                 (one copy, its page tables kept from the previous round)
//   into_shared_fresh  the same, the parent mapping the destination anew each round (what a
//                 sender must do to keep the receiver's pages out of its own resident set)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kHuge = std::size_t{2} << 20;

char* huge_buffer(std::size_t n, char fill) {
  void* p = mmap(nullptr, n + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
  madvise(aligned, n, MADV_HUGEPAGE);
  std::memset(aligned, fill, n);
  return aligned;
}

// The control block both processes map: which round runs, how far each side got.
struct alignas(64) Control {
  alignas(64) std::atomic<long> round{-1};  // parent: the round to run; -2 ends the child
  alignas(64) std::atomic<long> produced{0};
  alignas(64) std::atomic<long> consumed{0};
  alignas(64) std::atomic<long> done_round{-1};  // child: the round it finished
  alignas(64) std::uintptr_t parent_src = 0;
  int way = 0;
  std::size_t chunk = 0;
  int dst_fd = -1;  // child's destination memfd (into_shared)
};

enum Way { kCma = 1, kRing = 2, kIntoShared = 3 };
constexpr int kSlots = 8;

void print(const char* way, int round, std::size_t bytes, double seconds, bool ok) {
  std::printf("{\"benchmark\": \"cross_process_copy\", \"way\": \"%s\", \"round\": %d, \"megabytes\": %zu, "
              "\"seconds\": %.6f, \"gb_per_s\": %.3f, \"correct\": %s}\n",
              way, round, bytes >> 20, seconds, bytes / seconds / 1e9, ok ? "true" : "false");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t megabytes = 256;
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--megabytes")) megabytes = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: cross_process_copy [--megabytes N] [--rounds N]\n");
      return 2;
    }
  }
  if (megabytes == 0 || rounds <= 0) {
    std::fprintf(stderr, "cross_process_copy: --megabytes and --rounds must be positive\n");
    return 2;
  }
  const std::size_t bytes = megabytes << 20;

  // Shared between parent and child: the control block, then the ring (the largest chunk's).
  const std::size_t max_chunk = std::size_t{1} << 20;
  const std::size_t ring_bytes = kSlots * max_chunk;
  const int ring_fd = memfd_create("cross_process_copy_ring", 0);
  if (ring_fd < 0 || ftruncate(ring_fd, static_cast<off_t>(4096 + ring_bytes)) != 0) {
    std::perror("memfd");
    return 1;
  }
  auto* shared = static_cast<char*>(
      mmap(nullptr, 4096 + ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, 0));
  auto* ctl = new (shared) Control;
  char* ring = shared + 4096;
  char* src = huge_buffer(bytes, 7);
  ctl->parent_src = reinterpret_cast<std::uintptr_t>(src);
  const pid_t parent = getpid();

  // The child's destination for into_shared: a memfd it owns, which the parent maps.
  const int dst_fd = memfd_create("cross_process_copy_dst", 0);
  if (dst_fd < 0 || ftruncate(dst_fd, static_cast<off_t>(bytes)) != 0) {
    std::perror("memfd");
    return 1;
  }
  ctl->dst_fd = dst_fd;

  const pid_t child = fork();
  if (child == 0) {
    // The receiver: opens the ring as a stranger would (through /proc), not by inheritance.
    const std::string path = "/proc/" + std::to_string(parent) + "/fd/" + std::to_string(ring_fd);
    const int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) _exit(3);
    char* r = static_cast<char*>(mmap(nullptr, 4096 + ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0));
    auto* c = reinterpret_cast<Control*>(r);
    char* rr = r + 4096;
    char* dst = huge_buffer(bytes, 0);
    auto* dst_shared = static_cast<char*>(
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, dst_fd, 0));
    for (long seen = -1;;) {
      long round;
      while ((round = c->round.load(std::memory_order_acquire)) == seen) {
      }
      if (round == -2) _exit(0);
      seen = round;
      if (c->way == kCma) {
        iovec local{dst, bytes}, remote{reinterpret_cast<void*>(c->parent_src), bytes};
        if (process_vm_readv(getppid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(bytes)) _exit(4);
      } else if (c->way == kRing) {
        const long chunk = static_cast<long>(c->chunk);
        for (long got = 0; got < static_cast<long>(bytes); got += chunk) {
          while (c->produced.load(std::memory_order_acquire) <= got) {
          }
          std::memcpy(dst + got, rr + (got / chunk % kSlots) * chunk, chunk);
          c->consumed.store(got + chunk, std::memory_order_release);
        }
      }
      // into_shared: the parent writes dst_shared and says when it is done.
      if (c->way == kIntoShared)
        while (c->produced.load(std::memory_order_acquire) < static_cast<long>(bytes)) {
        }
      const char* check = c->way == kIntoShared ? dst_shared : dst;
      if (check[0] != 7 || check[bytes - 1] != 7 || check[bytes / 2] != 7) _exit(5);
      std::memset(dst_shared, 0, 4096);
      if (c->way != kIntoShared) dst[0] = 0;
      c->done_round.store(round, std::memory_order_release);
    }
  }

  char* local_dst = huge_buffer(bytes, 0);
  long round_id = 0;
  auto run_child = [&](int way, std::size_t chunk, const auto& parent_part) {
    ctl->way = way;
    ctl->chunk = chunk;
    ctl->produced.store(0);
    ctl->consumed.store(0);
    const auto t0 = Clock::now();
    ctl->round.store(round_id, std::memory_order_release);
    parent_part();
    for (long spins = 0; ctl->done_round.load(std::memory_order_acquire) != round_id; ++spins) {
      int status = 0;
      if (spins % 4096 == 0 && waitpid(child, &status, WNOHANG) == child) {
        std::fprintf(stderr, "cross_process_copy: the receiving process failed (status %d)\n", status);
        std::exit(1);
      }
    }
    ++round_id;
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  char* kept = nullptr;
  for (int r = 0; r < rounds; ++r) {
    {
      const auto t0 = Clock::now();
      std::memcpy(local_dst, src, bytes);
      print("memcpy", r, bytes, std::chrono::duration<double>(Clock::now() - t0).count(), local_dst[bytes - 1] == 7);
    }
    print("cma", r, bytes, run_child(kCma, 0, [] {}), true);
    for (std::size_t chunk : {std::size_t{256} << 10, max_chunk}) {
      const double s = run_child(kRing, chunk, [&] {
        const long c = static_cast<long>(chunk);
        for (long put = 0; put < static_cast<long>(bytes); put += c) {
          while (put - ctl->consumed.load(std::memory_order_acquire) >= kSlots * c) {
          }
          std::memcpy(ring + (put / c % kSlots) * c, src + put, chunk);
          ctl->produced.store(put + c, std::memory_order_release);
        }
      });
      const std::string name = "ring_" + std::to_string(chunk >> 10) + "k";
      print(name.c_str(), r, bytes, s, true);
    }
    print("into_shared", r, bytes, run_child(kIntoShared, 0, [&] {
            if (!kept)
              kept = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, dst_fd, 0));
            std::memcpy(kept, src, bytes);
            ctl->produced.store(static_cast<long>(bytes), std::memory_order_release);
          }), true);
    print("into_shared_fresh", r, bytes, run_child(kIntoShared, 0, [&] {
            auto* m = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, dst_fd, 0));
            madvise(m, bytes, MADV_POPULATE_WRITE);
            std::memcpy(m, src, bytes);
            munmap(m, bytes);
            ctl->produced.store(static_cast<long>(bytes), std::memory_order_release);
          }), true);
  }
  ctl->round.store(-2, std::memory_order_release);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "cross_process_copy: the receiving process failed (status %d)\n", status);
    return 1;
  }
  return 0;
}
