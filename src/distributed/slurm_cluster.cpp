// SLURMCluster: job scripts, sbatch/squeue/scancel, and adapt() over the scheduler's adaptive
// target (docs/deployment.md, "SLURM"). SLURM's commands are run as child processes: their
// output is the interface SLURM documents for scripts (--parsable, squeue -o).
#include "tessera/distributed/slurm_cluster.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "../core/logging.hpp"
#include "data_store_limits.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "util.hpp"

extern char** environ;

namespace tessera::distributed {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct CommandResult {
  int status = 0;  // waitpid's
  std::string output;  // stdout and stderr together
  bool ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs argv (PATH searched) with this environment, capturing its output. No shell: arguments
// travel as they are.
CommandResult run_command(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  CommandResult r;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) r.output.append(buf, static_cast<std::size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  ::close(fds[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Single-quoted for bash: the script's values may hold spaces or quotes.
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The folder of the library (or of the program it is linked into): tessera-worker is beside it.
fs::path library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&slurm_memory), &info) && info.dli_fname)
    return fs::path(info.dli_fname).parent_path();
  return {};
}

std::string bundled_program(const std::string& name) {
  const auto dir = library_dir();
  if (!dir.empty())
    for (auto candidate : {dir / ".." / "bin" / name, dir / name}) {
      std::error_code ec;
      if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate).string();
    }
  return name;
}

// This host's first non-loopback IPv4 address: where compute nodes reach the scheduler.
std::string default_host() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found;
  for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN];
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) found = text;
  }
  ::freeifaddrs(list);
  return found.empty() ? "127.0.0.1" : found;
}

}  // namespace

std::string slurm_memory(const std::string& size) {
  std::size_t bytes = parse_memory_limit(size, 0);
  if (bytes == 0) throw Error("SLURMCluster: memory \"" + size + "\" is not a size for --mem");
  // MiB, rounded up: sbatch's units are binary.
  return std::to_string((bytes + (std::size_t{1} << 20) - 1) >> 20) + "M";
}

struct SLURMCluster::Impl {
  SLURMClusterOptions opt;
  std::unique_ptr<Scheduler> scheduler;  // when this cluster started it
  std::string address;
  std::string token;
  fs::path log_dir, token_file;
  std::string script;

  mutable std::mutex mu;  // guards jobs and the client
  std::vector<SLURMJob> jobs;  // submitted, not known to have ended; oldest first
  std::unique_ptr<Client> client;
  bool closed = false;

  // adapt()
  std::thread adapter;
  std::mutex adapt_mu;
  std::condition_variable adapt_cv;
  bool adapt_stop = false;

  Client& scheduler_client() {
    if (!client) {
      ClientOptions co;
      co.token = token;
      client = std::make_unique<Client>(address, co);
    }
    return *client;
  }

