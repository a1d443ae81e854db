// A stand-in for libnvidia-ml.so.1, for the GPU discovery tests on machines without a driver.
// Built four times (tests/CMakeLists.txt): FAKE_NVML_GPUS GPUs (0 or 2), an nvmlInit_v2 that
// fails with FAKE_NVML_INIT_ERROR, or 2 GPUs of an older driver (FAKE_NVML_OLD_DRIVER: no
// PCIe or NVLink throughput functions). fake_nvml_live() counts nvmlInit_v2 calls not yet
// matched by nvmlShutdown, so a test can check that discovery shuts NVML down.
#include <atomic>
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
#ifndef FAKE_NVML_OLD_DRIVER
// The dashboards' throughput figures (NVDashboard's). PCIe: GPU i sends 3000 + i KiB/s and
// receives 2000 + i KiB/s.
int nvmlDeviceGetPcieThroughput(void* dev, int counter /* 0: TX, 1: RX */, unsigned int* kib_per_s) {
  if (int rc = check(dev)) return rc;
  *kib_per_s = (counter == 0 ? 3000u : 2000u) + static_cast<unsigned>(index_of(dev));
  return 0;
}
// NVLink's cumulative data counters (fields 138 TX, 139 RX, scope UINT_MAX: all links) on GPU 0:
// each reading is 0.5 s after the one before (NVML's timestamp), with 4096 KiB more sent and
// 1024 KiB more received: 8 MiB/s and 2 MiB/s however often it is read. GPU 1 has no NVLink
// (NOT_SUPPORTED per field, as NVML answers for a PCIe-only board).
struct FieldValue {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  union {
    double dVal;
    unsigned long long ullVal;
  } value;
};
std::atomic<long long> g_nvlink_readings{0};
int nvmlDeviceGetFieldValues(void* dev, int count, FieldValue* values) {
  if (int rc = check(dev)) return rc;
  const long long n = index_of(dev) == 0 ? ++g_nvlink_readings : 0;
  for (int i = 0; i < count; ++i) {
    FieldValue& f = values[i];
    const bool nvlink = (f.fieldId == 138 || f.fieldId == 139) && f.scopeId == 0xffffffffu;
    if (index_of(dev) != 0 || !nvlink) {
      f.nvmlReturn = 3;  // NVML_ERROR_NOT_SUPPORTED
      continue;
    }
    f.nvmlReturn = 0;
    f.timestamp = 1700000000000000LL + n * 500000;
    f.latencyUsec = 0;
    f.valueType = 3;  // NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    f.value.ullVal = static_cast<unsigned long long>(n) * (f.fieldId == 138 ? 4096u : 1024u);
  }
  return 0;
}
#endif
int fake_nvml_live() { return g_live; }

}  // extern "C"
