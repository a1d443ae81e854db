// GPU discovery without the CUDA runtime (NVML through dlopen, /proc fallback) and the
// CUDA_VISIBLE_DEVICES lists GPU workers get (tessera/core/gpus.hpp). NVML is replaced by the
// stand-ins of tests/plugins/fake_nvml.cpp, so every path runs on a machine without a driver.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "tessera/core/error.hpp"
#include "tessera/core/gpus.hpp"

namespace {

using namespace tessera;
using Devices = std::vector<std::string>;

// <build>/tests/libtessera_fake_nvml_<variant>.so, beside this test binary.
std::string fake_nvml(const std::string& variant) {
  auto dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  return (dir / ("libtessera_fake_nvml_" + variant + ".so")).string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- CUDA_VISIBLE_DEVICES ----------------------------------------------------------------------

TEST(CudaVisibleDevices, ParsesIndicesAndUuidsToleratingSpaces) {
  EXPECT_EQ(parse_cuda_visible_devices("0,1,2,3"), (Devices{"0", "1", "2", "3"}));
  EXPECT_EQ(parse_cuda_visible_devices("3"), (Devices{"3"}));
  EXPECT_EQ(parse_cuda_visible_devices(" 0 , 1 "), (Devices{"0", "1"}));
  EXPECT_EQ(parse_cuda_visible_devices("\t2,\n3 "), (Devices{"2", "3"}));
  EXPECT_EQ(parse_cuda_visible_devices("01,002"), (Devices{"1", "2"}));
  EXPECT_EQ(parse_cuda_visible_devices("GPU-5f0c1e2d-aaaa-bbbb-cccc-0123456789ab, 1"),
            (Devices{"GPU-5f0c1e2d-aaaa-bbbb-cccc-0123456789ab", "1"}));
  EXPECT_EQ(parse_cuda_visible_devices("MIG-GPU-5f0c/1/0,MIG-7a1b"), (Devices{"MIG-GPU-5f0c/1/0", "MIG-7a1b"}));
}

TEST(CudaVisibleDevices, BlankIsNoDevice) {
  EXPECT_TRUE(parse_cuda_visible_devices("").empty());
  EXPECT_TRUE(parse_cuda_visible_devices("   ").empty());
}

TEST(CudaVisibleDevices, RejectsEmptyEntriesGarbageAndDuplicates) {
  for (const char* bad : {"0,,1", "0,", ",0", " , ", "a", "-1", "0 1", "1.5", "GPU-", "gpu", "0;1", "99999999999999999999"})
    EXPECT_THROW(parse_cuda_visible_devices(bad), Error) << bad;
  EXPECT_TRUE(contains(error_of([] { parse_cuda_visible_devices("0,,1"); }), "\"0,,1\"")) << "the message quotes the value";
  EXPECT_TRUE(contains(error_of([] { parse_cuda_visible_devices("0,,1"); }), "empty entry"));
  // Duplicates, also after normalising an index or the case of a UUID.
  for (const char* dup : {"0,0", "1, 1", "1,01", "GPU-ab,GPU-ab", "GPU-ab,gpu-AB"})
    EXPECT_THROW(parse_cuda_visible_devices(dup), Error) << dup;
  EXPECT_TRUE(contains(error_of([] { parse_cuda_visible_devices("2,0,2"); }), "'2' appears twice"));
  EXPECT_TRUE(contains(error_of([] { parse_cuda_visible_devices("0,x"); }), "'x' is neither"));
}

TEST(CudaVisibleDevices, WorkerIGetsTheListRotatedToItsDevice) {
  const Devices four{"0", "1", "2", "3"};
  EXPECT_EQ(cuda_visible_devices_for(0, four), "0,1,2,3");
  EXPECT_EQ(cuda_visible_devices_for(1, four), "1,2,3,0");
  EXPECT_EQ(cuda_visible_devices_for(3, four), "3,0,1,2");
  EXPECT_EQ(cuda_visible_devices_for(0, Devices{"5"}), "5");
  EXPECT_EQ(cuda_visible_devices_for(1, Devices{"GPU-a", "GPU-b", "GPU-c"}), "GPU-b,GPU-c,GPU-a");
  EXPECT_EQ(cuda_visible_devices_for(1, parse_cuda_visible_devices("2, 7")), "7,2");
  EXPECT_THROW(cuda_visible_devices_for(4, four), Error);
  EXPECT_THROW(cuda_visible_devices_for(0, Devices{}), Error);
}

TEST(CudaVisibleDevices, WorkerNamesCarryTheDevice) {
  EXPECT_EQ(gpu_worker_name("node1", "0"), "node1-gpu0");
  EXPECT_EQ(gpu_worker_name("worker", "12"), "worker-gpu12");
  EXPECT_EQ(gpu_worker_name("node1", "GPU-5f0c"), "node1-GPU-5f0c");
  EXPECT_EQ(gpu_worker_name("node1", "MIG-7a1b"), "node1-MIG-7a1b");
}

// ---- discovery -------------------------------------------------------------------------------------

TEST(GpuDiscovery, NvmlGivesIndexNameUuidMemoryAndShutsDown) {
  const std::string lib = fake_nvml("2");
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << lib << " not built";
  // Held open here too, so the fake's counters survive between calls.
  void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  auto live = reinterpret_cast<int (*)()>(::dlsym(h, "fake_nvml_live"));
  ASSERT_NE(live, nullptr);
  GpuDiscovery d = discover_gpus({.nvml_library = lib, .proc_directory = ""});
  EXPECT_EQ(d.source, "nvml");
  EXPECT_EQ(d.detail, "");
  ASSERT_EQ(d.gpus.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const GpuInfo& g = d.gpus[static_cast<std::size_t>(i)];
    EXPECT_EQ(g.ordinal, i);
    EXPECT_EQ(g.name, "Fake GPU " + std::to_string(i));
    EXPECT_EQ(g.uuid, "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i));
    EXPECT_EQ(g.total_memory, (std::size_t{1} << 30) * 16 * static_cast<std::size_t>(i + 1));
    EXPECT_EQ(g.pci_bus_id, i == 0 ? "00000000:19:00.0" : "00000000:1A:00.0");
    EXPECT_EQ(g.cc_major, 9);
    EXPECT_EQ(g.cc_minor, 0);
  }
  // The CPUs near each GPU (the fake: GPU i near CPU i), and the list its worker is pinned to:
  // those this process may use, matched by index or UUID.
  EXPECT_EQ(d.near_cpus, (std::vector<std::vector<int>>{{0}, {1}}));
  const auto allowed = allowed_cpus();
  const bool has1 = std::binary_search(allowed.begin(), allowed.end(), 1);
  EXPECT_EQ(find_gpu(d, "1"), 1);
  EXPECT_EQ(find_gpu(d, "GPU-00000000-0000-0000-0000-000000000001"), 1);
  EXPECT_EQ(find_gpu(d, "2"), -1);
  EXPECT_EQ(gpu_worker_cpus(d, "1"), has1 ? "1" : "");
  EXPECT_EQ(gpu_worker_cpus(d, "GPU-00000000-0000-0000-0000-000000000001"), has1 ? "1" : "");
  EXPECT_EQ(gpu_worker_cpus(d, "7"), "") << "a device NVML does not list gets no pinning";
  EXPECT_EQ(live(), 0) << "every nvmlInit_v2 must be matched by nvmlShutdown";
  EXPECT_EQ(describe_gpu(d.gpus[1]), "Fake GPU 1, GPU-00000000-0000-0000-0000-000000000001, 00000000:1A:00.0, 32.0 GiB, sm_90");
  // The devices GPU workers get when CUDA_VISIBLE_DEVICES is unset: every GPU NVML reports.
  EXPECT_EQ(gpu_worker_devices(std::nullopt, GpuDiscoveryOptions{.nvml_library = lib, .proc_directory = ""}),
            (Devices{"0", "1"}));
  EXPECT_EQ(live(), 0);
  ::dlclose(h);
}

TEST(GpuDiscovery, NvmlWithNoGpuMeansNoneAndWorkersRefuseToStart) {
  const std::string lib = fake_nvml("0");
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << lib << " not built";
  tessera::GpuDiscovery d = discover_gpus({.nvml_library = lib, .proc_directory = ""});
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_EQ(d.source, "none");
  const std::string msg = error_of([&] { gpu_worker_devices(std::nullopt, GpuDiscoveryOptions{.nvml_library = lib}); });
  EXPECT_TRUE(contains(msg, "no GPUs found: CUDA_VISIBLE_DEVICES is unset and NVML reports none")) << msg;
}

TEST(GpuDiscovery, ExplicitListNeedsNoGpu) {
  // An explicit list is taken as given: NVML is not even asked (the library does not exist).
  GpuDiscoveryOptions nothing{.nvml_library = "/nonexistent/libnvidia-ml.so.1", .proc_directory = ""};
  EXPECT_EQ(gpu_worker_devices(std::string("0,1"), nothing), (Devices{"0", "1"}));
  EXPECT_EQ(gpu_worker_devices(std::string(" GPU-ab "), nothing), (Devices{"GPU-ab"}));
  const std::string empty = error_of([&] { gpu_worker_devices(std::string(""), nothing); });
  EXPECT_TRUE(contains(empty, "CUDA_VISIBLE_DEVICES is set but lists no device")) << empty;
  EXPECT_THROW(gpu_worker_devices(std::string("0,0"), nothing), Error);
}

TEST(GpuDiscovery, WithoutNvmlFallsBackToProcDriverNvidia) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tessera-gpus-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // Two GPUs as the driver lists them, created out of bus order.
  for (auto [bus, model, uuid] : {std::tuple{"0000:3b:00.0", "NVIDIA H100 80GB HBM3", "GPU-bbbb"},
                                  std::tuple{"0000:19:00.0", "NVIDIA H100 80GB HBM3", "GPU-aaaa"}}) {
    fs::create_directories(dir / bus);
    std::ofstream(dir / bus / "information") << "Model: \t\t " << model << "\nIRQ:   \t\t 42\nGPU UUID: \t " << uuid
                                             << "\nBus Location: \t " << bus << "\nDevice Minor: \t 0\n";
  }
  fs::create_directories(dir / "0000:5d:00.0");  // no information file: counted, fields unknown
  GpuDiscovery d = discover_gpus({.nvml_library = "/nonexistent/libnvidia-ml.so.1", .proc_directory = dir.string()});
  EXPECT_EQ(d.source, "procfs");
  EXPECT_TRUE(contains(d.detail, "NVML is not available")) << d.detail;
  ASSERT_EQ(d.gpus.size(), 3u);
  EXPECT_EQ(d.gpus[0].pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(d.gpus[0].uuid, "GPU-aaaa");
  EXPECT_EQ(d.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.gpus[1].uuid, "GPU-bbbb");
  EXPECT_EQ(d.gpus[2].pci_bus_id, "0000:5d:00.0");
  EXPECT_EQ(d.gpus[2].name, "");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(d.gpus[static_cast<std::size_t>(i)].ordinal, i);
  EXPECT_EQ(d.near_cpus, std::vector<std::vector<int>>(3)) << "/proc says nothing of CPUs";
  EXPECT_EQ(gpu_worker_cpus(d, "0"), "");

  // An NVML whose nvmlInit_v2 fails (driver not loaded) also falls back, saying why.
  const std::string failing = fake_nvml("fail");
  if (std::filesystem::exists(failing)) {
    GpuDiscovery f = discover_gpus({.nvml_library = failing, .proc_directory = dir.string()});
    EXPECT_EQ(f.source, "procfs");
    EXPECT_EQ(f.gpus.size(), 3u);
    EXPECT_TRUE(contains(f.detail, "nvmlInit_v2 failed: Driver Not Loaded")) << f.detail;
  }
  fs::remove_all(dir);

  // Neither: none, and the message says what was looked at.
  GpuDiscovery none = discover_gpus({.nvml_library = "/nonexistent/libnvidia-ml.so.1", .proc_directory = dir.string()});
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_EQ(none.source, "none");
  const std::string msg = error_of([&] {
    gpu_worker_devices(std::nullopt, GpuDiscoveryOptions{.nvml_library = "/nonexistent/libnvidia-ml.so.1",
                                                         .proc_directory = dir.string()});
  });
  EXPECT_TRUE(contains(msg, "no GPUs found: CUDA_VISIBLE_DEVICES is unset and NVML is not available")) << msg;
  EXPECT_TRUE(contains(msg, "does not exist")) << msg;
}

TEST(GpuDiscovery, ThisMachine) {
  // The real thing: no GPU without a driver; on a GPU machine, each GPU with its name.
  const bool driver = std::filesystem::exists("/proc/driver/nvidia/gpus") || [] {
    void* h = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    return h != nullptr;
  }();
  if (std::getenv("TESSERA_NVML_LIBRARY")) GTEST_SKIP() << "TESSERA_NVML_LIBRARY is set";
  GpuDiscovery d = discover_gpus();
  if (!driver) {
    EXPECT_TRUE(d.gpus.empty());
    EXPECT_EQ(d.source, "none");
    GTEST_SKIP() << "no NVIDIA driver here: " << d.detail;
  }
  ASSERT_FALSE(d.gpus.empty()) << d.detail;
  for (const auto& g : d.gpus) {
    EXPECT_FALSE(g.name.empty());
    std::cout << "GPU " << g.ordinal << ": " << describe_gpu(g) << " (" << d.source << ")\n";
  }
}

}  // namespace

// ---- CPU lists and pinning -------------------------------------------------------------------------

TEST(CpuList, ParsesAndFormatsTheLinuxListFormat) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(" 5 , 0-1,1 "), (std::vector<int>{0, 1, 5})) << "sorted, repeats merged";
  EXPECT_EQ(parse_cpu_list("7-7"), (std::vector<int>{7}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_TRUE(parse_cpu_list("  ").empty());
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({11, 3, 2, 2}), "2-3,11");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list(parse_cpu_list("0-63,128-191")), "0-63,128-191");
  for (const char* bad : {"3-1", "a", "0,,1", "0,", "-1", "1-", "0-2x", "70000"}) {
    const std::string e = error_of([&] { parse_cpu_list(bad); });
    EXPECT_TRUE(contains(e, "invalid CPU list \"" + std::string(bad) + "\"")) << bad << ": " << e;
  }
}

