#pragma once
// "Hosts" on one machine for multi-host tests: network namespaces, each joined by a veth pair to
// a bridge in the root namespace, each with its own address on a private /24 that only these
// links carry (10.213.<k>.<i>, the bridge .254), and optionally an sshd in each (Debian's
// openssh-server) with a host key and a user key generated in a temp folder.
//
// Everything is removed by the destructor on every path (an ASSERT returning early included):
// every process in each namespace is SIGKILLed (the sshds and whatever they started), then the
// namespaces (their veth ends go with them), then the bridge. Needs root; unavailable() says
// why not, for GTEST_SKIP.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tessera_test {

struct CommandResult {
  int status = -1;  // exit code, or -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

/** Runs `command` with /bin/sh, output captured. */
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(f);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/** True when a TCP connection to address:port succeeds within about 100 ms. */
inline bool tcp_port_open(const std::string& address, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
  timeval tv{0, 100000};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

class NetnsHosts {
 public:
  /** Empty when namespaced hosts can be made here, else why not. */
  static std::string unavailable(bool need_sshd = true) {
    if (::geteuid() != 0) return "needs root (network namespaces, veth pairs, sshd)";
    if (run_command("ip -V").status != 0) return "no ip command (iproute2)";
    if (need_sshd && !std::filesystem::exists("/usr/sbin/sshd")) return "no /usr/sbin/sshd (openssh-server)";
    if (need_sshd && run_command("ssh -V").status != 0) return "no ssh client (openssh-client)";
    if (need_sshd && run_command("ssh-keygen -? 2>&1 | grep -q usage").status != 0) return "no ssh-keygen";
    const std::string probe = "tsprobe" + std::to_string(::getpid());
    auto r = run_command("ip netns add " + probe);
    run_command("ip netns del " + probe);
    if (r.status != 0) return "cannot make a network namespace: " + r.output;
    return {};
  }

  /**
   * n hosts: namespaces tsh<pid>-<i>, addresses 10.213.<k>.<i + 1>, bridge tsb<pid>. What a
   * test process that was killed (a ctest timeout) left behind is removed first.
   */
  explicit NetnsHosts(int n) : tag_(std::to_string(::getpid())) {
    remove_stale();
    // A /24 no interface here has yet (tests may run side by side), starting from the pid's.
    const std::string addrs = run_command("ip -o -4 addr show").output;
    for (int k = 0; k < 200; ++k) {
      subnet_ = "10.213." + std::to_string(20 + (::getpid() + k) % 200);
      if (addrs.find(" " + subnet_ + ".") == std::string::npos) break;
    }
    try {
      bridge_ = "tsb" + tag_;
      must("ip link add " + bridge_ + " type bridge");
      must("ip addr add " + subnet_ + ".254/24 dev " + bridge_);
      must("ip link set " + bridge_ + " up");
      for (int i = 0; i < n; ++i) {
        const std::string ns = "tsh" + tag_ + "-" + std::to_string(i);
        const std::string outside = "tsv" + tag_ + "h" + std::to_string(i);
        const std::string inside = "tsi" + tag_ + "h" + std::to_string(i);
        must("ip netns add " + ns);
        namespaces_.push_back(ns);
        must("ip link add " + outside + " type veth peer name " + inside);
        links_.push_back(outside);
        must("ip link set " + inside + " netns " + ns);
        must("ip link set " + outside + " master " + bridge_ + " up");
        must("ip -n " + ns + " link set lo up");
        must("ip -n " + ns + " addr add " + address(i) + "/24 dev " + inside);
        must("ip -n " + ns + " link set " + inside + " up");
      }
    } catch (...) {
      cleanup();
      throw;
    }
  }
  ~NetnsHosts() { cleanup(); }
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  std::size_t size() const { return namespaces_.size(); }
  std::string address(int i) const { return subnet_ + "." + std::to_string(i + 1); }
  /** The root namespace's end of the bridge, where the test process reaches the hosts from. */
  std::string bridge_address() const { return subnet_ + ".254"; }
  const std::string& name(int i) const { return namespaces_.at(static_cast<std::size_t>(i)); }
  /** The veth end on the bridge side of host i: down cuts the host off everyone. */
  const std::string& link(int i) const { return links_.at(static_cast<std::size_t>(i)); }
  void set_link(int i, bool up) { must("ip link set " + link(i) + (up ? " up" : " down")); }

  /**
   * Generates a host key and a user key under `dir`, and starts an sshd in every namespace on
   * its address, port 22, on its own config: no PAM, keys only, root by key, the folder's
   * authorized_keys. Writes dir/ssh_config (identity, known_hosts with the host key for every
   * address, user root, strict host key checking) for `ssh -F`.
   */
  void start_sshd(const std::filesystem::path& dir) {
    dir_ = dir;
    must("ssh-keygen -q -t ed25519 -N '' -C tessera-test-host -f " + (dir / "host_key").string());
    must("ssh-keygen -q -t ed25519 -N '' -C tessera-test-user -f " + (dir / "id_ed25519").string());
    std::filesystem::copy_file(dir / "id_ed25519.pub", dir / "authorized_keys",
                               std::filesystem::copy_options::overwrite_existing);
    std::string host_pub;
    {
      std::ifstream in(dir / "host_key.pub");
      std::getline(in, host_pub);
    }
    std::string all;
    for (std::size_t i = 0; i < size(); ++i) all += (i ? "," : "") + address(static_cast<int>(i));
    std::ofstream(dir / "known_hosts") << all << " " << host_pub << "\n";
    std::ofstream(dir / "ssh_config") << "Host *\n"
                                      << "  User root\n"
                                      << "  IdentityFile " << (dir / "id_ed25519").string() << "\n"
                                      << "  IdentitiesOnly yes\n"
                                      << "  UserKnownHostsFile " << (dir / "known_hosts").string() << "\n"
                                      << "  GlobalKnownHostsFile /dev/null\n"
                                      << "  StrictHostKeyChecking yes\n"
                                      << "  LogLevel ERROR\n";
    std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation folder
    for (std::size_t i = 0; i < size(); ++i) {
      const auto config = dir / ("sshd_config." + std::to_string(i));
      std::ofstream(config) << "ListenAddress " << address(static_cast<int>(i)) << ":22\n"
                            << "HostKey " << (dir / "host_key").string() << "\n"
                            << "AuthorizedKeysFile " << (dir / "authorized_keys").string() << "\n"
                            << "PermitRootLogin prohibit-password\n"
                            << "PubkeyAuthentication yes\n"
                            << "PasswordAuthentication no\n"
                            << "KbdInteractiveAuthentication no\n"
                            << "UsePAM no\n"
                            << "StrictModes no\n"
                            << "PidFile none\n"
                            << "PrintMotd no\n"
                            << "MaxStartups 100\n"
                            << "MaxSessions 100\n"
                            // A session whose client went quiet (the link cut) ends in about 15 s.
                            << "ClientAliveInterval 5\n"
                            << "ClientAliveCountMax 3\n"
                            << "LogLevel ERROR\n";
      const auto log = dir / ("sshd." + std::to_string(i) + ".log");
      sshd_pids_.push_back(spawn_logged({"ip", "netns", "exec", name(static_cast<int>(i)), "/usr/sbin/sshd", "-D", "-e",
                                         "-f", config.string()},
                                        log.string()));
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (std::size_t i = 0; i < size(); ++i)
      while (!tcp_port_open(address(static_cast<int>(i)), 22)) {
        if (std::chrono::steady_clock::now() > deadline) {
          std::ifstream in(dir / ("sshd." + std::to_string(i) + ".log"));
          std::stringstream s;
          s << in.rdbuf();
          throw std::runtime_error("sshd in " + name(static_cast<int>(i)) + " did not listen: " + s.str());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
  }
  std::string ssh_config() const { return (dir_ / "ssh_config").string(); }
  std::string identity_file() const { return (dir_ / "id_ed25519").string(); }

  /** Processes running in host i's namespace now. */
  std::vector<int> pids(int i) const {
    std::vector<int> out;
    std::istringstream in(run_command("ip netns pids " + name(i)).output);
    int pid;
    while (in >> pid) out.push_back(pid);
    return out;
  }

 private:
  void must(const std::string& command) {
    auto r = run_command(command);
    if (r.status != 0) throw std::runtime_error("`" + command + "` failed: " + r.output);
  }

  static int spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
    return pid;
  }

  // Namespaces tsh<pid>-* and bridges tsb<pid> whose process is gone.
  static void remove_stale() {
    auto gone = [](const std::string& digits) {
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return false;
      return ::kill(std::stoi(digits), 0) != 0 && errno == ESRCH;
    };
    std::istringstream ns(run_command("ip netns list").output);
    for (std::string line; std::getline(ns, line);) {
      const std::string name = line.substr(0, line.find(' '));
      if (name.rfind("tsh", 0) != 0 || name.find('-') == std::string::npos) continue;
      if (!gone(name.substr(3, name.find('-') - 3))) continue;
      std::istringstream pids(run_command("ip netns pids " + name).output);
      for (int pid; pids >> pid;) ::kill(pid, SIGKILL);
      run_command("ip netns del " + name);
    }
    std::istringstream links(run_command("ip -o link show type bridge").output);
    for (std::string line; std::getline(links, line);) {
      auto a = line.find(": "), b = line.find(':', a + 2);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string name = line.substr(a + 2, b - a - 2);
      if (name.rfind("tsb", 0) == 0 && gone(name.substr(3))) run_command("ip link del " + name);
    }
  }

  void cleanup() {
    for (std::size_t i = 0; i < namespaces_.size(); ++i)
      for (int pid : pids(static_cast<int>(i))) ::kill(pid, SIGKILL);
    for (int pid : sshd_pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    sshd_pids_.clear();
    for (const auto& ns : namespaces_) run_command("ip netns del " + ns);
    namespaces_.clear();
    for (const auto& l : links_) run_command("ip link del " + l + " 2>/dev/null");  // gone with its peer already
    links_.clear();
    if (!bridge_.empty()) run_command("ip link del " + bridge_);
    bridge_.clear();
  }

  std::string tag_, subnet_, bridge_;
  std::vector<std::string> namespaces_, links_;
  std::vector<int> sshd_pids_;
  std::filesystem::path dir_;
};

}  // namespace tessera_test
