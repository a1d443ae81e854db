#pragma once
/**
 * @file
 * StreamView: a device stream as a value (in the spirit of RMM's rmm::cuda_stream_view).
 *
 * A StreamView holds the native handle of a device stream without owning it: a cudaStream_t on
 * the CUDA back end, whatever a stand-in DeviceRuntime hands out in tests. Default-constructed,
 * it is the default stream (the null handle); DeviceRuntime and the device helpers read that as
 * "this thread's stream" where their documentation says so. Copying a view copies the handle
 * only; pass it by value.
 *
 * No CUDA header here (public headers stay light, and this one stays plain C++17 so that .cu
 * files compiled by nvcc can use it): CUDA code converts with static_cast<cudaStream_t>(s.native())
 * (the back end has tessera::cuda::as_cuda for it, in cuda/stream.hpp).
 */

namespace tessera {

/** @brief A non-owning view of a device stream: the default stream or a native handle. */
class StreamView {
 public:
  /** @brief The default stream (null handle). */
  constexpr StreamView() noexcept = default;
  /** @brief A view of the native handle `handle` (a cudaStream_t as void*); nullptr: the default stream. */
  constexpr explicit StreamView(void* handle) noexcept : handle_(handle) {}

  /** @brief The native handle (nullptr for the default stream). */
  constexpr void* native() const noexcept { return handle_; }
  /** @brief The same as native(). */
  constexpr void* value() const noexcept { return handle_; }
  /** @brief Whether this is the default stream (the null handle). */
  constexpr bool is_default() const noexcept { return handle_ == nullptr; }

  /** @brief Views are equal when they hold the same handle. */
  friend constexpr bool operator==(StreamView a, StreamView b) noexcept { return a.handle_ == b.handle_; }
  friend constexpr bool operator!=(StreamView a, StreamView b) noexcept { return a.handle_ != b.handle_; }

 private:
  void* handle_ = nullptr;
};

}  // namespace tessera
