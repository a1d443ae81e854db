#pragma once
/**
 * @file
 * The device runtime: what the rest of Tessera may ask of the CUDA back end.
 *
 * libtessera is built and runs without CUDA. The CUDA back end (cuda/, libtessera_cuda.so) is
 * loaded on first use of device_runtime() from the folder that holds libtessera.so; when it is
 * absent, or the machine has no driver, device_runtime() is null and everything runs on the
 * host. Loading the back end creates no CUDA context: contexts appear only when a device is
 * first used (allocate, thread_stream, copies), so a process can set CUDA_VISIBLE_DEVICES first.
 *
 * Memory ownership: device and pinned buffers are Buffers whose deleter gives the memory back to
 * the pool that made it (stream-ordered free). A task's device work is ordered on the stream of
 * the thread running it; run_op synchronises that stream (never the whole device) before the
 * result is published, so a published device Block is complete and readable from any stream.
 */
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/stream.hpp"

namespace tessera {

/** @brief Where a task runs and where an array's chunks live: host memory or the worker's GPU. */
enum class Target : std::uint8_t { Host, Device };

const char* target_name(Target target) noexcept;

/** @brief A CUDA failure: names the call and the device. */
class DeviceError : public Error {
 public:
  using Error::Error;
};

/** @brief The device pool could not serve an allocation, even after spilling. */
class DeviceMemoryError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

/** @brief One GPU as the worker reports it (scheduler_info, logs). */
struct GpuInfo {
  int ordinal = -1;               ///< CUDA ordinal inside this process (0 once pinned)
  std::string name;               ///< "NVIDIA H100 80GB HBM3"
  std::string uuid;               ///< "GPU-5f0c...", stable across processes
  std::string pci_bus_id;         ///< "0000:19:00.0"
  std::size_t total_memory = 0;   ///< bytes
  int cc_major = 0, cc_minor = 0; ///< compute capability
};

/**
 * @brief The CUDA back end behind an interface (implemented in cuda/runtime.cu).
 *
 * Thread-safe. Every method that fails throws DeviceError naming the CUDA call and device.
 */
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  /** @brief Devices visible to this process (after CUDA_VISIBLE_DEVICES); 0 without a driver. */
  virtual int device_count() noexcept = 0;
  virtual GpuInfo info(int device) = 0;

  /**
   * @brief Caps the stream-ordered device pool of `device` at `bytes` (0: the device's size).
   * Call before the first allocation on that device.
   */
  virtual void set_memory_limit(int device, std::size_t bytes) = 0;
  virtual std::size_t memory_limit(int device) = 0;
  /** @brief Bytes held by live buffers of the device pool. */
  virtual std::size_t memory_in_use(int device) = 0;

  /**
   * @brief Called when the pool cannot serve `bytes` on `device`: should free device memory
   * (spill) and return how many bytes it released; the allocation is then retried. One handler
   * per process (the worker's data store); it runs on the allocating thread. The pool must call
   * it with none of its own locks held: the handler frees device buffers (whose deleters come
   * back to the pool) and copies to host, and it takes the data store's lock.
   */
  using PressureHandler = std::function<std::size_t(int device, std::size_t bytes)>;
  virtual void set_pressure_handler(PressureHandler handler) = 0;

  /**
   * @brief Device memory from the pool, usable in stream order on `stream` (the default
   * StreamView: this thread's stream). Throws DeviceMemoryError (device, bytes, pool use and
   * limit) when the pool cannot serve it after the pressure handler ran.
   */
  virtual std::shared_ptr<Buffer> allocate(std::size_t bytes, int device, StreamView stream = {}) = 0;
  /** @brief Page-locked host memory (for staging copies); reads like host memory. */
  virtual std::shared_ptr<Buffer> allocate_pinned(std::size_t bytes) = 0;

  /** @brief This thread's non-blocking stream on `device`, created on first use; lives until exit. */
  virtual StreamView thread_stream(int device) = 0;
  /** @brief Makes `device` current on this thread. */
  virtual void set_device(int device) = 0;
  /** @brief Copies bytes between host, pinned and device memory, in order on `stream`. */
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, StreamView stream) = 0;
  /** @brief Waits for the work queued on `stream` (and only that stream). */
  virtual void synchronize(StreamView stream) = 0;
};

/** @brief The CUDA back end of this process, loaded on first call; nullptr when unavailable. */
DeviceRuntime* device_runtime() noexcept;
/** @brief Why device_runtime() is null, or "loaded" (for messages and logs). */
std::string device_runtime_status();
/**
 * @brief Installs a runtime (the CUDA back end does this when it loads; tests install a fake
 * that hands out host memory labelled Device). Pass nullptr to remove it.
 */
void set_device_runtime(DeviceRuntime* runtime) noexcept;
/** @brief device_runtime() ? device_runtime()->device_count() : 0. */
int visible_gpu_count() noexcept;

/**
 * @brief An uninitialised block in device memory of `device` (ordered on `stream`; the default
 * StreamView: this thread's stream), e.g. the output of a user's kernel. Throws DeviceError
 * without a runtime.
 */
Block device_block(DType dtype, Shape shape, int device, StreamView stream = {});

/** @brief The same values in host memory; returns `block` itself when it is not on a device. */
Block to_host(const Block& block);
/**
 * @brief The same values in device memory of `device` (the block itself when already there),
 * copied in order on `stream` (the default StreamView: this thread's stream) and synchronised
 * before return. Throws DeviceError when there is no device runtime.
 */
Block to_device(const Block& block, int device, StreamView stream = {});

/**
 * @brief As to_device, but the copy is only queued on `stream`, not waited for: the result is
 * complete once `stream` has reached it, and `block` must stay alive until then. run_op moves a
 * device task's arguments this way and waits for the stream once, after the op.
 */
Block to_device_async(const Block& block, int device, StreamView stream = {});

}  // namespace tessera
