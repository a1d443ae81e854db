#include "nvml.hpp"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>

#include "../core/logging.hpp"

namespace tessera::distributed {
namespace {

// The few NVML types used here, as nvml.h declares them (the header ships with the CUDA
// toolkit, which a build without CUDA does not have). NVML keeps these stable across versions.
// GPU discovery (src/core/gpus.cpp) opens NVML once at start for what does not change; this is
// the live side, kept open for the figures that do.
using NvmlReturn = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned gpu;
  unsigned memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned kNameLength = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr int kPcieTxBytes = 0, kPcieRxBytes = 1;  // nvmlPcieUtilCounter_t
// nvmlDeviceGetFieldValues's ids for NVLink's data counters (KiB since the driver loaded); the
// scope UINT_MAX sums every link.
constexpr unsigned kFieldNvlinkDataTx = 138, kFieldNvlinkDataRx = 139;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_*
constexpr unsigned kAllLinks = UINT_MAX;
enum NvmlValueType : int { kDouble = 0, kUInt = 1, kULong = 2, kULongLong = 3, kSLongLong = 4, kSInt = 5, kUShort = 6 };
union NvmlValue {
  double d;
  unsigned ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
  unsigned short us;
};
struct NvmlFieldValue {  // nvmlFieldValue_t
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;  // microseconds since 1970
  long long latency_us;
  int value_type;       // NvmlValueType
  NvmlReturn nvml_return;
  NvmlValue value;
};

double as_double(const NvmlFieldValue& f) {
  switch (f.value_type) {
    case kDouble: return f.value.d;
    case kUInt: return f.value.ui;
    case kULong: return static_cast<double>(f.value.ul);
    case kULongLong: return static_cast<double>(f.value.ull);
    case kSLongLong: return static_cast<double>(f.value.sll);
    case kSInt: return f.value.si;
    case kUShort: return f.value.us;
    default: return -1;
  }
}

}  // namespace

struct Nvml::Api {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  // Optional: older drivers lack them, and the figures are then absent.
  NvmlReturn (*pcie_throughput)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*field_values)(NvmlDevice, int, NvmlFieldValue*) = nullptr;

  template <typename F>
  bool load(F& f, const char* symbol) {
    f = reinterpret_cast<F>(::dlsym(lib, symbol));
    return f != nullptr;
  }
};

std::shared_ptr<Nvml> Nvml::open(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    logging::debug("nvml: {} not loaded ({}): no GPU figures", library, ::dlerror());
    return nullptr;
  }
  // The _v2 entry points are the ones nvml.h maps the plain names to since CUDA 4/5.
  bool ok = api->load(api->init, "nvmlInit_v2") && api->load(api->shutdown, "nvmlShutdown") &&
            api->load(api->count, "nvmlDeviceGetCount_v2") && api->load(api->by_index, "nvmlDeviceGetHandleByIndex_v2") &&
            api->load(api->by_uuid, "nvmlDeviceGetHandleByUUID") && api->load(api->name, "nvmlDeviceGetName") &&
            api->load(api->utilization, "nvmlDeviceGetUtilizationRates") &&
            api->load(api->memory, "nvmlDeviceGetMemoryInfo");
  api->load(api->pcie_throughput, "nvmlDeviceGetPcieThroughput");
  api->load(api->field_values, "nvmlDeviceGetFieldValues");
  if (!ok || api->init() != 0) {
    logging::debug("nvml: {} {}: no GPU figures", library, ok ? "did not initialise" : "lacks a function");
    ::dlclose(api->lib);
    return nullptr;
  }
  return std::shared_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  ::dlclose(api_->lib);
}

unsigned Nvml::device_count() const {
  unsigned n = 0;
  return api_->count(&n) == 0 ? n : 0;
}

