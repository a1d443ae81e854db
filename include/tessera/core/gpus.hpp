#pragma once
/**
 * @file
 * The GPUs of this machine, found without the CUDA runtime, and CUDA_VISIBLE_DEVICES.
 *
 * A process that starts GPU workers (tessera-cuda-worker, LocalCUDACluster) must not create a
 * CUDA context itself: a context made before CUDA_VISIBLE_DEVICES is set would pin the wrong
 * devices, and a forked child of a CUDA process cannot use CUDA. So discovery goes through
 * NVML, loaded with dlopen (libnvidia-ml.so.1 comes with the driver; nothing links it at build
 * time), as dask-cuda does with pynvml, and falls back to counting /proc/driver/nvidia/gpus/.
 * Every worker is then given the device list rotated so that its own device comes first
 * (dask-cuda's cuda_visible_devices(i)): "0,1,2,3" -> worker 1 gets "1,2,3,0", and is pinned to
 * the CPUs NVML reports near its GPU (dask-cuda's CPUAffinity): host work (staging copies, the
 * worker's own threads) then runs on the GPU's socket and uses its NUMA node's memory.
 */
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/device.hpp"

namespace tessera {

/** @brief What discover_gpus() found, and where. */
struct GpuDiscovery {
  /**
   * @brief One entry per GPU, in NVML order (PCI bus order). `ordinal` is the NVML index, which
   * is the CUDA index when CUDA_DEVICE_ORDER=PCI_BUS_ID (and, with identical GPUs, under CUDA's
   * default order too). Fields NVML did not give stay empty / 0.
   */
  std::vector<GpuInfo> gpus;
  /**
   * @brief The CPUs close to each GPU (nvmlDeviceGetCpuAffinity), ascending, indexed as `gpus`;
   * an empty entry where NVML did not say (procfs discovery, a driver without the call).
   */
  std::vector<std::vector<int>> near_cpus;
  std::string source;  ///< "nvml", "procfs" or "none"
  std::string detail;  ///< why NVML or /proc was not used (for messages); empty when NVML answered
};

struct GpuDiscoveryOptions {
  /** @brief The NVML library to dlopen; default $TESSERA_NVML_LIBRARY, else "libnvidia-ml.so.1". */
  std::string nvml_library;
  /** @brief The fallback when NVML is unavailable: one sub-folder per GPU. "" skips it. */
  std::string proc_directory = "/proc/driver/nvidia/gpus";
};

/**
 * @brief The GPUs of this machine, without creating a CUDA context. NVML first
 * (nvmlInit_v2 ... nvmlShutdown); when NVML cannot be loaded or initialised, the folders of
 * /proc/driver/nvidia/gpus (name, UUID and bus id from their `information` file); else none.
 * When NVML initialises and reports no GPU, the answer is none. Never throws.
 */
GpuDiscovery discover_gpus(const GpuDiscoveryOptions& options = {});

/**
 * @brief Parses a CUDA_VISIBLE_DEVICES value: comma-separated device indices ("0,2") or UUIDs
 * ("GPU-5f0c...", "MIG-..."), spaces around entries ignored. Indices are normalised ("01" ->
 * "1"). A blank text gives an empty list (no device). Throws tessera::Error quoting the text on
 * an empty entry ("0,,1", "0,"), an entry that is neither a non-negative index nor a GPU-/MIG-
 * UUID, or a repeated device.
 */
std::vector<std::string> parse_cuda_visible_devices(std::string_view text);

/**
 * @brief The CUDA_VISIBLE_DEVICES of worker i of devices.size(): the list rotated to start at
 * devices[i], joined with commas. "0,1,2,3", i = 1 -> "1,2,3,0". Throws Error when i is out of
 * range.
 */
std::string cuda_visible_devices_for(std::size_t i, const std::vector<std::string>& devices);

/**
 * @brief The devices to start one GPU worker for: the parsed `cuda_visible_devices` when given
 * (the caller passes $CUDA_VISIBLE_DEVICES, or an explicit list), else the indices "0" ... "n-1"
 * of the GPUs discover_gpus(discovery) finds. An explicit list is taken as it is, even on a
 * machine without GPUs. Throws Error when the result is empty ("no GPUs found: ...", saying
 * what was looked at) or the list does not parse.
 */
std::vector<std::string> gpu_worker_devices(const std::optional<std::string>& cuda_visible_devices,
                                            const GpuDiscoveryOptions& discovery = {});
/** @brief The same with the result of a discovery already made (not looked at when a list is given). */
std::vector<std::string> gpu_worker_devices(const std::optional<std::string>& cuda_visible_devices,
                                            const GpuDiscovery& found);

/**
 * @brief The name of the GPU worker of `device`: "<prefix>-gpu<index>" ("node1-gpu0"), or
 * "<prefix>-<uuid>" for a UUID entry ("node1-GPU-5f0c...").
 */
std::string gpu_worker_name(const std::string& prefix, const std::string& device);

/**
 * @brief The entry of found.gpus a CUDA_VISIBLE_DEVICES entry names: an index is matched against
 * the NVML index, a GPU-/MIG- UUID against the UUID. -1 when none matches.
 */
int find_gpu(const GpuDiscovery& found, const std::string& device);

/**
 * @brief The CPU list ("0-15,32-47") the GPU worker of `device` is pinned to: the CPUs NVML
 * reports near that GPU which this process may itself run on. "" (no pinning) when the GPU is
 * not found, NVML gave no CPUs, or none of them is allowed here.
 */
std::string gpu_worker_cpus(const GpuDiscovery& found, const std::string& device);

/**
 * @brief The environment variable that pins a worker process's threads to a CPU list
 * ("0-15,32-47"); "none" or empty leaves it unpinned. tessera-cuda-worker and LocalCUDACluster set
 * it per worker to gpu_worker_cpus() unless it is already set (then every worker inherits it);
 * any worker applies it at start.
 */
inline constexpr const char* kCpuAffinityEnv = "TESSERA_CPU_AFFINITY";

// ---- CPU lists -------------------------------------------------------------------------------------

/**
 * @brief Parses a Linux CPU list (cpuset(7) "List format": "0-3,8,10-11"), spaces around entries
 * ignored, into ascending distinct CPU numbers. A blank text gives none. Throws tessera::Error
 * quoting the text on anything else ("3-1", "a", "0,,1", a CPU past 65535).
 */
std::vector<int> parse_cpu_list(std::string_view text);

/** @brief The CPU list of `cpus` ("0-3,8"), ranges collapsed; "" for none. */
std::string format_cpu_list(std::vector<int> cpus);

/** @brief The CPUs the calling thread may run on (sched_getaffinity), ascending. */
std::vector<int> allowed_cpus();

/**
 * @brief Pins every thread of this process, and so every thread it starts later, to `cpus`
 * (sched_setaffinity on each entry of /proc/self/task). Throws Error naming the CPUs and the
 * system's answer when the calling thread cannot be pinned (e.g. CPUs outside the cgroup).
 */
void pin_process_to_cpus(const std::vector<int>& cpus);

/** @brief "NVIDIA H100 80GB HBM3, GPU-5f0c..., 79.6 GiB" for logs (the fields that are known). */
std::string describe_gpu(const GpuInfo& gpu);

}  // namespace tessera
