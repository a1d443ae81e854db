// Statistics: average, cov and corrcoef composed from existing operations (reductions, matmul,
// element-wise work); median, quantile and percentile as a chunk op over the reduced axes made
// single chunks (exact, as Dask's non-approximate path); histogram and bincount as partial
// counts per chunk summed by the ordinary tree reduction. Host variants of the chunk ops are
// here; the device variants are in cuda/array_algorithm_ops.cpp.
#include "tessera/array/statistics.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>

#include "algorithm_params.hpp"
#include "chunk_map.hpp"
#include "expr.hpp"
#include "generator_reads.hpp"
#include "io_chunks.hpp"
#include "sort_semantics.hpp"
#include "tessera/array/sort.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

constexpr const char* kCountGeneratedOp = "tessera.array.count_generated";

// ---- host ops -------------------------------------------------------------------------------------

Value quantile_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 2) throw Error("quantile: expected parameters and one block");
  const auto p = from_value<QuantileParams>(args[0]);
  const Block& x = args[1].block();
  if (p.reduced < 0 || p.reduced > x.ndim()) throw ShapeError("quantile: bad number of reduced axes");
  const Shape kept(x.shape().begin(), x.shape().end() - p.reduced);
  const std::int64_t rows = shape_size(kept);
  const std::int64_t n = rows == 0 ? 0 : x.size() / rows;
  const auto nq = static_cast<std::int64_t>(p.q.size());
  Shape shape = kept;
  if (p.q_axis) shape.insert(shape.begin(), nq);
  Block out(p.out_dtype, shape);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using S = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;  // no vector<bool>
    const T* in = static_cast<const T*>(x.raw());
    std::vector<S> row(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy(in + r * n, in + (r + 1) * n, row.begin());
      std::int64_t valid = n;
      if (nq == 1) {
        // One quantile reads at most two neighbouring order statistics (lo and lo + 1): a
        // selection instead of a sort (the median of a large slice is several times faster).
        const auto nan_start = std::partition(row.begin(), row.end(), [](S v) { return v == v; });
        valid = nan_start - row.begin();
        if (valid > 0 && (p.skip_nan || valid == n)) {
          std::int64_t lo = 0;
          if (p.method == sorting::Median) {
            lo = valid % 2 ? valid / 2 : valid / 2 - 1;
          } else {
            const double vi = p.q[0] * static_cast<double>(valid - 1);
            lo = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(vi)), 0, valid - 1);
          }
          const auto end = row.begin() + valid;
          std::nth_element(row.begin(), row.begin() + lo, end);
          if (lo + 1 < valid) std::iter_swap(row.begin() + lo + 1, std::min_element(row.begin() + lo + 1, end));
        }
      } else {
        // NaNs moved to the end first, so the sort itself compares with a plain <.
        const auto nan_start = std::partition(row.begin(), row.end(), [](S v) { return v == v; });
        std::sort(row.begin(), nan_start);
        valid = nan_start - row.begin();
      }
      for (std::int64_t i = 0; i < nq; ++i) {
        const double v = (!p.skip_nan && valid < n)
                             ? std::numeric_limits<double>::quiet_NaN()
                             : sorting::quantile_sorted(row.data(), valid, p.q[static_cast<std::size_t>(i)], p.method);
        dispatch_dtype(p.out_dtype, [&](auto otag) {
          using O = decltype(otag);
          static_cast<O*>(out.raw())[i * rows + r] = static_cast<O>(v);
        });
      }
    }
  });
  return Value(std::move(out));
}

// Counts go to four interleaved tables (kTables x bins), added up at the end: consecutive
// elements in one bin would otherwise wait on each other's increment (a store, then a load of the
// same address).
constexpr int kTables = 4;

template <class T, class Bin>
void count_span(const T* v, std::int64_t n, std::int64_t bins, const Bin& bin_of, std::int64_t* t) {
  std::int64_t i = 0;
  for (; i + kTables <= n; i += kTables)
    for (int k = 0; k < kTables; ++k) {
      const std::int64_t b = bin_of(v[i + k]);
      if (b >= 0) ++t[k * bins + b];
    }
  for (; i < n; ++i) {
    const std::int64_t b = bin_of(v[i]);
    if (b >= 0) ++t[b];
  }
}