  std::string make_script() const {
    std::ostringstream s;
    s << "#!/usr/bin/env bash\n";
    s << "#SBATCH --job-name=" << opt.job_name << "\n";
    s << "#SBATCH --output=" << (log_dir / (opt.job_name + "-%j.out")).string() << "\n";
    s << "#SBATCH --ntasks=1\n";
    s << "#SBATCH --cpus-per-task=" << std::max(1, opt.cores) << "\n";
    if (!opt.memory.empty()) s << "#SBATCH --mem=" << slurm_memory(opt.memory) << "\n";
    if (opt.gpus > 0) s << "#SBATCH --gres=gpu:" << opt.gpus << "\n";
    if (!opt.walltime.empty()) s << "#SBATCH --time=" << opt.walltime << "\n";
    if (!opt.partition.empty()) s << "#SBATCH --partition=" << opt.partition << "\n";
    if (!opt.account.empty()) s << "#SBATCH --account=" << opt.account << "\n";
    for (const auto& d : opt.job_extra_directives) s << "#SBATCH " << d << "\n";
    s << "\nset -u\n";
    for (const auto& line : opt.job_script_prologue) s << line << "\n";
    // The token from a file only the user reads: never in this script or a command line.
    if (!token.empty()) s << "export TESSERA_TOKEN=\"$(cat " << shell_quote(token_file.string()) << ")\"\n";
    // One thread per core for BLAS inside tasks would oversubscribe the job's CPUs.
    s << "export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1\n";
    std::vector<std::string> program;  // "./myapp --tessera-worker": a program and its mode flag
    std::istringstream words(opt.worker_command);
    for (std::string w; words >> w;) program.push_back(w);
    if (program.empty()) program.push_back(bundled_program(opt.gpus > 0 ? "tessera-cuda-worker" : "tessera-worker"));
    std::ostringstream death;
    death << opt.death_timeout;
    std::vector<std::string> args{address, "--name", opt.job_name + "-${SLURM_JOB_ID}"};
    int threads = std::max(1, opt.cores);
    if (opt.gpus > 0) threads = std::max(1, threads / opt.gpus);
    args.insert(args.end(), {"--nthreads", std::to_string(threads)});
    std::string limit = opt.worker_memory_limit.empty() ? (opt.memory.empty() ? "auto" : opt.memory)
                                                         : opt.worker_memory_limit;
    args.insert(args.end(), {"--memory-limit", limit});
    args.insert(args.end(), {"--death-timeout", death.str()});
    std::string local = opt.local_directory.empty() ? "${TMPDIR:-/tmp}" : opt.local_directory;
    // The worker in the background and waited for: scancel's SIGTERM reaches bash at once, and
    // bash passes it on, so the worker closes cleanly (it tells the scheduler it leaves).
    s << "local_dir=\"" << local << "/" << opt.job_name << "-$SLURM_JOB_ID\"\nmkdir -p \"$local_dir\"\n";
    for (std::size_t i = 0; i < program.size(); ++i) s << (i ? " " : "") << shell_quote(program[i]);
    for (const auto& a : args)
      s << " " << (a.find("${") != std::string::npos ? "\"" + a + "\"" : shell_quote(a));
    s << " --local-directory \"$local_dir\"";
    for (const auto& a : opt.worker_extra_args) s << " " << shell_quote(a);
    s << " &\nworker=$!\n";
    s << "trap 'kill -TERM $worker 2>/dev/null' TERM INT\n";
    s << "rc=0\nwhile kill -0 $worker 2>/dev/null; do wait $worker && rc=0 || rc=$?; done\n";
    s << "rm -rf \"$local_dir\"\nexit $rc\n";
    return s.str();
  }

  std::string submit() {
    static std::atomic<int> counter{0};
    fs::path file = log_dir / ("job-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".sh");
    {
      std::ofstream out(file);
      out << script;
      if (!out) throw Error("SLURMCluster: cannot write " + file.string());
    }
    std::vector<std::string> argv{opt.sbatch, "--parsable", file.string()};
    CommandResult r = run_command(argv);
    if (!r.ok())
      throw Error("SLURMCluster: " + join(argv) + " " + describe_status(r.status) + ": " + trim(r.output));
    // --parsable: "jobid" or "jobid;cluster"; warnings may come before it.
    std::string last;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
      if (!trim(line).empty()) last = trim(line);
    std::string id = last.substr(0, last.find(';'));
    if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos)
      throw Error("SLURMCluster: no job id in sbatch's output: " + trim(r.output));
    logging::info("SLURMCluster: submitted job {}", id);
    return id;
  }

  void cancel(const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    std::vector<std::string> argv{opt.scancel};
    argv.insert(argv.end(), ids.begin(), ids.end());
    CommandResult r = run_command(argv);
    // A job that ended meanwhile (its retired worker closed) makes scancel fail ("already
    // completing or completed", "Invalid job id"): the state wanted. squeue tells what is left.
    if (!r.ok()) logging::info("SLURMCluster: {} {}: {}", join(argv), describe_status(r.status), trim(r.output));
    else logging::info("SLURMCluster: cancelled jobs {}", join(ids));
  }

