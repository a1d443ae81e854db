#include "nvml.hpp"

#include <dlfcn.h>

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
  return u;
}

std::optional<GpuUsage> gpu_usage(const std::string& uuid, unsigned index) {
  // Opened once, on first use: a dlopen and nvmlInit take milliseconds. The library is the one
  // GPU discovery uses (tessera/core/gpus.hpp): $TESSERA_NVML_LIBRARY, else the driver's.
  static const std::shared_ptr<Nvml> nvml = [] {
    const char* lib = std::getenv("TESSERA_NVML_LIBRARY");
    return Nvml::open(lib && *lib ? lib : "libnvidia-ml.so.1");
  }();
  if (!nvml) return std::nullopt;
  return nvml->usage(uuid, index);
}

}  // namespace tessera::distributed