TEST(CpuList, PinningCoversThreadsStartedBeforeAndAfterAndRefusesAbsentCpus) {
  const std::vector<int> before = allowed_cpus();
  ASSERT_FALSE(before.empty());
  // A thread already running when the process is pinned.
  std::atomic<bool> pinned{false};
  std::vector<int> seen_by_old;
  std::thread old([&] {
    while (!pinned) std::this_thread::yield();
    seen_by_old = allowed_cpus();
  });
  const std::vector<int> one{before.back()};
  pin_process_to_cpus(one);
  pinned = true;
  old.join();
  std::vector<int> seen_by_new;
  std::thread([&] { seen_by_new = allowed_cpus(); }).join();
  const std::vector<int> seen_here = allowed_cpus();
  pin_process_to_cpus(before);  // restore before checking, so a failure leaves no pinned process
  EXPECT_EQ(seen_here, one);
  EXPECT_EQ(seen_by_old, one) << "a thread started before the call is pinned too";
  EXPECT_EQ(seen_by_new, one) << "a thread started after inherits the mask";
  EXPECT_EQ(allowed_cpus(), before);
  // A CPU this machine does not have: an error that names it; nothing changes.
  const std::string e = error_of([] { pin_process_to_cpus({65000}); });
  EXPECT_TRUE(contains(e, "cannot pin this process to CPUs 65000")) << e;
  EXPECT_EQ(allowed_cpus(), before);
  EXPECT_TRUE(contains(error_of([] { pin_process_to_cpus({}); }), "no CPU"));
}
