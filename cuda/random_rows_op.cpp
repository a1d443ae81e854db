// The device variant of multinomial's and multivariate_hypergeometric's rows
// (detail::kRandomRowsOp): the array layer's device half (parameters to the device, the output
// block there) around this back end's kernel (random_rows.cu). The result stays on the device.
#include "array/random_vector.hpp"
#include "random_rows.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera::cuda {
namespace {

const bool registered = [] {
  register_device_op(detail::kRandomRowsOp, [](const OpContext& ctx, std::span<const Value> args) {
    return detail::random_rows_on_device(ctx, args, random_rows_kernel);
  });
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
