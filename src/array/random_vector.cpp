// Random arrays whose elements come in rows of counts: multinomial and multivariate_hypergeometric.
//
// Row r (the r-th element of `size`, row-major) draws from its own Philox stream (counter {r,
// stream}), so its counts are the same whatever the chunking, as for the element-wise
// distributions; the samplers are random_semantics.hpp's. The output has the shape size + (k,),
// chunked as `size` asks along its axes and whole along the last. Each chunk is one task of a
// registered op with no inputs: a row needs its whole vector of counts, which an element-by-element
// generator program cannot hold.
//
// On the device (an array placed there with to_device(), as a generator is) the chunk's task runs
// the device variant: one CUDA thread per row (cuda/random_rows.cu), the counts written straight
// into a device block. Both variants call random_rows.hpp's draw_row, so the rows are the same.
// First: random_semantics.hpp's unqualified sqrt, log, ... must find <math.h>'s, before
// tessera::sqrt(const Array&) and the like are declared (they would hide them in namespace tessera).
#include "random_vector.hpp"

#include <cmath>
#include <cstring>

#include "chunk_map.hpp"
#include "generator.hpp"
#include "io_chunks.hpp"
#include "tessera/array/random.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

struct RowsParams {
  std::int32_t code = 0;   // rng::kMultinomial or rng::kMultivariateHypergeometric
  std::uint64_t key = 0;
  std::int64_t count = 0;  // trials (multinomial) or the sample (multivariate_hypergeometric)
  std::vector<double> pvals;
  std::vector<std::int64_t> colors;
  bool by_count = false;
  Shape size;                       // the rows' shape (the output without its last axis)
  std::vector<std::int64_t> start;  // this chunk's first row along each axis of size
  Shape rows;                       // this chunk's rows along each axis of size
  template <class Ar>
  void serialize(Ar& ar) {
    ar(code, key, count, pvals, colors, by_count, size, start, rows);
  }
};

RowsParams decode(std::span<const Value> args) {
  if (args.size() != 1) throw Error("random rows: expected the parameters only");
  auto p = from_value<RowsParams>(args[0]);
  if (p.size.size() != p.start.size() || p.size.size() != p.rows.size() ||
      (p.code == rng::kMultinomial ? p.pvals.empty() : p.colors.empty()))
    throw Error("random rows: inconsistent parameters");
  return p;
}

/** The op's arguments as draw_row takes them, pointing into p (host memory). */
rng::RowsArgs args_of(const RowsParams& p) {
  rng::RowsArgs a;
  a.code = p.code;
  a.key = p.key;
  a.count = p.count;
  a.pvals = p.pvals.data();
  a.colors = p.colors.data();
  a.k = static_cast<std::int32_t>(p.code == rng::kMultinomial ? p.pvals.size() : p.colors.size());
  a.by_count = p.by_count;
  a.nd = static_cast<std::int32_t>(p.size.size());
  a.size = p.size.data();
  a.start = p.start.data();
  a.rows = p.rows.data();
  return a;
}

Shape out_shape(const RowsParams& p, int k) {
  Shape shape = p.rows;
  shape.push_back(k);
  return shape;
}

Value random_rows_op(const OpContext&, std::span<const Value> args) {
  const auto p = decode(args);
  const rng::RowsArgs a = args_of(p);
  Block out(DType::Int64, out_shape(p, a.k));
  auto* o = out.data<std::int64_t>();
  const std::int64_t n = shape_size(p.rows);
  for (std::int64_t r = 0; r < n; ++r) rng::draw_row(a, r, o + r * a.k);
  return Value(std::move(out));
}

const bool random_vector_registered = [] {
  register_op(kRandomRowsOp, random_rows_op);
  return true;
}();

/** A source of rows follows to_device()/to_host() as a generator does: it is re-made there. */
struct RandomRowsExpr : ChunkMapExpr {
  using ChunkMapExpr::ChunkMapExpr;
  std::shared_ptr<Expr> copy_to_place() const override { return std::make_shared<RandomRowsExpr>(*this); }
};

/** One task per chunk of `size`; each row gets k counts. */
Array random_rows(RowsParams base, Shape size, const ChunkSpec& chunks, int k, const char* name) {
  for (auto s : size)
    if (s < 0) throw ShapeError(std::string(name) + ": negative dimensions are not allowed");
  Chunks c = detail::normalize_chunks(size, chunks, DType::Int64);
  base.size = size;
  std::vector<Value> params;
  for (auto& box : io::chunk_boxes(c)) {
    RowsParams p = base;
    p.start = std::move(box.start);
    p.rows = std::move(box.shape);
    params.emplace_back(to_object(p, "RowsParams"));
  }
  const std::size_t nchunks = params.size();
  c.push_back({k});
  Shape shape = chunks_shape(c);
  auto e = make_expr<RandomRowsExpr>(ExprKind::Custom, DType::Int64, std::move(shape), std::move(c), name);
  e->op = kRandomRowsOp;
  e->params = std::move(params);
  e->reads.resize(nchunks);
  return Array(e);
}

}  // namespace

