// Device variants of the array chunk ops of scans, sorting and statistics (src/array/scan.cpp,
// sort.cpp, statistics.cpp hold the host variants and algorithm_params.hpp their parameters),
// registered under the host ops' names when the CUDA back end loads. Each returns what its host
// twin returns (dtype, shape, values) in device memory of ctx.device, with the work queued on
// ctx.stream by the Thrust algorithms of src/array/device_algorithms.cuh (array_algorithms.cu);
// run_op has moved the block arguments there and synchronises the stream afterwards.
#include <cuda_runtime.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "array/algorithm_params.hpp"
#include "array_algorithms.hpp"
#include "check.hpp"
#include "runtime.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::cuda {
namespace {

using array::Index;

/** Scratch buffers of one op call, from the pool, freed in stream order when it ends. */
class CallScratch final : public array::Scratch {
 public:
  CallScratch(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  void* allocate(std::size_t bytes) override {
    buffers_.push_back(allocate_scratch(bytes, device_, stream_));
    return buffers_.back()->data();
  }

 private:
  int device_;
  cudaStream_t stream_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
};

/** One op call: where it runs and its scratch. */
struct Ctx {
  int device;
  cudaStream_t stream;
  CallScratch scratch;
  array::Call call;
  explicit Ctx(const OpContext& ctx)
      : device(ctx.device < 0 ? 0 : ctx.device),
        stream(stream_or_default(ctx.stream, device)),
        scratch(device, stream),
        call{&scratch, device, stream} {}
  Block block(DType t, Shape s) const { return device_block(t, std::move(s), device, as_view(stream)); }
};

/** Block argument i, in device memory of `device` (run_op moves it there). */
const Block& arg_block(std::span<const Value> args, std::size_t i, const char* op, int device) {
  if (i >= args.size()) throw Error(std::string(op) + ": missing block argument " + std::to_string(i));
  const Block& b = args[i].block();
  if (b.size() == 0) return b;
  if (b.memory_kind() != MemoryKind::Device || b.buffer()->device() != device)
    throw DeviceError(std::string(op) + " (device): argument " + std::to_string(i) + " is not on device " +
                      std::to_string(device) + " (run device ops through run_op)");
  return b;
}

std::pair<Index, Index> rows_of(const Block& b) {
  if (b.ndim() == 0) return {1, 1};
  const Index n = b.shape().back();
  return {n == 0 ? 0 : b.size() / n, n};
}

/** Copies the (rows, w) box at column c0 of src (rows, src_w) into dst (rows, dst_w) at column d0. */
void copy_columns(const Ctx& c, const void* src, Index src_w, Index c0, void* dst, Index dst_w, Index d0, Index w, Index rows,
                  std::size_t item) {
  if (w == 0 || rows == 0) return;
  check(cudaMemcpy2DAsync(static_cast<char*>(dst) + d0 * item, dst_w * item, static_cast<const char*>(src) + c0 * item,
                          src_w * item, w * item, rows, cudaMemcpyDeviceToDevice, c.stream),
        "cudaMemcpy2DAsync (topk)", c.device);
}

Value scan_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::ScanParams>(args[0]);
  const Block& x = arg_block(args, 1, "scan", c.device);
  if (p.axis < 0 || p.axis >= x.ndim()) throw ShapeError("scan: axis out of range");
  Block out = c.block(x.dtype(), x.shape());
  Index outer = 1, inner = 1;
  for (int a = 0; a < p.axis; ++a) outer *= x.shape()[a];
  for (int a = p.axis + 1; a < x.ndim(); ++a) inner *= x.shape()[a];
  array::scan(c.call, x.dtype(), x.raw(), out.raw(), outer, x.shape()[p.axis], inner, p.kind == 1);
  return Value(std::move(out));
}

Value sort_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::SortParams>(args[0]);
  const Block& x = arg_block(args, 1, "sort", c.device);
  Block out = c.block(p.arg ? DType::Int64 : x.dtype(), x.shape());
  const auto [rows, n] = rows_of(x);
  array::sort_rows(c.call, x.dtype(), x.raw(), out.raw(), rows, n, p.arg);
  return Value(std::move(out));
}