/** The (1, bins) int64 counts of the tables count_span filled. */
Block counts_of_tables(const std::vector<std::int64_t>& tables, std::int64_t bins) {
  Block out(DType::Int64, {1, bins});
  std::int64_t* o = out.data<std::int64_t>();
  std::fill(o, o + bins, 0);
  for (int k = 0; k < kTables; ++k)
    for (std::int64_t b = 0; b < bins; ++b) o[b] += tables[static_cast<std::size_t>(k * bins + b)];
  return out;
}

template <class Bin>
Value count_into_bins(std::span<const Value> args, bool weighted, std::int64_t bins, Bin&& bin_of) {
  const Block& x = args[1].block();
  const Block* w = weighted ? &args[2].block() : nullptr;
  if (w && w->size() != x.size()) throw ShapeError("histogram: weights of another size than the data");
  if (!weighted) {
    std::vector<std::int64_t> tables(static_cast<std::size_t>(kTables * bins), 0);
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      count_span(static_cast<const T*>(x.raw()), x.size(), bins, bin_of, tables.data());
    });
    return Value(counts_of_tables(tables, bins));
  }
  Block out(DType::Float64, {1, bins});
  std::memset(out.raw(), 0, out.nbytes());
  const auto wv = w->to_doubles();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* v = static_cast<const T*>(x.raw());
    double* o = out.data<double>();
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const std::int64_t b = bin_of(v[i]);
      if (b >= 0) o[b] += wv[static_cast<std::size_t>(i)];
    }
  });
  return Value(std::move(out));
}

/** A histogram's bin rule with what it reads held by value (in registers in the loops, where a
 *  reference to the parameters would be loaded again after every count stored). */
struct HistogramBin {
  const double* edges;
  std::int64_t ne;
  double norm;
  template <class V>
  std::int64_t operator()(V v) const {
    return norm > 0 ? sorting::histogram_bin_uniform(edges, ne, norm, static_cast<double>(v))
                    : sorting::histogram_bin(edges, ne, static_cast<double>(v));
  }
};

struct BincountBin {
  std::int64_t length;
  template <class V>
  std::int64_t operator()(V v) const {
    const auto i = static_cast<std::int64_t>(v);
    if (i < 0) throw Error("bincount: the input must not hold negative values");
    if (i >= length) throw Error("bincount: a value beyond the computed length (the input changed?)");
    return i;
  }
};

Value histogram_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("histogram: expected parameters and blocks");
  const auto p = from_value<HistogramParams>(args[0]);
  const auto ne = static_cast<std::int64_t>(p.edges.size());
  const HistogramBin bin{p.edges.data(), ne, p.norm};
  // norm > 0 or not is the same for every element: the branch on it in HistogramBin is always
  // predicted, so one loop serves equal and given bins.
  return count_into_bins(args, p.weighted, ne - 1, bin);
}

Value bincount_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("bincount: expected parameters and blocks");
  const auto p = from_value<BincountParams>(args[0]);
  return count_into_bins(args, p.weighted, p.length, BincountBin{p.length});
}

/**
 * Unweighted counts of a generated chunk (random, arange), drawn a piece at a time and counted
 * while the piece is in cache, instead of made whole by one task and read back from memory by
 * another: at 20000 x 20000 that write and read cost as much as the counting.
 */
struct CountGeneratedParams {
  bool bincount = false;
  HistogramParams histogram;
  std::int64_t length = 0;  // bincount's
  GeneratorSpec spec;
  std::vector<std::int64_t> start, size;  // the chunk's box in the generated array
  template <class Ar>
  void serialize(Ar& ar) {
    ar(bincount, histogram, length, spec, start, size);
  }
};

Value count_generated_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 1) throw Error("count_generated: expected the parameters only");
  const auto p = from_value<CountGeneratedParams>(args[0]);
  const auto ne = static_cast<std::int64_t>(p.histogram.edges.size());
  const std::int64_t bins = p.bincount ? p.length : ne - 1;
  if (bins < 0 || p.start.size() != p.spec.shape.size() || p.size.size() != p.spec.shape.size())
    throw ShapeError("count_generated: inconsistent parameters");
  std::vector<std::int64_t> tables(static_cast<std::size_t>(kTables * bins), 0);
  const HistogramBin hbin{p.histogram.edges.data(), ne, p.histogram.norm};
  const BincountBin bbin{p.length};
  p.spec.draw_box(p.start, p.size, [&](const void* piece, std::int64_t n) {
    if (p.spec.dtype == DType::Float64) {
      const auto* v = static_cast<const double*>(piece);
      if (p.bincount) count_span(v, n, bins, bbin, tables.data());
      else count_span(v, n, bins, hbin, tables.data());
    } else {
      const auto* v = static_cast<const std::int64_t*>(piece);
      if (p.bincount) count_span(v, n, bins, bbin, tables.data());
      else count_span(v, n, bins, hbin, tables.data());
    }
  });
  return Value(counts_of_tables(tables, bins));
}

