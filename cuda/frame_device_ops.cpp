// The dataframe tasks' GPU work, registered as device variants under tessera.frame.cuda.* for
// the dataframe library's device tasks to call (src/dataframe/device_ops.cpp): a partition
// program (filters, arithmetic, comparisons) and the groupby partial and combine steps, on the
// CUDA instantiation of the Thrust algorithms (frame_ops.cu). Inputs are device frames in
// memory of ctx.device; work is queued on ctx.stream, which run_op synchronises.
#include <memory>
#include <vector>

#include "dataframe/device_backend.hpp"
#include "dataframe/device_program.hpp"
#include "dataframe/frame_params.hpp"
#include "frame_ops.hpp"
#include "runtime.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda {
namespace {

using dataframe::DeviceColumn;
using dataframe::DeviceFrame;

const DeviceFrame& frame_at(std::span<const Value> args, std::size_t i, const char* op) {
  if (i >= args.size() || !args[i].is_native() || args[i].native().type != dataframe::kDeviceFrameType)
    throw Error(std::string(op) + " (CUDA): argument " + std::to_string(i) + " is not a device frame");
  return *static_cast<const DeviceFrame*>(args[i].native().object.get());
}

Value frame_value(DeviceFrame f) {
  std::size_t bytes = 0;
  for (const auto& c : f.columns) bytes += c.values.nbytes() + c.valid.nbytes();
  return Value(Native{dataframe::kDeviceFrameType, std::make_shared<const DeviceFrame>(std::move(f)), bytes});
}

struct CudaBackend {
  int device;
  StreamView stream;
  DeviceFrame filter(const DeviceFrame& f, const DeviceColumn& m) {
    return dataframe::thrust_cuda::filter(f, m, device, stream);
  }
  DeviceColumn binary(const DeviceColumn& a, dataframe::BinaryOp op, const DeviceColumn& b) {
    return dataframe::thrust_cuda::binary(a, op, b, device, stream);
  }
  DeviceColumn binary(const DeviceColumn& a, dataframe::BinaryOp op, const dataframe::ScalarOperand& b) {
    return dataframe::thrust_cuda::binary(a, op, b, device, stream);
  }
  DeviceColumn binary(const dataframe::ScalarOperand& a, dataframe::BinaryOp op, const DeviceColumn& b) {
    return dataframe::thrust_cuda::binary(a, op, b, device, stream);
  }
};

Value map_cuda(const OpContext& ctx, std::span<const Value> args) {
  if (args.empty()) throw Error("map (CUDA): no arguments");
  const auto program = from_object<dataframe::detail::Program>(args[0].object());
  CudaBackend be{ctx.device < 0 ? 0 : ctx.device, ctx.stream};
  return frame_value(dataframe::detail::run_device_program(program, frame_at(args, 1, "map"), be));
}

Value groupby_partial_cuda(const OpContext& ctx, std::span<const Value> args) {
  if (args.empty()) throw Error("groupby (CUDA): no arguments");
  const auto spec = from_object<dataframe::GroupbySpec>(args[0].object());
  return frame_value(dataframe::thrust_cuda::groupby_partial(frame_at(args, 1, "groupby"), spec,
                                                             ctx.device < 0 ? 0 : ctx.device, ctx.stream));
}

Value groupby_combine_cuda(const OpContext& ctx, std::span<const Value> args) {
  if (args.empty()) throw Error("groupby (CUDA): no arguments");
  const auto params = from_object<dataframe::detail::CombineParams>(args[0].object());
  std::vector<DeviceFrame> parts;
  for (std::size_t i = 1; i < args.size(); ++i) parts.push_back(frame_at(args, i, "groupby"));
  return frame_value(dataframe::thrust_cuda::groupby_combine(parts, params.spec, ctx.device < 0 ? 0 : ctx.device,
                                                             ctx.stream));
}

// The relational algorithms (shuffle splits, sort, concatenation, merge) on this GPU, for the
// dataframe library's device tasks (src/dataframe/device_backend.hpp).
class CudaRelational final : public dataframe::detail::RelationalBackend {
 public:
  DeviceFrame hash_split(const DeviceFrame& f, const std::vector<std::string>& on, std::int64_t parts,
                         std::vector<std::int64_t>& offsets, int device, StreamView stream) override {
    return dataframe::thrust_cuda::hash_split(f, on, parts, offsets, device, stream);
  }
  DeviceFrame range_split(const DeviceFrame& f, const std::string& column, const std::vector<double>& bounds,
                          std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets,
                          int device, StreamView stream) override {
    return dataframe::thrust_cuda::range_split(f, column, bounds, parts, ascending, nulls_first, offsets, device, stream);
  }
  DeviceFrame sort(const DeviceFrame& f, const std::vector<dataframe::detail::SortKeySpec>& keys, bool nulls_first,
                   int device, StreamView stream) override {
    return dataframe::thrust_cuda::sort(f, keys, nulls_first, device, stream);
  }
  DeviceFrame concat(const std::vector<DeviceFrame>& frames, int device, StreamView stream) override {
    return dataframe::thrust_cuda::concat(frames, device, stream);
  }
  DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const dataframe::detail::JoinPlan& plan,
                   int device, StreamView stream) override {
    return dataframe::thrust_cuda::join(left, right, plan, device, stream);
  }
};

Value relational(const OpContext&, std::span<const Value>) {
  static CudaRelational backend;  // lives as long as the library
  return Value(Native{dataframe::detail::kRelationalBackendType,
                      std::shared_ptr<const void>(&backend, [](const void*) {}), 0});
}

Value active(const OpContext&, std::span<const Value>) {
  return Value(Block::scalar<bool>(tessera::device_runtime() == &runtime()));
}

const bool registered = [] {
  register_device_op(dataframe::detail::kCudaFrameActive, active);
  register_device_op(dataframe::detail::kCudaFrameRelational, relational);
  register_device_op(dataframe::detail::kCudaFrameMap, map_cuda);
  register_device_op(dataframe::detail::kCudaFrameGroupbyPartial, groupby_partial_cuda);
  register_device_op(dataframe::detail::kCudaFrameGroupbyCombine, groupby_combine_cuda);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