Value topk_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::TopkParams>(args[0]);
  const Block& first = arg_block(args, 1, "topk", c.device);
  const Index kk = p.k < 0 ? -p.k : p.k;
  const Index rows = first.ndim() == 0 ? 1 : shape_size(Shape(first.shape().begin(), first.shape().end() - 1));
  const bool packed_in = p.arg && p.from_partials;
  // Candidates: one (rows, total) array of values (and of indices, from packed partials).
  Index total = 0;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const Block& b = arg_block(args, i, "topk", c.device);
    const Index len = b.ndim() ? b.shape().back() : 1;
    total += packed_in ? len / 2 : len;
  }
  const DType vt = first.dtype();
  const std::size_t item = itemsize(vt);
  const void* values = first.raw();
  const void* indices = nullptr;
  if (args.size() > 2 || packed_in) {
    void* v = c.scratch.allocate(item * static_cast<std::size_t>(std::max<Index>(1, rows * total)));
    double* ix = packed_in ? static_cast<double*>(c.scratch.allocate(8 * static_cast<std::size_t>(std::max<Index>(1, rows * total))))
                           : nullptr;
    Index col = 0;
    for (std::size_t i = 1; i < args.size(); ++i) {
      const Block& b = args[i].block();
      const Index len = b.ndim() ? b.shape().back() : 1;
      const Index m = packed_in ? len / 2 : len;
      copy_columns(c, b.raw(), len, 0, v, total, col, m, rows, item);
      if (packed_in) copy_columns(c, b.raw(), len, m, ix, total, col, m, rows, 8);
      col += m;
    }
    values = v;
    indices = ix;
  }
  const Index m = std::min(kk, total);
  Shape shape = first.shape();
  const bool packed_out = p.arg && !p.final;
  shape.back() = packed_out ? 2 * m : m;
  Block out = c.block(p.final ? (p.arg ? DType::Int64 : vt) : (p.arg ? DType::Float64 : vt), shape);
  // Indices of a chunk's candidates: offset + position (every partial read is from_partials).
  const Index offset = p.from_partials ? 0 : p.offset;
  if (!p.arg) {
    array::topk_rows(c.call, vt, values, indices, DType::Float64, offset, rows, total, p.k, out.raw(), nullptr);
  } else if (p.final) {
    array::topk_rows(c.call, vt, values, indices, DType::Float64, offset, rows, total, p.k, nullptr, out.data<Index>());
  } else {
    void* v = c.scratch.allocate(item * static_cast<std::size_t>(std::max<Index>(1, rows * m)));
    auto* ix = static_cast<Index*>(c.scratch.allocate(8 * static_cast<std::size_t>(std::max<Index>(1, rows * m))));
    auto* dx = static_cast<double*>(c.scratch.allocate(8 * static_cast<std::size_t>(std::max<Index>(1, rows * m))));
    array::topk_rows(c.call, vt, values, indices, DType::Float64, offset, rows, total, p.k, v, ix);
    // A packed partial holds float64 values, then the indices as float64.
    auto* dv = static_cast<double*>(c.scratch.allocate(8 * static_cast<std::size_t>(std::max<Index>(1, rows * m))));
    array::to_double(c.call, vt, v, dv, rows * m);
    array::index_to_double(c.call, ix, dx, rows * m);
    copy_columns(c, dv, m, 0, out.raw(), 2 * m, 0, m, rows, 8);
    copy_columns(c, dx, m, 0, out.raw(), 2 * m, m, m, rows, 8);
  }
  return Value(std::move(out));
}

Value quantile_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::QuantileParams>(args[0]);
  const Block& x = arg_block(args, 1, "quantile", c.device);
  if (p.reduced < 0 || p.reduced > x.ndim()) throw ShapeError("quantile: bad number of reduced axes");
  const Shape kept(x.shape().begin(), x.shape().end() - p.reduced);
  const Index rows = shape_size(kept);
  const Index n = rows == 0 ? 0 : x.size() / rows;
  Shape shape = kept;
  if (p.q_axis) shape.insert(shape.begin(), static_cast<Index>(p.q.size()));
  Block out = c.block(p.out_dtype, shape);
  array::quantile_rows(c.call, x.dtype(), x.raw(), rows, n, p.q, p.method, p.skip_nan, p.out_dtype, out.raw());
  return Value(std::move(out));
}

Value searchsorted_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::SearchParams>(args[0]);
  const Block& a = arg_block(args, 1, "searchsorted", c.device);
  const Block& v = arg_block(args, 2, "searchsorted", c.device);
  if (a.dtype() != v.dtype()) throw DTypeError("searchsorted: a and v of different dtypes");
  Block out = c.block(DType::Int64, v.shape());
  array::searchsorted(c.call, a.dtype(), a.raw(), a.size(), v.raw(), v.size(), out.data<Index>(), p.right);
  return Value(std::move(out));
}

Value isin_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::IsinParams>(args[0]);
  const Block& x = arg_block(args, 1, "isin", c.device);
  const Block& t = arg_block(args, 2, "isin", c.device);
  if (x.dtype() != t.dtype()) throw DTypeError("isin: elements and test elements of different dtypes");
  Block out = c.block(DType::Bool, x.shape());
  array::isin(c.call, x.dtype(), x.raw(), x.size(), t.raw(), t.size(), out.data<bool>(), p.invert);
  return Value(std::move(out));
}