  // Refreshes the states of `jobs` from squeue; those it no longer lists have ended. Called
  // with mu held.
  void refresh() {
    if (jobs.empty()) return;
    std::string ids;
    for (const auto& j : jobs) ids += (ids.empty() ? "" : ",") + j.id;
    std::vector<std::string> argv{opt.squeue, "--noheader", "--jobs=" + ids, "--format=%i %T"};
    CommandResult r = run_command(argv);
    std::map<std::string, std::string> states;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string id, state;
      if (f >> id >> state) states[id] = state;
    }
    if (!r.ok() && states.empty()) {
      // squeue fails for a list of only ended jobs ("Invalid job id specified") on some
      // versions: they are gone. Any other failure leaves the list as it was.
      if (r.output.find("Invalid job id") == std::string::npos) {
        logging::warn("SLURMCluster: {} failed: {}", join(argv), trim(r.output));
        return;
      }
    }
    std::vector<SLURMJob> live;
    for (auto& j : jobs) {
      auto it = states.find(j.id);
      if (it == states.end()) continue;  // ended (or never listed: refused at once)
      if (it->second == "COMPLETED" || it->second == "CANCELLED" || it->second == "FAILED" ||
          it->second == "TIMEOUT" || it->second == "NODE_FAIL" || it->second == "OUT_OF_MEMORY" ||
          it->second == "PREEMPTED" || it->second == "BOOT_FAIL" || it->second == "DEADLINE")
        continue;
      j.state = it->second;
      live.push_back(j);
    }
    jobs = std::move(live);
  }

  // The name a job's worker registers under; a GPU job's workers add "-gpu<device>" to it.
  std::string worker_name(const SLURMJob& j) const { return opt.job_name + "-" + j.id; }
  bool of_job(const std::string& worker, const std::string& base) const {
    return worker == base || worker.rfind(base + "-gpu", 0) == 0;
  }

  void scale_jobs(std::size_t n_workers) {
    std::unique_lock lock(mu);
    if (closed) throw Error("SLURMCluster: scale() after close()");
    refresh();
    const std::size_t per = opt.gpus > 0 ? static_cast<std::size_t>(opt.gpus) : 1;
    const std::size_t want = (n_workers + per - 1) / per;
    while (jobs.size() < want) jobs.push_back(SLURMJob{submit(), "SUBMITTED"});
    if (jobs.size() <= want) return;
    // Too many: pending jobs first (nothing to lose), newest first; then running ones.
    std::vector<SLURMJob> drop;
    std::size_t extra = jobs.size() - want;
    for (auto it = jobs.rbegin(); it != jobs.rend() && drop.size() < extra; ++it)
      if (it->state != "RUNNING") drop.push_back(*it);
    for (auto it = jobs.rbegin(); it != jobs.rend() && drop.size() < extra; ++it)
      if (it->state == "RUNNING") drop.push_back(*it);
    retire(drop);
    std::vector<std::string> ids;
    for (const auto& j : drop) ids.push_back(j.id);
    cancel(ids);
    std::erase_if(jobs, [&](const SLURMJob& j) { return std::count(ids.begin(), ids.end(), j.id) > 0; });
  }

  // Retires the workers of running jobs through the scheduler, so their data moves elsewhere
  // before scancel ends them. Workers are found by name (<job_name>-<job id>[-gpuN]).
  void retire(const std::vector<SLURMJob>& drop) {
    std::vector<std::string> bases;
    for (const auto& j : drop)
      if (j.state == "RUNNING") bases.push_back(worker_name(j));
    if (bases.empty()) return;
    try {
      Client& c = scheduler_client();
      std::vector<std::string> addresses;
      for (const auto& w : c.scheduler_info().workers)
        for (const auto& b : bases)
          if (of_job(w.name, b)) addresses.push_back(w.address);
      if (addresses.empty()) return;
      auto retired = c.retire_workers(addresses, std::chrono::duration<double>(opt.retire_timeout));
      logging::info("SLURMCluster: retired {} of {} workers before cancelling their jobs", retired.size(),
                    addresses.size());
    } catch (const std::exception& e) {
      logging::warn("SLURMCluster: retiring workers failed ({}); cancelling their jobs anyway", e.what());
    }
  }

  void stop_adapter() {
    {
      std::lock_guard l(adapt_mu);
      adapt_stop = true;
    }
    adapt_cv.notify_all();
    if (adapter.joinable()) adapter.join();
    adapt_stop = false;
  }

  void adapt_loop(std::size_t minimum, std::size_t maximum, std::chrono::duration<double> interval) {
    std::size_t lower_in_a_row = 0;
    std::unique_lock l(adapt_mu);
    while (!adapt_stop) {
      l.unlock();
      try {
        std::size_t target;
        {
          std::lock_guard lock(mu);
          target = scheduler_client().adaptive_target();
        }
        target = std::clamp(target, minimum, maximum);
        std::size_t per = opt.gpus > 0 ? static_cast<std::size_t>(opt.gpus) : 1;
        std::size_t now;
        {
          std::lock_guard lock(mu);
          refresh();
          now = jobs.size() * per;
        }
        // Up at once; down only when asked three times in a row (Dask's Adaptive wait_count),
        // so that a pause between two computations does not cancel jobs that must be requeued.
        if (target > now) {
          lower_in_a_row = 0;
          logging::info("SLURMCluster: adapt: {} -> {} workers", now, target);
          scale_jobs(target);
        } else if (target < now && ++lower_in_a_row >= 3) {
          lower_in_a_row = 0;
          logging::info("SLURMCluster: adapt: {} -> {} workers", now, target);
          scale_jobs(target);
        } else if (target == now) {
          lower_in_a_row = 0;
        }
      } catch (const std::exception& e) {
        logging::warn("SLURMCluster: adapt: {}", e.what());
      }
      l.lock();
      adapt_cv.wait_for(l, interval, [&] { return adapt_stop; });
    }
  }

  void close() {
    stop_adapter();
    std::unique_lock lock(mu);
    if (closed) return;
    closed = true;
    refresh();
    std::vector<std::string> ids;
    for (const auto& j : jobs) ids.push_back(j.id);
    try {
      cancel(ids);
    } catch (const std::exception& e) {  // scancel missing: nothing more to do here
      logging::warn("SLURMCluster: {}", e.what());
    }
    // Until squeue no longer lists them (a cancelled job is COMPLETING for a while): the caller
    // may tear SLURM down next.
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (!jobs.empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      refresh();
      std::erase_if(jobs, [](const SLURMJob& j) { return j.state == "COMPLETING"; });
    }
    if (client) {
      client->close();
      client.reset();
    }
    if (scheduler) scheduler->stop(true);
    std::error_code ec;
    fs::remove(token_file, ec);
  }
};

