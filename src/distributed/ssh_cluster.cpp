#include "tessera/distributed/ssh_cluster.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "tessera/core/error.hpp"
#include "tessera/distributed/client.hpp"
#include "util.hpp"

extern char** environ;

namespace tessera::distributed {

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string ssh_remote_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  if (argv.empty()) throw Error("ssh_remote_command: empty command line");
  // The token comes as the first line of stdin (never on a command line, which `ps` shows to
  // every user of the host). fd 3 keeps the session's stdin for the watcher: a background list
  // of a non-interactive shell otherwise reads /dev/null.
  std::string s = "IFS= read -r TESSERA_TOKEN || exit 111; export TESSERA_TOKEN; ";
  for (const auto& [k, v] : env) {
    if (k.empty() || k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                         std::string::npos)
      throw Error("SSHCluster: invalid environment variable name '" + k + "'");
    s += k + "=" + shell_quote(v) + "; export " + k + "; ";
  }
  s += "exec 3<&0; ";
  for (const auto& a : argv) s += shell_quote(a) + " ";
  s += "</dev/null 3<&- & p=$!; ";
  // The watcher: stdin closed (the client closed it, died, or the connection went) -> SIGTERM,
  // then SIGKILL if the program is still there 10 s later. It polls rather than sleeping 10 s,
  // so that no sleep outlives the program.
  s += "{ cat <&3 >/dev/null 2>&1; kill -TERM $p 2>/dev/null; i=0; "
       "while kill -0 $p 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; "
       "kill -KILL $p 2>/dev/null; } >/dev/null 2>&1 & w=$!; exec 3<&-; ";
  s += "wait $p; s=$?; kill $w 2>/dev/null; exit $s";
  return "exec /bin/sh -c " + shell_quote(s);
}

namespace {

using Clock = std::chrono::steady_clock;

std::string strip_user(const std::string& host) {
  auto at = host.rfind('@');
  return at == std::string::npos ? host : host.substr(at + 1);
}

// The folder of this machine's tessera binaries: next to libtessera (build tree: build/src and
// build/bin; install: lib/ and bin/), as LocalCluster finds tessera-worker.
std::string local_bin_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&shell_quote), &info) || !info.dli_fname) return {};
  const auto lib = std::filesystem::path(info.dli_fname).parent_path();
  for (auto dir : {lib / ".." / "bin", lib}) {
    std::error_code ec;
    if (std::filesystem::exists(dir / "tessera-worker", ec)) return std::filesystem::weakly_canonical(dir, ec).string();
  }
  return {};
}

// Writes all of `data` to a pipe without dying of SIGPIPE when the reader is gone (the
// library must not change the program's signal handlers): SIGPIPE is blocked on this thread
// for the write and a pending one is consumed.
bool write_quietly(int fd, const std::string& data) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  std::size_t done = 0;
  bool ok = true;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (!ok) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

// One ssh client child: its stdin (a pipe we hold), its stdout and stderr (one pipe a thread
// reads into the last lines), and its exit status (the same thread reaps it).
class SshProcess {
 public:
  SshProcess(std::string host, std::string role, std::string name, std::size_t keep_lines)
      : host_(std::move(host)), role_(std::move(role)), name_(std::move(name)), keep_(keep_lines) {}
  ~SshProcess() {
    kill_now();
    if (reader_.joinable()) reader_.join();
    close_stdin();
  }

  void start(const std::vector<std::string>& argv, const std::string& first_line) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw Error(std::string("SSHCluster: pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      throw Error(std::string("SSHCluster: pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group: a Ctrl-C at the terminal reaches this program, which closes the
    // cluster in order, not every ssh at once. Default signal dispositions and no blocked
    // signals, whatever this program set.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      ::close(in[1]);
      ::close(out[0]);
      throw Error("SSHCluster: cannot start " + argv[0] + ": " + std::strerror(rc));
    }
    {
      std::lock_guard lk(mu_);
      pid_ = pid;
      running_ = true;
      stdin_fd_ = in[1];
    }
    reader_ = std::thread([this, fd = out[0]] { read_until_end(fd); });
    if (!first_line.empty()) write_quietly(in[1], first_line + "\n");
  }

