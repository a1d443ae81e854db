#pragma once
/**
 * @file GPU figures from NVIDIA's management library (NVML) for the dashboards: name,
 * utilisation, memory used and total, PCIe and NVLink throughput (NVDashboard's figures). libnvidia-ml.so.1 comes with the driver, not with the
 * CUDA toolkit, so it is opened with dlopen at run time: no build and no machine without the
 * driver needs it, and without it every query answers "nothing" (the dashboards then leave
 * the GPU fields out). Private to libtessera.
 */
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace tessera::distributed {

/** @brief One GPU as NVML sees it now. */
struct GpuUsage {
  std::string name;               ///< "NVIDIA H100 80GB HBM3"
  int utilization = 0;            ///< percent of the last sample period a kernel ran
  std::size_t memory_used = 0;    ///< bytes
  std::size_t memory_total = 0;   ///< bytes
  /// Bytes per second; -1 where NVML cannot say (a driver without the function, NOT_SUPPORTED,
  /// and for NVLink the first reading, whose counters give no rate yet).
  double pcie_tx = -1, pcie_rx = -1;      ///< PCIe, sent / received by the GPU (NVML samples 20 ms)
  double nvlink_tx = -1, nvlink_rx = -1;  ///< data over all NVLinks since the previous reading
};

/**
 * @brief NVML, loaded once per process. Thread-safe: each query is one NVML call sequence,
 * which NVML itself allows from any thread.
 */
class Nvml {
 public:
  /**
   * @brief The process's NVML: null when libnvidia-ml.so.1 cannot be opened, lacks a function
   * used here, or nvmlInit fails (no driver, no GPU). Tried once; the answer is kept.
   * `library` replaces the file name (tests point it at a missing file).
   */
  static std::shared_ptr<Nvml> open(const std::string& library = "libnvidia-ml.so.1");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  /** @brief GPUs the driver sees. */
  unsigned device_count() const;
  /**
   * @brief The GPU with this UUID ("GPU-5e3f..."), or, when empty or unknown, index `index`;
   * nullopt when none. NVLink's rates are between this call and the previous one for the GPU.
   */
  std::optional<GpuUsage> usage(const std::string& uuid, unsigned index = 0) const;

 private:
  struct Api;
  struct NvlinkReading {  // NVLink's cumulative counters (KiB) at NVML's timestamp (us)
    long long at_us = 0;
    double tx_kib = 0, rx_kib = 0;
  };
  explicit Nvml(std::unique_ptr<Api> api);
  void read_nvlink(void* device, GpuUsage& u) const;
  std::unique_ptr<Api> api_;
  mutable std::mutex nvlink_mu_;
  mutable std::map<void*, NvlinkReading> nvlink_last_;  // by device handle
};

/**
 * @brief What the dashboards use: the process's NVML ($TESSERA_NVML_LIBRARY, else
 * libnvidia-ml.so.1) opened on first use, nullopt without it.
 */
std::optional<GpuUsage> gpu_usage(const std::string& uuid, unsigned index = 0);

}  // namespace tessera::distributed