SLURMCluster::SLURMCluster(SLURMClusterOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.opt = std::move(options);
  if (s.opt.cores < 1) throw Error("SLURMCluster: cores must be at least 1");
  if (s.opt.gpus < 0) throw Error("SLURMCluster: gpus must not be negative");
  if (!s.opt.memory.empty()) (void)slurm_memory(s.opt.memory);  // checked now, not at the first scale()
  s.log_dir = fs::absolute(s.opt.log_directory.empty() ? fs::path("tessera-slurm-logs") : fs::path(s.opt.log_directory));
  fs::create_directories(s.log_dir);
  if (s.opt.scheduler_address.empty()) {
    s.token = s.opt.token.empty() ? random_hex(32) : s.opt.token;
    SchedulerOptions so;
    std::string host = s.opt.host.empty() ? default_host() : s.opt.host;
    so.address = "tcp://" + host + ":" + std::to_string(s.opt.scheduler_port);
    so.token = s.token;
    so.dashboard_address = s.opt.dashboard_address;
    so.state.worker_ttl = s.opt.worker_ttl;
    s.scheduler = std::make_unique<Scheduler>(so);
    s.address = s.scheduler->address();
  } else {
    s.address = s.opt.scheduler_address;
    s.token = token_or_env(s.opt.token);
  }
  if (!s.token.empty()) {
    s.token_file = s.log_dir / ("token-" + std::to_string(::getpid()) + "-" + random_hex(8));
    int fd = ::open(s.token_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw Error("SLURMCluster: cannot write " + s.token_file.string() + ": " + std::strerror(errno));
    bool ok = ::write(fd, s.token.data(), s.token.size()) == static_cast<ssize_t>(s.token.size());
    ::close(fd);
    if (!ok) throw Error("SLURMCluster: cannot write " + s.token_file.string());
  }
  s.script = s.make_script();
}

SLURMCluster::~SLURMCluster() {
  try {
    impl_->close();
  } catch (const std::exception& e) {
    logging::warn("SLURMCluster: close: {}", e.what());
  }
}

std::string SLURMCluster::scheduler_address() const { return impl_->address; }
std::string SLURMCluster::token() const { return impl_->token; }
std::string SLURMCluster::job_script() const { return impl_->script; }
const SLURMClusterOptions& SLURMCluster::options() const { return impl_->opt; }

std::size_t SLURMCluster::workers_per_job() const {
  return impl_->opt.gpus > 0 ? static_cast<std::size_t>(impl_->opt.gpus) : 1;
}

void SLURMCluster::scale(std::size_t n) {
  impl_->stop_adapter();
  impl_->scale_jobs(n);
}

std::vector<std::string> SLURMCluster::workers() const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& j : impl_->jobs) out.push_back(impl_->worker_name(j));
  return out;
}

std::vector<SLURMJob> SLURMCluster::jobs() {
  std::lock_guard lock(impl_->mu);
  impl_->refresh();
  return impl_->jobs;
}

void SLURMCluster::adapt(std::size_t minimum, std::size_t maximum, std::chrono::duration<double> interval) {
  if (minimum > maximum) throw Error("SLURMCluster::adapt: minimum is above maximum");
  impl_->stop_adapter();
  impl_->adapter = std::thread([this, minimum, maximum, interval] { impl_->adapt_loop(minimum, maximum, interval); });
}

void SLURMCluster::stop_adapt() { impl_->stop_adapter(); }

void SLURMCluster::close() { impl_->close(); }

}  // namespace tessera::distributed