  /** Closing stdin is the stop request: the remote wrapper sends SIGTERM. */
  void close_stdin() {
    std::lock_guard lk(mu_);
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
  }
  void kill_now() {
    std::lock_guard lk(mu_);
    if (running_ && pid_ > 0) ::kill(pid_, SIGKILL);
  }
  /** Waits up to `seconds` for the ssh client to end; true when it did. */
  bool wait_for_end(double seconds) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::duration<double>(seconds), [&] { return !running_; });
  }
  /** Waits for a line containing `marker`; returns the rest of it after the marker, "" when the
   * process ended or the time passed first. */
  std::string wait_for_line(const std::string& marker, Clock::time_point deadline) {
    std::unique_lock lk(mu_);
    std::string found;
    cv_.wait_until(lk, deadline, [&] {
      for (const auto& l : all_marked_)
        if (auto at = l.find(marker); at != std::string::npos) {
          found = l.substr(at + marker.size());
          return true;
        }
      return !running_;
    });
    return found;
  }
  void watch_for(const std::string& marker) {
    std::lock_guard lk(mu_);
    marker_ = marker;
  }
  bool running() const {
    std::lock_guard lk(mu_);
    return running_;
  }
  int pid() const {
    std::lock_guard lk(mu_);
    return running_ ? pid_ : 0;
  }
  std::vector<std::string> lines() const {
    std::lock_guard lk(mu_);
    return {lines_.begin(), lines_.end()};
  }
  std::string ending() const {
    std::lock_guard lk(mu_);
    if (running_) return "is running";
    return describe_status(status_);
  }
  /** "ssh to HOST (worker NAME) exited with code 1; its last lines:\n  ..." */
  std::string report(const std::string& what) const {
    std::string text = role_ + " " + name_ + " on " + host_ + " " + what;
    auto last = lines();
    if (last.empty()) return text + " (it printed nothing)";
    text += "; its last lines:";
    for (const auto& l : last) text += "\n  " + l;
    return text;
  }
  const std::string& host() const { return host_; }
  const std::string& role() const { return role_; }
  const std::string& name() const { return name_; }
  std::size_t expected_workers = 1;  // workers this process starts (tessera-cuda-worker: one per GPU)
  std::atomic<bool> stop_requested{false};  // by close() or scale(): its end is not a failure

 private:
  void read_until_end(int fd) {
    std::string partial;
    char buf[4096];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      partial.append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = partial.find('\n')) != std::string::npos) {
        std::string line = partial.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        partial.erase(0, nl + 1);
        add_line(std::move(line));
      }
    }
    if (!partial.empty()) add_line(std::move(partial));
    ::close(fd);
    int status = 0;
    pid_t pid;
    {
      std::lock_guard lk(mu_);
      pid = pid_;
    }
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    {
      std::lock_guard lk(mu_);
      status_ = status;
      running_ = false;
    }
    cv_.notify_all();
    // A process that ends without being asked to (a crash, a host that went away) is said
    // here, with its last lines; the scheduler deals with a lost worker on its own.
    if (!stop_requested && role_ != "probe") spdlog::warn("SSHCluster: the {}", report(describe_status(status)));
  }
  void add_line(std::string line) {
    spdlog::debug("ssh {} ({}): {}", host_, name_, line);
    {
      std::lock_guard lk(mu_);
      if (!marker_.empty() && line.find(marker_) != std::string::npos) all_marked_.push_back(line);
      lines_.push_back(std::move(line));
      while (lines_.size() > keep_) lines_.pop_front();
    }
    cv_.notify_all();
  }

  const std::string host_, role_, name_;
  const std::size_t keep_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  std::vector<std::string> all_marked_;
  std::string marker_;
  pid_t pid_ = -1;
  bool running_ = false;
  int status_ = 0;
  int stdin_fd_ = -1;
  std::thread reader_;
};

}  // namespace

struct SSHCluster::Impl {
  SSHClusterOptions opt;
  std::string bin_dir;
  std::string address;
  std::vector<std::string> worker_hosts;
  std::map<std::string, std::string> kinds;      // worker host -> cpu / cuda
  std::map<std::string, std::size_t> gpus;       // worker host -> GPUs nvidia-smi -L listed (probed hosts)
  std::map<std::string, int> started_per_host;   // names are <host>-<n>
  std::vector<std::unique_ptr<SshProcess>> procs;  // [0] the scheduler
  std::unique_ptr<Client> client;                  // asks the scheduler who registered
  mutable std::mutex mu;
  bool closed = false;

