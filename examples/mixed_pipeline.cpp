// Seeds 001/002 in C++: one scheduler, CPU workers plus a GPU worker, and a pipeline where only
// one step needs the GPU:
//
//   foo = client.submit(some_non_gpu_function)
//   with dask.annotate(resources={'GPU': 1}):
//       bar = client.submit(a_gpu_function, foo)
//   baz = client.submit(another_non_gpu_function, bar)
//
//   mixed_pipeline                           # a LocalCluster of 2 CPU workers, plus GPU workers:
//                                            # this program as tessera-cuda-worker (one per GPU),
//                                            # or, without a GPU, one worker with a simulated GPU=1
//   mixed_pipeline --scheduler tcp://h:8786  # a running cluster: CPU workers and GPU workers (or
//                                            # --resources GPU=1), all with --preload
//                                            # libtessera_example_tasks.so
//
// foo and baz run anywhere; bar is annotated GPU=1 (and Target::Device when a worker has a real
// GPU, where it computes 2 x + 1 with device arrays). Every step returns the pid of the process
// that ran it, which scheduler_info() maps to a worker. Exit 1 when a value is wrong or bar ran
// on a worker without the GPU resource.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <tessera/core/gpus.hpp>
#include <tessera/tessera.hpp>

#include "example_tasks.hpp"

extern char** environ;

using namespace tessera;
using namespace tessera::distributed;
using tessera_examples::Stage;

namespace {

/** This program started as a worker process with `args`, the cluster's token in its environment. */
pid_t spawn_self(const std::vector<std::string>& args, const std::string& token) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("TESSERA_TOKEN=", 0) != 0) env_text.emplace_back(*e);
  env_text.push_back("TESSERA_TOKEN=" + token);  // not on the command line, where ps shows it
  std::vector<char*> argv, envp;
  std::string self = "/proc/self/exe";
  argv.push_back(self.data());
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (int rc = ::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()); rc != 0)
    throw Error("could not start a worker process: " + std::string(std::strerror(rc)));
  return pid;
}

