// benchmarks/comm_transfer: the comm layer alone, between two processes on this host (tcp, ucx)
// or two ends in one process (inproc). Prints JSON lines (contract in shared/design.md):
//   {"benchmark":"comm_latency",...,"median_us":...}     small-message round trip
//   {"benchmark":"comm_transfer",...,"gb_per_s":...}     one frame of --megabytes, one way
//   {"benchmark":"socket_transfer",...,"gb_per_s":...}   the same bytes over a plain blocking
//                                                        TCP socket pair between two processes
//   {"benchmark":"memcpy_transfer",...,"gb_per_s":...}   memcpy of the same size, in one process
// The three transfers run interleaved (comm, socket, memcpy; --repeat times) so that they share
// whatever else the machine is doing; each reports its best and its median.
//
//   comm_transfer --protocol tcp|ucx|inproc --megabytes 256 --repeat 5 --round-trips 10000
//   (--frames N splits the --megabytes into N frames of one message: many small blocks, as a
//   dataframe partition of many columns or a gather of many small chunks sends)
//   (--round-trips 0 skips the latency runs)
//
// With --sweep, one line per message size instead (8 B to --max-megabytes, x4 steps):
//   {"benchmark":"comm_sweep","protocol":"ucx","transport":"ucx (sysv/memory, cma/memory)",
//    "bytes":...,"seconds":...,"median_us":...,"p99_us":...,"gb_per_s":...,"memcpy_gb_per_s":...}
// median_us: one-way latency of a message carrying one frame of that size (half the median
// round trip of a ping-pong, handlers on the I/O thread, as the scheduler and workers use comms);
// gb_per_s: a stream of such messages (several in flight, one ack at the end), best of 3;
// memcpy_gb_per_s: memcpy of the same size in this process, best of 3, in the same run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <future>
#include <vector>

#include <CLI/CLI.hpp>
#include <tessera/comm/comm.hpp>

using namespace tessera;
using namespace tessera::comm;
using Clock = std::chrono::steady_clock;

