#pragma once
/**
 * @file A fake DeviceRuntime for tests on machines without a GPU.
 *
 * It hands out ordinary host memory labelled MemoryKind::Device (so device ops, run_op's moves,
 * the worker's device tier and to_host/to_device all run, and the bytes stay readable by the
 * test), enforces a memory limit like the real pool (calling the pressure handler and retrying
 * before throwing DeviceMemoryError), counts the bytes in use, copies with memcpy, and uses
 * dummy non-null pointers as streams. info() describes a "Fake GPU".
 *
 *     tessera_test::ScopedFakeDevice gpu({.total_memory = 1 << 20});
 *     // device_runtime() is the fake until `gpu` goes out of scope
 *
 * Buffers made by the fake may outlive it (a value cached by a client): their bookkeeping lives
 * in a shared state, not in the runtime object.
 */
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/core/device.hpp"

namespace tessera_test {

struct FakeDeviceOptions {
  int devices = 1;
  std::size_t total_memory = std::size_t{16} << 30;  ///< per device, as info().total_memory
  std::string name = "Fake GPU";
  /** Times an allocation calls the pressure handler (each call that frees something) before
   *  it gives up with DeviceMemoryError. */
  int max_pressure_retries = 8;
};

class FakeDeviceRuntime : public tessera::DeviceRuntime {
 public:
  explicit FakeDeviceRuntime(FakeDeviceOptions options = {});
  ~FakeDeviceRuntime() override;

  int device_count() noexcept override;
  tessera::GpuInfo info(int device) override;
  void set_memory_limit(int device, std::size_t bytes) override;
  std::size_t memory_limit(int device) override;
  std::size_t memory_in_use(int device) override;
  void set_pressure_handler(PressureHandler handler) override;
  std::shared_ptr<tessera::Buffer> allocate(std::size_t bytes, int device, tessera::StreamView stream = {}) override;
  std::shared_ptr<tessera::Buffer> allocate_pinned(std::size_t bytes) override;
  tessera::StreamView thread_stream(int device) override;
  void set_device(int device) override;
  void copy_async(void* dst, const void* src, std::size_t bytes, tessera::StreamView stream) override;
  void synchronize(tessera::StreamView stream) override;

  // ---- for tests ----
  /** @brief Times the pressure handler was called. */
  std::size_t pressure_calls() const;
  /** @brief Allocations that ended in DeviceMemoryError. */
  std::size_t failed_allocations() const;
  /** @brief Successful device allocations. */
  std::size_t allocations() const;
  /** @brief The largest memory_in_use(device) seen. */
  std::size_t peak_in_use(int device = 0) const;
  /** @brief Bytes copied by copy_async. */
  std::size_t bytes_copied() const;
  /** @brief The size of each copy_async, in order. */
  std::vector<std::size_t> copy_sizes() const;
  /** @brief The handler installed, if any (to call it by hand). */
  bool has_pressure_handler() const;

  struct State;

 private:
  void check_device(int device, const char* what) const;
  FakeDeviceOptions options_;
  std::shared_ptr<State> state_;
};

/** @brief Installs a FakeDeviceRuntime with set_device_runtime; restores the previous runtime on destruction. */
class ScopedFakeDevice {
 public:
  explicit ScopedFakeDevice(FakeDeviceOptions options = {});
  ~ScopedFakeDevice();
  ScopedFakeDevice(const ScopedFakeDevice&) = delete;
  ScopedFakeDevice& operator=(const ScopedFakeDevice&) = delete;
  FakeDeviceRuntime& runtime() { return *runtime_; }
  FakeDeviceRuntime* operator->() { return runtime_.get(); }

 private:
  std::unique_ptr<FakeDeviceRuntime> runtime_;
  tessera::DeviceRuntime* previous_ = nullptr;
};

}  // namespace tessera_test
