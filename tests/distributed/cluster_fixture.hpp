#pragma once
// Helpers for the integration tests of the distributed runtime (cluster_test.cpp,
// process_test.cpp): polling with a deadline, child processes that are always reaped, a scratch
// directory, raw sockets for the robustness tests, and a scan of /proc for leftover processes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/util.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "tessera/distributed/worker.hpp"
#include "tessera/tessera.hpp"


namespace tessera_test {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/** @brief Polls pred every poll_ms until it holds or timeout_s passed; returns the last answer. */
inline bool wait_until(const std::function<bool()>& pred, double timeout_s, int poll_ms = 10) {
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
}

/** @brief "tcp://127.0.0.1:4567" -> 4567 (0 when there is no port). */
inline int port_of(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return 0;
  try {
    return std::stoi(address.substr(colon + 1));
  } catch (...) {
    return 0;
  }
}

/** @brief <build>/bin, found from the test binary at <build>/tests/tessera_tests. */
inline std::filesystem::path build_bin_dir() {
  auto self = std::filesystem::read_symlink("/proc/self/exe");
  return self.parent_path().parent_path() / "bin";
}

/** @brief A fresh directory under the system temp directory, removed with everything in it. */
/** @brief The bundled server binaries next to the tests; `found` once all three are built. */
struct ServerBinaries {
  std::string scheduler, worker, cuda_worker;
  bool found = false;
  ServerBinaries() {
    const auto bin = build_bin_dir();
    scheduler = (bin / "tessera-scheduler").string();
    worker = (bin / "tessera-worker").string();
    cuda_worker = (bin / "tessera-cuda-worker").string();
    found = std::filesystem::exists(scheduler) && std::filesystem::exists(worker) &&
            std::filesystem::exists(cuda_worker);
  }
};
#define TESSERA_NEED_SERVER_BINARIES(b) \
  if (!(b).found) GTEST_SKIP() << "tessera-scheduler, tessera-worker or tessera-cuda-worker not built next to the tests"

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    std::ostringstream os;
    os << "tessera-it-" << ::getpid() << "-" << std::hex << rd() << rd();
    path_ = std::filesystem::temp_directory_path() / os.str();
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/**
 * @brief Child processes started with posix_spawn. The destructor SIGKILLs and reaps every one
 * still there, so a failing test (an ASSERT that returns early) leaves nothing behind.
 */
class Children {
 public:
  /**
   * @brief env as given: a child inherits the test's environment, so under AddressSanitizer it
   * checks for leaks with the asan preset's options and lsan.supp, as the test process does (a
   * leak at a worker's or scheduler's exit fails the test through its exit status).
   */
  static std::map<std::string, std::string> sanitizer_env(std::map<std::string, std::string> env) { return env; }

  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() { kill_all(); }

  /** @brief Starts argv[0] (a path) with the current environment plus `env`. */
  pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {}) {
    pid_t pid = tessera::distributed::spawn_process(argv, sanitizer_env(env));
    kids_.push_back({pid, false, 0});
    return pid;
  }

  /** @brief The wait status once pid exited within timeout_s; nullopt if it is still running. */
  std::optional<int> wait_exit(pid_t pid, double timeout_s) {
    Kid* k = find(pid);
    if (!k) return std::nullopt;
    if (k->reaped) return k->status;
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      int status = 0;
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        k->reaped = true;
        k->status = status;
        return status;
      }
      if (Clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  bool running(pid_t pid) {
    Kid* k = find(pid);
    if (!k || k->reaped) return false;
    return !wait_exit(pid, 0).has_value();
  }

  void kill_all() {
    for (auto& k : kids_) {
      if (k.reaped) continue;
      ::kill(k.pid, SIGKILL);
      ::waitpid(k.pid, &k.status, 0);
      k.reaped = true;
    }
  }

 private:
  struct Kid {
    pid_t pid;
    bool reaped;
    int status;
  };
  Kid* find(pid_t pid) {
    for (auto& k : kids_)
      if (k.pid == pid) return &k;
    return nullptr;
  }
  std::vector<Kid> kids_;
};

using tessera::distributed::describe_status;  // how a child ended, for failure messages

/** @brief Pids (other than this process) whose command line contains `needle`; zombies excluded. */
inline std::vector<int> processes_with(const std::string& needle) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    int pid = std::stoi(name);
    if (pid == ::getpid()) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    auto rp = line.rfind(')');
    if (rp != std::string::npos && rp + 2 < line.size() && line[rp + 2] == 'Z') continue;  // zombie
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

/** @brief Whether a process is alive (not a zombie). */
inline bool process_alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  auto rp = line.rfind(')');
  return !(rp != std::string::npos && rp + 2 < line.size() && line[rp + 2] == 'Z');
}

/** @brief The process state letter from /proc/PID/stat ('R', 'S', 'T', 'Z', ...), or '?'. */
inline char process_state(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return '?';
  auto rp = line.rfind(')');
  return (rp != std::string::npos && rp + 2 < line.size()) ? line[rp + 2] : '?';
}

