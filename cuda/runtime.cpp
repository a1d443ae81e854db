// The CUDA back end's DeviceRuntime (tessera/core/device.hpp is the contract): per-device
// stream-ordered memory pools with a limit and a pressure handler, pinned host memory, one
// non-blocking stream per thread and device, copies and device information. Installed from a
// static initialiser, so loading libtessera_cuda.so is enough; loading makes no CUDA call at all
// (contexts appear only when a device is first used).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "check.hpp"
#include "core/logging.hpp"
#include "runtime.hpp"
#include "stream.hpp"
#include "tessera/cuda/random.hpp"

namespace tessera::cuda {
namespace {

// This thread's stream per device. A plain array (trivially destructible), so a Buffer deleter
// running during thread or process exit can still read it.
thread_local cudaStream_t t_streams[kMaxDevices] = {};

std::string with_unit(std::size_t bytes) {
  char text[64];
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib >= 1024.0) std::snprintf(text, sizeof text, "%zu bytes (%.2f GiB)", bytes, mib / 1024.0);
  else std::snprintf(text, sizeof text, "%zu bytes (%.1f MiB)", bytes, mib);
  return text;
}

std::string format_uuid(const cudaUUID_t& uuid) {
  // nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

/** Makes `device` current for a scope and restores the previous one after. */
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice", device);
    if (previous_ != device_) check(cudaSetDevice(device_), "cudaSetDevice", device);
  }
  ~DeviceGuard() {
    if (previous_ >= 0 && previous_ != device_ && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_;
  int previous_ = -1;
};

/** A few freed pinned buffers kept by exact size: cudaHostAlloc and cudaFreeHost are slow. */
class PinnedCache {
 public:
  void* take(std::size_t bytes) {
    std::lock_guard lock(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return p;
  }
  /** False when the cache is full (the caller frees the memory). */
  bool give(void* p, std::size_t bytes) noexcept {
    if (bytes > kMaxEntry) return false;
    try {
      std::lock_guard lock(mu_);
      if (cached_ + bytes > kMaxCached) return false;
      free_[bytes].push_back(p);
      cached_ += bytes;
      return true;
    } catch (...) {
      return false;
    }
  }

 private:
  static constexpr std::size_t kMaxEntry = std::size_t{64} << 20;
  static constexpr std::size_t kMaxCached = std::size_t{256} << 20;
  std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_ = 0;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  int device_count() noexcept override {
    try {
      std::call_once(count_once_, [this] {
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
          cudaGetLastError();  // clear the "no driver / no device" error
          logging::debug("CUDA back end: no device ({})", cudaGetErrorString(e));
          n = 0;
        }
        if (n > kMaxDevices) {
          logging::warn("CUDA back end: {} devices visible, using the first {}", n, kMaxDevices);
          n = kMaxDevices;
        }
        count_ = n;
      });
    } catch (...) {
      return 0;
    }
    return count_;
  }

  GpuInfo info(int device) override {
    check_device(device, "info");
    Device& d = devices_[device];
    std::lock_guard lock(d.mu);
    if (d.info.ordinal >= 0) return d.info;
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", device);
    GpuInfo g;
    g.ordinal = device;
    g.name = prop.name;
    g.uuid = format_uuid(prop.uuid);
    char bus[64] = {};
    check(cudaDeviceGetPCIBusId(bus, static_cast<int>(sizeof bus), device), "cudaDeviceGetPCIBusId", device);
    g.pci_bus_id = bus;
    g.total_memory = prop.totalGlobalMem;
    g.cc_major = prop.major;
    g.cc_minor = prop.minor;
    d.info = g;
    return g;
  }

  void set_memory_limit(int device, std::size_t bytes) override {
    check_device(device, "set_memory_limit");
    Device& d = devices_[device];
    std::lock_guard lock(d.mu);
    if (d.limit.load() == bytes) return;
    if (cudaMemPool_t old = d.pool.load()) {
      // The pool's maximum size is fixed when it is created: replace it, which is safe only
      // while it backs no live buffer. (Pending frees complete first: the driver defers the
      // pool's release until its outstanding allocations are freed.)
      if (const std::size_t used = d.in_use.load(); used != 0)
        throw DeviceError("set_memory_limit: device " + std::to_string(device) + " (" + device_name(device) +
                          ") already holds " + with_unit(used) +
                          " in live buffers; set the limit before the first allocation");
      d.pool.store(nullptr);
      if (const cudaError_t e = cudaMemPoolDestroy(old); e != cudaSuccess) {
        cudaGetLastError();
        logging::warn("cudaMemPoolDestroy failed on device {} ({}): {}", device, device_name(device), cudaGetErrorString(e));
      }
    }
    d.limit.store(bytes);
  }

  std::size_t memory_limit(int device) override {
    check_device(device, "memory_limit");
    const std::size_t limit = devices_[device].limit.load();
    return limit ? limit : info(device).total_memory;
  }

  std::size_t memory_in_use(int device) override {
    check_device(device, "memory_in_use");
    return devices_[device].in_use.load();
  }

  void set_pressure_handler(PressureHandler handler) override {
    auto h = handler ? std::make_shared<const PressureHandler>(std::move(handler)) : nullptr;
    std::lock_guard lock(handler_mu_);
    handler_ = std::move(h);
  }

  std::shared_ptr<Buffer> allocate(std::size_t bytes, int device, StreamView stream) override {
    return allocate_in(bytes, device, as_cuda(stream), false);
  }

  std::shared_ptr<Buffer> allocate_pinned(std::size_t bytes) override {
    if (device_count() == 0) throw DeviceError("allocate_pinned: no CUDA device visible to this process");
    if (bytes == 0) return Buffer::adopt(nullptr, 0, MemoryKind::PinnedHost, -1, [](void*, std::size_t) {});
    void* p = pinned_.take(bytes);
    if (!p) {
      // Portable: usable as pinned memory from every device's context.
      if (const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable); e != cudaSuccess)
        throw_cuda_error(e, ("cudaHostAlloc(" + with_unit(bytes) + ")").c_str(), -1);
    }
    return Buffer::adopt(p, bytes, MemoryKind::PinnedHost, -1, [this](void* q, std::size_t n) {
      if (pinned_.give(q, n)) return;
      if (const cudaError_t e = cudaFreeHost(q); e != cudaSuccess) {
        cudaGetLastError();
        if (e != cudaErrorCudartUnloading && e != cudaErrorContextIsDestroyed)
          logging::error("cudaFreeHost of {} failed: {}", with_unit(n), cudaGetErrorString(e));
      }
    });
  }

  StreamView thread_stream(int device) override {
    check_device(device, "thread_stream");
    if (cudaStream_t s = t_streams[device]) return as_view(s);
    cudaStream_t s = nullptr;
    check(make_thread_stream(device, &s), "cudaStreamCreateWithFlags (this thread's stream)", device);
    return as_view(s);
  }

  void set_device(int device) override {
    check_device(device, "set_device");
    check(cudaSetDevice(device), "cudaSetDevice", device);
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, StreamView stream) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_cuda(stream)), "cudaMemcpyAsync", -1);
  }

  void synchronize(StreamView stream) override {
    check(cudaStreamSynchronize(as_cuda(stream)), "cudaStreamSynchronize", -1);
  }

  /**
   * Pool memory in order on `stream` (null: this thread's stream). The deleter frees it on the
   * freeing thread's stream, or on `stream` itself when free_on_stream (op scratch memory).
   */
  std::shared_ptr<Buffer> allocate_in(std::size_t bytes, int device, cudaStream_t stream, bool free_on_stream) {
    check_device(device, "allocate");
    if (bytes == 0) return Buffer::adopt(nullptr, 0, MemoryKind::Device, device, [](void*, std::size_t) {});
    Device& d = devices_[device];
    if (!stream) stream = as_cuda(thread_stream(device));
    void* ptr = nullptr;
    bool trimmed = false;
    for (;;) {
      const std::size_t limit = d.limit.load();
      if (limit != 0 && bytes > limit) out_of_memory(device, bytes, "larger than the limit");
      const cudaMemPool_t p = pool(device);  // before reserving: creating it may throw
      if (reserve(d, bytes, limit)) {
        const cudaError_t e = cudaMallocFromPoolAsync(&ptr, bytes, p, stream);
        if (e == cudaSuccess) break;
        d.in_use.fetch_sub(bytes);
        if (e != cudaErrorMemoryAllocation)
          throw_cuda_error(e, ("cudaMallocFromPoolAsync(" + with_unit(bytes) + ")").c_str(), device);
        cudaGetLastError();  // clear it: trimming or the pressure handler may make room
        // The live bytes fit, yet the pool could not place them: its reservations (capped at the
        // limit, never released by themselves) are held by freed blocks that do not fit this
        // size. Once, give the unused reservations back to the driver and retry before spilling.
        if (!trimmed) {
          trimmed = true;
          trim(device, p, stream);
          continue;
        }
      }
      std::shared_ptr<const PressureHandler> handler;
      {
        std::lock_guard lock(handler_mu_);
        handler = handler_;
      }
      if (!handler) out_of_memory(device, bytes, "no pressure handler to free memory");
      const std::size_t freed = (*handler)(device, bytes);
      if (freed == 0) out_of_memory(device, bytes, "the pressure handler freed nothing");
      trimmed = false;  // the spilled blocks' sizes may not fit either: trim again before more spilling
      // The handler's frees were queued on this thread's stream: once that stream reaches them,
      // the pool can hand the memory to any stream.
      cudaStream_t own = as_cuda(thread_stream(device));
      if (own != stream) check(cudaStreamSynchronize(own), "cudaStreamSynchronize", device);
    }
    cudaStream_t free_stream = free_on_stream ? stream : nullptr;
    return Buffer::adopt(ptr, bytes, MemoryKind::Device, device,
                         [this, device, free_stream](void* q, std::size_t n) { release(q, n, device, free_stream); });
  }

 private:
  struct Device {
    std::mutex mu;  // pool creation and replacement, info
    std::atomic<cudaMemPool_t> pool{nullptr};
    std::atomic<std::size_t> limit{0};   // 0: no cap
    std::atomic<std::size_t> in_use{0};  // bytes of live buffers
    GpuInfo info;                        // valid once ordinal >= 0
  };

  void check_device(int device, const char* what) {
    const int n = device_count();
    if (device < 0 || device >= n)
      throw DeviceError(std::string(what) + ": CUDA device " + std::to_string(device) +
                        " is not visible to this process (" +
                        (n == 0 ? std::string("no CUDA device visible") : std::to_string(n) + " visible") + ")");
  }

  /** Counts `bytes` as in use when that stays within `limit` (0: no limit). */
  static bool reserve(Device& d, std::size_t bytes, std::size_t limit) {
    std::size_t used = d.in_use.load();
    do {
      if (limit != 0 && used > limit - bytes) return false;
    } while (!d.in_use.compare_exchange_weak(used, used + bytes));
    return true;
  }

  [[noreturn]] void out_of_memory(int device, std::size_t bytes, const char* why) {
    const std::size_t limit = devices_[device].limit.load();
    throw DeviceMemoryError("device " + std::to_string(device) + " (" + device_name(device) + "): cannot allocate " +
                            with_unit(bytes) + ": " + with_unit(devices_[device].in_use.load()) + " in use, " +
                            (limit ? "limit " + with_unit(limit) : std::string("no limit set (device memory is full)")) +
                            "; " + why);
  }

  /** The device's pool, created on first use with the current limit as its maximum size. */
  cudaMemPool_t pool(int device) {
    Device& d = devices_[device];
    if (cudaMemPool_t p = d.pool.load(std::memory_order_acquire)) return p;
    const std::size_t total = info(device).total_memory;  // info() takes d.mu itself
    std::lock_guard lock(d.mu);
    if (cudaMemPool_t p = d.pool.load()) return p;
    DeviceGuard guard(device);
    int supported = 0;
    check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device),
          "cudaDeviceGetAttribute(cudaDevAttrMemoryPoolsSupported)", device);
    if (!supported)
      throw DeviceError("device " + std::to_string(device) + " (" + device_name(device) +
                        ") does not support stream-ordered memory pools");
    cudaMemPoolProps props{};  // zeroed: no IPC handle types, reserved bytes 0
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    // The driver's cap on reserved memory; the exact limit on live bytes is counted in
    // reserve(). The pool reserves in chunks of 2 MiB and more and may give small allocations a
    // chunk of their own, so a cap of exactly the limit could refuse live bytes that fit under it:
    // the cap has some slack (1/16 of the limit, at least 64 MiB, never past the device's memory).
    constexpr std::size_t kGranule = std::size_t{2} << 20;
    const std::size_t limit = d.limit.load();
    if (limit) {
      const std::size_t slack = std::max(limit / 16, std::size_t{64} << 20);
      const std::size_t cap = total && limit + slack > total ? std::max(limit, total) : limit + slack;
      props.maxSize = (cap + kGranule - 1) / kGranule * kGranule;
    }
    cudaMemPool_t p = nullptr;
    cudaError_t e = cudaMemPoolCreate(&p, &props);
    if (e != cudaSuccess && props.maxSize != 0) {
      cudaGetLastError();
      logging::warn("cudaMemPoolCreate with maxSize {} failed on device {} ({}): {}; the limit is enforced by "
                   "counting live bytes only",
                   props.maxSize, device, device_name(device), cudaGetErrorString(e));
      props.maxSize = 0;
      e = cudaMemPoolCreate(&p, &props);
    }
    check(e, "cudaMemPoolCreate", device);
    // Keep freed memory cached in the pool instead of returning it to the driver at each sync.
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    if (e = cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &threshold); e != cudaSuccess) {
      cudaMemPoolDestroy(p);
      throw_cuda_error(e, "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)", device);
    }
    // Let peers that can reach this device read and write its buffers (multi-GPU processes).
    for (int other = 0; other < device_count(); ++other) {
      int can = 0;
      if (other == device) continue;
      if (cudaDeviceCanAccessPeer(&can, other, device) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      if (!can) continue;
      cudaMemAccessDesc desc{};
      desc.location.type = cudaMemLocationTypeDevice;
      desc.location.id = other;
      desc.flags = cudaMemAccessFlagsProtReadWrite;
      if (const cudaError_t a = cudaMemPoolSetAccess(p, &desc, 1); a != cudaSuccess) {
        cudaGetLastError();
        logging::warn("cudaMemPoolSetAccess: device {} cannot access the pool of device {}: {}", other, device,
                     cudaGetErrorString(a));
      }
    }
    d.pool.store(p, std::memory_order_release);
    return p;
  }

  /**
   * Returns the pool's unused reservations to the driver. Frees still queued on a stream count as
   * in use until they ran, so `stream` and this thread's stream (where deleters free) are waited
   * for first. Only on the allocation failure path.
   */
  void trim(int device, cudaMemPool_t p, cudaStream_t stream) {
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", device);
    if (cudaStream_t own = as_cuda(thread_stream(device)); own != stream)
      check(cudaStreamSynchronize(own), "cudaStreamSynchronize", device);
    check(cudaMemPoolTrimTo(p, 0), "cudaMemPoolTrimTo", device);
  }

  /** Creates this thread's stream on `device` (error codes only: used by deleters too). */
  cudaError_t make_thread_stream(int device, cudaStream_t* out) noexcept {
    if ((*out = t_streams[device])) return cudaSuccess;
    int previous = -1;
    cudaError_t e = cudaGetDevice(&previous);
    if (e != cudaSuccess) return e;
    if (previous != device && (e = cudaSetDevice(device)) != cudaSuccess) return e;
    cudaStream_t s = nullptr;
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (previous != device && cudaSetDevice(previous) != cudaSuccess) cudaGetLastError();
    if (e != cudaSuccess) return e;
    try {
      std::lock_guard lock(streams_mu_);
      streams_.push_back(s);  // never destroyed: a stream lives until the process exits
    } catch (...) {
    }
    t_streams[device] = s;
    *out = s;
    return cudaSuccess;
  }

  /** A Buffer deleter: gives the memory back to the pool, in stream order. Never throws. */
  void release(void* p, std::size_t bytes, int device, cudaStream_t stream) noexcept {
    devices_[device].in_use.fetch_sub(bytes);
    cudaError_t e = stream ? cudaSuccess : make_thread_stream(device, &stream);
    if (e == cudaSuccess) e = cudaFreeAsync(p, stream);
    if (e == cudaSuccess) return;
    cudaGetLastError();
    if (e == cudaErrorCudartUnloading || e == cudaErrorContextIsDestroyed) return;  // process exit
    try {
      logging::error("cudaFreeAsync of {} failed on device {} ({}): {}", with_unit(bytes), device, device_name(device),
                    cudaGetErrorString(e));
    } catch (...) {
    }
  }

  std::once_flag count_once_;
  int count_ = 0;
  std::array<Device, kMaxDevices> devices_;
  std::mutex handler_mu_;
  std::shared_ptr<const PressureHandler> handler_;
  std::mutex streams_mu_;
  std::vector<cudaStream_t> streams_;
  PinnedCache pinned_;
};

