#include "s3_server.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tessera::testing {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A port nobody listens on now: the kernel's pick for port 0. Another process may take it
// before moto binds it; the caller then tries another.
int free_port() {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) throw std::system_error(errno, std::generic_category(), "S3Server: socket");
  auto a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::system_error(errno, std::generic_category(), "S3Server: cannot find a free port");
  return ntohs(a.sin_port);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string last_lines(const std::string& text, std::size_t max_chars = 2000) {
  return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

bool is_executable(const std::filesystem::path& p) { return ::access(p.c_str(), X_OK) == 0; }

bool has_boto3(const std::filesystem::path& env) {
  std::error_code ec;
  for (const auto& lib : std::filesystem::directory_iterator(env / "lib", ec)) {
    if (lib.path().filename().string().rfind("python", 0) != 0) continue;
    if (std::filesystem::exists(lib.path() / "site-packages" / "boto3" / "__init__.py", ec)) return true;
  }
  return false;
}

// Reaps `pid` if it has ended; true when it has (or is not our child any more).
bool reaped(pid_t pid, int* status = nullptr) {
  int st = 0;
  pid_t r = ::waitpid(pid, &st, WNOHANG);
  if (r == pid && status) *status = st;
  return r == pid || (r < 0 && errno == ECHILD);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// boto3 as S3 users call it; moto takes any key pair. Objects are public-read, so that a plain
// HTTP GET (a test's check, an anonymous client) reads them as well as a signed request does.
constexpr const char* kBoto3Script = R"(import sys
import boto3
endpoint, op, bucket, key, path = sys.argv[1:6]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="tessera-test", aws_secret_access_key="tessera-test")
if op == "create_bucket":
    s3.create_bucket(Bucket=bucket)
elif op == "upload":
    s3.upload_file(path, bucket, key, ExtraArgs={"ACL": "public-read"})
else:
    sys.exit("unknown operation " + op)
)";

}  // namespace

// ---- HTTP probes ------------------------------------------------------------------------------

bool port_accepts_connections(int port) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) return false;
  auto a = loopback(port);
  return ::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