const double* weights_of(std::span<const Value> args, bool weighted, const Block& x, const char* op, int device) {
  if (!weighted) return nullptr;
  const Block& w = arg_block(args, 2, op, device);
  if (w.size() != x.size()) throw ShapeError(std::string(op) + ": weights of another size than the data");
  if (w.dtype() != DType::Float64) throw DTypeError(std::string(op) + ": float64 weights expected");
  return w.size() ? w.data<double>() : nullptr;
}

Value histogram_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::HistogramParams>(args[0]);
  const Block& x = arg_block(args, 1, "histogram", c.device);
  const double* w = weights_of(args, p.weighted, x, "histogram", c.device);
  Block out = c.block(p.weighted ? DType::Float64 : DType::Int64, {1, static_cast<Index>(p.edges.size()) - 1});
  array::histogram(c.call, x.dtype(), x.raw(), x.size(), w, p.edges, p.norm, out.raw());
  return Value(std::move(out));
}

Value bincount_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::BincountParams>(args[0]);
  const Block& x = arg_block(args, 1, "bincount", c.device);
  const double* w = weights_of(args, p.weighted, x, "bincount", c.device);
  Block out = c.block(p.weighted ? DType::Float64 : DType::Int64, {1, p.length});
  if (!array::bincount(c.call, x.dtype(), x.raw(), x.size(), w, p.length, out.raw()))
    throw Error("bincount: the input must not hold negative values");
  return Value(std::move(out));
}

Value unique_device(const OpContext& ctx, std::span<const Value> args) {
  Ctx c(ctx);
  const auto p = from_value<detail::UniqueParams>(args[0]);
  const Block& first = arg_block(args, 1, "unique", c.device);
  const DType wide = p.from_partials ? first.dtype() : detail::unique_partial_dtype(first.dtype());
  // Every (value, count) pair in one pair of arrays.
  Index n = 0;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const Block& b = arg_block(args, i, "unique", c.device);
    if (p.from_partials && (b.dtype() != wide || b.ndim() != 2 || b.shape()[0] != 2)) throw ShapeError("unique: malformed partial");
    n += p.from_partials ? b.shape()[1] : b.size();
  }
  const std::size_t bytes = 8 * static_cast<std::size_t>(std::max<Index>(1, n));
  void* values = c.scratch.allocate(bytes);
  auto* counts = static_cast<Index*>(c.scratch.allocate(bytes));
  if (!p.from_partials) {
    array::widen(c.call, first.dtype(), first.raw(), n, values);
    array::fill_index(c.call, counts, n, 1);
  } else {
    Index at = 0;
    for (std::size_t i = 1; i < args.size(); ++i) {
      const Block& b = args[i].block();
      const Index m = b.shape()[1];
      if (m == 0) continue;
      const auto* row = static_cast<const char*>(b.raw());
      check(cudaMemcpyAsync(static_cast<char*>(values) + 8 * at, row, 8 * static_cast<std::size_t>(m), cudaMemcpyDeviceToDevice,
                            c.stream),
            "cudaMemcpyAsync (unique)", c.device);
      if (wide == DType::Float64) array::double_to_index(c.call, reinterpret_cast<const double*>(row + 8 * m), counts + at, m);
      else
        check(cudaMemcpyAsync(counts + at, row + 8 * m, 8 * static_cast<std::size_t>(m), cudaMemcpyDeviceToDevice, c.stream),
              "cudaMemcpyAsync (unique)", c.device);
      at += m;
    }
  }
  void* out_values = c.scratch.allocate(bytes);
  auto* out_counts = static_cast<Index*>(c.scratch.allocate(bytes));
  const Index m = array::unique_counts(c.call, wide, values, counts, n, out_values, out_counts);
  Block out = c.block(wide, {2, m});
  if (m > 0) {
    char* o = static_cast<char*>(out.raw());
    check(cudaMemcpyAsync(o, out_values, 8 * static_cast<std::size_t>(m), cudaMemcpyDeviceToDevice, c.stream),
          "cudaMemcpyAsync (unique)", c.device);
    if (wide == DType::Float64) array::index_to_double(c.call, out_counts, reinterpret_cast<double*>(o + 8 * m), m);
    else
      check(cudaMemcpyAsync(o + 8 * m, out_counts, 8 * static_cast<std::size_t>(m), cudaMemcpyDeviceToDevice, c.stream),
            "cudaMemcpyAsync (unique)", c.device);
  }
  return Value(std::move(out));
}

const bool registered = [] {
  register_device_op(detail::kScanOp, scan_device);
  register_device_op(detail::kSortOp, sort_device);
  register_device_op(detail::kTopkOp, topk_device);
  register_device_op(detail::kQuantileOp, quantile_device);
  register_device_op(detail::kSearchsortedOp, searchsorted_device);
  register_device_op(detail::kIsinOp, isin_device);
  register_device_op(detail::kHistogramOp, histogram_device);
  register_device_op(detail::kBincountOp, bincount_device);
  register_device_op(detail::kUniqueOp, unique_device);
  return true;
}();

}  // namespace
}  // namespace tessera::cuda