namespace {

// Answers "ping" with "pong" and a data message with "ack" (dropping its frames).
// The process ends after `comms` connections have closed.
std::unique_ptr<Listener> serve(const std::string& address, std::shared_ptr<std::promise<void>> closed, int comms) {
  return listen(address, [closed, comms](std::shared_ptr<Comm> comm) {
    std::weak_ptr<Comm> weak = comm;
    comm->set_handlers(
        [weak](Message msg) {
          auto c = weak.lock();
          if (!c) return;
          if (msg.op == "echo") return c->send(std::move(msg), nullptr);  // frames included
          if (msg.op == "stream") {
            if (msg.has("last")) c->send(Message("ack"), nullptr);
            return;
          }
          c->send(Message(msg.op == "ping" ? "pong" : "ack"), nullptr);
        },
        [closed, comm, comms](std::exception_ptr) {
          static int n = 0;
          if (++n == comms) closed->set_value();
        });
  });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// CPU time (all threads) of this process plus that of `other`, in seconds.
double cpu_seconds(pid_t other) {
  auto read = [](clockid_t c) {
    timespec ts{};
    if (::clock_gettime(c, &ts) != 0) return 0.0;
    return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
  };
  double t = read(CLOCK_PROCESS_CPUTIME_ID);
  clockid_t c;
  if (other > 0 && ::clock_getcpuclockid(other, &c) == 0) t += read(c);
  return t;
}

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const auto k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool read_all(int fd, char* p, std::size_t n) {
  while (n > 0) {
    const auto k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

/**
 * The baseline: a plain blocking TCP connection on loopback to a forked process that reads
 * each transfer with big read() calls into one warm buffer and answers one byte. Default
 * socket buffers, TCP_NODELAY on both ends. Fork before any thread starts.
 */
class SocketBaseline {
 public:
  SocketBaseline(std::size_t bytes, int repeat) : bytes_(bytes) {
    const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 1) != 0 ||
        ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("socket baseline: cannot listen on 127.0.0.1");
    child_ = ::fork();
    if (child_ == 0) {
      const int c = ::accept(lfd, nullptr, nullptr);
      ::close(lfd);
      const int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::vector<char> buf(bytes_, 0);  // warm: every page touched once, before the transfers
      for (int r = 0; r < repeat; ++r) {
        if (!read_all(c, buf.data(), bytes_)) _exit(1);
        if (!write_all(c, "k", 1)) _exit(1);
      }
      ::close(c);
      _exit(0);
    }
    ::close(lfd);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("socket baseline: cannot connect");
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~SocketBaseline() {
    if (fd_ >= 0) ::close(fd_);
    int status = 0;
    if (child_ > 0 && ::waitpid(child_, &status, WNOHANG) == 0) {
      ::usleep(100000);
      if (::waitpid(child_, &status, WNOHANG) == 0) {
        ::kill(child_, SIGKILL);
        ::waitpid(child_, &status, 0);
      }
    }
  }
  pid_t pid() const noexcept { return child_; }
  /** In another forked child (the comm server): let go of the parent's end, touch nothing else. */
  void forget_in_child() {
    ::close(fd_);
    fd_ = -1;
    child_ = -1;
  }
  /** Seconds for one transfer of bytes, until the receiver's one-byte answer is back. */
  double transfer(const void* data) {
    const auto t0 = Clock::now();
    char k = 0;
    if (!write_all(fd_, static_cast<const char*>(data), bytes_) || !read_all(fd_, &k, 1))
      throw std::runtime_error("socket baseline: transfer failed");
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  std::size_t bytes_;
  pid_t child_ = -1;
  int fd_ = -1;
};

// cpu: CPU seconds of each transfer, sender and receiver processes together (the machine is
// shared, so wall time also counts waiting for a core; CPU time says what the transfer costs).
void print_transfer(const char* benchmark, const std::string& protocol, std::size_t bytes, int repeat,
                    const std::vector<double>& secs, const std::vector<double>& cpu, const std::string& extra = "") {
  const double best = *std::min_element(secs.begin(), secs.end());
  std::printf(
      "{\"benchmark\":\"%s\",\"protocol\":\"%s\",\"bytes\":%zu,\"repeat\":%d,\"seconds\":%.6f,"
      "\"gb_per_s\":%.3f,\"median_gb_per_s\":%.3f,\"median_cpu_seconds\":%.4f%s}\n",
      benchmark, protocol.c_str(), bytes, repeat, best, bytes / best / 1e9, bytes / median(secs) / 1e9,
      median(cpu), extra.c_str());
}

double best_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// --sweep: latency and bandwidth for each size over one comm.
void run_sweep(const std::string& address, const std::string& protocol, std::size_t max_bytes, bool latency_only) {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 8; n < max_bytes; n *= 4) sizes.push_back(n);
  sizes.push_back(max_bytes);
  auto comm = connect(address);
  const std::string transport = comm->transport();
  struct Handlers {
    std::function<void(Message)> on_echo;
    std::promise<void>* ack = nullptr;
  };
  auto h = std::make_shared<Handlers>();
  comm->set_handlers([h](Message m) {
    if (m.op == "echo") h->on_echo(std::move(m));
    else if (m.op == "ack" && h->ack) h->ack->set_value();
  });
  for (const std::size_t size : sizes) {
    const auto start = Clock::now();
    auto frame = Buffer::allocate_host(size);
    std::memset(frame->data(), 1, size);
    auto make = [&](const char* op) {
      Message m(op);
      m.add_frame(frame);
      return m;
    };
    // Latency: ping-pong, the next message sent from the handler of the reply.
    const int iters = std::clamp(static_cast<int>(4e8 / (static_cast<double>(size) + 4000)), 5, 20000);
    const int warm = std::max(2, iters / 10);
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(iters));
    std::promise<void> done;
    int n = 0;
    Clock::time_point t0;
    h->on_echo = [&](Message) {
      const auto now = Clock::now();
      if (n >= warm) us.push_back(std::chrono::duration<double, std::micro>(now - t0).count() / 2);
      if (++n == warm + iters) return done.set_value();
      t0 = Clock::now();
      comm->send(make("echo"), nullptr);
    };
    t0 = Clock::now();
    comm->send(make("echo"), nullptr);
    done.get_future().wait();
    std::sort(us.begin(), us.end());
    // Bandwidth: k messages in flight, then one ack.
    const int k = std::clamp(static_cast<int>(1e9 / (static_cast<double>(size) + 4000)), 3, 20000);
    std::vector<double> secs{1e300};
    for (int r = 0; r < (latency_only ? 0 : 4); ++r) {  // the first is a warm-up
      std::promise<void> ack;
      h->ack = &ack;
      const auto s0 = Clock::now();
      for (int i = 0; i < k; ++i) {
        auto m = make("stream");
        if (i == k - 1) m.set("last", true);
        comm->send(std::move(m), nullptr);
      }
      ack.get_future().wait();
      h->ack = nullptr;
      if (r > 0) secs.push_back(std::chrono::duration<double>(Clock::now() - s0).count());
    }
    auto copy = Buffer::allocate_host(size);
    std::memset(copy->data(), 0, size);
    std::vector<double> mc;
    for (int r = 0; r < 3; ++r) {
      const auto c0 = Clock::now();
      for (int i = 0; i < std::min(k, 1000); ++i) std::memcpy(copy->data(), frame->data(), size);
      mc.push_back(std::chrono::duration<double>(Clock::now() - c0).count() / std::min(k, 1000));
    }
    const double bytes = static_cast<double>(size);
    std::printf(
        "{\"benchmark\":\"comm_sweep\",\"protocol\":\"%s\",\"transport\":\"%s\",\"bytes\":%zu,"
        "\"seconds\":%.6f,\"median_us\":%.3f,\"p99_us\":%.3f,\"round_trips\":%d,\"gb_per_s\":%.3f,"
        "\"messages_in_flight\":%d,\"memcpy_gb_per_s\":%.3f}\n",
        protocol.c_str(), transport.c_str(), size, std::chrono::duration<double>(Clock::now() - start).count(),
        us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)], iters, bytes * k / best_of(secs) / 1e9,
        k, bytes / best_of(mc) / 1e9);
    std::fflush(stdout);
  }
  h->on_echo = nullptr;
  comm->close();
}

}  // namespace

