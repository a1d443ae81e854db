// GPU discovery through NVML (dlopen, never linked) or /proc, and CUDA_VISIBLE_DEVICES lists
// (see tessera/core/gpus.hpp). Nothing here touches the CUDA runtime or driver API.
#include "tessera/core/gpus.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "tessera/core/error.hpp"

namespace tessera {
namespace {

// The few NVML declarations used here (nvml.h is not needed to build). nvmlReturn_t is an enum
// of int size; handles are opaque pointers.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it; read from a larger buffer in case a
// driver writes more.
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr nvmlReturn_t kNvmlSuccess = 0;

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*cc)(nvmlDevice_t, int*, int*) = nullptr;

  std::string describe(const char* call, nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return std::string(call) + " failed: " + (s ? s : "error " + std::to_string(rc));
  }
};

template <typename F>
void bind(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(::dlsym(lib, symbol));
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// NVML: nullopt when it cannot be used (why in *why); otherwise its answer, possibly empty.
std::optional<std::vector<GpuInfo>> nvml_gpus(const std::string& library, std::string* why) {
  // Kept loaded once opened (as pynvml does): later calls reuse it, and nothing it registered
  // is unloaded under it.
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    *why = "NVML is not available (" + std::string(e ? e : library) + ")";
    return std::nullopt;
  }
  Nvml n;
  bind(lib, "nvmlInit_v2", n.init);
  bind(lib, "nvmlShutdown", n.shutdown);
  bind(lib, "nvmlErrorString", n.error_string);
  bind(lib, "nvmlDeviceGetCount_v2", n.count);
  bind(lib, "nvmlDeviceGetHandleByIndex_v2", n.handle);
  bind(lib, "nvmlDeviceGetName", n.name);
  bind(lib, "nvmlDeviceGetUUID", n.uuid);
  bind(lib, "nvmlDeviceGetMemoryInfo", n.memory);
  bind(lib, "nvmlDeviceGetPciInfo_v3", n.pci);
  bind(lib, "nvmlDeviceGetCudaComputeCapability", n.cc);
  if (!n.init || !n.shutdown || !n.count || !n.handle) {
    *why = "NVML (" + library + ") lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2 or "
           "nvmlDeviceGetHandleByIndex_v2";
    return std::nullopt;
  }
  if (nvmlReturn_t rc = n.init(); rc != kNvmlSuccess) {
    *why = "NVML is not usable: " + n.describe("nvmlInit_v2", rc);
    return std::nullopt;
  }
  std::vector<GpuInfo> out;
  unsigned int count = 0;
  if (nvmlReturn_t rc = n.count(&count); rc != kNvmlSuccess) {
    *why = "NVML is not usable: " + n.describe("nvmlDeviceGetCount_v2", rc);
    n.shutdown();
    return std::nullopt;
  }
  for (unsigned int i = 0; i < count; ++i) {
    GpuInfo g;
    g.ordinal = static_cast<int>(i);
    nvmlDevice_t dev = nullptr;
    if (n.handle(i, &dev) == kNvmlSuccess) {
      char buf[256] = {};
      if (n.name && n.name(dev, buf, sizeof buf - 1) == kNvmlSuccess) g.name = buf;
      std::fill(std::begin(buf), std::end(buf), '\0');
      if (n.uuid && n.uuid(dev, buf, sizeof buf - 1) == kNvmlSuccess) g.uuid = buf;
      nvmlMemory_t mem{};
      if (n.memory && n.memory(dev, &mem) == kNvmlSuccess) g.total_memory = static_cast<std::size_t>(mem.total);
      alignas(nvmlPciInfo_t) unsigned char pci_buf[512] = {};
      auto* pci = reinterpret_cast<nvmlPciInfo_t*>(pci_buf);
      if (n.pci && n.pci(dev, pci) == kNvmlSuccess) g.pci_bus_id = std::string(pci->busId, strnlen(pci->busId, sizeof pci->busId));
      int major = 0, minor = 0;
      if (n.cc && n.cc(dev, &major, &minor) == kNvmlSuccess) {
        g.cc_major = major;
        g.cc_minor = minor;
      }
    }
    out.push_back(std::move(g));
  }
  n.shutdown();
  return out;
}

// /proc/driver/nvidia/gpus/<bus id>/information, one folder per GPU, in bus order (NVML's).
std::vector<GpuInfo> proc_gpus(const std::string& dir, std::string* why) {
  namespace fs = std::filesystem;
  std::vector<fs::path> entries;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) {
    *why = (dir.empty() ? std::string("no /proc fallback") : dir + " does not exist");
    return {};
  }
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::vector<GpuInfo> out;
  for (const auto& p : entries) {
    GpuInfo g;
    g.ordinal = static_cast<int>(out.size());
    g.pci_bus_id = p.filename().string();
    std::ifstream in(p / "information");
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = trim(std::string_view(line).substr(0, colon));
      std::string value = trim(std::string_view(line).substr(colon + 1));
      if (key == "Model") g.name = value;
      else if (key == "GPU UUID") g.uuid = value;
      else if (key == "Bus Location") g.pci_bus_id = value;
    }
    out.push_back(std::move(g));
  }
  if (out.empty()) *why = dir + " lists no GPU";
  return out;
}

