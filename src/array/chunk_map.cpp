// Chunk-level operations (chunk_map.hpp): building and lowering ChunkMapExpr, and the rechunks and
// axis moves the scans, sorts and statistics put in front of them.
#include "chunk_map.hpp"

#include <algorithm>
#include <numeric>

#include "tessera/core/error.hpp"

namespace tessera::detail {

void ChunkMapExpr::lower_custom(Lowering& low, std::vector<Key>& keys) const {
  std::vector<std::vector<Key>> in;
  for (const auto& i : inputs) in.push_back(low.lower(i));
  const std::int64_t n = shape_size(chunk_counts(chunks));
  keys.reserve(static_cast<std::size_t>(n));
  for (std::int64_t f = 0; f < n; ++f) {
    Task t;
    t.key = chunk_key(name, chunk_coords(chunks, f));
    t.op = op;
    t.args.emplace_back(params.size() == 1 ? params[0] : params[static_cast<std::size_t>(f)]);
    for (const auto& [input, chunk] : reads[static_cast<std::size_t>(f)])
      t.args.emplace_back(KeyRef{in[static_cast<std::size_t>(input)][static_cast<std::size_t>(chunk)]});
    keys.push_back(t.key);
    low.add_custom_task(std::move(t));
  }
}

Array chunk_map(const std::string& op, DType dtype, Chunks chunks, const std::vector<Array>& inputs,
                std::vector<Value> params, std::vector<std::vector<ChunkRead>> reads, const std::string& name) {
  const auto n = static_cast<std::size_t>(shape_size(chunk_counts(chunks)));
  if (reads.size() != n) throw Error(name + ": " + std::to_string(reads.size()) + " read lists for " + std::to_string(n) + " chunks");
  if (params.size() != 1 && params.size() != n) throw Error(name + ": parameters for " + std::to_string(params.size()) + " chunks");
  Shape shape = chunks_shape(chunks);
  auto e = make_expr<ChunkMapExpr>(ExprKind::Custom, dtype, std::move(shape), std::move(chunks), name);
  e->op = op;
  e->params = std::move(params);
  e->reads = std::move(reads);
  for (const auto& a : inputs) e->inputs.push_back(a.expr());
  e->target = joint_target_of(e->inputs);
  return Array(e);
}

std::vector<std::vector<ChunkRead>> same_grid_reads(const Chunks& chunks) {
  const std::int64_t n = shape_size(chunk_counts(chunks));
  std::vector<std::vector<ChunkRead>> r(static_cast<std::size_t>(n));
  for (std::int64_t f = 0; f < n; ++f) r[static_cast<std::size_t>(f)] = {{0, f}};
  return r;
}

Array rechunk_exact(const Array& a, Chunks chunks) {
  const Expr& e = expr_of(a);
  if (e.chunks == chunks) return a;
  auto r = make_expr<RechunkExpr>(ExprKind::Rechunk, e.dtype, e.shape, std::move(chunks), "rechunk");
  r->input = a.expr();
  r->target = e.target;
  return Array(r);
}

Array whole_axes(const Array& a, const std::vector<int>& axes) {
  Chunks c = expr_of(a).chunks;
  for (int ax : axes) c[static_cast<std::size_t>(ax)] = {expr_of(a).shape[static_cast<std::size_t>(ax)]};
  return rechunk_exact(a, std::move(c));
}

Array materialize(const Array& a) {
  const Expr& e = expr_of(a);
  if (!e.blockwise()) return a;
  // A rechunk is lowered as tasks of its own even onto the same chunks; readers read them.
  auto r = make_expr<RechunkExpr>(ExprKind::Rechunk, e.dtype, e.shape, e.chunks, "materialize");
  r->materialize = true;
  r->input = a.expr();
  r->target = e.target;
  return Array(r);
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* what) {
  std::vector<int> out;
  if (axes.empty()) {
    out.resize(static_cast<std::size_t>(ndim));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int a : axes) out.push_back(normalize_axis(a, ndim));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) throw ShapeError(std::string(what) + ": repeated axis");
  return out;
}

namespace {
std::vector<int> last_permutation(const std::vector<int>& axes, int nd) {
  std::vector<int> perm;
  for (int k = 0; k < nd; ++k)
    if (std::find(axes.begin(), axes.end(), k) == axes.end()) perm.push_back(k);
  perm.insert(perm.end(), axes.begin(), axes.end());
  return perm;
}
bool is_identity(const std::vector<int>& perm) {
  for (std::size_t k = 0; k < perm.size(); ++k)
    if (perm[k] != static_cast<int>(k)) return false;
  return true;
}
}  // namespace

Array move_axes_last(const Array& a, const std::vector<int>& axes) {
  const auto perm = last_permutation(axes, a.ndim());
  return is_identity(perm) ? a : a.transpose(perm);
}

Array move_last_axes_back(const Array& a, const std::vector<int>& axes) {
  const auto perm = last_permutation(axes, a.ndim());
  if (is_identity(perm)) return a;
  std::vector<int> inv(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) inv[static_cast<std::size_t>(perm[k])] = static_cast<int>(k);
  return a.transpose(inv);
}

}  // namespace tessera::detail