/** Per-chunk counts of x when it is a generator (unweighted): count_generated tasks; else nullopt. */
std::optional<Array> count_generated(const Array& x, const CountGeneratedParams& base, std::int64_t bins,
                                     const char* name) {
  const auto spec = GeneratorSpec::of(expr_of(x));
  if (!spec) return std::nullopt;
  std::vector<Value> params;
  for (auto& box : io::chunk_boxes(x.chunks())) {
    CountGeneratedParams p = base;
    p.spec = *spec;
    p.start = std::move(box.start);
    p.size = std::move(box.shape);
    params.emplace_back(to_object(p, "CountGeneratedParams"));
  }
  const std::size_t n = params.size();
  Chunks chunks{std::vector<std::int64_t>(n, 1), {bins}};
  return chunk_map(kCountGeneratedOp, DType::Int64, std::move(chunks), {}, std::move(params),
                   std::vector<std::vector<ChunkRead>>(n), name);
}

const bool statistics_registered = [] {
  register_op(kQuantileOp, quantile_op);
  register_op(kHistogramOp, histogram_op);
  register_op(kBincountOp, bincount_op);
  register_op(kCountGeneratedOp, count_generated_op);
  return true;
}();

// ---- builders -------------------------------------------------------------------------------------

std::uint8_t method_of(const std::string& m) {
  if (m == "linear") return sorting::Linear;
  if (m == "lower") return sorting::Lower;
  if (m == "higher") return sorting::Higher;
  if (m == "nearest") return sorting::Nearest;
  if (m == "midpoint") return sorting::Midpoint;
  throw Error("quantile: unknown method '" + m + "' (linear, lower, higher, nearest or midpoint)");
}

Array quantile_impl(const Array& x, const std::vector<double>& q, bool q_axis, const std::vector<int>& axes_in,
                    bool keepdims, std::uint8_t method, bool skip_nan, const char* name) {
  for (double v : q)
    if (!(v >= 0 && v <= 1)) throw Error(std::string(name) + ": quantiles must be in the range [0, 1]");
  const int nd = x.ndim();
  const auto axes = normalize_axes(axes_in, nd, name);
  const int nred = static_cast<int>(axes.size());
  std::vector<int> trailing;
  for (int k = nd - nred; k < nd; ++k) trailing.push_back(k);
  const Array y = whole_axes(move_axes_last(x, axes), trailing);
  const bool exact_pick = method == sorting::Lower || method == sorting::Higher || method == sorting::Nearest;
  QuantileParams p;
  p.q = q;
  p.method = method;
  p.skip_nan = skip_nan;
  p.q_axis = q_axis;
  p.reduced = nred;
  p.out_dtype = exact_pick ? x.dtype() : (x.dtype() == DType::Float32 ? DType::Float32 : DType::Float64);
  Chunks out_chunks(y.chunks().begin(), y.chunks().end() - nred);
  if (q_axis) out_chunks.insert(out_chunks.begin(), std::vector<std::int64_t>{static_cast<std::int64_t>(q.size())});
  Array r = chunk_map(kQuantileOp, p.out_dtype, out_chunks, {y}, {Value(to_object(p, "QuantileParams"))},
                      same_grid_reads(out_chunks), name);
  if (keepdims) {
    std::vector<Index> ix;
    if (q_axis) ix.emplace_back(all());
    for (int k = 0; k < nd; ++k)
      if (std::binary_search(axes.begin(), axes.end(), k)) ix.emplace_back(newaxis);
      else ix.emplace_back(all());
    r = r[ix];
  }
  return r;
}

std::vector<double> percent(const std::vector<double>& q, const char* name) {
  std::vector<double> out;
  for (double v : q) {
    if (!(v >= 0 && v <= 100)) throw Error(std::string(name) + ": percentiles must be in the range [0, 100]");
    out.push_back(v / 100.0);
  }
  return out;
}