int main(int argc, char** argv) {
  std::string protocol = "tcp";
  double megabytes = 256;
  int repeat = 5, round_trips = 10000, frames = 1;
  bool sweep = false, latency_only = false;
  double max_megabytes = 256;
  CLI::App app{"comm_transfer benchmark"};
  app.add_option("--protocol", protocol)->check(CLI::IsMember({"tcp", "ucx", "inproc"}));
  app.add_flag("--sweep", sweep, "latency and bandwidth for sizes 8 B .. --max-megabytes (one line each)");
  app.add_option("--max-megabytes", max_megabytes, "largest size of --sweep, MiB");
  app.add_flag("--latency-only", latency_only, "--sweep without the bandwidth streams (gb_per_s 0)");
  app.add_option("--megabytes", megabytes, "frame size in MiB");
  app.add_option("--repeat", repeat, "transfers; best and median are reported");
  app.add_option("--round-trips", round_trips, "small-message round trips for latency");
  app.add_option("--frames", frames, "frames the --megabytes are split into (one message)")->check(CLI::Range(1, 65536));
  CLI11_PARSE(app, argc, argv);
  if (repeat < 1) repeat = 1;
  const auto bytes = static_cast<std::size_t>(megabytes * (1 << 20));

  // Forked first, like the comm server below: no thread exists yet.
  std::unique_ptr<SocketBaseline> baseline;
  try {
    baseline = std::make_unique<SocketBaseline>(bytes, repeat);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "comm_transfer: %s\n", e.what());
    return 1;
  }

  std::string address;
  pid_t child = -1;
  std::unique_ptr<Listener> local_server;
  auto closed = std::make_shared<std::promise<void>>();
  if (sweep) {
    baseline.reset();  // the sweep has its own baselines (memcpy here, ucx_perftest in the script)
    round_trips = 0;
  }
  if (protocol != "inproc") {
    // The server is another process, forked before either side starts its I/O thread (and UCX).
    int fds[2];
    if (::pipe(fds) != 0) return 1;
    child = ::fork();
    if (child == 0) {
      if (baseline) baseline->forget_in_child();
      ::close(fds[0]);
      auto listener = serve(protocol + "://127.0.0.1:0", closed, round_trips > 0 ? 2 : 1);
      const auto& a = listener->address();
      if (::write(fds[1], a.data(), a.size()) < 0) _exit(1);
      ::close(fds[1]);
      closed->get_future().wait_for(std::chrono::minutes(10));
      _exit(0);
    }
    ::close(fds[1]);
    char buf[256] = {};
    const auto n = ::read(fds[0], buf, sizeof buf - 1);
    ::close(fds[0]);
    if (n <= 0) return 1;
    address.assign(buf, static_cast<std::size_t>(n));
  } else {
    local_server = serve("inproc://comm-bench", closed, round_trips > 0 ? 2 : 1);
    address = local_server->address();
  }

  int rc = 0;
  if (sweep) {
    try {
      run_sweep(address, protocol, static_cast<std::size_t>(max_megabytes * (1 << 20)), latency_only);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "comm_transfer: %s\n", e.what());
      rc = 1;
    }
  } else
  try {
    // Latency, callbacks on the I/O thread (how the scheduler and workers use a comm).
    if (round_trips > 0) {
      auto comm = connect(address);
      std::vector<double> us;
      us.reserve(round_trips);
      std::promise<void> done;
      Clock::time_point t0;
      comm->set_handlers([&](Message) {
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (static_cast<int>(us.size()) == round_trips) return done.set_value();
        t0 = Clock::now();
        comm->send(Message("ping"), nullptr);
      });
      const auto start = Clock::now();
      t0 = Clock::now();
      comm->send(Message("ping"), nullptr);
      done.get_future().wait();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::printf(
          "{\"benchmark\":\"comm_latency\",\"protocol\":\"%s\",\"mode\":\"callback\",\"round_trips\":%d,"
          "\"seconds\":%.6f,\"median_us\":%.2f,\"p99_us\":%.2f}\n",
          protocol.c_str(), round_trips, seconds, median(us),
          [&] { std::sort(us.begin(), us.end()); return us[us.size() * 99 / 100]; }());
      comm->close();
    }
    // Latency and bandwidth from a user thread: send, then a blocking recv().
    auto comm = connect(address);
    if (round_trips > 0) {
      std::vector<double> us;
      const auto start = Clock::now();
      for (int i = 0; i < round_trips; ++i) {
        const auto t0 = Clock::now();
        comm->send(Message("ping"), nullptr);
        comm->recv();
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::printf(
          "{\"benchmark\":\"comm_latency\",\"protocol\":\"%s\",\"mode\":\"blocking\",\"round_trips\":%d,"
          "\"seconds\":%.6f,\"median_us\":%.2f}\n",
          protocol.c_str(), round_trips, seconds, median(us));
    }
    auto frame = Buffer::allocate_host(bytes);
    std::memset(frame->data(), 1, bytes);
    std::vector<Frame> pieces;  // --frames: the same bytes as views of `frame`
    for (int i = 0; frames > 1 && i < frames; ++i) {
      const std::size_t begin = bytes * static_cast<std::size_t>(i) / static_cast<std::size_t>(frames);
      const std::size_t end = bytes * static_cast<std::size_t>(i + 1) / static_cast<std::size_t>(frames);
      // A view that keeps `frame` alive (adopt's deleter holds it).
      pieces.push_back(Buffer::adopt(static_cast<char*>(frame->data()) + begin, end - begin, MemoryKind::Host, -1,
                                     [keep = frame](void*, std::size_t) {}));
    }
    auto copy = Buffer::allocate_host(bytes);
    std::memset(copy->data(), 0, bytes);
    std::vector<double> secs, socket_secs, memcpy_secs, cpu, socket_cpu, memcpy_cpu;
    for (int r = 0; r < repeat; ++r) {
      Message msg("data");
      if (pieces.empty()) msg.add_frame(frame);
      else
        for (const auto& p : pieces) msg.add_frame(p);
      double c0 = cpu_seconds(child);
      auto t0 = Clock::now();
      comm->send(std::move(msg), nullptr);
      comm->recv();  // the ack: the whole frame has arrived on the other side
      secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      cpu.push_back(cpu_seconds(child) - c0);

      c0 = cpu_seconds(baseline->pid());
      socket_secs.push_back(baseline->transfer(frame->data()));
      socket_cpu.push_back(cpu_seconds(baseline->pid()) - c0);

      c0 = cpu_seconds(-1);
      t0 = Clock::now();
      std::memcpy(copy->data(), frame->data(), bytes);
      memcpy_secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      memcpy_cpu.push_back(cpu_seconds(-1) - c0);
    }
    baseline.reset();
    char memcpy_field[64];
    std::snprintf(memcpy_field, sizeof memcpy_field, ",\"frames\":%d,\"memcpy_gb_per_s\":%.3f", frames,
                  bytes / *std::min_element(memcpy_secs.begin(), memcpy_secs.end()) / 1e9);
    print_transfer("comm_transfer", protocol, bytes, repeat, secs, cpu, memcpy_field);
    print_transfer("socket_transfer", "tcp-socket-pair", bytes, repeat, socket_secs, socket_cpu);
    print_transfer("memcpy_transfer", "memcpy", bytes, repeat, memcpy_secs, memcpy_cpu);
    comm->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "comm_transfer: %s\n", e.what());
    rc = 1;
  }
  if (child > 0) {
    int status = 0;
    for (int i = 0; i < 200 && ::waitpid(child, &status, WNOHANG) == 0; ++i) ::usleep(10000);
    if (::waitpid(child, &status, WNOHANG) == 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
    }
  }
  return rc;
}
