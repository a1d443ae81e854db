// Seed 001 in C++: hyper-parameter trials in parallel on GPU workers. "Running experiments of
// different parameters of a machine learning model on a GPU are embarrassingly parallelizable":
// each trial is one task, annotated with the resource GPU=1 so that each GPU worker runs one
// trial at a time, and results are printed as they arrive (as_completed), then the best trial.
//
//   gpu_trials                            # LocalCUDACluster (one worker per GPU); without a GPU,
//                                         # a LocalCluster of CPU workers with a simulated GPU=1 each
//   gpu_trials --scheduler tcp://h:8786   # a running cluster (workers --preload
//                                         # libtessera_example_tasks.so, GPU workers or --resources GPU=1)
//   gpu_trials --cpu                      # CPU workers even where there are GPUs
//
// A trial (example.trial in example_tasks.cpp) fits ridge regression by gradient descent on
// synthetic data drawn from fixed seeds (the same data for every trial), with device arrays on a
// GPU worker and host arrays on a CPU worker, and reports training and validation error.
// Exit 1 when a trial fails or the best fit is poor.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <tessera/core/gpus.hpp>
#include <tessera/tessera.hpp>

#include "example_tasks.hpp"

using namespace tessera;
using namespace tessera::distributed;
using tessera_examples::TrialParams;
using tessera_examples::TrialResult;

