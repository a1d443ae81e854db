// tessera-cuda-worker's main (like `dask cuda worker`): one worker per GPU it finds (through
// NVML, never the CUDA runtime), each this program in worker mode with its own
// CUDA_VISIBLE_DEVICES, CPUs, name and share of the memory, under this process as their nanny.
#include <cstdlib>
#include <optional>

#include "../core/logging.hpp"
#include "cli_internal.hpp"
#include "data_store_limits.hpp"
#include "options_check.hpp"
#include "tessera/core/gpus.hpp"
#include "tessera/init.hpp"
#include "token.hpp"
#include "util.hpp"

namespace tessera::distributed {

int cuda_worker_main(int argc, char** argv) {
  cli::start_server_process();
  CLI::App app{"tessera-cuda-worker: one Tessera worker per GPU (like `dask cuda worker`)", "tessera-cuda-worker"};
  cli::WorkerFlags f;
  cli::add_worker_flags(app, f, cli::WorkerProgram::cuda_worker);
  try {
    app.parse(argc, argv);
    cli::setup_logging(f.log_level);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (f.scheduler.empty() && f.scheduler_file.empty())
      throw Error("give the scheduler address (tcp://host:port) or --scheduler-file");
    // Each worker checks them again; a mistake is told here once, before any GPU is looked at.
    const comm::Security checked =
        cli::check_tls_flags(f.security, f.protocol == "tls" || f.scheduler.rfind("tls://", 0) == 0);
    cli::check_memory_limit_share(f.memory_limit, 1);  // bytes and fractions are each worker's; "auto" is below
    if (!f.local_directory.empty()) check_spill_directory(f.local_directory);
    // Discovery goes through NVML, never the CUDA runtime: this process must not hold a CUDA
    // context (the workers are exec'd with their own CUDA_VISIBLE_DEVICES).
    const GpuDiscovery found = discover_gpus();
    std::optional<std::string> visible;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) visible = v;
    const std::vector<std::string> devices = gpu_worker_devices(visible, found);
    const int n = static_cast<int>(devices.size());
    const std::string res_text = gpu_worker_resources(f.resources);  // GPU=1 unless --resources names GPU
    cli::check_memory_limit_share(f.memory_limit, n);
    const std::size_t limit = parse_memory_limit(f.memory_limit, system_memory(), n);
    if (f.name.empty()) {
      f.name = host_name();
      if (f.name.empty()) f.name = "worker";
    }
    std::vector<NannyChild> children;
    for (int i = 0; i < n; ++i) {
      NannyChild c;
      const std::string& dev = devices[static_cast<std::size_t>(i)];
      c.name = gpu_worker_name(f.name, dev);
      // This program in worker mode (tessera-cuda-worker and applications calling tessera::init
      // both run worker_main for --tessera-worker), with every flag of this command (the worker
      // takes them all) except those set per worker here.
      c.argv = cli::child_command(argc, argv, true,
                                  {"--name", "--nthreads", "--memory-limit", "--resources", "--device-memory-limit"});
      c.argv.insert(c.argv.end(), {"--name", c.name, "--nthreads", std::to_string(f.nthreads), "--memory-limit",
                                   std::to_string(limit), "--resources", res_text, "--device-memory-limit",
                                   f.device_memory_limit, "--no-nanny"});
      c.memory_limit = limit;
      c.env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices_for(static_cast<std::size_t>(i), devices);
      // The CPUs near the GPU, unless the user chose for every worker (the variable is inherited).
      if (!std::getenv(kCpuAffinityEnv))
        if (std::string cpus = gpu_worker_cpus(found, dev); !cpus.empty()) c.env[kCpuAffinityEnv] = cpus;
      const int gpu = find_gpu(found, dev);
      logging::info("tessera-cuda-worker: worker {} with CUDA_VISIBLE_DEVICES={}{}{}", c.name,
                   c.env["CUDA_VISIBLE_DEVICES"],
                   gpu >= 0 ? " (" + describe_gpu(found.gpus[static_cast<std::size_t>(gpu)]) + ")" : std::string(),
                   c.env.count(kCpuAffinityEnv) ? ", CPUs " + c.env[kCpuAffinityEnv] : std::string());
      children.push_back(std::move(c));
    }
    // Its link to the scheduler: a GPU worker too hung to restart is killed (docs/nanny.md).
    const NannyLinkOptions link{f.scheduler, f.scheduler_file, given_token(f.token), checked};
    if (auto weak = weak_token_warning(given_token(f.token)); !weak.empty())
      logging::warn("tessera-cuda-worker: {}", weak);
    return cli::run_worker_processes(cli::nanny_options("tessera-cuda-worker", f.memory_terminate_fraction),
                                     std::move(children), &link);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    logging::error("tessera-cuda-worker: {}", e.what());
    return 1;
  }
}

}  // namespace tessera::distributed
