// Where a device task's relational algorithms run: device_backend.hpp.
#include "device_backend.hpp"

#include "device_convert.hpp"
#include "frame_params.hpp"
#include "tessera/ops/registry.hpp"

#ifdef TESSERA_HAS_FRAME_ALGORITHMS
#include "device_algorithms.hpp"
#endif

namespace tessera::dataframe::detail {

namespace {

// The CUDA back end's algorithms when it is loaded and its device runtime is the process's (a
// test's stand-in runtime replaces it), else none.
RelationalBackend* cuda_backend(const OpContext& ctx) {
  auto& registry = OpRegistry::global();
  if (!registry.contains(kCudaFrameActive) || !registry.contains(kCudaFrameRelational)) return nullptr;
  const OpFn active = registry.get(kCudaFrameActive).device;
  if (!active || !active(ctx, {}).block().item<bool>()) return nullptr;
  const OpFn get = registry.get(kCudaFrameRelational).device;
  if (!get) return nullptr;
  const Value v = get(ctx, {});
  if (!v.is_native() || v.native().type != kRelationalBackendType) return nullptr;
  return const_cast<RelationalBackend*>(static_cast<const RelationalBackend*>(v.native().object.get()));
}

[[noreturn, maybe_unused]] void no_relational_algorithms(const char* op) {
  throw Error(std::string(op) + ": no device frame algorithms in this process (no CUDA back end, and the library " +
              "was built without Thrust's headers)");
}

}  // namespace

bool frame_on_device(const DeviceFrame& f, int device) {
  for (const auto& c : f.columns)
    for (const Block* b : {&c.values, &c.valid})
      if (!b->empty() && b->size() > 0 &&
          (b->memory_kind() != MemoryKind::Device || b->buffer()->device() != device))
        return false;
  return true;
}

bool is_device_frame(const Value& v) { return v.is_native() && v.native().type == kDeviceFrameType; }

const DeviceFrame& device_frame_arg(const Value& v, const char* op) {
  if (!is_device_frame(v)) throw Error(std::string(op) + " (device): an argument is " + v.describe() + ", not a device frame");
  return *static_cast<const DeviceFrame*>(v.native().object.get());
}

Relational::Relational(const OpContext& ctx)
    : device_(ctx.device < 0 ? 0 : ctx.device), stream_(ctx.stream), cuda_(cuda_backend(ctx)) {}

DeviceFrame Relational::input(const DeviceFrame& f) const {
  if (cuda_) return frame_on_device(f, device_) ? f : frame_to_device(f, device_, stream_);
  return frame_to_host(f);
}

Value Relational::output(DeviceFrame f) const {
  return frame_value(cuda_ ? std::move(f) : frame_to_device(f, device_, stream_));
}

DeviceFrame Relational::hash_split(const DeviceFrame& f, const std::vector<std::string>& on, std::int64_t parts,
                                   std::vector<std::int64_t>& offsets) const {
  if (cuda_) return cuda_->hash_split(f, on, parts, offsets, device_, stream_);
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
  return thrust_host::hash_split(f, on, parts, offsets);
#else
  no_relational_algorithms("shuffle");
#endif
}

DeviceFrame Relational::range_split(const DeviceFrame& f, const std::string& column, const std::vector<double>& bounds,
                                    std::int64_t parts, bool ascending, bool nulls_first,
                                    std::vector<std::int64_t>& offsets) const {
  if (cuda_) return cuda_->range_split(f, column, bounds, parts, ascending, nulls_first, offsets, device_, stream_);
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
  return thrust_host::range_split(f, column, bounds, parts, ascending, nulls_first, offsets);
#else
  no_relational_algorithms("sort_values");
#endif
}

DeviceFrame Relational::sort(const DeviceFrame& f, const std::vector<SortKeySpec>& keys, bool nulls_first) const {
  if (cuda_) return cuda_->sort(f, keys, nulls_first, device_, stream_);
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
  return thrust_host::sort(f, keys, nulls_first);
#else
  no_relational_algorithms("sort_values");
#endif
}

DeviceFrame Relational::concat(const std::vector<DeviceFrame>& frames) const {
  if (frames.size() == 1) return frames.front();
  if (cuda_) return cuda_->concat(frames, device_, stream_);
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
  return thrust_host::concat(frames);
#else
  no_relational_algorithms("concat");
#endif
}

DeviceFrame Relational::join(const DeviceFrame& left, const DeviceFrame& right, const JoinPlan& plan) const {
  if (cuda_) return cuda_->join(left, right, plan, device_, stream_);
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
  return thrust_host::join(left, right, plan);
#else
  no_relational_algorithms("merge");
#endif
}

}  // namespace tessera::dataframe::detail