std::optional<GpuUsage> Nvml::usage(const std::string& uuid, unsigned index) const {
  NvmlDevice dev = nullptr;
  if (uuid.empty() || api_->by_uuid(uuid.c_str(), &dev) != 0)
    if (api_->by_index(index, &dev) != 0) return std::nullopt;
  GpuUsage u;
  char name[kNameLength] = {};
  if (api_->name(dev, name, kNameLength) == 0) u.name = name;
  NvmlUtilization util{};
  // Not supported on some boards (and in some containers): reported as 0 rather than dropped.
  if (api_->utilization(dev, &util) == 0) u.utilization = static_cast<int>(util.gpu);
  NvmlMemory mem{};
  if (api_->memory(dev, &mem) != 0) return std::nullopt;
  u.memory_used = static_cast<std::size_t>(mem.used);
  u.memory_total = static_cast<std::size_t>(mem.total);
  // PCIe in KiB/s ("KB/s" in NVML's words), sampled by NVML over 20 ms per call: this runs on a
  // worker's heartbeat thread, never under a lock the worker's other threads take.
  unsigned kib = 0;
  if (api_->pcie_throughput && api_->pcie_throughput(dev, kPcieTxBytes, &kib) == 0) u.pcie_tx = 1024.0 * kib;
  if (api_->pcie_throughput && api_->pcie_throughput(dev, kPcieRxBytes, &kib) == 0) u.pcie_rx = 1024.0 * kib;
  read_nvlink(dev, u);
  return u;
}

// NVLink's counters only grow: the rate is the difference from the previous reading of this GPU
// over NVML's own timestamps. A GPU without NVLink answers NOT_SUPPORTED per field: absent.
void Nvml::read_nvlink(void* device, GpuUsage& u) const {
  if (!api_->field_values) return;
  NvmlFieldValue f[2] = {};
  f[0].field_id = kFieldNvlinkDataTx;
  f[1].field_id = kFieldNvlinkDataRx;
  f[0].scope_id = f[1].scope_id = kAllLinks;
  if (api_->field_values(static_cast<NvmlDevice>(device), 2, f) != 0 || f[0].nvml_return != 0 || f[1].nvml_return != 0)
    return;
  const NvlinkReading now{f[0].timestamp, as_double(f[0]), as_double(f[1])};
  if (now.tx_kib < 0 || now.rx_kib < 0) return;  // a value type this build does not know
  std::lock_guard lock(nvlink_mu_);
  auto [it, first] = nvlink_last_.try_emplace(device, now);
  if (first) return;
  const NvlinkReading before = it->second;
  if (now.at_us <= before.at_us) return;  // another thread's later reading got here first
  it->second = now;
  const double seconds = static_cast<double>(now.at_us - before.at_us) * 1e-6;
  if (now.tx_kib < before.tx_kib || now.rx_kib < before.rx_kib) return;  // the driver reloaded: no rate this time
  u.nvlink_tx = 1024.0 * (now.tx_kib - before.tx_kib) / seconds;
  u.nvlink_rx = 1024.0 * (now.rx_kib - before.rx_kib) / seconds;
}

std::optional<GpuUsage> gpu_usage(const std::string& uuid, unsigned index) {
  // Opened once per library, on first use: a dlopen and nvmlInit take milliseconds. The library
  // is the one GPU discovery uses (tessera/core/gpus.hpp): $TESSERA_NVML_LIBRARY, else the
  // driver's; read at each call, so a process (a test) that points it elsewhere later is obeyed.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<Nvml>> opened;
  const char* env = std::getenv("TESSERA_NVML_LIBRARY");
  const std::string library = env && *env ? env : "libnvidia-ml.so.1";
  std::shared_ptr<Nvml> nvml;
  {
    std::lock_guard lock(mu);
    auto [it, fresh] = opened.try_emplace(library);
    if (fresh) it->second = Nvml::open(library);
    nvml = it->second;
  }
  if (!nvml) return std::nullopt;
  return nvml->usage(uuid, index);
}

}  // namespace tessera::distributed