int main(int argc, char** argv) {
  tessera::init(argc, argv);  // first: a worker copy of this program stops here
  std::string scheduler;
  bool cpu = false;
  int trials = 12, steps = 100, workers = 2;
  std::int64_t samples = 4096, features = 32;
  CLI::App app{"Tessera hyper-parameter trials on GPU workers (seed 001)"};
  app.add_option("--scheduler", scheduler, "scheduler address; default: LocalCUDACluster, or CPU workers without a GPU");
  app.add_flag("--cpu", cpu, "CPU workers (each with a simulated GPU=1) even where there are GPUs");
  app.add_option("--trials", trials, "number of trials (learning rate x ridge penalty grid)")->check(CLI::Range(1, 1000));
  app.add_option("--steps", steps, "gradient-descent steps per trial")->check(CLI::Range(1, 100000));
  app.add_option("--samples", samples, "training samples (and as many validation samples)")->check(CLI::Range(8, 100000000));
  app.add_option("--features", features, "features")->check(CLI::Range(1, 100000));
  app.add_option("--workers", workers, "CPU workers when there is no GPU")->check(CLI::Range(1, 256));
  std::size_t wait_workers = 1;
  app.add_option("--wait-workers", wait_workers, "with --scheduler: wait (up to 60 s) until this many workers are connected");
  CLI11_PARSE(app, argc, argv);

  try {
    std::unique_ptr<Client> client;
    bool gpu = false;
    if (!scheduler.empty()) {
      client = std::make_unique<Client>(scheduler);
      if (!client->wait_for_workers(wait_workers, std::chrono::seconds(60)))
        throw Error("fewer than " + std::to_string(wait_workers) + " workers connected to " + scheduler + " in 60 s");
      for (const auto& w : client->scheduler_info().workers) gpu = gpu || !w.gpus.empty();
      if (cpu) gpu = false;
    } else {
      const GpuDiscovery found = cpu ? GpuDiscovery{} : discover_gpus();  // NVML: no CUDA context here
      if (!found.gpus.empty()) {
        gpu = true;
        std::printf("starting a LocalCUDACluster: %zu GPU(s)\n", found.gpus.size());
        client = std::make_unique<Client>(std::make_shared<LocalCUDACluster>());
      } else {
        std::printf("%s: the trials run on %d CPU workers, each with a simulated resource GPU=1\n",
                    cpu ? "--cpu" : "no GPU found", workers);
        client = std::make_unique<Client>(std::make_shared<LocalCluster>(
            LocalClusterOptions{.n_workers = workers, .threads_per_worker = 1, .resources = "GPU=1",
                                .worker_env = {{{"CUDA_VISIBLE_DEVICES", ""}}}}));  // CPU only, even with --cpu on a GPU machine
      }
    }
    const SchedulerInfo info = client->scheduler_info();
    std::map<int, std::string> worker_of_pid;
    for (const auto& w : info.workers) {
      worker_of_pid[w.pid] = w.name;
      std::printf("  worker %s  pid %d  GPU=%g  %s\n", w.name.c_str(), w.pid,
                  w.resources.contains("GPU") ? w.resources.at("GPU") : 0.0,
                  w.gpus.empty() ? "no GPU" : describe_gpu(w.gpus.front()).c_str());
    }

    // The grid: learning rate x ridge penalty, the first `trials` of it.
    const std::vector<double> rates = {0.01, 0.05, 0.2, 0.8}, penalties = {0.0, 0.1, 1.0};
    std::vector<TrialParams> params;
    for (int i = 0; i < trials; ++i) {
      TrialParams p;
      p.trial = i;
      p.learning_rate = rates[static_cast<std::size_t>(i) % rates.size()];
      p.l2 = penalties[(static_cast<std::size_t>(i) / rates.size()) % penalties.size()];
      p.steps = steps;
      p.samples = samples;
      p.features = features;
      p.on_device = gpu;
      params.push_back(p);
    }

    // with dask.annotate(resources={"GPU": 1}): futures = client.map(trial, params)
    std::printf("%d trials (%d steps, %lld x %lld data) on %s\n", trials, steps, static_cast<long long>(samples),
                static_cast<long long>(features), gpu ? "GPU workers (device arrays)" : "CPU workers (host arrays)");
    bool gpu_resource = false;
    for (const auto& w : info.workers) gpu_resource = gpu_resource || w.resources.contains("GPU");
    if (!gpu_resource)
      std::printf("note: no worker has a GPU resource (--resources GPU=1), so the trials go unannotated\n");
    std::vector<Future> futures;
    {
      Annotations a{.target = gpu ? Target::Device : Target::Host};
      if (gpu_resource) a.resources = {{"GPU", 1}};
      Annotate one_gpu(a);
      auto typed = client->map(tessera_examples::tasks::trial, params);
      futures.assign(typed.begin(), typed.end());
    }
    std::printf("%-6s %-6s %-6s %-12s %-12s %-8s %s\n", "trial", "lr", "l2", "train mse", "valid mse", "seconds",
                "worker (device)");
    std::vector<TrialResult> results;
    int failed = 0;
    AsCompleted done(futures);
    while (auto f = done.next()) {
      try {
        const auto r = f->result_as<TrialResult>();
        const auto name = worker_of_pid.contains(r.where.pid) ? worker_of_pid[r.where.pid] : "pid " + std::to_string(r.where.pid);
        std::printf("%-6d %-6g %-6g %-12.6g %-12.6g %-8.3f %s (%s)\n", r.trial, r.learning_rate, r.l2, r.train_mse,
                    r.validation_mse, r.seconds, name.c_str(), r.where.device.c_str());
        std::fflush(stdout);
        if (gpu && r.where.device == "cpu") {
          std::fprintf(stderr, "gpu_trials: trial %d ran without a GPU\n", r.trial);
          ++failed;
        }
        results.push_back(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_trials: a trial failed: %s\n", e.what());
        ++failed;
      }
    }
    client->close();
    if (results.empty()) return 1;
    const TrialResult* best = &results.front();
    for (const auto& r : results)
      if (r.validation_mse < best->validation_mse) best = &r;
    std::printf("best: trial %d (learning rate %g, l2 %g): validation mse %.6g (noise variance 0.01)\n", best->trial,
                best->learning_rate, best->l2, best->validation_mse);
    std::printf("ran on %s\n", gpu ? "GPU workers" : "CPU workers (no GPU: host arrays)");
    // The data has noise of variance 0.01; a converged fit predicts about that well. A loose bound:
    // the point is that the best trial learned the model, whichever grid point it was.
    if (failed > 0 || best->validation_mse > 0.1) {
      std::fprintf(stderr, "gpu_trials: %d failed trial(s); best validation mse %g\n", failed, best->validation_mse);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_trials: %s\n", e.what());
    return 1;
  }
}
