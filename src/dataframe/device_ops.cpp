// The device variants of the dataframe tasks a GPU runs (map, groupby partial and combine). They
// call the CUDA back end's frame algorithms (registered by libtessera_cuda under
// tessera.frame.cuda.*) when it is loaded. Without it (the stand-in device runtime of the tests)
// the same algorithms run on Thrust's host system, on host copies of the columns, so the device
// path is tested on machines without a GPU.
#include <functional>

#include "arrow_util.hpp"
#include "device_backend.hpp"
#include "device_convert.hpp"
#include "device_program.hpp"
#include "frame_node.hpp"
#include "frame_params.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

#ifdef TESSERA_HAS_FRAME_ALGORITHMS
#include "device_algorithms.hpp"
#endif

namespace tessera::dataframe::detail {
namespace {

const DeviceFrame& frame_arg(std::span<const Value> args, std::size_t i, const char* op) {
  const Value& v = arg(args, i);
  if (!v.is_native() || v.native().type != kDeviceFrameType)
    throw Error(std::string(op) + " (device): argument " + std::to_string(i) + " is " + v.describe() +
                ", not a device frame");
  return *static_cast<const DeviceFrame*>(v.native().object.get());
}

// The CUDA back end's variant of `name` (empty when it is not loaded); a copy, as the registry
// may replace its entries.
OpFn cuda_variant(const char* name, const OpContext& ctx) {
  auto& registry = OpRegistry::global();
  if (!registry.contains(kCudaFrameActive) || !registry.contains(name)) return OpFn();
  const OpFn active = registry.get(kCudaFrameActive).device;
  if (!active || !active(ctx, {}).block().item<bool>()) return OpFn();
  return registry.get(name).device;
}

// Runs `cuda` with every device frame argument moved to ctx.device first (a partition that
// came over the wire as host bytes), else `fallback` on host copies.
Value dispatch(const char* cuda, const OpContext& ctx, std::span<const Value> args,
               const std::function<DeviceFrame(const std::vector<DeviceFrame>&)>& fallback, const char* op) {
  const int device = ctx.device < 0 ? 0 : ctx.device;
  if (const OpFn fn = cuda_variant(cuda, ctx)) {
    std::vector<Value> moved(args.begin(), args.end());
    for (auto& v : moved)
      if (v.is_native() && v.native().type == kDeviceFrameType) {
        const auto& f = *static_cast<const DeviceFrame*>(v.native().object.get());
        if (!frame_on_device(f, device)) v = frame_value(frame_to_device(f, device, ctx.stream));
      }
    return fn(ctx, moved);
  }
  std::vector<DeviceFrame> host;
  for (std::size_t i = 1; i < args.size(); ++i) host.push_back(frame_to_host(frame_arg(args, i, op)));
  return frame_value(frame_to_device(fallback(host), device, ctx.stream));
}

#ifdef TESSERA_HAS_FRAME_ALGORITHMS
struct HostBackend {
  DeviceFrame filter(const DeviceFrame& f, const DeviceColumn& m) { return thrust_host::filter(f, m); }
  DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const DeviceColumn& b) { return thrust_host::binary(a, op, b); }
  DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const ScalarOperand& b) { return thrust_host::binary(a, op, b); }
  DeviceColumn binary(const ScalarOperand& a, BinaryOp op, const DeviceColumn& b) { return thrust_host::binary(a, op, b); }
};
#endif

[[noreturn, maybe_unused]] void no_algorithms(const char* op) {
  throw Error(std::string(op) + ": no device frame algorithms in this process (no CUDA back end, and the library " +
              "was built without Thrust's headers)");
}

Value map_device(const OpContext& ctx, std::span<const Value> args) {
  const auto program = from_object<Program>(arg(args, 0).object());
  frame_arg(args, 1, "map");
  return dispatch(kCudaFrameMap, ctx, args, [&](const std::vector<DeviceFrame>& in) {
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
    HostBackend be;
    return run_device_program(program, in.at(0), be);
#else
    (void)in;
    no_algorithms("map");
#endif
  }, "map");
}

Value groupby_partial_device(const OpContext& ctx, std::span<const Value> args) {
  const auto spec = from_object<GroupbySpec>(arg(args, 0).object());
  frame_arg(args, 1, "groupby");
  return dispatch(kCudaFrameGroupbyPartial, ctx, args, [&](const std::vector<DeviceFrame>& in) {
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
    return thrust_host::groupby_partial(in.at(0), spec);
#else
    (void)in;
    no_algorithms("groupby");
#endif
  }, "groupby");
}

Value groupby_combine_device(const OpContext& ctx, std::span<const Value> args) {
  const auto params = from_object<CombineParams>(arg(args, 0).object());
  for (std::size_t i = 1; i < args.size(); ++i) frame_arg(args, i, "groupby");
  return dispatch(kCudaFrameGroupbyCombine, ctx, args, [&](const std::vector<DeviceFrame>& in) {
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
    return thrust_host::groupby_combine(in, params.spec);
#else
    (void)in;
    no_algorithms("groupby");
#endif
  }, "groupby");
}

const bool device_ops_registered = [] {
  register_device_op(kOpMap, map_device);
  register_device_op(kOpGroupbyPartial, groupby_partial_device);
  register_device_op(kOpGroupbyCombine, groupby_combine_device);
  return true;
}();

}  // namespace
}  // namespace tessera::dataframe::detail
