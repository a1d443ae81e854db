// apply_along_axis: a registered function of 1-d blocks run over every 1-d slice of an array
// along one axis (Dask's apply_along_axis, whose func1d is a Python callable; here it is an op
// registered by name, so that workers of a cluster can run it too).
//
// The axis is moved last and made one chunk; one chunk-level task per chunk then calls the
// function on each of its rows and lays the results out one after another, and a transpose puts
// the function's output axes where the axis was.
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <numeric>

#include "chunk_map.hpp"
#include "tessera/array/numpy_names.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

constexpr const char* kApplyAlongAxisOp = "tessera.array.apply_along_axis";

struct ApplyAlongAxisParams {
  std::string op;
  DType out_dtype = DType::Float64;
  std::vector<std::int64_t> out_shape;
  template <class Ar>
  void serialize(Ar& ar) { ar(op, out_dtype, out_shape); }
};

Value apply_along_axis_op(const OpContext& ctx, std::span<const Value> args) {
  if (args.size() != 2 || !args[1].is_block()) throw Error("apply_along_axis: expected parameters and one block");
  const auto p = from_value<ApplyAlongAxisParams>(args[0]);
  const Block& in = args[1].block();
  const OpInfo& fn = OpRegistry::global().get(p.op);
  const std::int64_t length = in.ndim() ? in.shape().back() : 1;
  const std::int64_t rows = length ? in.size() / length : 0;
  const Shape out_shape(p.out_shape.begin(), p.out_shape.end());
  const std::int64_t out_size = shape_size(out_shape);
  Shape shape(in.shape().begin(), in.shape().end() - (in.ndim() ? 1 : 0));
  shape.insert(shape.end(), out_shape.begin(), out_shape.end());
  Block out(p.out_dtype, shape);
  const std::size_t in_row = static_cast<std::size_t>(length) * itemsize(in.dtype());
  const std::size_t out_row = static_cast<std::size_t>(out_size) * itemsize(p.out_dtype);
  for (std::int64_t r = 0; r < rows; ++r) {
    Block row(in.dtype(), {length});
    std::memcpy(row.raw(), static_cast<const char*>(in.raw()) + r * in_row, in_row);
    const Value result = fn.host(ctx, std::vector<Value>{Value(std::move(row))});
    if (!result.is_block()) throw Error("apply_along_axis: " + p.op + " returned " + result.describe() + ", not a block");
    Block b = result.block();
    if (b.shape() != out_shape)
      throw ShapeError("apply_along_axis: " + p.op + " returned shape " + shape_to_string(b.shape()) + " where " +
                       shape_to_string(out_shape) + " was declared");
    if (b.dtype() != p.out_dtype) b = b.astype(p.out_dtype);
    std::memcpy(static_cast<char*>(out.raw()) + r * out_row, b.raw(), out_row);
  }
  return Value(std::move(out));
}

const bool apply_along_axis_registered = [] {
  register_op(kApplyAlongAxisOp, apply_along_axis_op);
  return true;
}();

}  // namespace

Array apply_along_axis(const std::string& op, int axis, const Array& a, DType out_dtype, const Shape& out_shape) {
  if (!OpRegistry::global().contains(op))
    throw UnknownOperationError("apply_along_axis: unknown operation '" + op +
                                "' (register it with TESSERA_REGISTER_FUNCTION)");
  const int nd = a.ndim();
  if (nd == 0) throw ShapeError("apply_along_axis: the array must have at least one dimension");
  if (axis < -nd || axis >= nd)
    throw ShapeError("apply_along_axis: axis " + std::to_string(axis) + " is out of bounds for an array of dimension " +
                     std::to_string(nd));
  if (axis < 0) axis += nd;
  for (auto n : out_shape)
    if (n < 0) throw ShapeError("apply_along_axis: the output shape must not be negative");
  const Array moved = whole_axes(move_axes_last(a, {axis}), {nd - 1});
  // Output chunks: the other axes' chunks, then the function's axes, each one chunk.
  Chunks chunks(moved.chunks().begin(), moved.chunks().end() - 1);
  for (auto n : out_shape) chunks.push_back({n});
  ApplyAlongAxisParams p;
  p.op = op;
  p.out_dtype = out_dtype;
  p.out_shape.assign(out_shape.begin(), out_shape.end());
  const Array applied = chunk_map(kApplyAlongAxisOp, out_dtype, chunks, {moved},
                                  {Value(to_object(p, "ApplyAlongAxisParams"))}, same_grid_reads(moved.chunks()),
                                  "apply_along_axis-" + op);
  // (other axes..., out axes...) -> (axes before `axis`, out axes, axes after `axis`).
  const int k = static_cast<int>(out_shape.size());
  std::vector<int> perm;
  for (int i = 0; i < axis; ++i) perm.push_back(i);
  for (int i = 0; i < k; ++i) perm.push_back(nd - 1 + i);
  for (int i = axis; i < nd - 1; ++i) perm.push_back(i);
  return applied.transpose(perm);
}

}  // namespace tessera