/** Every axis of x but `axis` gets a new length-1 axis around the 1-d w. */
Array along_axis(const Array& w, int axis, int nd) {
  std::vector<Index> ix;
  for (int k = 0; k < nd; ++k) ix.emplace_back(k == axis ? Index(all()) : Index(newaxis));
  return w[ix];
}

Histogram histogram_impl(const Array& x, std::vector<double> edges, const std::optional<Array>& weights, bool density,
                         double norm = 0) {
  if (edges.size() < 2) throw Error("histogram: need at least two bin edges");
  for (std::size_t i = 1; i < edges.size(); ++i)
    if (!(edges[i - 1] <= edges[i])) throw Error("histogram: bins must increase monotonically");
  const auto nb = static_cast<std::int64_t>(edges.size()) - 1;
  std::vector<Array> inputs{x};
  if (weights) {
    if (weights->shape() != x.shape()) throw ShapeError("histogram: weights should have the same shape as a");
    // float64 weights (a fused cast): the sums are float64, and the device kernels read doubles.
    inputs.push_back(rechunk_exact(weights->dtype() == DType::Float64 ? *weights : weights->astype(DType::Float64), x.chunks()));
  }
  const std::int64_t n = x.num_chunks();
  Chunks chunks{std::vector<std::int64_t>(static_cast<std::size_t>(n), 1), {nb}};
  std::vector<std::vector<ChunkRead>> reads(static_cast<std::size_t>(n));
  for (std::int64_t f = 0; f < n; ++f) {
    reads[static_cast<std::size_t>(f)].push_back({0, f});
    if (weights) reads[static_cast<std::size_t>(f)].push_back({1, f});
  }
  HistogramParams p;
  p.edges = edges;
  p.weighted = weights.has_value();
  p.norm = norm;
  std::optional<Array> generated;
  if (!weights) {
    CountGeneratedParams g;
    g.histogram = p;
    generated = count_generated(x, g, nb, "histogram");
  }
  const Array partial = generated ? *generated : chunk_map(kHistogramOp, weights ? DType::Float64 : DType::Int64, chunks, inputs,
                                  {Value(to_object(p, "HistogramParams"))}, std::move(reads), "histogram");
  Array counts = partial.sum({.axes = {0}});
  const Array edge_array = from_vector(edges, {nb + 1}, {-1});
  if (density) {
    std::vector<double> widths;
    for (std::size_t i = 1; i < edges.size(); ++i) widths.push_back(edges[i] - edges[i - 1]);
    counts = counts / from_vector(widths, {nb}, {-1}) / counts.sum();
  }
  return {counts, edge_array};
}

}  // namespace

Array average(const Array& x, std::optional<int> axis, const std::optional<Array>& weights) {
  return average_returned(x, axis, weights).first;
}

std::pair<Array, Array> average_returned(const Array& x, std::optional<int> axis, const std::optional<Array>& weights) {
  ReduceOptions o;
  if (axis) o.axes = {normalize_axis(*axis, x.ndim())};
  if (!weights) {
    const Array avg = x.mean(o);
    const double n = static_cast<double>(x.size()) / static_cast<double>(std::max<std::int64_t>(1, avg.size()));
    return {avg, full(avg.shape(), n, ChunkSpec(std::vector<std::int64_t>(avg.shape().size(), -1)), avg.dtype())};
  }
  Array w = *weights;
  if (w.shape() != x.shape()) {
    if (!axis) throw ShapeError("average: axis must be specified when shapes of a and weights differ");
    if (w.ndim() != 1) throw ShapeError("average: 1D weights expected when shapes of a and weights differ");
    if (w.shape()[0] != x.shape()[static_cast<std::size_t>(o.axes[0])])
      throw ShapeError("average: length of weights not compatible with specified axis");
    w = along_axis(w, o.axes[0], x.ndim()).broadcast_to(x.shape());
  }
  DType t = promote_types(x.dtype(), w.dtype());
  if (!is_floating(x.dtype())) t = promote_types(t, DType::Float64);
  const Array xt = x.dtype() == t ? x : x.astype(t), wt = w.dtype() == t ? w : w.astype(t);
  const Array scl = wt.sum(o);
  const Array avg = (xt * wt).sum(o) / scl;
  return {avg, scl};
}

