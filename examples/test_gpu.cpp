// Seed 000 in C++: a client that needs no GPU itself submits test_gpu to GPU workers,
//
//   def test_gpu():
//       x = cp.arange(6).reshape(2, 3).astype("f")
//       return cp.asnumpy(x.sum())
//   f = client.submit(test_gpu); f.result()       # array(15., dtype=float32)
//   cluster.scheduler_info["workers"]             # each worker and its GPU
//
//   test_gpu                           # LocalCUDACluster: one worker per GPU of this machine
//   test_gpu --scheduler tcp://h:8786  # a running cluster with GPU workers (tessera-cuda-worker
//                                      # --preload libtessera_example_tasks.so)
//   test_gpu --cpu                     # the same on a CPU worker with host arrays (no GPU needed)
//
// test_gpu (examples/example_tasks.cpp) builds arange(6) in device memory of the worker's GPU,
// reshapes, casts to float32 and sums there; the float32 result comes back as host data. This
// process never initialises CUDA: GPUs are found with NVML, and the task runs where the
// scheduler sends device tasks (workers with a GPU).
//
// Without a GPU (and without --cpu) it prints a line starting "SKIP:" and exits 0, so it can run
// anywhere (ctest marks it skipped). Exit 1 when the result is not float32 15.
#include <cmath>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <tessera/core/gpus.hpp>
#include <tessera/tessera.hpp>

#include "example_tasks.hpp"

using namespace tessera;
using namespace tessera::distributed;

namespace {

std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

/** NumPy's repr of a 0-d array: array(15., dtype=float32). */
std::string numpy_repr(const Block& b) {
  const double v = b.item();
  char num[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16) std::snprintf(num, sizeof num, "%.0f.", v);
  else std::snprintf(num, sizeof num, "%.8g", v);
  return std::string("array(") + num + ", dtype=" + std::string(dtype_name(b.dtype())) + ")";
}

void print_workers(const SchedulerInfo& info) {
  std::printf("scheduler_info()[\"workers\"]: %zu at %s\n", info.workers.size(), info.address.c_str());
  for (const auto& w : info.workers) {
    std::string res;
    for (const auto& [k, v] : w.resources) res += (res.empty() ? "" : " ") + k + "=" + std::to_string(static_cast<long long>(v));
    std::printf("  %s  name %s  threads %d  pid %d  resources {%s}\n", w.address.c_str(), w.name.c_str(), w.nthreads,
                w.pid, res.c_str());
    if (w.gpus.empty()) std::printf("      no GPU\n");
    for (const auto& g : w.gpus)
      std::printf("      GPU %d: %s, %s, %s, compute capability %d.%d, bus %s, device memory limit %s\n", g.ordinal,
                  g.name.c_str(), gib(g.total_memory).c_str(), g.uuid.c_str(), g.cc_major, g.cc_minor,
                  g.pci_bus_id.c_str(), w.device_memory_limit ? gib(w.device_memory_limit).c_str() : "none");
  }
}

}  // namespace

int main(int argc, char** argv) {
  tessera::init(argc, argv);  // first: a worker copy of this program stops here
  std::string scheduler;
  bool cpu = false;
  CLI::App app{"Tessera test_gpu (seed 000): submit a GPU function from a client without a GPU"};
  app.add_option("--scheduler", scheduler, "scheduler address of a cluster with GPU workers; default: LocalCUDACluster");
  app.add_flag("--cpu", cpu, "run test_gpu on a CPU worker with host arrays (a LocalCluster), no GPU needed");
  std::size_t wait_workers = 1;
  app.add_option("--wait-workers", wait_workers, "with --scheduler: wait (up to 60 s) until this many workers are connected");
  CLI11_PARSE(app, argc, argv);

  try {
    std::unique_ptr<Client> client;
    if (!scheduler.empty()) {
      client = std::make_unique<Client>(scheduler);
      if (!client->wait_for_workers(wait_workers, std::chrono::seconds(60)))
        throw Error("fewer than " + std::to_string(wait_workers) + " workers connected to " + scheduler + " in 60 s");
    } else if (cpu) {
      std::printf("starting a LocalCluster with 1 CPU worker (--cpu: host arrays)\n");
      client = std::make_unique<Client>(std::make_shared<LocalCluster>(
          LocalClusterOptions{.n_workers = 1, .worker_env = {{{"CUDA_VISIBLE_DEVICES", ""}}}}));  // a CPU worker
    } else {
      const GpuDiscovery found = discover_gpus();  // NVML: this process creates no CUDA context
      if (found.gpus.empty()) {
        std::printf("SKIP: no GPU found on this machine (%s); test_gpu needs GPU workers: run it where "
                    "nvidia-smi lists a GPU, give --scheduler ADDRESS of a cluster with GPU workers, or --cpu\n",
                    found.detail.empty() ? found.source.c_str() : found.detail.c_str());
        return 0;
      }
      std::printf("starting a LocalCUDACluster: %zu GPU(s) found by %s\n", found.gpus.size(), found.source.c_str());
      client = std::make_unique<Client>(std::make_shared<LocalCUDACluster>());
    }

    SchedulerInfo info = client->scheduler_info();
    print_workers(info);
    bool any_gpu = false;
    for (const auto& w : info.workers) any_gpu = any_gpu || !w.gpus.empty();
    if (!cpu && !any_gpu) {
      std::printf("SKIP: no worker of the cluster at %s has a GPU (use --cpu to run on host memory)\n",
                  info.address.c_str());
      return 0;
    }

    // f = client.submit(test_gpu); f.result(). Target::Device sends it only to a GPU worker.
    std::printf("f = client.submit(test_gpu)%s\nf.result()\n", cpu ? "  # --cpu: host arrays" : "");
    TypedFuture<Block> f;
    {
      Annotate where({.target = cpu ? Target::Host : Target::Device});
      f = client->submit(tessera_examples::tasks::test_gpu, !cpu);
    }
    const Block result = f.result();
    std::printf("%s\n", numpy_repr(result).c_str());
    client->close();
    if (result.dtype() != DType::Float32 || result.ndim() != 0 || result.item() != 15.0) {
      std::fprintf(stderr, "test_gpu: expected array(15., dtype=float32), got %s\n", numpy_repr(result).c_str());
      return 1;
    }
    std::printf("ok: 15.0 (float32) computed %s\n", cpu ? "on a CPU worker (host arrays)" : "on a GPU worker");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_gpu: %s\n", e.what());
    return 1;
  }
}
