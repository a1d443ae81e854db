// Ranges, matrices, grids and arrays like another, built from index generators, views and
// element-wise operations, so that they fuse with their readers and run on host or device.
#include "tessera/array/creation_more.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "expr.hpp"
#include "generator.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace {

// The int64 index along one axis (0, 1, ..., n-1), chunked as given: the building block of every
// pattern here (a pure function of the element index, so it fuses anywhere).
Array index_along(std::int64_t n, const std::vector<std::int64_t>& axis_chunks) {
  return make_generator(GenKind::Arange, DType::Int64, Shape{n}, ChunkSpec(Chunks{axis_chunks}), 0, 1, 0, 0, 0,
                        "arange");
}

// A view with chosen output chunks (a blockwise node is evaluated over any chunking).
Array view_of(const Array& in, Shape shape, Chunks chunks, AffineMap map, const char* prefix) {
  auto e = make_expr<ViewExpr>(ExprKind::View, expr_of(in).dtype, std::move(shape), std::move(chunks), prefix);
  e->input = in.expr();
  e->target = in.expr()->target;
  e->map = std::move(map);
  return Array(e);
}

// `x` placed where `like` lives (generators are remade on the device, the same values).
Array on_target_of(const Array& x, const Array& like) {
  return like.target() == Target::Device ? x.to_device() : x;
}

// The (N, M) mask j - i <= k (or == k with `diagonal_only`), chunked (rows, cols).
Array band_mask(std::int64_t N, std::int64_t M, std::int64_t k, const std::vector<std::int64_t>& rows,
                const std::vector<std::int64_t>& cols, bool diagonal_only) {
  const Array i = index_along(N, rows)[{all(), newaxis}];
  const Array j = index_along(M, cols)[{newaxis, all()}];
  return diagonal_only ? (j - i) == k : (j - i) <= k;
}

void check_count(std::int64_t n, const char* what) {
  if (n < 0) throw ShapeError(std::string(what) + ": negative dimensions are not allowed (" + std::to_string(n) + ")");
}

// NumPy's linspace values, the step through `step`: (arange * step) + start in float64, the last
// one exactly stop; an integer dtype floors them.
Array linspace_impl(double start, double stop, std::int64_t num, bool endpoint, const ChunkSpec& chunks,
                    std::optional<DType> dtype, double* step_out) {
  if (num < 0) throw Error("linspace: number of samples, " + std::to_string(num) + ", must be non-negative");
  const DType t = dtype ? *dtype : DType::Float64;
  const Chunks c = normalize_chunks(chunks, Shape{num}, t);
  const std::int64_t div = endpoint ? num - 1 : num;
  const double delta = stop - start;
  const Array i = index_along(num, c[0]);
  Array y;
  double step = std::numeric_limits<double>::quiet_NaN();
  if (div > 0) {
    step = delta / static_cast<double>(div);
    // NumPy divides first when the step underflows to zero (denormal ranges).
    y = step == 0 ? (i / static_cast<double>(div)) * delta : i * step;
  } else {
    y = i * delta;
  }
  y = y + start;
  if (endpoint && num > 1) y = where(i == num - 1, scalar(stop), y);
  if (step_out) *step_out = step;
  if (!is_floating(t) && t != DType::Bool) y = floor(y);
  return t == DType::Float64 ? y : y.astype(t);
}

}  // namespace

Array linspace(double start, double stop, std::int64_t num, bool endpoint, ChunkSpec chunks, std::optional<DType> dtype) {
  return linspace_impl(start, stop, num, endpoint, chunks, dtype, nullptr);
}

std::pair<Array, double> linspace_with_step(double start, double stop, std::int64_t num, bool endpoint, ChunkSpec chunks,
                                            std::optional<DType> dtype) {
  double step = 0;
  Array y = linspace_impl(start, stop, num, endpoint, chunks, dtype, &step);
  return {y, step};
}

Array logspace(double start, double stop, std::int64_t num, bool endpoint, double base, ChunkSpec chunks,
               std::optional<DType> dtype) {
  Array y = power(scalar(base), linspace(start, stop, num, endpoint, chunks));
  return dtype && *dtype != DType::Float64 ? y.astype(*dtype) : y;
}