Array median(const Array& x, std::vector<int> axes, bool keepdims) {
  return quantile_impl(x, {0.5}, false, axes, keepdims, sorting::Median, false, "median");
}
Array nanmedian(const Array& x, std::vector<int> axes, bool keepdims) {
  return quantile_impl(x, {0.5}, false, axes, keepdims, sorting::Median, true, "nanmedian");
}
Array quantile(const Array& x, const std::vector<double>& q, const QuantileOptions& o) {
  return quantile_impl(x, q, true, o.axes, o.keepdims, method_of(o.method), false, "quantile");
}
Array quantile(const Array& x, double q, const QuantileOptions& o) {
  return quantile_impl(x, {q}, false, o.axes, o.keepdims, method_of(o.method), false, "quantile");
}
Array percentile(const Array& x, const std::vector<double>& q, const QuantileOptions& o) {
  return quantile_impl(x, percent(q, "percentile"), true, o.axes, o.keepdims, method_of(o.method), false, "percentile");
}
Array percentile(const Array& x, double q, const QuantileOptions& o) {
  return quantile_impl(x, percent({q}, "percentile"), false, o.axes, o.keepdims, method_of(o.method), false, "percentile");
}
Array nanquantile(const Array& x, const std::vector<double>& q, const QuantileOptions& o) {
  return quantile_impl(x, q, true, o.axes, o.keepdims, method_of(o.method), true, "nanquantile");
}
Array nanquantile(const Array& x, double q, const QuantileOptions& o) {
  return quantile_impl(x, {q}, false, o.axes, o.keepdims, method_of(o.method), true, "nanquantile");
}
Array nanpercentile(const Array& x, const std::vector<double>& q, const QuantileOptions& o) {
  return quantile_impl(x, percent(q, "nanpercentile"), true, o.axes, o.keepdims, method_of(o.method), true, "nanpercentile");
}
Array nanpercentile(const Array& x, double q, const QuantileOptions& o) {
  return quantile_impl(x, percent({q}, "nanpercentile"), false, o.axes, o.keepdims, method_of(o.method), true,
                       "nanpercentile");
}

Array cov(const Array& m, const std::optional<Array>& y, bool rowvar, bool bias, std::optional<int> ddof) {
  auto prepare = [&](const Array& a) {
    if (a.ndim() > 2) throw ShapeError("cov: m has more than 2 dimensions");
    Array b = a.ndim() == 2 ? a : (a.ndim() == 1 ? a[{newaxis, all()}] : a[{newaxis, newaxis}]);
    if (!rowvar && b.shape()[0] != 1) b = b.T();
    return b.dtype() == DType::Float64 ? b : b.astype(DType::Float64);
  };
  Array X = prepare(m);
  if (y) {
    Array Y = prepare(*y);
    if (Y.shape()[1] != X.shape()[1]) throw ShapeError("cov: m and y must have the same number of observations");
    X = concatenate({X, Y}, 0);
  }
  const int d = ddof ? *ddof : (bias ? 0 : 1);
  const double fact = static_cast<double>(X.shape()[1] - d);
  const Array Xc = X - X.mean({.axes = {1}, .keepdims = true});
  Array c = matmul(Xc, Xc.T()) / fact;
  if (c.shape() == Shape{1, 1}) c = c[{0, 0}];
  return c;
}

Array corrcoef(const Array& x, const std::optional<Array>& y, bool rowvar) {
  const Array c = cov(x, y, rowvar);
  if (c.ndim() == 0) return c / c;
  const Array s = sqrt(tessera::diagonal(c));
  const Array r = c / s[{all(), newaxis}] / s[{newaxis, all()}];
  return minimum(maximum(r, scalar(-1.0)), scalar(1.0));
}

namespace {

/** np.linspace(first, last, bins + 1) over a checked range, as np.histogram makes equal bins. */
std::vector<double> equal_bin_edges(std::int64_t bins, std::pair<double, double> range, const char* fn) {
  if (bins < 1) throw Error(std::string(fn) + ": `bins` must be positive, when an integer");
  auto [first, last] = range;
  if (first > last) throw Error(std::string(fn) + ": max must be larger than min in range parameter");
  if (!std::isfinite(first) || !std::isfinite(last)) throw Error(std::string(fn) + ": supplied range is not finite");
  if (first == last) {  // NumPy widens an empty range
    first -= 0.5;
    last += 0.5;
  }
  // start + i * step, the last edge exactly `last`.
  std::vector<double> edges(static_cast<std::size_t>(bins + 1));
  const double step = (last - first) / static_cast<double>(bins);
  for (std::int64_t i = 0; i <= bins; ++i) edges[static_cast<std::size_t>(i)] = static_cast<double>(i) * step + first;
  edges.back() = last;
  return edges;
}

}  // namespace

