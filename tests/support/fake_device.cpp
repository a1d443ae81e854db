#include "fake_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace tessera_test {

using tessera::Buffer;
using tessera::DeviceError;
using tessera::DeviceMemoryError;
using tessera::MemoryKind;
using tessera::StreamView;

struct FakeDeviceRuntime::State {
  explicit State(int devices) : limit(devices, 0), in_use(devices, 0), peak(devices, 0) {}
  mutable std::mutex mu;  // never held while calling the pressure handler
  std::vector<std::size_t> limit;   // 0: the device's total memory
  std::vector<std::size_t> in_use;
  std::vector<std::size_t> peak;
  PressureHandler handler;
  std::size_t pressure_calls = 0, failed = 0, allocations = 0, copied = 0;
  std::vector<std::size_t> copy_sizes;
};

namespace {
// One dummy stream per thread and device: distinct non-null pointers nobody dereferences.
thread_local char t_streams[64];
}  // namespace

FakeDeviceRuntime::FakeDeviceRuntime(FakeDeviceOptions options)
    : options_(std::move(options)), state_(std::make_shared<State>(std::max(0, options_.devices))) {}

FakeDeviceRuntime::~FakeDeviceRuntime() = default;

void FakeDeviceRuntime::check_device(int device, const char* what) const {
  if (device < 0 || device >= options_.devices)
    throw DeviceError(std::string("fake device runtime: ") + what + ": no device " + std::to_string(device) + " (" +
                      std::to_string(options_.devices) + " visible)");
}

int FakeDeviceRuntime::device_count() noexcept { return options_.devices; }

tessera::GpuInfo FakeDeviceRuntime::info(int device) {
  check_device(device, "info");
  tessera::GpuInfo g;
  g.ordinal = device;
  g.name = options_.name;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-00000000-0000-0000-0000-%012d", device);
  g.uuid = uuid;
  char bus[32];
  std::snprintf(bus, sizeof bus, "0000:%02x:00.0", device + 1);
  g.pci_bus_id = bus;
  g.total_memory = options_.total_memory;
  g.cc_major = 9;
  g.cc_minor = 0;
  return g;
}

void FakeDeviceRuntime::set_memory_limit(int device, std::size_t bytes) {
  check_device(device, "set_memory_limit");
  std::lock_guard lock(state_->mu);
  state_->limit[device] = bytes;
}

std::size_t FakeDeviceRuntime::memory_limit(int device) {
  check_device(device, "memory_limit");
  std::lock_guard lock(state_->mu);
  const std::size_t l = state_->limit[device];
  return l == 0 ? options_.total_memory : std::min(l, options_.total_memory);
}

std::size_t FakeDeviceRuntime::memory_in_use(int device) {
  check_device(device, "memory_in_use");
  std::lock_guard lock(state_->mu);
  return state_->in_use[device];
}

void FakeDeviceRuntime::set_pressure_handler(PressureHandler handler) {
  std::lock_guard lock(state_->mu);
  state_->handler = std::move(handler);
}

