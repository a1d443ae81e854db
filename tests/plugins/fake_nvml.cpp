// A stand-in for libnvidia-ml.so.1, for the GPU discovery tests on machines without a driver.
// Built three times (tests/CMakeLists.txt): FAKE_NVML_GPUS GPUs (0 or 2), or an nvmlInit_v2 that
// fails with FAKE_NVML_INIT_ERROR. fake_nvml_live() counts nvmlInit_v2 calls not yet matched by
// nvmlShutdown, so a test can check that discovery shuts NVML down.
#include <cstdio>
#include <cstring>

#ifndef FAKE_NVML_GPUS
#define FAKE_NVML_GPUS 2
#endif
#ifndef FAKE_NVML_INIT_ERROR
#define FAKE_NVML_INIT_ERROR 0
#endif

namespace {
struct FakeDevice {
  int index;
};
// A variable, not the macro: `i >= 0` with FAKE_NVML_GPUS 0 would be a constant comparison.
const unsigned g_gpu_count = FAKE_NVML_GPUS;
FakeDevice g_devices[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
int g_live = 0;
struct Memory {
  unsigned long long total, free, used;
};
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
int check(void* dev) {
  if (g_live <= 0) return 1;  // NVML_ERROR_UNINITIALIZED
  return dev ? 0 : 2;         // NVML_ERROR_INVALID_ARGUMENT
}
int index_of(void* dev) { return static_cast<FakeDevice*>(dev)->index; }
}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (FAKE_NVML_INIT_ERROR) return FAKE_NVML_INIT_ERROR;
  ++g_live;
  return 0;
}
int nvmlShutdown() {
  if (g_live <= 0) return 1;
  --g_live;
  return 0;
}
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_live <= 0) return 1;
  *count = FAKE_NVML_GPUS;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** dev) {
  if (g_live <= 0) return 1;
  if (i >= g_gpu_count) return 2;
  *dev = &g_devices[i];
  return 0;
}
int nvmlDeviceGetName(void* dev, char* name, unsigned int length) {
  if (int rc = check(dev)) return rc;
  std::snprintf(name, length, "Fake GPU %d", index_of(dev));
  return 0;
}
int nvmlDeviceGetUUID(void* dev, char* uuid, unsigned int length) {
  if (int rc = check(dev)) return rc;
  std::snprintf(uuid, length, "GPU-00000000-0000-0000-0000-00000000000%d", index_of(dev));
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* dev, Memory* memory) {
  if (int rc = check(dev)) return rc;
  memory->total = (1ull << 30) * 16 * static_cast<unsigned long long>(index_of(dev) + 1);
  memory->free = memory->total;
  memory->used = 0;
  return 0;
}
int nvmlDeviceGetPciInfo_v3(void* dev, PciInfo* pci) {
  if (int rc = check(dev)) return rc;
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", 0x19 + index_of(dev));
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(void* dev, int* major, int* minor) {
  if (int rc = check(dev)) return rc;
  *major = 9;
  *minor = 0;
  return 0;
}
// GPU i is near CPU i (so on a machine of two or more CPUs the two fake GPUs get different CPUs).
int nvmlDeviceGetCpuAffinity(void* dev, unsigned int words, unsigned long* set) {
  if (int rc = check(dev)) return rc;
  const unsigned cpu = static_cast<unsigned>(index_of(dev));
  if (words <= cpu / 64) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  for (unsigned w = 0; w < words; ++w) set[w] = 0;
  set[cpu / 64] = 1UL << (cpu % 64);
  return 0;
}
// For the dashboards' live figures (src/distributed/nvml.cpp): GPU i is 40 + i percent busy.
int nvmlDeviceGetUtilizationRates(void* dev, unsigned int* rates /* gpu, memory */) {
  if (int rc = check(dev)) return rc;
  rates[0] = 40 + static_cast<unsigned>(index_of(dev));
  rates[1] = 5;
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** dev) {
  if (g_live <= 0) return 1;
  for (unsigned i = 0; i < g_gpu_count; ++i) {
    char want[96];
    nvmlDeviceGetUUID(&g_devices[i], want, sizeof want);
    if (std::strcmp(uuid, want) == 0) {
      *dev = &g_devices[i];
      return 0;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}
int fake_nvml_live() { return g_live; }

}  // extern "C"