/** SIGTERM, then waits (SIGKILL after 10 s). */
void stop_process(pid_t pid) {
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  tessera::init(argc, argv);  // first: a worker copy of this program (CPU, GPU or cuda-worker) stops here
  std::string scheduler;
  int cpu_workers = 2, pipelines = 3, n = 100000;
  CLI::App app{"Tessera mixed CPU/GPU pipeline: foo -> bar (GPU=1) -> baz (seeds 001/002)"};
  app.add_option("--scheduler", scheduler, "scheduler address; default: a LocalCluster plus GPU workers");
  app.add_option("--cpu-workers", cpu_workers, "CPU workers of the LocalCluster")->check(CLI::Range(1, 64));
  app.add_option("--pipelines", pipelines, "independent foo -> bar -> baz chains")->check(CLI::Range(1, 1000));
  app.add_option("--n", n, "elements foo makes")->check(CLI::Range(1, 100000000));
  std::size_t wait_workers = 1;
  app.add_option("--wait-workers", wait_workers, "with --scheduler: wait (up to 60 s) until this many workers are connected");
  CLI11_PARSE(app, argc, argv);

  pid_t extra_worker = 0;
  int rc = 0;
  try {
    std::unique_ptr<Client> client;
    if (!scheduler.empty()) {
      client = std::make_unique<Client>(scheduler);
      if (!client->wait_for_workers(wait_workers, std::chrono::seconds(60)))
        throw Error("fewer than " + std::to_string(wait_workers) + " workers connected to " + scheduler + " in 60 s");
    } else {
      // CPU workers: CUDA_VISIBLE_DEVICES="" hides any GPU from them, so only the GPU workers
      // started below offer one.
      auto cluster = std::make_shared<LocalCluster>(
          LocalClusterOptions{.n_workers = cpu_workers, .worker_env = {{{"CUDA_VISIBLE_DEVICES", ""}}}});
      const GpuDiscovery found = discover_gpus();  // NVML: this process creates no CUDA context
      std::vector<std::string> args;
      if (!found.gpus.empty()) {
        std::printf("CPU workers: %d; GPU workers: this program as tessera-cuda-worker (%zu GPU(s))\n", cpu_workers,
                    found.gpus.size());
        args = {kCudaWorkerModeFlag, cluster->scheduler_address(), "--nthreads", "1", "--name", "gpu-worker"};
      } else {
        std::printf("CPU workers: %d; no GPU found: one more worker with a simulated resource GPU=1 stands in "
                    "for the GPU worker (bar then computes on host memory)\n", cpu_workers);
        args = {kWorkerModeFlag, cluster->scheduler_address(), "--nthreads", "1", "--resources", "GPU=1",
                "--name", "gpu-worker-simulated"};
      }
      if (const char* level = std::getenv("TESSERA_LOG_LEVEL"); !level) args.insert(args.end(), {"--log-level", "warning"});
      extra_worker = spawn_self(args, cluster->token());
      client = std::make_unique<Client>(cluster);
    }

    // Wait for a worker that offers the GPU resource (the one just started registers shortly).
    SchedulerInfo info;
    bool real_gpu = false, gpu_worker = false;
    for (int i = 0; i < 600 && !gpu_worker; ++i) {
      info = client->scheduler_info();
      for (const auto& w : info.workers) {
        gpu_worker = gpu_worker || w.resources.contains("GPU");
        real_gpu = real_gpu || !w.gpus.empty();
      }
      if (!gpu_worker) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!gpu_worker) throw Error("no worker with the resource GPU appeared in 60 s");
    std::map<int, const WorkerInfo*> by_pid;
    std::printf("scheduler %s, workers:\n", info.address.c_str());
    for (const auto& w : info.workers) {
      by_pid[w.pid] = &w;
      std::printf("  %-22s pid %-7d GPU=%-3g %s\n", w.name.c_str(), w.pid,
                  w.resources.contains("GPU") ? w.resources.at("GPU") : 0.0,
                  w.gpus.empty() ? "" : describe_gpu(w.gpus.front()).c_str());
    }

    struct Chain {
      int n;
      TypedFuture<Stage> foo, bar, baz;
    };
    std::vector<Chain> chains;
    for (int k = 0; k < pipelines; ++k) {
      Chain c{n + k, {}, {}, {}};
      c.foo = client->submit(tessera_examples::tasks::foo, c.n);
      {
        Annotate gpu({.resources = {{"GPU", 1}}, .target = real_gpu ? Target::Device : Target::Host});
        c.bar = client->submit(tessera_examples::tasks::bar, c.foo);
      }
      c.baz = client->submit(tessera_examples::tasks::baz, c.bar);
      chains.push_back(std::move(c));
    }

    auto worker_name = [&](const Stage& s) {
      auto it = by_pid.find(s.where.pid);
      return it == by_pid.end() ? "pid " + std::to_string(s.where.pid) : it->second->name;
    };
    for (std::size_t k = 0; k < chains.size(); ++k) {
      const auto& c = chains[k];
      const Stage foo = c.foo.result(), bar = c.bar.result(), baz = c.baz.result();
      double expected = 0;
      for (int i = 0; i < c.n; ++i) expected += tessera_examples::bar_value(tessera_examples::foo_value(i));
      std::printf("pipeline %zu (n %d):\n", k, c.n);
      for (const Stage* s : {&foo, &bar, &baz})
        std::printf("  %-4s ran on %-22s (pid %d, %s)\n", s->step.c_str(), worker_name(*s).c_str(), s->where.pid,
                    s->where.device.c_str());
      std::printf("  baz value %.6f, expected %.6f\n", baz.value, expected);
      auto it = by_pid.find(bar.where.pid);
      if (it == by_pid.end() || !it->second->resources.contains("GPU")) {
        std::fprintf(stderr, "mixed_pipeline: bar ran on %s, which has no GPU resource\n", worker_name(bar).c_str());
        rc = 1;
      }
      if (real_gpu && bar.where.device == "cpu") {
        std::fprintf(stderr, "mixed_pipeline: bar did not compute on a GPU\n");
        rc = 1;
      }
      if (std::fabs(baz.value - expected) > 1e-9 * std::max(1.0, std::fabs(expected))) {
        std::fprintf(stderr, "mixed_pipeline: wrong value\n");
        rc = 1;
      }
    }
    std::printf("%s: bar ran on %s\n", rc == 0 ? "ok" : "FAILED",
                real_gpu ? "a GPU worker (device arrays)" : "the worker with the simulated GPU=1 (host arrays)");
    client->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixed_pipeline: %s\n", e.what());
    rc = 1;
  }
  if (extra_worker > 0) stop_process(extra_worker);
  return rc;
}