namespace detail {

Value random_rows_on_device(const OpContext& ctx, std::span<const Value> args, rng::RowsKernel kernel) {
  const auto p = decode(args);
  DeviceRuntime* rt = device_runtime();
  if (!rt) throw DeviceError("random rows: a device task and no device runtime (" + device_runtime_status() + ")");
  const int device = ctx.device < 0 ? 0 : ctx.device;
  const StreamView stream = ctx.stream.is_default() ? rt->thread_stream(device) : ctx.stream;
  rng::RowsArgs a = args_of(p);
  Block out = device_block(DType::Int64, out_shape(p, a.k), device, stream);
  const std::int64_t n = shape_size(p.rows);
  if (n == 0) return Value(std::move(out));
  // One upload: the k probabilities or colours, then size, start and rows (8 bytes each).
  const std::size_t nd = p.size.size(), k = static_cast<std::size_t>(a.k);
  std::vector<std::int64_t> staged(k + 3 * nd);
  if (p.code == rng::kMultinomial) std::memcpy(staged.data(), p.pvals.data(), k * sizeof(double));
  else std::memcpy(staged.data(), p.colors.data(), k * sizeof(std::int64_t));
  std::copy(p.size.begin(), p.size.end(), staged.begin() + static_cast<std::ptrdiff_t>(k));
  std::copy(p.start.begin(), p.start.end(), staged.begin() + static_cast<std::ptrdiff_t>(k + nd));
  std::copy(p.rows.begin(), p.rows.end(), staged.begin() + static_cast<std::ptrdiff_t>(k + 2 * nd));
  const std::size_t bytes = staged.size() * sizeof(std::int64_t);
  auto scratch = rt->allocate(bytes, device, stream);
  rt->copy_async(scratch->data(), staged.data(), bytes, stream);
  auto* d = static_cast<std::int64_t*>(scratch->data());
  a.pvals = p.code == rng::kMultinomial ? reinterpret_cast<const double*>(d) : nullptr;
  a.colors = p.code == rng::kMultinomial ? nullptr : d;
  a.size = d + k;
  a.start = d + k + nd;
  a.rows = d + k + 2 * nd;
  kernel(a, n, out.data<std::int64_t>(), device, stream);
  // The upload's source and the scratch buffer go when this returns: wait for the kernel here.
  rt->synchronize(stream);
  return Value(std::move(out));
}

}  // namespace detail

namespace random {

Array Generator::multinomial(std::int64_t n, std::vector<double> pvals, Shape size, ChunkSpec chunks) {
  if (n < 0) throw Error("multinomial: n must be >= 0");
  if (pvals.empty()) throw Error("multinomial: pvals must have at least one entry");
  double before_last = 0;
  for (std::size_t j = 0; j < pvals.size(); ++j) {
    if (!(pvals[j] >= 0 && pvals[j] <= 1)) throw Error("multinomial: pvals must be in [0, 1]");
    if (j + 1 < pvals.size()) before_last += pvals[j];
  }
  // As NumPy: the last entry takes what the others leave; theirs may not exceed 1.
  if (before_last > 1.0 + 1e-12) throw Error("multinomial: sum(pvals[:-1]) > 1.0");
  RowsParams p;
  p.code = rng::kMultinomial;
  p.key = next_key();
  p.count = n;
  p.pvals = std::move(pvals);
  const int k = static_cast<int>(p.pvals.size());
  return random_rows(std::move(p), std::move(size), chunks, k, "multinomial");
}

Array Generator::multivariate_hypergeometric(std::vector<std::int64_t> colors, std::int64_t nsample, Shape size,
                                             ChunkSpec chunks, const std::string& method) {
  if (method != "marginals" && method != "count")
    throw Error("multivariate_hypergeometric: method must be 'marginals' or 'count', not '" + method + "'");
  if (colors.empty()) throw Error("multivariate_hypergeometric: colors must have at least one entry");
  std::int64_t total = 0;
  for (auto c : colors) {
    if (c < 0) throw Error("multivariate_hypergeometric: colors must be >= 0");
    if (c > INT64_MAX - total) throw Error("multivariate_hypergeometric: sum(colors) overflows int64");
    total += c;
  }
  if (nsample < 0) throw Error("multivariate_hypergeometric: nsample must be >= 0");
  if (nsample > total) throw Error("multivariate_hypergeometric: nsample > sum(colors)");
  // As NumPy: the marginals method works in doubles (the hypergeometric sampler's limit).
  if (method == "marginals" && total >= 1000000000)
    throw Error("multivariate_hypergeometric: sum(colors) must be less than 1e9 with method 'marginals'");
  RowsParams p;
  p.code = rng::kMultivariateHypergeometric;
  p.key = next_key();
  p.count = nsample;
  p.colors = std::move(colors);
  p.by_count = method == "count";
  const int k = static_cast<int>(p.colors.size());
  return random_rows(std::move(p), std::move(size), chunks, k, "multivariate_hypergeometric");
}

}  // namespace random

}  // namespace tessera
