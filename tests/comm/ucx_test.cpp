// ucx:// at the comm level: UCX between two comms of this process, and with a peer process (this
// test binary started as an echo server): shared memory in use, a peer killed mid-transfer, a
// peer whose UCX is disabled (falls back to TCP), device frames staged through pinned buffers,
// the receive-buffer pool. Tests that need UCX skip when this build or process has none.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "comm/frame_pool.hpp"
#include "comm/ucx_engine.hpp"
#include "comm_test_util.hpp"
#include "distributed/util.hpp"
#include "tessera/comm/comm.hpp"
#include "comm/wire.hpp"
#include "tessera/core/device.hpp"

using namespace tessera;
using namespace tessera::comm;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using namespace tessera_comm_test;

namespace {

#define REQUIRE_UCX()                                                               \
  do {                                                                              \
    const auto st_ = ucx_status();                                                  \
    if (!st_.available) GTEST_SKIP() << "UCX is not available here: " << st_.reason; \
  } while (0)

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- a peer process: this binary running UcxPeer.DISABLED_EchoServer ------------------------------

constexpr const char* kEchoFileEnv = "TESSERA_UCX_TEST_ECHO_FILE";

class PeerProcess {
 public:
  explicit PeerProcess(std::map<std::string, std::string> env = {}) {
    file_ = (std::filesystem::temp_directory_path() /
             ("tessera-ucx-echo-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++)))
                .string();
    env[kEchoFileEnv] = file_;
    env["TESSERA_LOG_LEVEL"] = "error";
    const auto self = std::filesystem::read_symlink("/proc/self/exe").string();
    pid_ = tessera::distributed::spawn_process(
        {self, "--gtest_filter=UcxPeer.DISABLED_EchoServer", "--gtest_also_run_disabled_tests"}, env);
    const auto deadline = Clock::now() + 20s;
    while (Clock::now() < deadline) {
      std::ifstream in(file_);
      std::string a;
      if (in && std::getline(in, a) && a.find("://") != std::string::npos && a.back() == '|') {
        a.pop_back();
        address_ = a;
        return;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  ~PeerProcess() {
    kill(SIGKILL);
    std::error_code ec;
    std::filesystem::remove(file_, ec);
  }
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    if (sig == SIGKILL) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  static std::atomic<int>& counter() {
    static std::atomic<int> n{0};
    return n;
  }
  std::string file_, address_;
  pid_t pid_ = -1;
};

// Sets an environment variable for the life of a test (the UCX link reads it when it starts).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

using tessera::comm::detail::ucx::ring_traffic;

// Sends `rounds` messages with frames of many ring slots, one slot, inline and an active-message
// part, and checks that each comes back whole.
void echo_mixed_frames(Comm& comm, int rounds, std::size_t large) {
  for (int round = 0; round < rounds; ++round) {
    Message m("echo");
    const auto r = static_cast<std::uint8_t>(round);
    m.add_frame(pattern_frame(large + 12345, static_cast<std::uint8_t>(10 + r)));  // the last slot partial
    m.add_frame(pattern_frame(100 * 1024, static_cast<std::uint8_t>(20 + r)));     // one slot
    m.add_frame(pattern_frame(10, static_cast<std::uint8_t>(30 + r)));             // inline in the head
    m.add_frame(pattern_frame(32 * 1024, static_cast<std::uint8_t>(40 + r)));      // below the ring's minimum
    comm.send(m).get();
    auto back = comm.recv(5000ms);
    ASSERT_EQ(back.frames.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) ASSERT_TRUE(same_bytes(back.frames[k], m.frames[k])) << round << " " << k;
  }
}

// ---- a device runtime that hands out host memory labelled Device ----------------------------------

class HostAsDevice : public DeviceRuntime {
 public:
  int device_count() noexcept override { return 0; }  // nothing is received into "device" memory
  GpuInfo info(int) override { return {}; }
  void set_memory_limit(int, std::size_t) override {}
  std::size_t memory_limit(int) override { return 0; }
  std::size_t memory_in_use(int) override { return 0; }
  void set_pressure_handler(PressureHandler) override {}
  std::shared_ptr<Buffer> allocate(std::size_t bytes, int device, StreamView) override {
    void* p = std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64));
    return Buffer::adopt(p, bytes, MemoryKind::Device, device, [](void* q, std::size_t) { std::free(q); });
  }
  std::shared_ptr<Buffer> allocate_pinned(std::size_t bytes) override {
    ++pinned;
    void* p = std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64));
    return Buffer::adopt(p, bytes, MemoryKind::PinnedHost, -1, [](void* q, std::size_t) { std::free(q); });
  }
  StreamView thread_stream(int) override { return StreamView(this); }
  void set_device(int) override {}
  void copy_async(void* dst, const void* src, std::size_t bytes, StreamView) override {
    ++copies;
    std::memcpy(dst, src, bytes);
  }
  void synchronize(StreamView) override {}
  std::atomic<int> pinned{0}, copies{0};
};

}  // namespace

// The peer process's body (run only when a test starts this binary with that filter).
TEST(UcxPeer, DISABLED_EchoServer) {
  const char* file = std::getenv(kEchoFileEnv);
  if (!file) GTEST_SKIP() << "started by the UCX tests only";
  const pid_t parent = ::getppid();
  EchoServer server("ucx://127.0.0.1:0");
  {
    std::ofstream out(file);
    out << server.address() << "|" << std::endl;
  }
  const auto deadline = Clock::now() + 120s;
  while (::getppid() == parent && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  std::_Exit(0);
}

TEST(CommUcx, StatusSaysWhetherUcxRuns) {
  const auto st = ucx_status();
  EXPECT_EQ(st.available, st.reason.empty()) << st.reason;
  if (st.built) { EXPECT_FALSE(st.version.empty()); }
  const auto schemes = transport_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "ucx"), schemes.end()) << "ucx:// is always registered";
}