std::shared_ptr<Buffer> FakeDeviceRuntime::allocate(std::size_t bytes, int device, StreamView) {
  check_device(device, "allocate");
  const std::size_t limit = memory_limit(device);
  for (int attempt = 0;; ++attempt) {
    PressureHandler handler;
    std::size_t used = 0;
    {
      std::lock_guard lock(state_->mu);
      used = state_->in_use[device];
      if (used + bytes <= limit) {
        state_->in_use[device] += bytes;
        state_->peak[device] = std::max(state_->peak[device], state_->in_use[device]);
        ++state_->allocations;
        break;
      }
      if (attempt < options_.max_pressure_retries) {
        handler = state_->handler;
        if (handler) ++state_->pressure_calls;
      }
    }
    // As the real pool: the handler runs on this thread without any runtime lock held, since it
    // frees device buffers (whose deleters come back here) and copies to host.
    const std::size_t freed = handler ? handler(device, used + bytes - limit) : 0;
    if (freed == 0 || !handler) {
      std::size_t in_use;
      {
        std::lock_guard lock(state_->mu);
        // Something may have been freed by another thread meanwhile: one last try.
        if (state_->in_use[device] + bytes <= limit) {
          state_->in_use[device] += bytes;
          state_->peak[device] = std::max(state_->peak[device], state_->in_use[device]);
          ++state_->allocations;
          break;
        }
        ++state_->failed;
        in_use = state_->in_use[device];
      }
      throw DeviceMemoryError("fake device " + std::to_string(device) + ": cannot allocate " + std::to_string(bytes) +
                              " bytes (" + std::to_string(in_use) + " of " + std::to_string(limit) +
                              " bytes in use, after spilling)");
    }
  }
  constexpr std::size_t alignment = 256;
  const std::size_t rounded = std::max<std::size_t>(alignment, (bytes + alignment - 1) / alignment * alignment);
  void* p = std::aligned_alloc(alignment, rounded);
  if (!p) {
    std::lock_guard lock(state_->mu);
    state_->in_use[device] -= bytes;
    throw std::bad_alloc();
  }
  std::shared_ptr<State> state = state_;  // the buffer may outlive this runtime object
  return Buffer::adopt(p, bytes, MemoryKind::Device, device, [state, device](void* q, std::size_t n) {
    std::free(q);
    std::lock_guard lock(state->mu);
    state->in_use[device] -= n;
  });
}

std::shared_ptr<Buffer> FakeDeviceRuntime::allocate_pinned(std::size_t bytes) {
  constexpr std::size_t alignment = 64;
  const std::size_t rounded = std::max<std::size_t>(alignment, (bytes + alignment - 1) / alignment * alignment);
  void* p = std::aligned_alloc(alignment, rounded);
  if (!p) throw std::bad_alloc();
  return Buffer::adopt(p, bytes, MemoryKind::PinnedHost, -1, [](void* q, std::size_t) { std::free(q); });
}

StreamView FakeDeviceRuntime::thread_stream(int device) {
  check_device(device, "thread_stream");
  return StreamView(&t_streams[device % static_cast<int>(sizeof t_streams)]);
}

void FakeDeviceRuntime::set_device(int device) { check_device(device, "set_device"); }

void FakeDeviceRuntime::copy_async(void* dst, const void* src, std::size_t bytes, StreamView) {
  if (bytes) std::memcpy(dst, src, bytes);
  std::lock_guard lock(state_->mu);
  state_->copied += bytes;
  state_->copy_sizes.push_back(bytes);
}

void FakeDeviceRuntime::synchronize(StreamView) {}

std::size_t FakeDeviceRuntime::pressure_calls() const {
  std::lock_guard lock(state_->mu);
  return state_->pressure_calls;
}

std::size_t FakeDeviceRuntime::failed_allocations() const {
  std::lock_guard lock(state_->mu);
  return state_->failed;
}

std::size_t FakeDeviceRuntime::allocations() const {
  std::lock_guard lock(state_->mu);
  return state_->allocations;
}

std::size_t FakeDeviceRuntime::peak_in_use(int device) const {
  check_device(device, "peak_in_use");
  std::lock_guard lock(state_->mu);
  return state_->peak[device];
}

std::size_t FakeDeviceRuntime::bytes_copied() const {
  std::lock_guard lock(state_->mu);
  return state_->copied;
}

std::vector<std::size_t> FakeDeviceRuntime::copy_sizes() const {
  std::lock_guard lock(state_->mu);
  return state_->copy_sizes;
}

bool FakeDeviceRuntime::has_pressure_handler() const {
  std::lock_guard lock(state_->mu);
  return static_cast<bool>(state_->handler);
}

ScopedFakeDevice::ScopedFakeDevice(FakeDeviceOptions options)
    : runtime_(std::make_unique<FakeDeviceRuntime>(std::move(options))) {
  previous_ = tessera::device_runtime();
  tessera::set_device_runtime(runtime_.get());
}

ScopedFakeDevice::~ScopedFakeDevice() { tessera::set_device_runtime(previous_); }

}  // namespace tessera_test
