// benchmarks/comm_transfer: the comm layer alone, between two processes on this host (tcp) or
// two ends in one process (inproc). Prints JSON lines (contract in shared/design.md):
//   {"benchmark":"comm_latency",...,"median_us":...}   small-message round trip
//   {"benchmark":"comm_transfer",...,"gb_per_s":...}   one frame of --megabytes, one way
//
//   comm_transfer --protocol tcp|inproc --megabytes 256 --repeat 5 --round-trips 10000
#include <sys/wait.h>
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
std::unique_ptr<Listener> serve(const std::string& address, std::shared_ptr<std::promise<void>> closed) {
  return listen(address, [closed](std::shared_ptr<Comm> comm) {
    std::weak_ptr<Comm> weak = comm;
    comm->set_handlers(
        [weak](Message msg) {
          auto c = weak.lock();
          if (!c) return;
          c->send(Message(msg.op == "ping" ? "pong" : "ack"), nullptr);
        },
        [closed, comm](std::exception_ptr) {
          // The benchmark's second comm closing ends the server process.
          static int n = 0;
          if (++n == 2) closed->set_value();
        });
  });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string protocol = "tcp";
  double megabytes = 256;
  int repeat = 5, round_trips = 10000;
  CLI::App app{"comm_transfer benchmark"};
  app.add_option("--protocol", protocol)->check(CLI::IsMember({"tcp", "inproc"}));
  app.add_option("--megabytes", megabytes, "frame size in MiB");
  app.add_option("--repeat", repeat, "transfers; best and median are reported");
  app.add_option("--round-trips", round_trips, "small-message round trips for latency");
  CLI11_PARSE(app, argc, argv);

  std::string address;
  pid_t child = -1;
  std::unique_ptr<Listener> local_server;
  auto closed = std::make_shared<std::promise<void>>();
  if (protocol == "tcp") {
    // The server is another process, forked before either side starts its I/O thread.
    int fds[2];
    if (::pipe(fds) != 0) return 1;
    child = ::fork();
    if (child == 0) {
      ::close(fds[0]);
      auto listener = serve("tcp://127.0.0.1:0", closed);
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
    local_server = serve("inproc://comm-bench", closed);
    address = local_server->address();
  }

  int rc = 0;
  try {
    // Latency, callbacks on the I/O thread (how the scheduler and workers use a comm).
    {
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
    {
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
    const auto bytes = static_cast<std::size_t>(megabytes * (1 << 20));
    auto frame = Buffer::allocate_host(bytes);
    std::memset(frame->data(), 1, bytes);
    std::vector<double> secs;
    for (int r = 0; r < repeat; ++r) {
      Message msg("data");
      msg.add_frame(frame);
      const auto t0 = Clock::now();
      comm->send(std::move(msg), nullptr);
      comm->recv();  // the ack: the whole frame has arrived on the other side
      secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    auto copy = Buffer::allocate_host(bytes);
    std::memset(copy->data(), 0, bytes);
    const auto m0 = Clock::now();
    std::memcpy(copy->data(), frame->data(), bytes);
    const double memcpy_s = std::chrono::duration<double>(Clock::now() - m0).count();
    const double best = *std::min_element(secs.begin(), secs.end());
    std::printf(
        "{\"benchmark\":\"comm_transfer\",\"protocol\":\"%s\",\"bytes\":%zu,\"repeat\":%d,\"seconds\":%.6f,"
        "\"gb_per_s\":%.3f,\"median_gb_per_s\":%.3f,\"memcpy_gb_per_s\":%.3f}\n",
        protocol.c_str(), bytes, repeat, best, bytes / best / 1e9, bytes / median(secs) / 1e9,
        bytes / memcpy_s / 1e9);
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