Histogram histogram(const Array& x, std::int64_t bins, std::pair<double, double> range, const std::optional<Array>& weights,
                    bool density) {
  std::vector<double> edges = equal_bin_edges(bins, range, "histogram");
  const double norm = static_cast<double>(bins) / (edges.back() - edges.front());
  return histogram_impl(x, std::move(edges), weights, density, norm);
}

Histogram histogram(const Array& x, const std::vector<double>& edges, const std::optional<Array>& weights, bool density) {
  return histogram_impl(x, edges, weights, density);
}

HistogramDD histogramdd(const std::vector<Array>& sample, const std::vector<std::vector<double>>& edges,
                        const std::optional<Array>& weights, bool density) {
  if (sample.empty()) throw Error("histogramdd: the sample has no dimensions");
  if (edges.size() != sample.size())
    throw Error("histogramdd: the dimension of bins must be equal to the dimension of the sample x");
  for (const Array& c : sample)
    if (c.shape() != sample[0].shape()) throw ShapeError("histogramdd: every coordinate must have the same shape");
  const int dims = static_cast<int>(sample.size());
  // Each point's bin in every dimension (digitize: half-open bins, a value on the last edge in
  // the last bin), folded row-major into one flat bin number; a point outside any dimension
  // gets -1, below the first of the flat histogram's unit bins 0, 1, ..., total.
  std::vector<std::int64_t> nbins(static_cast<std::size_t>(dims));
  Array flat = zeros(sample[0].shape(), sample[0].chunks(), DType::Int64);
  Array outside = zeros(sample[0].shape(), sample[0].chunks(), DType::Bool);
  std::int64_t total = 1;
  for (int k = 0; k < dims; ++k) {
    const std::vector<double>& e = edges[static_cast<std::size_t>(k)];
    if (e.size() < 2) throw Error("histogramdd: need at least two bin edges in dimension " + std::to_string(k));
    for (std::size_t i = 1; i < e.size(); ++i)
      if (!(e[i - 1] <= e[i])) throw Error("histogramdd: bins must increase monotonically, in dimension " + std::to_string(k));
    const auto nb = static_cast<std::int64_t>(e.size()) - 1;
    nbins[static_cast<std::size_t>(k)] = nb;
    const Array x = rechunk_exact(sample[static_cast<std::size_t>(k)], sample[0].chunks());
    const Array xf = x.dtype() == DType::Float64 ? x : x.astype(DType::Float64);
    const Array bin = where(xf == e.back(), scalar(nb - 1), digitize(xf, e) - std::int64_t{1});
    outside = outside || bin < std::int64_t{0} || bin >= nb || isnan(xf);
    flat = flat * nb + bin;
    total *= nb;
  }
  flat = where(outside, scalar(std::int64_t{-1}), flat);
  std::vector<double> unit(static_cast<std::size_t>(total + 1));
  for (std::int64_t i = 0; i <= total; ++i) unit[static_cast<std::size_t>(i)] = static_cast<double>(i);
  std::optional<Array> w;
  if (weights) {
    if (weights->shape() != sample[0].shape()) throw ShapeError("histogramdd: weights should have the same shape as the sample");
    w = rechunk_exact(*weights, sample[0].chunks());
  }
  Array counts = histogram(flat, unit, w).counts.reshape(Shape(nbins.begin(), nbins.end()));
  HistogramDD out;
  for (int k = 0; k < dims; ++k) {
    const std::vector<double>& e = edges[static_cast<std::size_t>(k)];
    out.edges.push_back(from_vector(e, {static_cast<std::int64_t>(e.size())}, {-1}));
  }
  if (density) {
    // counts / total / the volume of each bin: the product of its widths, one axis at a time.
    Array scaled = counts.astype(DType::Float64) / counts.sum();
    for (int k = 0; k < dims; ++k) {
      const std::vector<double>& e = edges[static_cast<std::size_t>(k)];
      std::vector<double> widths;
      for (std::size_t i = 1; i < e.size(); ++i) widths.push_back(e[i] - e[i - 1]);
      Shape along(static_cast<std::size_t>(dims), 1);
      along[static_cast<std::size_t>(k)] = nbins[static_cast<std::size_t>(k)];
      scaled = scaled / from_vector(widths, {nbins[static_cast<std::size_t>(k)]}, {-1}).reshape(along);
    }
    counts = scaled;
  }
  out.counts = counts;
  return out;
}