TEST(CommUcx, RoundTripHeaderAndFramesOverUcx) {
  REQUIRE_UCX();
  EchoServer server("ucx://127.0.0.1:0");
  EXPECT_EQ(server.address().rfind("ucx://127.0.0.1:", 0), 0u) << server.address();
  auto comm = connect(server.address());
  EXPECT_EQ(comm->transport().rfind("ucx", 0), 0u) << comm->transport();
  EXPECT_EQ(comm->peer_address().rfind("ucx://", 0), 0u) << comm->peer_address();
  EXPECT_EQ(comm->peer().address, server.address());
  const auto& tr = comm->peer().transports;
  EXPECT_NE(std::find(tr.begin(), tr.end(), "ucx"), tr.end());

  Message msg("compute-task");
  msg.set("who", std::string("worker-1")).set("n", 42);
  // A header too big for the head (sent as a part), small frames (inline), an empty one, a
  // frame just over the inline size, a big one (rendezvous).
  msg.set("padding", std::string(100000, 'p'));
  const auto small = pattern_frame(3, 1), empty = pattern_frame(0, 2), mid = pattern_frame(4097, 3),
             big = pattern_frame(std::size_t{32} << 20, 4);
  msg.add_frame(small);
  msg.add_frame(empty);
  msg.add_frame(mid);
  msg.add_frame(big);
  auto block = Block::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  msg.add_block("data", block);
  comm->send(msg).get();
  Message back = comm->recv(5000ms);
  EXPECT_EQ(back.op, "compute-task");
  EXPECT_EQ(back.get<std::string>("who"), "worker-1");
  EXPECT_EQ(back.get<int>("n"), 42);
  EXPECT_EQ(back.get<std::string>("padding").size(), 100000u);
  ASSERT_EQ(back.frames.size(), 5u);
  EXPECT_TRUE(same_bytes(back.frames[0], small));
  EXPECT_EQ(back.frames[1]->size(), 0u);
  EXPECT_TRUE(same_bytes(back.frames[2], mid));
  EXPECT_TRUE(same_bytes(back.frames[3], big));
  EXPECT_EQ(back.get_block("data").to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(back.frames[3]->data()) % 64, 0u);

  // Many messages in a row arrive in order, whatever their sizes.
  for (int i = 0; i < 200; ++i) {
    Message m("seq");
    m.set("i", i);
    if (i % 3 == 0) m.add_frame(pattern_frame(static_cast<std::size_t>(i) * 997, static_cast<std::uint8_t>(i)));
    comm->send(std::move(m), nullptr);
  }
  for (int i = 0; i < 200; ++i) {
    auto m = comm->recv(5000ms);
    ASSERT_EQ(m.get<int>("i"), i);
    if (i % 3 == 0) {
      EXPECT_TRUE(same_bytes(m.frames.at(0),
                             pattern_frame(static_cast<std::size_t>(i) * 997, static_cast<std::uint8_t>(i))));
    }
  }
}