CudaRuntime& instance() {
  // Never destroyed: Buffers freed during process exit still find their pool.
  static CudaRuntime* runtime = new CudaRuntime();
  return *runtime;
}

// Loading the library installs the runtime. No CUDA call happens here.
const bool installed = [] {
  set_device_runtime(&instance());
  return true;
}();

}  // namespace

std::string device_name(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return "no device";
  try {
    static std::mutex mu;
    static std::array<std::string, kMaxDevices> names;
    std::lock_guard lock(mu);
    if (names[device].empty()) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        cudaGetLastError();
        return "unknown GPU";
      }
      names[device] = prop.name;
    }
    return names[device];
  } catch (...) {
    return "unknown GPU";
  }
}

namespace {
std::string failure_text(const std::string& call, int& device, const std::string& reason) {
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    device = -1;
  }
  return call + " failed on device " + std::to_string(device) + " (" + device_name(device) + "): " + reason;
}
}  // namespace

[[noreturn]] void throw_device_error(const std::string& call, int device, const std::string& reason) {
  throw DeviceError(failure_text(call, device, reason));
}

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, int device) {
  cudaGetLastError();  // clear a non-sticky error so that it is not reported twice
  std::string text = failure_text(call, device, cudaGetErrorString(error));
  if (error == cudaErrorMemoryAllocation) throw DeviceMemoryError(text);
  throw DeviceError(text);
}

DeviceRuntime& runtime() { return instance(); }

std::shared_ptr<Buffer> allocate_scratch(std::size_t bytes, int device, cudaStream_t stream) {
  return instance().allocate_in(bytes, device, stream_or_default(as_view(stream), device), true);
}

cudaStream_t stream_or_default(StreamView stream, int device) {
  return as_cuda(stream.is_default() ? instance().thread_stream(device) : stream);
}

int visible_device_count() noexcept { return instance().device_count(); }  // tessera/cuda/random.hpp

}  // namespace tessera::cuda
