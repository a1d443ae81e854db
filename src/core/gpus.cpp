// GPU discovery through NVML (dlopen, never linked) or /proc, and CUDA_VISIBLE_DEVICES lists
// (see tessera/core/gpus.hpp). Nothing here touches the CUDA runtime or driver API.
#include "tessera/core/gpus.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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
  // (device, number of unsigned longs in the set, the set): bit b of word w is CPU 64 w + b.
  nvmlReturn_t (*cpu_affinity)(nvmlDevice_t, unsigned int, unsigned long*) = nullptr;

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

// NVML: false when it cannot be used (why in *why); otherwise true with its answer in *d,
// possibly no GPU.
bool nvml_gpus(const std::string& library, GpuDiscovery* d, std::string* why) {
  // Kept loaded once opened (as pynvml does): later calls reuse it, and nothing it registered
  // is unloaded under it.
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    *why = "NVML is not available (" + std::string(e ? e : library) + ")";
    return false;
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
  bind(lib, "nvmlDeviceGetCpuAffinity", n.cpu_affinity);
  if (!n.init || !n.shutdown || !n.count || !n.handle) {
    *why = "NVML (" + library + ") lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2 or "
           "nvmlDeviceGetHandleByIndex_v2";
    return false;
  }
  if (nvmlReturn_t rc = n.init(); rc != kNvmlSuccess) {
    *why = "NVML is not usable: " + n.describe("nvmlInit_v2", rc);
    return false;
  }
  unsigned int count = 0;
  if (nvmlReturn_t rc = n.count(&count); rc != kNvmlSuccess) {
    *why = "NVML is not usable: " + n.describe("nvmlDeviceGetCount_v2", rc);
    n.shutdown();
    return false;
  }
  // Room for every CPU this kernel can number (CPU_SETSIZE is 1024; sysconf covers larger).
  const long ncpus = std::max<long>(CPU_SETSIZE, ::sysconf(_SC_NPROCESSORS_CONF));
  std::vector<unsigned long> set(static_cast<std::size_t>((ncpus + 63) / 64));
  static_assert(sizeof(unsigned long) == 8, "NVML's CPU sets are 64-bit words");
  for (unsigned int i = 0; i < count; ++i) {
    GpuInfo g;
    std::vector<int> near;
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
      std::fill(set.begin(), set.end(), 0UL);
      if (n.cpu_affinity && n.cpu_affinity(dev, static_cast<unsigned int>(set.size()), set.data()) == kNvmlSuccess)
        for (std::size_t w = 0; w < set.size(); ++w)
          for (int b = 0; b < 64; ++b)
            if (set[w] >> b & 1UL) near.push_back(static_cast<int>(w * 64) + b);
    }
    d->gpus.push_back(std::move(g));
    d->near_cpus.push_back(std::move(near));
  }
  n.shutdown();
  return true;
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
  if (nvml_gpus(library, &d, &nvml_why)) {
    d.source = d.gpus.empty() ? "none" : "nvml";
    if (d.gpus.empty()) d.detail = "NVML reports none";
    return d;
  }
  std::string proc_why;
  d.gpus = proc_gpus(options.proc_directory, &proc_why);
  d.near_cpus.assign(d.gpus.size(), {});
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

int find_gpu(const GpuDiscovery& found, const std::string& device) {
  const bool uuid = is_uuid_entry(device);
  for (std::size_t i = 0; i < found.gpus.size(); ++i) {
    const GpuInfo& g = found.gpus[i];
    if (uuid ? (!g.uuid.empty() && g.uuid == device) : std::to_string(g.ordinal) == device) return static_cast<int>(i);
  }
  return -1;
}

std::string gpu_worker_cpus(const GpuDiscovery& found, const std::string& device) {
  const int i = find_gpu(found, device);
  if (i < 0 || static_cast<std::size_t>(i) >= found.near_cpus.size()) return "";
  const std::vector<int>& near = found.near_cpus[static_cast<std::size_t>(i)];
  // Only CPUs this process may use (a cgroup or taskset may allow fewer than NVML lists): a
  // worker pinned outside them would fail to pin and run unpinned.
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> both;
  std::set_intersection(near.begin(), near.end(), allowed.begin(), allowed.end(), std::back_inserter(both));
  return format_cpu_list(std::move(both));
}

std::vector<int> parse_cpu_list(std::string_view text) {
  auto fail = [&](const std::string& why) {
    return Error("invalid CPU list \"" + std::string(text) + "\": " + why + " (expected e.g. \"0-3,8,10-11\")");
  };
  constexpr long kMaxCpu = 65535;
  auto number = [&](const std::string& s) {
    long v = -1;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v < 0 || v > kMaxCpu)
      throw fail("'" + s + "' is not a CPU number");
    return static_cast<int>(v);
  };
  std::set<int> cpus;
  if (trim(text).empty()) return {};
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string entry = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (entry.empty()) throw fail("empty entry");
    const std::size_t dash = entry.find('-');
    const int lo = number(trim(std::string_view(entry).substr(0, dash)));
    const int hi = dash == std::string::npos ? lo : number(trim(std::string_view(entry).substr(dash + 1)));
    if (hi < lo) throw fail("range '" + entry + "' runs backwards");
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {cpus.begin(), cpus.end()};
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

namespace {
// A CPU set sized for `n` CPUs (CPU_ALLOC: machines past CPU_SETSIZE work too).
struct CpuSet {
  explicit CpuSet(int n) : count(std::max(n, CPU_SETSIZE)), size(CPU_ALLOC_SIZE(count)), set(CPU_ALLOC(count)) {
    if (!set) throw Error("CPU_ALLOC failed");
    CPU_ZERO_S(size, set);
  }
  ~CpuSet() { CPU_FREE(set); }
  CpuSet(const CpuSet&) = delete;
  CpuSet& operator=(const CpuSet&) = delete;
  int count;
  std::size_t size;
  cpu_set_t* set;
};
}  // namespace

std::vector<int> allowed_cpus() {
  CpuSet s(static_cast<int>(::sysconf(_SC_NPROCESSORS_CONF)));
  std::vector<int> out;
  if (::sched_getaffinity(0, s.size, s.set) != 0) return out;
  for (int c = 0; c < s.count; ++c)
    if (CPU_ISSET_S(c, s.size, s.set)) out.push_back(c);
  return out;
}

void pin_process_to_cpus(const std::vector<int>& cpus) {
  if (cpus.empty()) throw Error("pin_process_to_cpus: no CPU given");
  CpuSet s(*std::max_element(cpus.begin(), cpus.end()) + 1);
  for (int c : cpus) CPU_SET_S(c, s.size, s.set);
  if (::sched_setaffinity(0, s.size, s.set) != 0)
    throw Error("cannot pin this process to CPUs " + format_cpu_list(cpus) + ": " + std::strerror(errno));
  // Threads started before this call keep their mask unless set one by one (a thread that has
  // exited since the listing is no error).
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atol(e.path().filename().c_str()));
    if (tid > 0) ::sched_setaffinity(tid, s.size, s.set);
  }
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