TEST(CommUcx, ManyConcurrentConnections) {
  REQUIRE_UCX();
  EchoServer server("ucx://127.0.0.1:0");
  constexpr int kThreads = 4, kCommsPerThread = 4, kMessages = 20;
  EXPECT_EQ(concurrent_echoes(server.address(), kThreads, kCommsPerThread, kMessages, 1000, 5000ms),
            kThreads * kCommsPerThread * kMessages);
}

TEST(CommUcx, TokenMismatchIsRefused) {
  CommOptions server_opts;
  server_opts.token = "secret-a";
  EchoServer server("ucx://127.0.0.1:0", server_opts);
  CommOptions bad;
  bad.token = "secret-b";
  const auto msg = what([&] { connect(server.address(), bad); });
  EXPECT_NE(msg.find("token mismatch"), std::string::npos) << msg;
  CommOptions good;
  good.token = "secret-a";
  auto comm = connect(server.address(), good);
  comm->send(Message("hi")).get();
  EXPECT_EQ(comm->recv(2000ms).op, "hi");
}

TEST(CommUcx, MessagesBeforeCloseArriveThenThePeerSeesTheClose) {
  REQUIRE_UCX();
  std::shared_ptr<Comm> server_side;
  std::promise<void> accepted;
  auto listener = listen("ucx://127.0.0.1:0", [&](std::shared_ptr<Comm> c) {
    server_side = std::move(c);
    accepted.set_value();
  });
  auto comm = connect(listener->address());
  ASSERT_EQ(accepted.get_future().wait_for(2s), std::future_status::ready);
  ASSERT_EQ(server_side->transport().rfind("ucx", 0), 0u) << server_side->transport();
  // A burst, a large message last, then close at once: everything arrives before the close.
  for (int i = 0; i < 50; ++i) {
    Message m("m");
    m.set("i", i);
    server_side->send(std::move(m), nullptr);
  }
  Message last("last");
  last.add_frame(pattern_frame(std::size_t{8} << 20, 9));
  server_side->send(std::move(last), nullptr);
  server_side->close();
  EXPECT_THROW(server_side->send(Message("too-late")).get(), CommClosedError);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(comm->recv(2000ms).get<int>("i"), i);
  auto m = comm->recv(2000ms);
  EXPECT_EQ(m.op, "last");
  EXPECT_TRUE(same_bytes(m.frames.at(0), pattern_frame(std::size_t{8} << 20, 9)));
  const auto t0 = Clock::now();
  EXPECT_THROW(comm->recv(2000ms), CommClosedError);
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_NE(comm->close_reason().find("peer closed the connection"), std::string::npos) << comm->close_reason();
  EXPECT_THROW(comm->send(Message("after")).get(), CommClosedError);
}