HttpResponse http_get(int port, const std::string& path, double timeout_s) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  auto ms_left = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(left < 0 ? 0 : left);
  };
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) return {};
  auto a = loopback(port);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return {};
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(s.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return {};
    sent += static_cast<std::size_t>(n);
  }
  std::string answer;
  char buf[16384];
  while (true) {
    pollfd p{s.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, ms_left());
    if (ready <= 0) return {};  // timed out: no whole answer
    ssize_t n = ::recv(s.get(), buf, sizeof buf, 0);
    if (n < 0) return {};
    if (n == 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  HttpResponse r;
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  if (answer.rfind("HTTP/", 0) != 0) return r;
  auto space = answer.find(' ');
  auto head_end = answer.find("\r\n\r\n");
  if (space == std::string::npos || head_end == std::string::npos) return r;
  r.status = std::atoi(answer.c_str() + space + 1);
  r.body = answer.substr(head_end + 4);
  return r;
}

// ---- S3Server ---------------------------------------------------------------------------------

std::filesystem::path S3Server::environment() {
  if (const char* e = std::getenv("TESSERA_PYENV"); e && *e) return e;
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "tessera" / "pyenv";
  return {};
}

std::string S3Server::unavailable_reason() {
  const auto env = environment();
  if (env.empty()) return "no Python environment for moto: neither TESSERA_PYENV nor HOME is set";
  if (!is_executable(env / "bin" / "python"))
    return "no Python environment at " + env.string() +
           " (bash scripts/setup.sh makes it; TESSERA_PYENV names another one)";
  if (!is_executable(env / "bin" / "moto_server"))
    return (env / "bin" / "moto_server").string() + " is missing (pip install 'moto[server]' into " + env.string() +
           ")";
  if (!has_boto3(env)) return "boto3 is not installed in " + env.string() + " (moto[server] brings it)";
  return {};
}

S3Server::S3Server(double timeout_s) : environment_(environment()) {
  if (auto why = unavailable_reason(); !why.empty()) throw std::runtime_error("S3Server: " + why);
  std::string dir = (std::filesystem::temp_directory_path() / "tessera-s3-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw std::system_error(errno, std::generic_category(), "S3Server: mkdtemp " + dir);
  dir_ = dir;
  std::string why;
  try {
    // A port taken between free_port() and moto's bind makes moto exit: another port then.
    for (int attempt = 0; attempt < 3; ++attempt)
      if (start_on(free_port(), timeout_s, why)) return;
  } catch (...) {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  throw std::runtime_error("S3Server: moto_server did not start: " + why);
}

S3Server::~S3Server() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool S3Server::start_on(int port, double timeout_s, std::string& why_not) {
  const std::string moto = (environment_ / "bin" / "moto_server").string();
  const std::string port_text = std::to_string(port);
  const std::string host = "127.0.0.1";
  const std::string flag_host = "-H", flag_port = "-p";
  std::vector<char*> argv{const_cast<char*>(moto.c_str()),      const_cast<char*>(flag_host.c_str()),
                          const_cast<char*>(host.c_str()),      const_cast<char*>(flag_port.c_str()),
                          const_cast<char*>(port_text.c_str()), nullptr};
  const auto log_path = dir_ / "moto.log";
  Fd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  Fd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (log_fd.get() < 0 || null_fd.get() < 0)
    throw std::system_error(errno, std::generic_category(), "S3Server: cannot open " + log_path.string());
  const long max_fd = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
  const pid_t parent = ::getpid();

  // fork + exec rather than posix_spawn: the child must ask for PR_SET_PDEATHSIG before exec.
  // Between the two only async-signal-safe calls: other threads of the test binary may hold locks.
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "S3Server: fork");
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so that the destructor ends all of it
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    ::dup2(null_fd.get(), 0);
    ::dup2(log_fd.get(), 1);
    ::dup2(log_fd.get(), 2);
    // No inherited descriptor (a test's listening socket) may outlive its owner inside moto.
    if (::close_range(3, ~0U, 0) != 0)
      for (long fd = 3; fd < max_fd; ++fd) ::close(static_cast<int>(fd));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: a killpg right after fork must find the group
  pid_ = pid;
  port_ = port;
  endpoint_ = "http://127.0.0.1:" + port_text;

  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (true) {
    int status = 0;
    if (reaped(pid_, &status)) {
      pid_ = -1;
      why_not = "moto_server on port " + port_text + " ended (" + describe(status) + "):\n" + last_lines(log());
      return false;
    }
    // moto answers GET / with its bucket list: a server that is someone else's does not.
    HttpResponse r = http_get(port, "/", 2.0);
    if (r.status == 200 && r.body.find("ListAllMyBucketsResult") != std::string::npos) return true;
    if (Clock::now() >= deadline) {
      why_not = "moto_server on port " + port_text + " gave no S3 answer within " + std::to_string(timeout_s) +
                " s:\n" + last_lines(log());
      stop();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void S3Server::stop() noexcept {
  if (pid_ <= 0) return;
  ::killpg(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  bool gone = false;
  while (!(gone = reaped(pid_)) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!gone) {
    ::killpg(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::killpg(pid_, SIGKILL);  // whatever moto may have started in its group
  pid_ = -1;
}

std::string S3Server::log() const { return read_text(dir_ / "moto.log"); }

void S3Server::create_bucket(const std::string& bucket) const { run_boto3("create_bucket", bucket, "", ""); }

void S3Server::upload(const std::string& bucket, const std::string& key,
                      const std::filesystem::path& local_path) const {
  run_boto3("upload", bucket, key, local_path.string());
}

void S3Server::run_boto3(const std::string& op, const std::string& bucket, const std::string& key,
                         const std::string& local_path) const {
  const std::string python = (environment_ / "bin" / "python").string();
  std::vector<std::string> args{python, "-c", kBoto3Script, endpoint_, op, bucket, key, local_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // A proxy configured for the outside world must not take requests to 127.0.0.1.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "no_proxy=", 9) != 0 && std::strncmp(*e, "NO_PROXY=", 9) != 0) env_strings.emplace_back(*e);
  env_strings.emplace_back("no_proxy=127.0.0.1,localhost");
  env_strings.emplace_back("NO_PROXY=127.0.0.1,localhost");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "S3Server: pipe");
  Fd read_end(pipe_fds[0]);
  pid_t pid = -1;
  int rc;
  {
    Fd write_end(pipe_fds[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    rc = ::posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
  }  // our copy of the write end closes here, so the read below ends when python exits
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "S3Server: cannot start " + python);
  std::string output;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n > 0) {
      output.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("S3Server: boto3 " + op + " s3://" + bucket + "/" + key + " failed (" + describe(status) +
                             "):\n" + last_lines(output));
}

}  // namespace tessera::testing