Array geomspace(double start, double stop, std::int64_t num, bool endpoint, ChunkSpec chunks, std::optional<DType> dtype) {
  if (start == 0 || stop == 0) throw Error("geomspace: geometric sequence cannot include zero");
  // NumPy turns start positive, works with logarithms and puts the sign back; the ends are exact.
  const double sign = start > 0 ? 1.0 : start < 0 ? -1.0 : start;  // NaN stays NaN
  const double s = start / sign, e = stop / sign;
  Array y = logspace(std::log10(s), std::log10(e), num, endpoint, 10.0, chunks);
  const Array i = index_along(num, y.chunks()[0]);
  if (num > 1 && endpoint) y = where(i == num - 1, scalar(e), y);
  if (num > 0) y = where(i == 0, scalar(s), y);
  if (sign != 1.0) y = y * sign;
  return dtype && *dtype != DType::Float64 ? y.astype(*dtype) : y;
}

Array eye(std::int64_t N, ChunkSpec chunks, std::optional<std::int64_t> M, std::int64_t k, DType dtype) {
  const std::int64_t m = M ? *M : N;
  check_count(N, "eye");
  check_count(m, "eye");
  const Chunks c = normalize_chunks(chunks, Shape{N, m}, dtype);
  return band_mask(N, m, k, c[0], c[1], true).astype(dtype);
}

Array identity(std::int64_t n, ChunkSpec chunks, DType dtype) { return eye(n, std::move(chunks), n, 0, dtype); }

Array tri(std::int64_t N, std::optional<std::int64_t> M, std::int64_t k, DType dtype, ChunkSpec chunks) {
  const std::int64_t m = M ? *M : N;
  check_count(N, "tri");
  check_count(m, "tri");
  const Chunks c = normalize_chunks(chunks, Shape{N, m}, dtype);
  const Array mask = band_mask(N, m, k, c[0], c[1], false);
  return dtype == DType::Bool ? mask : mask.astype(dtype);
}

namespace {

// The mask of tril(k) over the last two axes of m (a 1-d m counts as square, as in NumPy).
Array tril_mask(const Array& m, std::int64_t k, const char* what) {
  const int nd = m.ndim();
  if (nd < 1) throw ShapeError(std::string(what) + ": input must be at least 1-d");
  const auto& cols = m.chunks()[nd - 1];
  const auto& rows = nd >= 2 ? m.chunks()[nd - 2] : cols;
  const std::int64_t N = nd >= 2 ? m.shape()[nd - 2] : m.shape()[nd - 1];
  return band_mask(N, m.shape()[nd - 1], k, rows, cols, false);
}

}  // namespace

// The mask and the zero are placed with m, so that a device m gives one fused device program.
Array tril(const Array& m, std::int64_t k) {
  return where(on_target_of(tril_mask(m, k, "tril"), m), m, on_target_of(scalar(0, m.dtype()), m));
}

Array triu(const Array& m, std::int64_t k) {
  return where(on_target_of(tril_mask(m, k - 1, "triu"), m), on_target_of(scalar(0, m.dtype()), m), m);
}

Array diagonal(const Array& a, std::int64_t offset, int axis1, int axis2) {
  const Expr& e = expr_of(a);
  const int nd = static_cast<int>(e.shape.size());
  if (nd < 2) throw ShapeError("diagonal: the array must be at least 2-d");
  axis1 = normalize_axis(axis1, nd);
  axis2 = normalize_axis(axis2, nd);
  if (axis1 == axis2) throw ShapeError("diagonal: axis1 and axis2 cannot be the same");
  const std::int64_t o1 = offset < 0 ? -offset : 0, o2 = offset > 0 ? offset : 0;
  const std::int64_t n = std::max<std::int64_t>(0, std::min(e.shape[axis1] - o1, e.shape[axis2] - o2));
  AffineMap map{std::vector<int>(nd, -1), std::vector<std::int64_t>(nd, 0), std::vector<std::int64_t>(nd, 1)};
  Shape shape;
  Chunks chunks;
  for (int k = 0; k < nd; ++k) {
    if (k == axis1 || k == axis2) continue;
    map.src[k] = static_cast<int>(shape.size());
    shape.push_back(e.shape[k]);
    chunks.push_back(e.chunks[k]);
  }
  const int last = static_cast<int>(shape.size());
  map.src[axis1] = map.src[axis2] = last;
  map.offset[axis1] = o1;
  map.offset[axis2] = o2;
  // Cut the diagonal wherever it crosses a chunk boundary of either axis, so that every output
  // chunk reads inside one input chunk.
  std::vector<std::int64_t> cuts{0, n};
  for (const auto& [ax, o] : {std::pair{axis1, o1}, std::pair{axis2, o2}})
    for (auto b : chunk_offsets(e.chunks[ax]))
      if (b - o > 0 && b - o < n) cuts.push_back(b - o);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<std::int64_t> diag_chunks;
  for (std::size_t i = 1; i < cuts.size(); ++i) diag_chunks.push_back(cuts[i] - cuts[i - 1]);
  if (diag_chunks.empty()) diag_chunks.push_back(0);
  shape.push_back(n);
  chunks.push_back(std::move(diag_chunks));
  return view_of(a, std::move(shape), std::move(chunks), std::move(map), "diagonal");
}