// Receive back-pressure as in tcp:// (CommTcpBackPressure): while the owner does not take
// messages, the receiver leaves rendezvous data with the sender, whose sends stay incomplete;
// once it takes them, everything arrives in order and every send completes.
void back_pressure_leaves_large_frames_with_the_sender(bool ring) {
  CommOptions opts;
  opts.max_queued_bytes = std::size_t{2} << 20;
  std::shared_ptr<Comm> slow;
  std::promise<void> accepted;
  auto listener = listen(
      "ucx://127.0.0.1:0",
      [&](std::shared_ptr<Comm> c) {
        slow = std::move(c);  // recv() mode, and the test does not call recv() yet
        accepted.set_value();
      },
      opts);
  auto client = connect(listener->address());
  ASSERT_EQ(accepted.get_future().wait_for(2s), std::future_status::ready);
  ASSERT_EQ(slow->transport().rfind("ucx", 0), 0u) << slow->transport();
  const auto before = ring_traffic();

  // One message over the limit still arrives whole (it is the next to deliver).
  Message big("big");
  for (int k = 0; k < 5; ++k) big.add_frame(pattern_frame(std::size_t{1} << 20, static_cast<std::uint8_t>(40 + k)));
  ASSERT_EQ(client->send(big).wait_for(2s), std::future_status::ready) << "a 5 MiB message stuck behind a 2 MiB limit";
  Message got = slow->recv(2000ms);
  ASSERT_EQ(got.frames.size(), 5u);
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(same_bytes(got.frames[k], big.frames[k])) << k;

  constexpr int kMessages = 48;
  const auto frame = pattern_frame(std::size_t{1} << 20, 5);
  std::atomic<int> sent{0};
  send_numbered(*client, kMessages, frame, sent);
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(sent.load(), 4) << "the receiver took in far more than its 2 MiB limit";
  EXPECT_FALSE(slow->is_closed());

  for (int i = 0; i < kMessages; ++i) {
    Message m = slow->recv(2000ms);
    ASSERT_EQ(m.get<int>("i"), i);
    ASSERT_TRUE(same_bytes(m.frames.at(0), frame)) << i;
  }
  const auto deadline = Clock::now() + 2s;
  while (sent.load() < kMessages && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(sent.load(), kMessages);
  const auto after = ring_traffic();
  if (ring) {
    EXPECT_GE(after.read - before.read, std::uint64_t{40} << 20) << "the frames did not come through the ring";
    EXPECT_NE(slow->transport().find("shared ring"), std::string::npos) << slow->transport();
  } else {
    EXPECT_EQ(after.read - before.read, 0u) << "one process: no ring unless a test asks for one";
  }
}

TEST(CommUcx, BackPressureLeavesLargeFramesWithTheSender) {
  REQUIRE_UCX();
  back_pressure_leaves_large_frames_with_the_sender(false);
}

// The same through the shared ring (in one process only when a test asks): the receiver leaves
// slots in the ring, so the sender's later frames stay with it, unsent.
TEST(CommUcx, BackPressureLeavesSlotsInTheSharedRing) {
  REQUIRE_UCX();
  ScopedEnv self_ring("TESSERA_UCX_TEST_RING_SELF", "1");
  back_pressure_leaves_large_frames_with_the_sender(true);
}

// A comm closed while rendezvous data is held back gives it back to UCX: the sender's sends
// end (they fail or complete, none hangs) and nothing leaks into later tests.
void closing_while_holding_back_releases_the_data() {
  CommOptions opts;
  opts.max_queued_messages = 1;
  std::shared_ptr<Comm> slow;
  std::promise<void> accepted;
  auto listener = listen(
      "ucx://127.0.0.1:0",
      [&](std::shared_ptr<Comm> c) {
        slow = std::move(c);
        accepted.set_value();
      },
      opts);
  auto client = connect(listener->address());
  ASSERT_EQ(accepted.get_future().wait_for(2s), std::future_status::ready);
  constexpr int kMessages = 8;
  std::atomic<int> ended{0};
  for (int i = 0; i < kMessages; ++i) {
    Message m("m");
    m.add_frame(pattern_frame(std::size_t{1} << 20, static_cast<std::uint8_t>(i)));
    client->send(std::move(m), [&](std::exception_ptr) { ++ended; });
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_LT(ended.load(), kMessages);
  slow->close();
  const auto deadline = Clock::now() + 3s;
  while (ended.load() < kMessages && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(ended.load(), kMessages) << "sends held back by a closed receiver never ended";
  EXPECT_THROW(client->recv(2000ms), CommClosedError);
}

TEST(CommUcx, ClosingWhileHoldingBackReleasesTheData) {
  REQUIRE_UCX();
  closing_while_holding_back_releases_the_data();
}

TEST(CommUcx, ClosingWhileSlotsWaitInTheSharedRingEndsEverySend) {
  REQUIRE_UCX();
  ScopedEnv self_ring("TESSERA_UCX_TEST_RING_SELF", "1");
  closing_while_holding_back_releases_the_data();
}

TEST(CommUcx, DeviceFramesAreStagedThroughPinnedBuffers) {
  REQUIRE_UCX();
  HostAsDevice fake;
  DeviceRuntime* previous = device_runtime();  // the CUDA back end where it is loaded: put it back
  set_device_runtime(&fake);
  struct Restore {
    DeviceRuntime* previous;
    ~Restore() { set_device_runtime(previous); }
  } restore{previous};
  EchoServer server("ucx://127.0.0.1:0");
  auto comm = connect(server.address());
  ASSERT_EQ(comm->transport().rfind("ucx", 0), 0u);
  // 20 MiB + 5 bytes: three staging chunks, the last one short.
  const std::size_t n = (std::size_t{20} << 20) + 5;
  auto dev = fake.allocate(n, 0, StreamView{});
  auto* p = static_cast<std::uint8_t*>(dev->data());
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 13 + 5);
  Message m("device");
  m.add_frame(dev);
  m.add_frame(pattern_frame(100, 1));
  comm->send(m).get();
  auto back = comm->recv(5000ms);
  ASSERT_EQ(back.frames.size(), 2u);
  EXPECT_EQ(back.frames[0]->kind(), MemoryKind::Host) << "staged frames arrive in host memory";
  ASSERT_EQ(back.frames[0]->size(), n);
  EXPECT_EQ(std::memcmp(back.frames[0]->data(), dev->data(), n), 0);
  EXPECT_TRUE(same_bytes(back.frames[1], pattern_frame(100, 1)));
  EXPECT_GE(fake.copies.load(), 3);
  EXPECT_LE(fake.pinned.load(), 4) << "the staging buffers are a small pool, reused";
}

TEST(CommUcx, ReceiveBuffersComeFromAPool) {
  using tessera::comm::detail::allocate_frame;
  // Other threads (comms of earlier tests winding down) may take a freed buffer first: a few tries.
  bool large_reused = false, small_reused = false;
  for (int attempt = 0; attempt < 5 && !(large_reused && small_reused); ++attempt) {
    void* large = nullptr;
    void* small = nullptr;
    {
      auto a = allocate_frame((std::size_t{37} << 20) + 3);
      auto b = allocate_frame(1000);
      large = a->data();
      small = b->data();
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large) % 64, 0u);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small) % 64, 0u);
    }
    auto a = allocate_frame(std::size_t{37} << 20);
    auto b = allocate_frame(900);
    EXPECT_EQ(a->size(), std::size_t{37} << 20);
    EXPECT_EQ(b->size(), 900u);
    large_reused = large_reused || a->data() == large;
    small_reused = small_reused || b->data() == small;
  }
  EXPECT_TRUE(large_reused) << "a large receive buffer is reused";
  EXPECT_TRUE(small_reused) << "a small receive buffer is reused";
}

