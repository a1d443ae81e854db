#pragma once
/**
 * @file Private: where a device task's relational algorithms (device_relational.cuh: a shuffle's
 * split, a concatenation, a sort, a merge) run. On a GPU worker with the CUDA back end loaded
 * they run there, on ctx.device and ctx.stream: the back end registers a device op,
 * kCudaFrameRelational (frame_params.hpp), that returns its instantiation as a Native holding a
 * RelationalBackend pointer (the two libraries share no link, only the op registry). Otherwise (no CUDA back end, or a test's stand-in
 * device runtime in its place) they run on Thrust's host system, on host copies of the columns,
 * and the results are moved back to the task's device: the same templates, so machines without a
 * GPU test them.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "device_algorithms_types.hpp"
#include "device_frame.hpp"
#include "tessera/core/stream.hpp"
#include "tessera/core/value.hpp"

namespace tessera {
struct OpContext;
}

namespace tessera::dataframe::detail {

/** @brief The relational algorithms of one system (device_relational.cuh instantiated). */
class RelationalBackend {
 public:
  virtual ~RelationalBackend() = default;
  virtual DeviceFrame hash_split(const DeviceFrame& f, const std::vector<std::string>& on, std::int64_t parts,
                                 std::vector<std::int64_t>& offsets, int device, StreamView stream) = 0;
  virtual DeviceFrame range_split(const DeviceFrame& f, const std::string& column, const std::vector<double>& bounds,
                                  std::int64_t parts, bool ascending, bool nulls_first,
                                  std::vector<std::int64_t>& offsets, int device, StreamView stream) = 0;
  virtual DeviceFrame sort(const DeviceFrame& f, const std::vector<SortKeySpec>& keys, bool nulls_first, int device,
                           StreamView stream) = 0;
  virtual DeviceFrame concat(const std::vector<DeviceFrame>& frames, int device, StreamView stream) = 0;
  virtual DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const JoinPlan& plan, int device,
                           StreamView stream) = 0;
};

/** @brief The Native type of kCudaFrameRelational's result (its object: a RelationalBackend, never freed). */
inline constexpr const char* kRelationalBackendType = "tessera.frame.relational_backend";

/**
 * @brief One device task's view of the algorithms: `input` puts a frame where they run, the
 * calls run them, `output` puts a result on the task's device as a Value.
 */
class Relational {
 public:
  explicit Relational(const OpContext& ctx);
  /** Whether they run on the GPU (else on Thrust's host system). */
  bool on_gpu() const noexcept { return cuda_ != nullptr; }
  DeviceFrame input(const DeviceFrame& f) const;
  Value output(DeviceFrame f) const;
  DeviceFrame hash_split(const DeviceFrame& f, const std::vector<std::string>& on, std::int64_t parts,
                         std::vector<std::int64_t>& offsets) const;
  DeviceFrame range_split(const DeviceFrame& f, const std::string& column, const std::vector<double>& bounds,
                          std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets) const;
  DeviceFrame sort(const DeviceFrame& f, const std::vector<SortKeySpec>& keys, bool nulls_first) const;
  /** One frame is returned as it is. */
  DeviceFrame concat(const std::vector<DeviceFrame>& frames) const;
  DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const JoinPlan& plan) const;

 private:
  int device_;
  StreamView stream_;
  RelationalBackend* cuda_;
};

/** @brief The device frame a task argument holds; throws Error naming `op` otherwise. */
const DeviceFrame& device_frame_arg(const Value& v, const char* op);
/** @brief Whether every column of `f` is in device memory of `device` (an empty one counts as there). */
bool frame_on_device(const DeviceFrame& f, int device);
/** @brief Whether a Value holds a device frame. */
bool is_device_frame(const Value& v);

}  // namespace tessera::dataframe::detail