bool is_uuid_entry(const std::string& s) {
  auto starts = [&](const char* p) {
    std::size_t n = std::char_traits<char>::length(p);
    if (s.size() <= n) return false;
    for (std::size_t i = 0; i < n; ++i)
      if (std::toupper(static_cast<unsigned char>(s[i])) != p[i]) return false;
    return true;
  };
  return starts("GPU-") || starts("MIG-");
}

}  // namespace

GpuDiscovery discover_gpus(const GpuDiscoveryOptions& options) {
  GpuDiscovery d;
  std::string library = options.nvml_library;
  if (library.empty())
    if (const char* e = std::getenv("TESSERA_NVML_LIBRARY"); e && *e) library = e;
  if (library.empty()) library = "libnvidia-ml.so.1";
  std::string nvml_why;
  if (auto gpus = nvml_gpus(library, &nvml_why)) {
    d.gpus = std::move(*gpus);
    d.source = d.gpus.empty() ? "none" : "nvml";
    if (d.gpus.empty()) d.detail = "NVML reports none";
    return d;
  }
  std::string proc_why;
  d.gpus = proc_gpus(options.proc_directory, &proc_why);
  d.source = d.gpus.empty() ? "none" : "procfs";
  d.detail = d.gpus.empty() ? nvml_why + "; " + proc_why : nvml_why;
  return d;
}

std::vector<std::string> parse_cuda_visible_devices(std::string_view text) {
  auto fail = [&](const std::string& why) {
    return Error("invalid CUDA_VISIBLE_DEVICES \"" + std::string(text) + "\": " + why +
                 " (expected device indices or GPU-/MIG- UUIDs separated by commas, e.g. \"0,1\")");
  };
  std::vector<std::string> out;
  if (trim(text).empty()) return out;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string entry = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (entry.empty()) throw fail("empty entry");
    std::string norm;
    if (std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      unsigned long index = 0;
      auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
      if (ec != std::errc() || ptr != entry.data() + entry.size() || index > 1000000)
        throw fail("device index '" + entry + "' is out of range");
      norm = std::to_string(index);
    } else if (is_uuid_entry(entry) &&
               std::none_of(entry.begin(), entry.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
      norm = entry;
    } else {
      throw fail("'" + entry + "' is neither a device index nor a GPU-/MIG- UUID");
    }
    std::string key = norm;
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!seen.insert(key).second) throw fail("device '" + norm + "' appears twice");
    out.push_back(std::move(norm));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string cuda_visible_devices_for(std::size_t i, const std::vector<std::string>& devices) {
  if (i >= devices.size())
    throw Error("cuda_visible_devices_for: worker " + std::to_string(i) + " of " + std::to_string(devices.size()) +
                " devices");
  std::string out;
  for (std::size_t k = 0; k < devices.size(); ++k) {
    if (k) out += ',';
    out += devices[(i + k) % devices.size()];
  }
  return out;
}

std::vector<std::string> gpu_worker_devices(const std::optional<std::string>& cuda_visible_devices,
                                            const GpuDiscoveryOptions& discovery) {
  if (cuda_visible_devices) return gpu_worker_devices(cuda_visible_devices, GpuDiscovery{});
  return gpu_worker_devices(std::nullopt, discover_gpus(discovery));
}

std::vector<std::string> gpu_worker_devices(const std::optional<std::string>& cuda_visible_devices,
                                            const GpuDiscovery& d) {
  if (cuda_visible_devices) {
    auto devices = parse_cuda_visible_devices(*cuda_visible_devices);
    if (devices.empty()) throw Error("no GPUs: CUDA_VISIBLE_DEVICES is set but lists no device");
    return devices;
  }
  if (d.gpus.empty())
    throw Error("no GPUs found: CUDA_VISIBLE_DEVICES is unset and " + (d.detail.empty() ? "none was found" : d.detail) +
                " (set CUDA_VISIBLE_DEVICES to choose the devices)");
  std::vector<std::string> devices;
  for (const auto& g : d.gpus) devices.push_back(std::to_string(g.ordinal));
  return devices;
}

std::string gpu_worker_name(const std::string& prefix, const std::string& device) {
  return prefix + (is_uuid_entry(device) ? "-" : "-gpu") + device;
}

std::string describe_gpu(const GpuInfo& gpu) {
  std::string out = gpu.name.empty() ? "unknown GPU" : gpu.name;
  if (!gpu.uuid.empty()) out += ", " + gpu.uuid;
  if (!gpu.pci_bus_id.empty()) out += ", " + gpu.pci_bus_id;
  if (gpu.total_memory) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(gpu.total_memory) / (1024.0 * 1024 * 1024));
    out += ", ";
    out += buf;
  }
  if (gpu.cc_major) out += ", sm_" + std::to_string(gpu.cc_major) + std::to_string(gpu.cc_minor);
  return out;
}

}  // namespace tessera
