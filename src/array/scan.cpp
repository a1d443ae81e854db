// Cumulative sums and products (Dask's method: every chunk is scanned on its own, in parallel,
// then the running total of the chunks before it is added, a short sequential chain of one
// slice per chunk), and diff / ediff1d as views.
#include "tessera/array/scan.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <span>

#include "algorithm_params.hpp"
#include "chunk_map.hpp"
#include "generator_reads.hpp"
#include "io_chunks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

DType scan_dtype(DType t) { return is_floating(t) ? t : DType::Int64; }

/** x[..., lo:hi, ...] on one axis. */
Array axis_slice(const Array& x, int axis, std::int64_t lo, std::int64_t hi) {
  std::vector<Index> ix(static_cast<std::size_t>(axis), Index(all()));
  ix.emplace_back(slice(lo, hi));
  return x[ix];
}

Array combine(const Array& a, const Array& b, bool product) { return product ? a * b : a + b; }

constexpr const char* kScanGeneratedOp = "tessera.array.scan_generated";

/** The scan of a generated chunk: its generator, and the chunk's place in the whole array. */
struct ScanGeneratedParams {
  ScanParams scan;
  GeneratorSpec spec;
  std::vector<std::int64_t> start, size;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(scan, spec, start, size);
  }
};

/**
 * Each chunk of x scanned on its own along p.axis. A generated x (random, arange) is drawn by the
 * scan itself, a row (or a slab across the axis) at a time, and scanned while it is in cache,
 * rather than made whole by one task and read back by another: a random walk (cumsum of normal
 * steps) then costs about what drawing the steps does.
 */
Array scan_chunks(const Array& x, const ScanParams& p, DType t, const char* name) {
  const Expr& e = expr_of(x);
  const auto spec = GeneratorSpec::of(e);
  if (!spec) return chunk_map(kScanOp, t, x.chunks(), {x}, {Value(to_object(p, "ScanParams"))}, same_grid_reads(x.chunks()), name);
  std::vector<Value> params;
  for (auto& box : io::chunk_boxes(e.chunks)) {
    ScanGeneratedParams g;
    g.scan = p;
    g.spec = *spec;
    g.start = std::move(box.start);
    g.size = std::move(box.shape);
    params.emplace_back(to_object(g, "ScanGeneratedParams"));
  }
  const std::size_t count = params.size();
  return chunk_map(kScanGeneratedOp, t, e.chunks, {}, std::move(params), std::vector<std::vector<ChunkRead>>(count),
                   name);
}

Array scan(const Array& in, std::optional<int> axis_opt, bool product, const char* name) {
  Array x = in;
  if (!axis_opt) x = x.ndim() == 1 ? x : x.reshape({-1});
  if (x.ndim() == 0) throw ShapeError(std::string(name) + ": needs an array of at least one dimension");
  const int axis = normalize_axis(axis_opt.value_or(0), x.ndim());
  const DType t = scan_dtype(x.dtype());
  if (x.dtype() != t) x = x.astype(t);  // NumPy accumulates in the result's dtype
  ScanParams p;
  p.kind = product ? 1 : 0;
  p.axis = axis;
  const Array scanned = scan_chunks(x, p, t, name);
  const auto& along = x.chunks()[static_cast<std::size_t>(axis)];
  if (along.size() <= 1) return scanned;
  // Chunk j adds the carry: the combined last slices of the chunks before it. Each carry is
  // computed once (materialised), from the one before, so the chain reads one slice per step.
  std::vector<Array> pieces;
  std::optional<Array> carry;
  std::int64_t off = 0;
  for (const std::int64_t len : along) {
    const Array piece = axis_slice(scanned, axis, off, off + len);
    pieces.push_back(carry ? combine(piece, *carry, product) : piece);
    if (len > 0) {
      const Array last = axis_slice(scanned, axis, off + len - 1, off + len);
      carry = carry ? materialize(combine(*carry, last, product)) : last;
    }
    off += len;
  }
  return concatenate(pieces, axis);
}

Array nan_to(const Array& x, double v) {
  if (!is_floating(x.dtype())) return x;
  return where(isnan(x), scalar(v, x.dtype()), x);
}

// ---- the host op ----------------------------------------------------------------------------------

template <typename T>
T scan_step(T acc, T v, bool product) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    // Wrap-around, as NumPy's integers.
    using U = std::uint64_t;
    return static_cast<T>(product ? U(acc) * U(v) : U(acc) + U(v));
  } else {
    return product ? static_cast<T>(acc * v) : static_cast<T>(acc + v);
  }
}

// Row by row along the axis: out[k] = out[k - 1] op in[k] over the whole inner extent at once,
// so an axis that is not the last one is read contiguously (and the loop vectorises).
template <typename T>
void scan_block(const T* in, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner, bool product) {
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* a = in + o * n * inner;
    T* b = out + o * n * inner;
    if (n == 0) continue;
    if (inner == 1) {
      T acc = a[0];
      b[0] = acc;
      for (std::int64_t k = 1; k < n; ++k) b[k] = acc = scan_step(acc, a[k], product);
      continue;
    }
    std::copy(a, a + inner, b);
    for (std::int64_t k = 1; k < n; ++k) {
      const T* prev = b + (k - 1) * inner;
      const T* cur = a + k * inner;
      T* dst = b + k * inner;
      for (std::int64_t i = 0; i < inner; ++i) dst[i] = scan_step(prev[i], cur[i], product);
    }
  }
}