  std::vector<std::string> ssh_argv(const std::string& host, const std::string& remote) const {
    const auto& c = opt.connect;
    std::vector<std::string> a{c.ssh_program, "-T", "-o", "BatchMode=yes"};
    a.insert(a.end(), {"-o", "ConnectTimeout=" + std::to_string(std::max(1, static_cast<int>(c.connect_timeout)))});
    // A dead connection (a host that went away) ends the session within about 15 s, so the
    // process counts as gone here too.
    a.insert(a.end(), {"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"});
    if (!c.user.empty()) a.insert(a.end(), {"-l", c.user});
    if (c.port > 0) a.insert(a.end(), {"-p", std::to_string(c.port)});
    if (!c.identity_file.empty()) a.insert(a.end(), {"-i", c.identity_file});
    a.insert(a.end(), c.ssh_options.begin(), c.ssh_options.end());
    a.push_back(host);
    a.push_back(remote);
    return a;
  }

  std::string program(const std::string& name) const {
    if (!opt.remote_prefix.empty()) return (std::filesystem::path(opt.remote_prefix) / name).string();
    if (!bin_dir.empty()) return (std::filesystem::path(bin_dir) / name).string();
    return name;
  }

  // "cuda" when `nvidia-smi -L` on the host lists a GPU (it exits 0 and prints "GPU 0: ...").
  std::string detect_kind(const std::string& host) {
    SshProcess probe(host, "probe", "nvidia-smi", 20);
    probe.start(ssh_argv(host, "nvidia-smi -L </dev/null"), "");
    probe.close_stdin();
    if (!probe.wait_for_end(opt.connect.connect_timeout + 10)) {
      probe.kill_now();
      probe.wait_for_end(5);
      return "cpu";
    }
    if (probe.ending() != describe_status(0)) return "cpu";
    std::size_t n = 0;
    for (const auto& l : probe.lines())
      if (l.rfind("GPU ", 0) == 0) n++;
    gpus[host] = n;
    return n > 0 ? "cuda" : "cpu";
  }

  // How many workers tessera-cuda-worker starts on a host: one per CUDA_VISIBLE_DEVICES entry
  // given in remote_env, else one per GPU nvidia-smi listed; 1 (at least) when neither is known.
  std::size_t cuda_workers(const std::string& host) const {
    if (auto it = opt.remote_env.find("CUDA_VISIBLE_DEVICES"); it != opt.remote_env.end()) {
      std::size_t n = 0;
      bool entry = false;
      for (char c : it->second + ",") {
        if (c == ',') {
          n += entry ? 1 : 0;
          entry = false;
        } else if (c != ' ') {
          entry = true;
        }
      }
      return std::max<std::size_t>(1, n);
    }
    if (auto it = gpus.find(host); it != gpus.end() && it->second > 0) return it->second;
    return 1;
  }

  std::string kind_of(const std::string& host) {
    if (auto it = kinds.find(host); it != kinds.end()) return it->second;
    std::string kind = opt.worker.worker_kind;
    if (auto it = opt.worker.worker_kind_per_host.find(host); it != opt.worker.worker_kind_per_host.end())
      kind = it->second;
    if (kind != "cpu" && kind != "cuda" && kind != "auto")
      throw Error("SSHCluster: worker_kind must be cpu, cuda or auto, got '" + kind + "'");
    if (kind == "auto") kind = detect_kind(host);
    kinds[host] = kind;
    return kind;
  }

  std::map<std::string, std::string> remote_env() const { return opt.remote_env; }

