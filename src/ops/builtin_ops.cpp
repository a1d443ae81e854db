/** @file The built-in graph-level op "tessera.identity" ("tessera.fused" is fuse.cpp's). */
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera {
namespace {

Value identity_op(const OpContext& ctx, std::span<const Value> args) {
  if (args.size() != 1)
    throw Error("tessera.identity takes 1 argument, got " + std::to_string(args.size()));
  return args[0];
}

const bool registered = [] {
  register_op("tessera.identity", identity_op);
  // It only passes values along, so the same code is its device variant: device values stay
  // on the device.
  register_device_op("tessera.identity", identity_op);
  return true;
}();

}  // namespace
}  // namespace tessera