TEST(CommUcx, AnotherProcessUsesSharedMemory) {
  REQUIRE_UCX();
  PeerProcess peer;
  ASSERT_FALSE(peer.address().empty()) << "the peer process did not start";
  auto comm = connect(peer.address());
  const auto tr = comm->transport();
  EXPECT_EQ(tr.rfind("ucx", 0), 0u) << tr;
  EXPECT_TRUE(tr.find("sysv") != std::string::npos || tr.find("posix") != std::string::npos ||
              tr.find("cma") != std::string::npos)
      << "expected shared memory between two processes of one host, got " << tr;
  Message m("echo");
  m.add_frame(pattern_frame(std::size_t{16} << 20, 3));
  m.add_frame(pattern_frame(10, 4));
  comm->send(m).get();
  auto back = comm->recv(5000ms);
  ASSERT_EQ(back.frames.size(), 2u);
  EXPECT_TRUE(same_bytes(back.frames[0], m.frames[0]));
  EXPECT_TRUE(same_bytes(back.frames[1], m.frames[1]));
}

// Between two processes of one host, large host frames go through a shared ring once the peer
// took one (docs/ucx.md, "The shared ring"): every frame arrives whole beside those that still go
// as active messages, and this process's ring counters show the large ones crossed there both
// ways (the first message goes as parts while the offer is answered).
TEST(CommUcx, LargeFramesBetweenProcessesGoThroughASharedRing) {
  REQUIRE_UCX();
  PeerProcess peer;
  ASSERT_FALSE(peer.address().empty()) << "the peer process did not start";
  auto comm = connect(peer.address());
  const auto before = ring_traffic();
  echo_mixed_frames(*comm, 4, std::size_t{16} << 20);
  const auto after = ring_traffic();
  EXPECT_GE(after.written - before.written, std::uint64_t{2} * (16 << 20));
  EXPECT_GE(after.read - before.read, std::uint64_t{2} * (16 << 20));
  EXPECT_NE(comm->transport().find("shared ring"), std::string::npos) << comm->transport();
}

// A peer whose offer names a ring that is not the one it made (as a peer in another pid
// namespace would: its pid names another process here) is refused, and its frames still come
// through UCX; our own offer to it is taken.
TEST(CommUcx, ARingThatIsNotTheOneOfferedIsRefusedAndFramesStillArrive) {
  REQUIRE_UCX();
  PeerProcess peer(std::map<std::string, std::string>{{"TESSERA_UCX_TEST_RING_BAD_NONCE", "1"}});
  ASSERT_FALSE(peer.address().empty()) << "the peer process did not start";
  auto comm = connect(peer.address());
  const auto before = ring_traffic();
  echo_mixed_frames(*comm, 3, std::size_t{4} << 20);
  const auto after = ring_traffic();
  EXPECT_GT(after.written - before.written, 0u) << "the peer took our ring";
  EXPECT_EQ(after.read - before.read, 0u) << "we refused the peer's";
}

