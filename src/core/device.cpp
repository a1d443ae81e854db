// Finds the CUDA back end at run time (see tessera/core/device.hpp): libtessera_cuda.so lives
// next to libtessera.so and installs its DeviceRuntime from a static initialiser when loaded.
#include "tessera/core/device.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace tessera {
namespace {

std::atomic<DeviceRuntime*> g_runtime{nullptr};
std::once_flag g_load_once;
std::string g_status = "not loaded";
std::mutex g_status_mu;

void set_status(std::string s) {
  std::lock_guard lock(g_status_mu);
  g_status = std::move(s);
}

#ifdef TESSERA_HAS_CUDA
// The folder holding this library, so the back end is found wherever the build or install
// tree was moved (the same rule as the binaries' RPATH $ORIGIN).
std::filesystem::path library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&device_runtime), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}
#endif

void load_backend() {
  if (g_runtime.load()) return;  // installed already (linked in, or a test's fake)
  if (const char* off = std::getenv("TESSERA_NO_CUDA"); off && *off && std::string(off) != "0") {
    set_status("disabled by TESSERA_NO_CUDA");
    return;
  }
#ifndef TESSERA_HAS_CUDA
  set_status("this build of Tessera has no CUDA back end");
#else
  // Without NVIDIA's driver there is no device to find, and loading the back end would map
  // cuBLAS, cuFFT, cuSOLVER and nvJitLink for nothing: about 160 MB of resident memory in every
  // worker process of a CPU-only machine (a tessera-worker at rest: 239 MB resident with it,
  // 43 MB without).
  std::error_code ec;
  if (!std::filesystem::exists("/dev/nvidiactl", ec) && !std::filesystem::exists("/proc/driver/nvidia", ec)) {
    set_status("no NVIDIA driver on this machine (no /dev/nvidiactl, no /proc/driver/nvidia): the CUDA back end "
               "was not loaded");
    return;
  }
  const char* name = "libtessera_cuda.so";
  std::string tried;
  for (const auto& candidate : {library_dir() / name, std::filesystem::path(name)}) {
    if (candidate.has_parent_path() && !std::filesystem::exists(candidate)) continue;
    if (dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL)) break;
    if (const char* e = dlerror()) tried += std::string(tried.empty() ? "" : "; ") + e;
  }
  if (g_runtime.load()) set_status("loaded");
  else set_status("the CUDA back end did not load: " + (tried.empty() ? std::string("no runtime installed") : tried));
#endif
}

}  // namespace

const char* target_name(Target target) noexcept { return target == Target::Device ? "device" : "host"; }

DeviceRuntime* device_runtime() noexcept {
  if (auto* r = g_runtime.load(std::memory_order_acquire)) return r;
  try {
    std::call_once(g_load_once, load_backend);
  } catch (...) {
  }
  return g_runtime.load(std::memory_order_acquire);
}

std::string device_runtime_status() {
  device_runtime();
  std::lock_guard lock(g_status_mu);
  return g_runtime.load() ? std::string("loaded") : g_status;
}

void set_device_runtime(DeviceRuntime* runtime) noexcept { g_runtime.store(runtime, std::memory_order_release); }

int visible_gpu_count() noexcept {
  auto* r = device_runtime();
  return r ? r->device_count() : 0;
}

Block device_block(DType dtype, Shape shape, int device, StreamView stream) {
  auto* r = device_runtime();
  if (!r) throw DeviceError("device_block: no device runtime (" + device_runtime_status() + ")");
  const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * itemsize(dtype);
  return Block(dtype, std::move(shape), r->allocate(bytes, device, stream));
}

Block to_host(const Block& block) {
  if (block.empty() || block.memory_kind() != MemoryKind::Device) return block;
  auto* r = device_runtime();
  if (!r) throw DeviceError("to_host: a device block but no device runtime (" + device_runtime_status() + ")");
  const int device = block.buffer()->device();
  r->set_device(device);
  const StreamView stream = r->thread_stream(device);
  Block out(block.dtype(), block.shape());
  r->copy_async(out.raw(), block.raw(), block.nbytes(), stream);
  r->synchronize(stream);
  return out;
}

Block to_device_async(const Block& block, int device, StreamView stream) {
  if (!block.empty() && block.memory_kind() == MemoryKind::Device && block.buffer()->device() == device) return block;
  auto* r = device_runtime();
  if (!r) throw DeviceError("to_device: no device runtime (" + device_runtime_status() + ")");
  if (block.empty()) return block;
  r->set_device(device);
  if (stream.is_default()) stream = r->thread_stream(device);
  Block out(block.dtype(), block.shape(), r->allocate(block.nbytes(), device, stream));
  r->copy_async(out.raw(), block.raw(), block.nbytes(), stream);
  return out;
}

Block to_device(const Block& block, int device, StreamView stream) {
  Block out = to_device_async(block, device, stream);
  if (out.buffer() != block.buffer()) {
    auto* r = device_runtime();
    r->synchronize(stream.is_default() ? r->thread_stream(device) : stream);
  }
  return out;
}

}  // namespace tessera
