// The worker processes tessera-worker and tessera-cuda-worker start under a nanny
// (docs/nanny.md): each child's command line (this program's, less the flags set per child),
// one worker under a nanny (--nanny, the default), --nworkers N of them, a worker per GPU
// (cli_cuda_worker.cpp), and the nanny's run with its link to the scheduler.
#include <filesystem>
#include <memory>

#include "cli_internal.hpp"
#include "data_store_limits.hpp"
#include "tessera/init.hpp"

namespace tessera::distributed::cli {

// This command line for a child: this executable (in worker mode when this process runs as an
// application's worker, or as tessera-cuda-worker), then argv[1..] without the flags in `drop`
// (and their values, in both the "--flag value" and "--flag=value" forms).
std::vector<std::string> child_command(int argc, char** argv, bool worker_mode_flag,
                                       std::initializer_list<std::string_view> drop) {
  std::vector<std::string> args{std::filesystem::read_symlink("/proc/self/exe").string()};
  if (worker_mode_flag) args.push_back(kWorkerModeFlag);
  for (int a = 1; a < argc; ++a) {
    std::string_view s = argv[a];
    bool skip = false;
    for (std::string_view d : drop) {
      if (s == d) {
        ++a;  // and its value
        skip = true;
      } else if (s.size() > d.size() && s.substr(0, d.size()) == d && s[d.size()] == '=') {
        skip = true;
      }
      if (skip) break;
    }
    if (!skip) args.emplace_back(s);
  }
  return args;
}

// The worker processes under a nanny (nanny.hpp): SIGINT/SIGTERM are passed on to them, and
// the nanny waits for all of them. The watcher comes first, so that a signal while the children
// start stops those already started.
// With `link`, the nanny also keeps a connection of its own to the scheduler, through which a
// worker too hung to restart when asked is killed and started again (docs/nanny.md).
// The link also tells the scheduler of a worker the nanny gave up, so that the tasks that needed
// it err instead of waiting for ever.
int run_worker_processes(NannyOptions options, std::vector<NannyChild> children,
                         const NannyLinkOptions* link) {
  std::unique_ptr<NannyLink> to_scheduler;  // set before run(), reset before the nanny ends
  options.on_given_up = [&to_scheduler](const GivenUpWorker& w) {
    if (to_scheduler) to_scheduler->report_given_up(w);
  };
  Nanny nanny(options, std::move(children));
  SignalWatcher signals([&](int sig) { nanny.stop(sig); });
  if (link && options.restart)
    to_scheduler = std::make_unique<NannyLink>(*link, [&nanny](int pid) { return nanny.kill_for_restart(pid); });
  const int code = nanny.run();
  to_scheduler.reset();  // its kill callback uses the nanny
  return code;
}

NannyOptions nanny_options(const std::string& program, double memory_terminate_fraction) {
  NannyOptions o;
  o.program = program;
  o.memory_terminate_fraction = memory_terminate_fraction;
  return o;
}

// --nworkers N > 1: run N single-worker processes of this same command and wait for them.
int run_nworkers(int argc, char** argv, int nworkers, const std::string& name, int nthreads,
                 const std::string& memory_limit, bool nanny, double memory_terminate_fraction,
                 const NannyLinkOptions& link) {
  // Each child gets its share of the machine, as with dask worker --nworkers.
  const int threads = nthreads > 0 ? nthreads : threads_per_worker(nworkers);
  const std::size_t limit = parse_memory_limit(memory_limit, system_memory(), nworkers);
  std::vector<NannyChild> children;
  for (int i = 0; i < nworkers; ++i) {
    NannyChild c;
    c.name = (name.empty() ? "worker" : name) + "-" + std::to_string(i);
    c.argv = child_command(argc, argv, std::string(argv[0]) == kWorkerModeFlag,
                           {"--nworkers", "--name", "--nthreads", "--memory-limit"});
    c.argv.insert(c.argv.end(), {"--nworkers", "1", "--name", c.name, "--nthreads", std::to_string(threads),
                                 "--memory-limit", std::to_string(limit), "--no-nanny"});
    c.memory_limit = limit;
    children.push_back(std::move(c));
  }
  // --no-nanny: only start them, pass signals on and wait, as before there was a nanny.
  NannyOptions options = nanny_options("tessera-worker", memory_terminate_fraction);
  options.restart = nanny;
  if (!nanny) options.memory_terminate_fraction = 0;
  return run_worker_processes(options, std::move(children), &link);
}

// The default for one worker (--nanny): the same command, with --no-nanny, in a child process.
int run_under_nanny(int argc, char** argv, const std::string& name, const std::string& memory_limit,
                    double memory_terminate_fraction, const NannyLinkOptions& link) {
  NannyChild c;
  c.name = name.empty() ? "worker" : name;
  c.argv = child_command(argc, argv, std::string(argv[0]) == kWorkerModeFlag, {});
  c.argv.push_back("--no-nanny");
  c.memory_limit = parse_memory_limit(memory_limit, system_memory(), 1);
  std::vector<NannyChild> children;
  children.push_back(std::move(c));
  return run_worker_processes(nanny_options("tessera-worker", memory_terminate_fraction), std::move(children),
                              &link);
}

}  // namespace tessera::distributed::cli