// TESSERA_UCX_RING=0 on one side: it offers no ring and takes none; everything goes through UCX.
TEST(CommUcx, SharedRingsCanBeTurnedOff) {
  REQUIRE_UCX();
  PeerProcess peer(std::map<std::string, std::string>{{"TESSERA_UCX_RING", "0"}});
  ASSERT_FALSE(peer.address().empty()) << "the peer process did not start";
  auto comm = connect(peer.address());
  const auto before = ring_traffic();
  echo_mixed_frames(*comm, 3, std::size_t{4} << 20);
  const auto after = ring_traffic();
  EXPECT_EQ(after.written - before.written, 0u);
  EXPECT_EQ(after.read - before.read, 0u);
  EXPECT_EQ(comm->transport().find("shared ring"), std::string::npos) << comm->transport();
}

// UCX_* variables are the user's (docs/ucx.md): a peer started with UCX_TLS=tcp offers UCX's tcp
// interfaces only, so the link between two processes of one host, which would otherwise take
// shared memory (test above), runs UCX over TCP, and data still crosses.
TEST(CommUcx, UcxTlsFromTheEnvironmentIsHonoured) {
  REQUIRE_UCX();
  PeerProcess peer(std::map<std::string, std::string>{{"UCX_TLS", "tcp"}});
  ASSERT_FALSE(peer.address().empty()) << "the peer process did not start";
  auto comm = connect(peer.address());
  const auto tr = comm->transport();
  EXPECT_EQ(tr.rfind("ucx", 0), 0u) << "UCX_TLS=tcp still leaves UCX usable: " << tr;
  EXPECT_NE(tr.find("tcp"), std::string::npos) << tr;
  for (const char* shm : {"sysv", "posix", "cma"})
    EXPECT_EQ(tr.find(shm), std::string::npos) << "the peer offered only tcp, got " << tr;
  Message m("echo");
  m.add_frame(pattern_frame(std::size_t{4} << 20, 6));
  const auto before = ring_traffic();
  for (int i = 0; i < 2; ++i) {  // twice: a ring would be in use by the second
    comm->send(m).get();
    auto back = comm->recv(5000ms);
    ASSERT_EQ(back.frames.size(), 1u);
    EXPECT_TRUE(same_bytes(back.frames[0], m.frames[0]));
  }
  EXPECT_EQ(ring_traffic().written - before.written, 0u) << "no shared ring where UCX_TLS leaves shared memory out";
  EXPECT_EQ(comm->transport().find("shared ring"), std::string::npos) << comm->transport();
}

TEST(CommUcx, PeerKilledWhileWeSendIsDetected) {
  REQUIRE_UCX();
  PeerProcess peer;
  ASSERT_FALSE(peer.address().empty());
  auto comm = connect(peer.address());
  ASSERT_EQ(comm->transport().rfind("ucx", 0), 0u);
  std::promise<std::string> closed;
  comm->set_handlers([](Message) {}, [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      closed.set_value(ex.what());
    }
  });
  auto frame = Buffer::allocate_host(std::size_t{512} << 20);
  std::memset(frame->data(), 1, frame->size());
  Message m("sink");
  m.add_frame(frame);
  auto sent = comm->send(std::move(m));
  std::this_thread::sleep_for(30ms);  // the peer is pulling the 512 MiB into fresh memory
  const auto t0 = Clock::now();
  peer.kill(SIGKILL);
  auto fut = closed.get_future();
  ASSERT_EQ(fut.wait_for(3s), std::future_status::ready) << "the peer's death was not reported";
  const double detected = seconds_since(t0);
  EXPECT_LT(detected, 2.0);
  EXPECT_NE(fut.get().find("peer closed the connection"), std::string::npos);
  ASSERT_EQ(sent.wait_for(3s), std::future_status::ready) << "the send to the dead peer never completed";
  if (sent.wait_for(0s) == std::future_status::ready) {
    const auto msg = what([&] { sent.get(); });
    // Killed mid-transfer the send fails; had the peer taken it all first it would succeed.
    RecordProperty("send", msg);
  }
  RecordProperty("detected_ms", std::to_string(static_cast<int>(detected * 1000)));
}