HistogramDD histogramdd(const std::vector<Array>& sample, const std::vector<std::int64_t>& bins,
                        const std::vector<std::pair<double, double>>& range, const std::optional<Array>& weights,
                        bool density) {
  if (bins.size() != sample.size() || range.size() != sample.size())
    throw Error("histogramdd: the dimension of bins and range must be equal to the dimension of the sample x");
  std::vector<std::vector<double>> edges;
  for (std::size_t k = 0; k < bins.size(); ++k) edges.push_back(equal_bin_edges(bins[k], range[k], "histogramdd"));
  return histogramdd(sample, edges, weights, density);
}

HistogramDD histogramdd(const Array& sample, const std::vector<std::int64_t>& bins,
                        const std::vector<std::pair<double, double>>& range, const std::optional<Array>& weights,
                        bool density) {
  if (sample.ndim() != 2) throw ShapeError("histogramdd: the sample must be an (N, D) array");
  std::vector<Array> columns;
  for (std::int64_t k = 0; k < sample.shape()[1]; ++k) columns.push_back(sample[{all(), Index(k)}]);
  return histogramdd(columns, bins, range, weights, density);
}

HistogramDD histogram2d(const Array& x, const Array& y, std::pair<std::int64_t, std::int64_t> bins,
                        std::pair<std::pair<double, double>, std::pair<double, double>> range,
                        const std::optional<Array>& weights, bool density) {
  return histogramdd(std::vector<Array>{x, y}, std::vector<std::int64_t>{bins.first, bins.second},
                     {range.first, range.second}, weights, density);
}

Array bincount(const Array& x, const std::optional<Array>& weights, std::int64_t minlength, Executor& executor) {
  if (x.ndim() != 1) throw ShapeError("bincount: input must be 1-d");
  if (is_floating(x.dtype())) throw DTypeError("bincount: cannot cast array data from float to int64 according to the rule 'safe'");
  if (minlength < 0) throw Error("bincount: minlength must be non-negative");
  std::int64_t length = minlength;
  // Integers drawn from [low, high) with 0 <= low and high <= minlength: every value is below
  // minlength, so the length is minlength without a pass over the data to find the largest.
  const Expr& xe = expr_of(x);
  const bool bounded_by_minlength = [&] {
    if (xe.kind != ExprKind::Generator) return false;
    const auto& g = static_cast<const GeneratorExpr&>(xe);
    return g.gen == GenKind::Integers && g.i0 >= 0 && g.i1 > g.i0 && g.i1 <= minlength;
  }();
  if (x.size() > 0 && !bounded_by_minlength) {
    const Block mx = x.astype(DType::Int64).max().compute(executor);
    const std::int64_t top = mx.data<std::int64_t>()[0];
    if (top < 0) throw Error("bincount: the input must not hold negative values");
    length = std::max(length, top + 1);
  }
  std::vector<Array> inputs{x};
  if (weights) {
    if (weights->shape() != x.shape()) throw ShapeError("bincount: the weights and list don't have the same length");
    inputs.push_back(rechunk_exact(weights->dtype() == DType::Float64 ? *weights : weights->astype(DType::Float64), x.chunks()));
  }
  const std::int64_t n = x.num_chunks();
  Chunks chunks{std::vector<std::int64_t>(static_cast<std::size_t>(n), 1), {length}};
  std::vector<std::vector<ChunkRead>> reads(static_cast<std::size_t>(n));
  for (std::int64_t f = 0; f < n; ++f) {
    reads[static_cast<std::size_t>(f)].push_back({0, f});
    if (weights) reads[static_cast<std::size_t>(f)].push_back({1, f});
  }
  BincountParams p;
  p.length = length;
  p.weighted = weights.has_value();
  std::optional<Array> generated;
  if (!weights) {
    CountGeneratedParams g;
    g.bincount = true;
    g.length = length;
    generated = count_generated(x, g, length, "bincount");
  }
  const Array partial = generated ? *generated : chunk_map(kBincountOp, weights ? DType::Float64 : DType::Int64, chunks, inputs,
                                  {Value(to_object(p, "BincountParams"))}, std::move(reads), "bincount");
  return partial.sum({.axes = {0}});
}

}  // namespace tessera