  void start_scheduler() {
    const auto& s = opt.scheduler;
    const std::string host = opt.hosts.front();
    std::vector<std::string> argv{program("tessera-scheduler"), "--host", s.host.empty() ? strip_user(host) : s.host,
                                  "--port", std::to_string(s.port), "--protocol", s.protocol, "--worker-ttl",
                                  std::to_string(s.worker_ttl), "--log-level", opt.log_level};
    if (s.dashboard_address.empty()) argv.push_back("--no-dashboard");
    else argv.insert(argv.end(), {"--dashboard-address", s.dashboard_address});
    argv.insert(argv.end(), s.extra_args.begin(), s.extra_args.end());
    auto p = std::make_unique<SshProcess>(host, "scheduler", "scheduler", opt.log_lines);
    // Printed at every log level (cli_scheduler.cpp), on stderr.
    const std::string marker = "tessera-scheduler listening at ";
    p->watch_for(marker);
    p->start(ssh_argv(host, ssh_remote_command(argv, remote_env())), opt.token);
    SshProcess& sp = *p;
    {
      std::lock_guard lk(mu);
      procs.push_back(std::move(p));
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.timeout));
    std::string found = sp.wait_for_line(marker, deadline);
    if (found.empty()) {
      if (!sp.running()) throw Error("SSHCluster: the " + sp.report(sp.ending() + " before it listened"));
      throw Error("SSHCluster: the " + sp.report("did not listen within " + std::to_string(opt.timeout) + " s"));
    }
    while (!found.empty() && (found.back() == ' ' || found.back() == '\r')) found.pop_back();
    address = found;
    ClientOptions co;
    co.token = opt.token;
    co.timeout = opt.timeout;
    client = std::make_unique<Client>(address, co);
  }

  void start_worker(const std::string& host) {
    const auto& w = opt.worker;
    const std::string kind = kind_of(host);
    const std::string name = strip_user(host) + "-" + std::to_string(started_per_host[host]++);
    std::vector<std::string> argv{program(kind == "cuda" ? "tessera-cuda-worker" : "tessera-worker"), address, "--name",
                                  name};
    if (w.nthreads > 0) argv.insert(argv.end(), {"--nthreads", std::to_string(w.nthreads)});
    argv.insert(argv.end(), {"--memory-limit", w.memory_limit, "--death-timeout", std::to_string(w.death_timeout),
                             "--heartbeat-interval", std::to_string(w.heartbeat_interval), "--protocol", w.protocol,
                             "--log-level", opt.log_level});
    if (kind == "cpu") argv.push_back(w.nanny ? "--nanny" : "--no-nanny");  // a cuda worker is always a nanny
    if (!w.resources.empty()) argv.insert(argv.end(), {"--resources", w.resources});
    if (!w.local_directory.empty()) argv.insert(argv.end(), {"--local-directory", w.local_directory});
    for (const auto& p : w.preload) argv.insert(argv.end(), {"--preload", p});
    argv.insert(argv.end(), w.extra_args.begin(), w.extra_args.end());
    auto p = std::make_unique<SshProcess>(host, "worker", name, opt.log_lines);
    p->expected_workers = kind == "cuda" ? cuda_workers(host) : 1;
    p->start(ssh_argv(host, ssh_remote_command(argv, remote_env())), opt.token);
    std::lock_guard lk(mu);
    procs.push_back(std::move(p));
  }

  // A started worker is up when the scheduler lists a worker of its name, or, for
  // tessera-cuda-worker, as many as it starts (named <name>-gpu<i>).
  static bool registered(const std::vector<WorkerInfo>& ws, const SshProcess& p) {
    std::size_t n = 0;
    for (const auto& w : ws)
      if (w.name == p.name() || w.name.rfind(p.name() + "-", 0) == 0) n++;
    return n >= p.expected_workers;
  }

  void wait_for_workers(std::size_t from) {
    auto deadline = Clock::now() + std::chrono::duration<double>(opt.timeout);
    SshProcess& scheduler = *procs.front();
    while (true) {
      if (!scheduler.running()) throw Error("SSHCluster: the " + scheduler.report(scheduler.ending()));
      std::vector<WorkerInfo> ws;
      try {
        ws = client->scheduler_info().workers;
      } catch (const std::exception& e) {
        // The scheduler went away: its own lines say why better than the lost connection.
        if (scheduler.wait_for_end(5)) throw Error("SSHCluster: the " + scheduler.report(scheduler.ending()));
        throw Error(std::string("SSHCluster: cannot ask the scheduler for its workers: ") + e.what());
      }
      std::size_t missing = 0;
      std::string first_missing;
      for (std::size_t i = from; i < procs.size(); ++i) {
        SshProcess& p = *procs[i];
        if (p.stop_requested || registered(ws, p)) continue;
        if (!p.running()) throw Error("SSHCluster: the " + p.report(p.ending() + " before it registered"));
        if (!missing++) first_missing = p.name();
      }
      if (missing == 0) return;
      if (Clock::now() > deadline) {
        SshProcess* late = nullptr;
        for (std::size_t i = from; i < procs.size(); ++i)
          if (procs[i]->name() == first_missing) late = procs[i].get();
        throw Error("SSHCluster: " + std::to_string(missing) + " workers did not register within " +
                    std::to_string(opt.timeout) + " s; the " + late->report("is still running"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::vector<SshProcess*> live_workers() const {
    std::lock_guard lk(mu);
    std::vector<SshProcess*> out;
    for (std::size_t i = 1; i < procs.size(); ++i)
      if (!procs[i]->stop_requested && procs[i]->running()) out.push_back(procs[i].get());
    return out;
  }

  void start_workers(std::size_t n) {
    // Round-robin over the worker hosts, starting after the host with the fewest started.
    for (std::size_t k = 0; k < n; ++k) {
      std::map<std::string, std::size_t> live;
      for (auto* p : live_workers()) live[p->host()]++;
      const std::string* best = &worker_hosts.front();
      for (const auto& h : worker_hosts)
        if (live[h] < live[*best]) best = &h;
      start_worker(*best);
    }
  }

  // Stops the processes: stdin closed (SIGTERM remotely), up to `grace` s, then the ssh client
  // is killed (the remote wrapper then sees its stdin close anyway).
  static void stop(const std::vector<SshProcess*>& ps, double grace) {
    for (auto* p : ps) {
      p->stop_requested = true;
      p->close_stdin();
    }
    auto deadline = Clock::now() + std::chrono::duration<double>(grace);
    for (auto* p : ps) {
      double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (!p->wait_for_end(std::max(0.0, left))) {
        spdlog::warn("SSHCluster: {} {} on {} did not stop within {} s; killing its ssh", p->role(), p->name(),
                     p->host(), grace);
        p->kill_now();
        p->wait_for_end(5);
      }
    }
  }

  void close() {
    if (closed) return;
    closed = true;
    client.reset();
    std::vector<SshProcess*> workers, all;
    for (std::size_t i = 1; i < procs.size(); ++i) workers.push_back(procs[i].get());
    // Workers first (each leaves the scheduler cleanly), then the scheduler.
    stop(workers, 15);
    if (!procs.empty()) stop({procs.front().get()}, 10);
    // The processes stay listed (ended), with their last lines, until the cluster is destroyed.
  }
};

SSHCluster::SSHCluster(SSHClusterOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opt = std::move(options);
  if (m.opt.hosts.size() < 2)
    throw Error("SSHCluster: give at least two hosts: the first runs the scheduler, the others workers");
  if (m.opt.worker.n_workers < 0) throw Error("SSHCluster: n_workers must be >= 0");
  if (m.opt.token.empty()) m.opt.token = random_hex(32);
  if (m.opt.log_lines == 0) m.opt.log_lines = 1;
  m.bin_dir = local_bin_dir();
  m.worker_hosts.assign(m.opt.hosts.begin() + 1, m.opt.hosts.end());
  try {
    m.start_scheduler();
    for (const auto& h : m.worker_hosts)
      for (int i = 0; i < m.opt.worker.n_workers; ++i) m.start_worker(h);
    m.wait_for_workers(1);
  } catch (...) {
    m.close();
    throw;
  }
}

SSHCluster::~SSHCluster() {
  try {
    impl_->close();
  } catch (const std::exception& e) {
    spdlog::error("SSHCluster: closing: {}", e.what());
  }
}

std::string SSHCluster::scheduler_address() const { return impl_->address; }
std::string SSHCluster::token() const { return impl_->opt.token; }
const SSHClusterOptions& SSHCluster::options() const { return impl_->opt; }

void SSHCluster::scale(std::size_t n) {
  Impl& m = *impl_;
  if (m.closed) throw Error("SSHCluster: closed");
  auto live = m.live_workers();
  if (n > live.size()) {
    const std::size_t from = m.procs.size();
    m.start_workers(n - live.size());
    m.wait_for_workers(from);
  } else if (n < live.size()) {
    std::vector<SshProcess*> extra(live.begin() + static_cast<std::ptrdiff_t>(n), live.end());
    Impl::stop(extra, 15);
  }
}

std::vector<std::string> SSHCluster::workers() const {
  std::vector<std::string> out;
  for (auto* p : impl_->live_workers()) out.push_back(p->name());
  return out;
}

std::size_t SSHCluster::registered_workers() const {
  if (!impl_->client) return 0;
  return impl_->client->scheduler_info().workers.size();
}

std::vector<SSHProcessInfo> SSHCluster::processes() const {
  std::lock_guard lk(impl_->mu);
  std::vector<SSHProcessInfo> out;
  for (const auto& p : impl_->procs)
    out.push_back({p->host(), p->role(), p->name(), p->pid(), p->running()});
  return out;
}

std::vector<std::string> SSHCluster::logs(std::size_t i) const {
  std::lock_guard lk(impl_->mu);
  if (i >= impl_->procs.size()) throw Error("SSHCluster: no process " + std::to_string(i));
  return impl_->procs[i]->lines();
}

std::map<std::string, std::string> SSHCluster::worker_kinds() const { return impl_->kinds; }

void SSHCluster::close() { impl_->close(); }

}  // namespace tessera::distributed