TEST(CommUcx, PeerKilledWhileWeReceiveIsDetected) {
  REQUIRE_UCX();
  PeerProcess peer;
  ASSERT_FALSE(peer.address().empty());
  auto comm = connect(peer.address());
  ASSERT_EQ(comm->transport().rfind("ucx", 0), 0u);
  Message m("send");
  m.set("bytes", std::uint64_t{768} << 20);  // the peer fills it, then we pull it over cma
  comm->send(std::move(m)).get();
  std::this_thread::sleep_for(150ms);
  const auto t0 = Clock::now();
  peer.kill(SIGKILL);
  std::string why;
  try {
    auto got = comm->recv(5000ms);
    why = "received " + got.op;  // the whole frame arrived before the kill: possible, not wrong
  } catch (const CommClosedError& e) {
    why = e.what();
  } catch (const CommTimeoutError& e) {
    FAIL() << "the peer's death was not reported within 5 s";
  }
  EXPECT_LT(seconds_since(t0), 2.0) << why;
  if (why.rfind("received", 0) == 0) { EXPECT_THROW(comm->recv(2000ms), CommClosedError); }
  EXPECT_TRUE(comm->is_closed() || why.rfind("received", 0) == 0);
}

TEST(CommUcx, PeerWithoutUcxFallsBackToTcp) {
  REQUIRE_UCX();
  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {{"TESSERA_UCX", "0"}},   // UCX disabled in the peer
           {{"UCX_TLS", "bogus"}}})  // UCX failing to start in the peer
  {
    PeerProcess peer(env);
    ASSERT_FALSE(peer.address().empty()) << "the peer with " << env.begin()->first << " did not start";
    EXPECT_EQ(peer.address().rfind("ucx://", 0), 0u) << "it still listens on ucx:// (over TCP)";
    auto comm = connect(peer.address());
    EXPECT_EQ(comm->transport(), "tcp") << env.begin()->first;
    const auto& tr = comm->peer().transports;
    EXPECT_EQ(std::find(tr.begin(), tr.end(), "ucx"), tr.end()) << "a peer without UCX must not offer it";
    Message m("echo");
    m.add_frame(pattern_frame(std::size_t{3} << 20, 5));
    comm->send(m).get();
    auto back = comm->recv(5000ms);
    EXPECT_TRUE(same_bytes(back.frames.at(0), m.frames[0]));
  }
}

TEST(CommUcx, FailedUcxHandshakeFallsBackToTcp) {
  REQUIRE_UCX();
  // The peer runs UCX and accepts the offer, but never answers the ping over UCX.
  PeerProcess peer(std::map<std::string, std::string>{{"TESSERA_UCX_TEST_IGNORE_PINGS", "1"}});
  ASSERT_FALSE(peer.address().empty());
  CommOptions opts;
  opts.handshake_timeout = 600ms;  // the ping gets half of it
  const auto t0 = Clock::now();
  auto comm = connect(peer.address(), opts);
  const double took = seconds_since(t0);
  EXPECT_EQ(comm->transport(), "tcp");
  EXPECT_GE(took, 0.29) << "fell back before the ping's deadline";
  EXPECT_LT(took, 2.0);
  const auto& tr = comm->peer().transports;
  EXPECT_NE(std::find(tr.begin(), tr.end(), "ucx"), tr.end()) << "the peer does run UCX";
  Message m("echo");
  m.add_frame(pattern_frame(std::size_t{2} << 20, 6));
  comm->send(m).get();
  EXPECT_TRUE(same_bytes(comm->recv(5000ms).frames.at(0), m.frames[0]));
}

TEST(CommUcx, GarbageInsteadOfTheNegotiationIsRefused) {
  REQUIRE_UCX();
  EchoServer server("ucx://127.0.0.1:0");
  // A tcp:// client on the ucx:// port speaks first with an ordinary message.
  auto tcp_address = "tcp://" + server.address().substr(6);
  auto raw = connect(tcp_address);
  raw->send(Message("register-client"), nullptr);
  EXPECT_THROW(raw->recv(2000ms), CommClosedError);
  EXPECT_NE(server.wait_refusal().find("expected the ucx:// negotiation"), std::string::npos);
  // The listener still serves.
  auto comm = connect(server.address());
  comm->send(Message("still")).get();
  EXPECT_EQ(comm->recv(2000ms).op, "still");
}
