// Conformance cases of fancy indexing, chunks of unknown size, halos (overlap, map_overlap) and
// blockwise.
#include <cstring>
#include <set>

#include "conformance.hpp"
#include "tessera/array/creation.hpp"
#include "tessera/array/indexing.hpp"
#include "tessera/array/io.hpp"
#include "tessera/array/numpy_names.hpp"
#include "tessera/ops/function.hpp"

namespace {

using namespace tessera;

// Five-point sum over the interior of a 2-d block, its edge elements left as they are.
Block five_point(Block b) {
  const Block x = b.astype(DType::Float64);
  Block out(DType::Float64, b.shape());
  const double* v = x.data<double>();
  const auto n = b.shape()[0], m = b.shape()[1];
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double s = v[i * m + j];
      if (i > 0 && i + 1 < n && j > 0 && j + 1 < m)
        s += v[(i - 1) * m + j] + v[(i + 1) * m + j] + v[i * m + j - 1] + v[i * m + j + 1];
      out.data<double>()[i * m + j] = s;
    }
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("conformance.index.five_point", five_point);

// The product of two 2-d float64 blocks.
Block block_dot(Block a, Block b) {
  const Block x = a.astype(DType::Float64), y = b.astype(DType::Float64);
  const auto n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
  Block out(DType::Float64, {n, m});
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += x.data<double>()[i * k + p] * y.data<double>()[p * m + j];
      out.data<double>()[i * m + j] = s;
    }
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("conformance.index.block_dot", block_dot);

Block block_outer(Block u, Block v) {
  const Block x = u.astype(DType::Float64), y = v.astype(DType::Float64);
  Block out(DType::Float64, {u.size(), v.size()});
  for (std::int64_t i = 0; i < u.size(); ++i)
    for (std::int64_t j = 0; j < v.size(); ++j) out.data<double>()[i * v.size() + j] = x.data<double>()[i] * y.data<double>()[j];
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("conformance.index.block_outer", block_outer);

Boundary boundary_of(const std::string& b, double value) { return b == "constant" ? Boundary(value) : Boundary(b); }

}  // namespace

TESSERA_CONFORMANCE_CASE(take_list) { return {take(in[0], p.ints("indices"), static_cast<int>(p.i("axis")))}; }

TESSERA_CONFORMANCE_CASE(take_array) {
  if (p.has("axis")) return {take(in[0], in[1], static_cast<int>(p.i("axis")))};
  return {in[0][in[1]]};
}

TESSERA_CONFORMANCE_CASE(mask_index) { return {in[0][in[1]]}; }

TESSERA_CONFORMANCE_CASE(compress_case) {
  const std::optional<int> axis = p.has("axis") ? std::optional<int>(static_cast<int>(p.i("axis"))) : std::nullopt;
  if (p.has("condition")) {
    std::vector<bool> c;
    for (auto v : p.ints("condition")) c.push_back(v != 0);
    return {compress(c, in[0], axis)};
  }
  return {compress(in[1], in[0], axis)};
}

TESSERA_CONFORMANCE_CASE(coordinates) {
  const std::string& op = p.s("op");
  if (op == "argwhere") return {argwhere(in[0])};
  if (op == "nonzero") return nonzero(in[0]);
  if (op == "where") return where(in[0]);
  if (op == "flatnonzero") return {flatnonzero(in[0])};
  if (op == "extract") return {extract(in[0], in[1])};
  throw std::invalid_argument("coordinates: unknown op " + op);
}

// Operations on the unknown-size result of a mask.
TESSERA_CONFORMANCE_CASE(unknown_chunks) {
  const Array s = in[0][in[0] > p.d("threshold")];
  const std::string& op = p.s("op");
  if (op == "elementwise") return {s * s + 1.0};
  if (op == "sum") return {s.sum()};
  if (op == "mean") return {s.mean()};
  if (op == "max") return {s.max()};
  if (op == "compute_chunk_sizes") return {s.compute_chunk_sizes()[{slice(1, std::nullopt)}]};
  if (op == "rows") {  // a 1-d mask along the first axis, then a reduction of the known axis
    const Array rows = in[0][in[0].sum({.axes = {1}}) > p.d("threshold")];
    return {rows.sum({.axes = {1}}), rows * 2.0};
  }
  throw std::invalid_argument("unknown_chunks: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(map_overlap_case) {
  const Boundary b = boundary_of(p.s("boundary"), p.d("value", 0));
  return {map_overlap("conformance.index.five_point", in[0], {1}, {b}, true, DType::Float64)};
}

TESSERA_CONFORMANCE_CASE(overlap_trim) {
  const std::vector<std::int64_t> depth = p.ints("depth");
  const Boundary b = boundary_of(p.s("boundary"), p.d("value", 0));
  return {trim_internal(overlap(in[0], depth, {b}), depth, {b})};
}

TESSERA_CONFORMANCE_CASE(blockwise_case) {
  const std::string& op = p.s("op");
  if (op == "dot") {
    return {blockwise("conformance.index.block_dot", "ik", {{in[0], "ij"}, {in[1], "jk"}}, DType::Float64)};
  }
  if (op == "outer") {
    return {blockwise("conformance.index.block_outer", "ij", {{in[0], "i"}, {in[1], "j"}}, DType::Float64)};
  }
  throw std::invalid_argument("blockwise_case: unknown op " + op);
}

namespace {
// The indexer of a shuffle case: p.ints("order") cut into groups of p.ints("groups") sizes.
std::vector<std::vector<std::int64_t>> shuffle_indexer(const tessera_conformance::Params& p) {
  const auto order = p.ints("order");
  std::vector<std::vector<std::int64_t>> groups;
  std::size_t k = 0;
  for (auto g : p.ints("groups")) {
    groups.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(k), order.begin() + static_cast<std::ptrdiff_t>(k + g));
    k += static_cast<std::size_t>(g);
  }
  return groups;
}
}  // namespace

// Also checks what the values cannot show: no group is split between two chunks.
TESSERA_CONFORMANCE_CASE(shuffle_case) {
  const auto groups = shuffle_indexer(p);
  int axis = static_cast<int>(p.i("axis"));
  Array out = shuffle(in[0], groups, axis, p.i("chunk_size", 0));
  if (axis < 0) axis += in[0].ndim();
  std::set<std::int64_t> boundaries;  // where chunks along the axis start
  std::int64_t at = 0;
  for (auto c : out.chunks()[axis]) {
    boundaries.insert(at);
    at += c;
  }
  std::int64_t start = 0;
  for (const auto& g : groups) {
    for (std::int64_t i = start + 1; i < start + static_cast<std::int64_t>(g.size()); ++i)
      if (boundaries.count(i)) throw std::runtime_error("shuffle_case: a group is split at " + std::to_string(i));
    start += static_cast<std::int64_t>(g.size());
  }
  return {out};
}

// Stores in[0] into a target Block of p.ints("shape") filled with -1, at p.ints("offset"), and
// returns the target as an array.
TESSERA_CONFORMANCE_CASE(store_case) {
  const auto dims = p.ints("shape");
  ChunkSpec whole;
  for (std::size_t a = 0; a < dims.size(); ++a) whole.push_back(-1);
  Block target(in[0].dtype(), Shape(dims.begin(), dims.end()));
  const Block fill = full(Shape(dims.begin(), dims.end()), -1.0, whole, in[0].dtype()).compute();
  std::memcpy(target.raw(), fill.raw(), fill.nbytes());
  store(in[0], target, p.has("offset") ? p.ints("offset") : std::vector<std::int64_t>{});
  return {from_array(target, whole)};
}