/** @brief Environment for a child binary: it dies with this process even if this one is killed. */
/**
 * @brief Sets (or, with nullopt, unsets) an environment variable for one scope and restores it.
 * Only for code that reads the variable on this thread while no other thread does.
 */
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) ::setenv(name_.c_str(), value->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/** @brief The whole text of a file ("" when it cannot be read), e.g. a child's log. */
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::map<std::string, std::string> child_env() {
  return {{"TESSERA_PARENT_PID", std::to_string(::getpid())}};
}

/** @brief Starts the tessera-scheduler binary on a free port, writing `sfile`, with `token`. */
inline pid_t spawn_scheduler(Children& kids, const std::string& binary, const std::string& sfile,
                             const std::string& token, const std::string& log_level = "warning",
                             const std::map<std::string, std::string>& env = child_env()) {
  return kids.spawn({binary, "--port", "0", "--scheduler-file", sfile, "--token", token, "--log-level", log_level}, env);
}

/** @brief Waits up to timeout_s for a child to exit and expects status 0. */
inline void expect_exit_zero(Children& kids, pid_t pid, const std::string& what, double timeout_s = 8) {
  auto st = kids.wait_exit(pid, timeout_s);
  ASSERT_TRUE(st.has_value()) << what << " did not exit within " << timeout_s << " s";
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << what << " " << describe_status(*st);
}

inline void expect_close(double got, double want, double rel = 1e-9) {
  EXPECT_LE(std::abs(got - want), rel * std::max(1.0, std::abs(want))) << "got " << got << ", want " << want;
}

/** @brief Worker processes of a LocalCluster carry its scheduler address as an argument. */
inline void expect_no_workers_left(const std::string& scheduler_address) {
  const std::string needle = scheduler_address + " ";
  EXPECT_TRUE(wait_until([&] { return processes_with(needle).empty(); }, 3))
      << processes_with(needle).size() << " worker processes of " << scheduler_address << " are still running";
}

/** @brief A blocking TCP socket to 127.0.0.1:port with a receive timeout; closed on destruction. */
class RawSocket {
 public:
  explicit RawSocket(int port, double recv_timeout_s = 3.0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error("connect to port " + std::to_string(port) + " failed");
    }
    timeval tv{};
    tv.tv_sec = static_cast<long>(recv_timeout_s);
    tv.tv_usec = static_cast<long>((recv_timeout_s - static_cast<double>(tv.tv_sec)) * 1e6);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawSocket() { close(); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  /** @brief Writes everything; false when the peer already closed (EPIPE/ECONNRESET). */
  bool send_all(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  bool send_all(const std::vector<std::uint8_t>& v) { return send_all(v.data(), v.size()); }
  bool send_all(const std::string& s) { return send_all(s.data(), s.size()); }
  /** @brief Reads exactly n bytes; false on EOF, error or timeout. */
  bool recv_exact(void* data, std::size_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }
  /**
   * @brief Reads (and discards) until the peer closes. True when EOF or a reset came within
   * timeout_s; false when the connection was still open at the deadline.
   */
  bool closed_by_peer(double timeout_s) {
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    char buf[4096];
    while (Clock::now() < deadline) {
      ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
      if (r == 0) return true;
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        return true;  // ECONNRESET and the like
      }
    }
    return false;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

/** @brief The worker called `name` in scheduler_info(), or nullptr. */
inline const tessera::distributed::WorkerInfo* find_worker(const tessera::distributed::SchedulerInfo& info,
                                                           const std::string& name) {
  for (const auto& w : info.workers)
    if (w.name == name) return &w;
  return nullptr;
}

/** A client's options in a test: the cluster's token, and a timeout (s) that fails the test
 *  instead of hanging it. */
/** @brief 2 worker processes (this test binary, made workers by tessera::init in tests/main.cpp)
 *  with 1 thread each, over TCP, quick heartbeats, quiet logs. */
inline tessera::distributed::LocalClusterOptions processes_over_tcp() {
  tessera::distributed::LocalClusterOptions o;
  o.processes = true;
  o.protocol = "tcp";
  o.n_workers = 2;
  o.threads_per_worker = 1;
  o.timeout = 10;
  o.heartbeat_interval = 0.2;
  o.log_level = "error";
  o.restart_dead_workers = false;  // tests kill or stop workers on purpose and count them
  return o;
}

inline tessera::distributed::ClientOptions client_options(const std::string& token = {}, double timeout = 5) {
  tessera::distributed::ClientOptions c;
  c.token = token;
  c.timeout = timeout;
  return c;
}

/** The seed workload's expression: (x + 1)[::2, ::2].sum() over normal(10, 1) n x n in c x c chunks. */
inline tessera::Array seed_expr(std::int64_t n, std::int64_t c) {
  auto x = tessera::random::normal(0, 10.0, 1.0, {n, n}, {c, c});
  return ((x + 1)[{tessera::step(2), tessera::step(2)}]).sum();
}

/**
 * @brief A Scheduler in this process on tcp://127.0.0.1 and the options of workers and clients
 * joining it (workers built by hand, so a test picks each one's GPU policy and limits).
 */
struct InProcessCluster {
  std::string token;
  tessera::distributed::Scheduler scheduler;

  explicit InProcessCluster(std::string t) : token(std::move(t)), scheduler(scheduler_options(token)) {}

  static tessera::distributed::SchedulerOptions scheduler_options(const std::string& token) {
    tessera::distributed::SchedulerOptions so;
    so.address = "tcp://127.0.0.1:0";
    so.token = token;
    return so;
  }
  /** 2 threads, 0.1 s heartbeats; a worker that may take a GPU also gets the resource GPU=1. */
  tessera::distributed::WorkerOptions worker(const std::string& name, tessera::distributed::GpuPolicy gpu,
                                             std::size_t device_memory_limit = 0) const {
    tessera::distributed::WorkerOptions o;
    o.scheduler_address = scheduler.address();
    o.token = token;
    o.name = name;
    o.nthreads = 2;
    o.heartbeat_interval = 0.1;
    o.death_timeout = 5;
    o.gpu = gpu;
    o.device_memory_limit = device_memory_limit;
    if (gpu == tessera::distributed::GpuPolicy::Auto) o.resources = {{"GPU", 1}};
    return o;
  }
  tessera::distributed::ClientOptions client(double timeout = 5) const { return client_options(token, timeout); }
};

}  // namespace tessera_test