Array diag(const Array& v, std::int64_t k) {
  if (v.ndim() == 2) return diagonal(v, k);
  if (v.ndim() != 1) throw ShapeError("diag: input must be 1-d or 2-d");
  const std::int64_t a = k < 0 ? -k : k;
  // v, followed by |k| zeros, spread along the rows (k >= 0: row i holds v[i] at column i + k)
  // or the columns (k < 0: column j holds v[j] at row j - k).
  Array padded = v;
  if (a > 0) padded = concatenate({v, on_target_of(zeros(Shape{a}, ChunkSpec{-1}, v.dtype()), v)});
  const std::int64_t N = padded.shape()[0];
  const auto& c = padded.chunks()[0];
  const Array vals = k >= 0 ? padded[{all(), newaxis}] : padded[{newaxis, all()}];
  const Array i = index_along(N, c)[{all(), newaxis}];
  const Array j = index_along(N, c)[{newaxis, all()}];
  return where(on_target_of((j - i) == k, v), vals, on_target_of(scalar(0, v.dtype()), v));
}

std::vector<Array> meshgrid(const std::vector<Array>& xs_in, MeshIndexing indexing) {
  std::vector<Array> xs;
  for (const auto& x : xs_in) xs.push_back(x.ndim() == 1 ? x : x.reshape({x.size()}));
  const bool swap = indexing == MeshIndexing::XY && xs.size() > 1;
  // Axis order of the outputs: inputs 0 and 1 trade places for Cartesian indexing.
  std::vector<std::size_t> axis_of(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) axis_of[i] = i;
  if (swap) std::swap(axis_of[0], axis_of[1]);
  const int nd = static_cast<int>(xs.size());
  Shape shape(nd);
  Chunks chunks(nd);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    shape[axis_of[i]] = xs[i].shape()[0];
    chunks[axis_of[i]] = xs[i].chunks()[0];
  }
  std::vector<Array> out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    AffineMap map{{static_cast<int>(axis_of[i])}, {0}, {1}};
    out.push_back(view_of(xs[i], shape, chunks, std::move(map), "meshgrid"));
  }
  return out;
}

Array indices(const Shape& dimensions, DType dtype, ChunkSpec chunks) {
  for (auto n : dimensions) check_count(n, "indices");
  const int nd = static_cast<int>(dimensions.size());
  const Chunks c = normalize_chunks(chunks, dimensions, dtype);
  std::vector<Array> grid;
  for (int i = 0; i < nd; ++i) {
    const Array r = index_along(dimensions[i], c[i]);
    Shape s = dimensions;
    s.insert(s.begin(), 1);
    Chunks cs = c;
    cs.insert(cs.begin(), std::vector<std::int64_t>{1});
    AffineMap m2{{i + 1}, {0}, {1}};
    Array g = view_of(r, std::move(s), std::move(cs), std::move(m2), "indices");
    grid.push_back(dtype == DType::Int64 ? g : g.astype(dtype));
  }
  if (grid.empty()) return zeros(Shape{0}, ChunkSpec{-1}, dtype);
  return concatenate(grid, 0);
}

Array empty(Shape shape, ChunkSpec chunks, DType dtype) { return zeros(std::move(shape), std::move(chunks), dtype); }

Array full_like(const Array& a, double value, std::optional<DType> dtype, std::optional<ChunkSpec> chunks) {
  const DType t = dtype ? *dtype : a.dtype();
  Array out = full(a.shape(), value, chunks ? *chunks : ChunkSpec(a.chunks()), t);
  return on_target_of(out, a);
}
Array zeros_like(const Array& a, std::optional<DType> dtype, std::optional<ChunkSpec> chunks) {
  return full_like(a, 0.0, dtype, std::move(chunks));
}
Array ones_like(const Array& a, std::optional<DType> dtype, std::optional<ChunkSpec> chunks) {
  return full_like(a, 1.0, dtype, std::move(chunks));
}
Array empty_like(const Array& a, std::optional<DType> dtype, std::optional<ChunkSpec> chunks) {
  return zeros_like(a, dtype, std::move(chunks));
}

}  // namespace tessera
