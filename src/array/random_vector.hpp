#pragma once
// Internal: the op behind multinomial and multivariate_hypergeometric (random_vector.cpp) and the
// host half of its device variant, which the CUDA back end (cuda/random_rows_op.cpp) registers
// with its kernel and the tests run with a stand-in kernel on a fake device.
#include <span>

#include "random_rows.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera::detail {

/** One task per chunk; its only argument is the chunk's parameters (RowsParams). */
inline constexpr const char* kRandomRowsOp = "tessera.array.random_rows";

/**
 * The device variant of kRandomRowsOp around `kernel`: decodes the parameters, puts the
 * probabilities or colours and the chunk's place on the device (ctx.device, ctx.stream, through
 * the device runtime), allocates the int64 output block there and runs `kernel` over the rows.
 * The result stays in device memory. Throws DeviceError without a device runtime.
 */
Value random_rows_on_device(const OpContext& ctx, std::span<const Value> args, rng::RowsKernel kernel);

}  // namespace tessera::detail
