// Random arrays whose elements come in rows of counts: multinomial and multivariate_hypergeometric.
//
// Row r (the r-th element of `size`, row-major) draws from its own Philox stream (counter {r,
// stream}), so its counts are the same whatever the chunking, as for the element-wise
// distributions; the samplers are random_semantics.hpp's. The output has the shape size + (k,),
// chunked as `size` asks along its axes and whole along the last. Each chunk is one task of a
// registered op with no inputs: a row needs its whole vector of counts, which an element-by-element
// generator program cannot hold.
// First: its unqualified sqrt, log, ... must find <math.h>'s, before tessera::sqrt(const Array&)
// and the like are declared (they would hide them inside namespace tessera).
#include "random_semantics.hpp"

#include <cmath>

#include "chunk_map.hpp"
#include "generator.hpp"
#include "io_chunks.hpp"
#include "tessera/array/random.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

constexpr const char* kRandomRowsOp = "tessera.array.random_rows";

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

Value random_rows_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 1) throw Error("random rows: expected the parameters only");
  const auto p = from_value<RowsParams>(args[0]);
  const int k = static_cast<int>(p.code == rng::kMultinomial ? p.pvals.size() : p.colors.size());
  if (p.size.size() != p.start.size() || p.size.size() != p.rows.size())
    throw Error("random rows: inconsistent parameters");
  Shape shape = p.rows;
  shape.push_back(k);
  Block out(DType::Int64, shape);
  auto* o = out.data<std::int64_t>();
  const std::size_t nd = p.size.size();
  const std::int64_t n = shape_size(p.rows);
  std::vector<std::int64_t> at(nd, 0);  // position within the chunk, row-major
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t row = 0;  // the global row index
    for (std::size_t a = 0; a < nd; ++a) row = row * p.size[a] + p.start[a] + at[a];
    rng::Draws d(p.key, rng::kStreamBase + static_cast<std::uint32_t>(p.code), static_cast<std::uint64_t>(row));
    if (p.code == rng::kMultinomial) rng::multinomial_row(d, p.count, p.pvals.data(), k, o + r * k);
    else rng::multivariate_hypergeometric_row(d, p.colors.data(), k, p.count, p.by_count, o + r * k);
    for (std::size_t a = nd; a-- > 0;) {
      if (++at[a] < p.rows[a]) break;
      at[a] = 0;
    }
  }
  return Value(std::move(out));
}

const bool registered = [] {
  register_op(kRandomRowsOp, random_rows_op);
  return true;
}();

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
  return chunk_map(kRandomRowsOp, DType::Int64, std::move(c), {}, std::move(params),
                   std::vector<std::vector<ChunkRead>>(nchunks), name);
}

}  // namespace

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