Value scan_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 2) throw Error("scan: expected parameters and one block");
  const auto p = from_value<ScanParams>(args[0]);
  const Block& x = args[1].block();
  if (p.axis < 0 || p.axis >= x.ndim()) throw ShapeError("scan: axis out of range");
  Block out(x.dtype(), x.shape());
  std::int64_t outer = 1, inner = 1;
  for (int a = 0; a < p.axis; ++a) outer *= x.shape()[a];
  for (int a = p.axis + 1; a < x.ndim(); ++a) inner *= x.shape()[a];
  const std::int64_t n = x.shape()[p.axis];
  switch (x.dtype()) {
    case DType::Int64: scan_block(x.data<std::int64_t>(), out.data<std::int64_t>(), outer, n, inner, p.kind == 1); break;
    case DType::Float32: scan_block(x.data<float>(), out.data<float>(), outer, n, inner, p.kind == 1); break;
    case DType::Float64: scan_block(x.data<double>(), out.data<double>(), outer, n, inner, p.kind == 1); break;
    default: throw DTypeError("scan: a chunk of " + std::string(dtype_name(x.dtype())) + " (int64 or float expected)");
  }
  return Value(std::move(out));
}

/**
 * A generated chunk, drawn and scanned in pieces that stay in cache: along the last axis, a row
 * at a time, drawn into its place in the output and scanned there; along another axis, a slab
 * (the chunk's elements at one position on the axis) at a time, drawn and then combined with the
 * slab before it. The same steps (scan_step) as scan_block, in the same order, so the values are
 * those of scanning the generated chunk.
 */
template <typename T>
void scan_generated(const ScanGeneratedParams& g, T* out) {
  const auto& size = g.size;
  const int nd = static_cast<int>(size.size()), axis = g.scan.axis;
  const bool product = g.scan.kind == 1;
  const auto stride = g.spec.strides();
  const std::int64_t run = size.back();  // elements drawn in one call: along the last axis
  if (run == 0 || shape_size(Shape(size.begin(), size.end())) == 0) return;
  const std::int64_t runs = shape_size(Shape(size.begin(), size.end())) / run;
  // Runs in row-major order; run r starts at chunk-local coordinates `at`.
  std::vector<std::int64_t> at(static_cast<std::size_t>(nd), 0);
  std::int64_t inner = 1;  // elements of a slab across the axis, past it
  for (int a = axis + 1; a < nd; ++a) inner *= size[static_cast<std::size_t>(a)];
  for (std::int64_t r = 0; r < runs; ++r) {
    std::int64_t index = 0;
    for (int a = 0; a < nd; ++a)
      index += stride[static_cast<std::size_t>(a)] * (g.start[static_cast<std::size_t>(a)] + at[static_cast<std::size_t>(a)]);
    T* dst = out + r * run;
    g.spec.draw(index, run, dst);
    if (axis == nd - 1) {
      T acc = dst[0];
      for (std::int64_t k = 1; k < run; ++k) dst[k] = acc = scan_step(acc, dst[k], product);
    } else if (at[static_cast<std::size_t>(axis)] > 0) {
      const T* prev = dst - inner;  // the same place in the slab before
      for (std::int64_t k = 0; k < run; ++k) dst[k] = scan_step(prev[k], dst[k], product);
    }
    for (int a = nd - 1; a-- > 0;) {
      if (++at[static_cast<std::size_t>(a)] < size[static_cast<std::size_t>(a)]) break;
      at[static_cast<std::size_t>(a)] = 0;
    }
  }
}

Value scan_generated_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 1) throw Error("scan_generated: expected the parameters only");
  const auto g = from_value<ScanGeneratedParams>(args[0]);
  const std::size_t nd = g.spec.shape.size();
  if (g.start.size() != nd || g.size.size() != nd || g.scan.axis < 0 || static_cast<std::size_t>(g.scan.axis) >= nd)
    throw ShapeError("scan_generated: inconsistent parameters");
  Block out(g.spec.dtype, Shape(g.size.begin(), g.size.end()));
  if (g.spec.dtype == DType::Float64) scan_generated(g, out.data<double>());
  else scan_generated(g, out.data<std::int64_t>());
  return Value(std::move(out));
}

const bool scan_registered = [] {
  register_op(kScanOp, scan_op);
  register_op(kScanGeneratedOp, scan_generated_op);
  return true;
}();

}  // namespace

Array cumsum(const Array& x, std::optional<int> axis) { return scan(x, axis, false, "cumsum"); }
Array cumprod(const Array& x, std::optional<int> axis) { return scan(x, axis, true, "cumprod"); }
Array nancumsum(const Array& x, std::optional<int> axis) { return scan(nan_to(x, 0), axis, false, "nancumsum"); }
Array nancumprod(const Array& x, std::optional<int> axis) { return scan(nan_to(x, 1), axis, true, "nancumprod"); }

Array diff(const Array& x, int n, int axis) {
  if (n < 0) throw Error("diff: order must be non-negative, got " + std::to_string(n));
  if (x.ndim() == 0) throw ShapeError("diff requires input that is at least one dimensional");
  axis = normalize_axis(axis, x.ndim());
  Array r = x;
  for (int i = 0; i < n; ++i) {
    const std::int64_t len = r.shape()[static_cast<std::size_t>(axis)];
    if (len == 0) break;
    const Array hi = axis_slice(r, axis, 1, len), lo = axis_slice(r, axis, 0, len - 1);
    r = r.dtype() == DType::Bool ? (hi != lo) : hi - lo;
  }
  return r;
}

Array ediff1d(const Array& x) { return diff(x.ndim() == 1 ? x : x.reshape({-1}), 1, 0); }

}  // namespace tessera
