// TaskListExpr: building gather tasks and lowering the tasks as spelled out.
#include "task_list.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::detail {

TaskListExpr::Call gather_call(const Expr& x, int input, const std::vector<std::vector<std::int64_t>>& index,
                               double fill, int index_axis) {
  const int nd = static_cast<int>(x.shape.size());
  GatherParams p;
  p.dtype = x.dtype;
  p.fill = fill;
  if (index_axis >= 0) {
    p.index_axis = index_axis;
    p.axis_len = x.shape[index_axis];
  }
  p.window.resize(nd);
  std::vector<std::vector<std::int64_t>> touched(nd);
  for (int a = 0; a < nd; ++a) {
    const auto offs = chunk_offsets(x.chunks[a]);
    auto chunk_of = [&](std::int64_t g) {
      return (std::upper_bound(offs.begin(), offs.end(), g) - offs.begin()) - 1;
    };
    for (auto g : index[a])
      if (g >= 0) touched[a].push_back(chunk_of(g));
    std::sort(touched[a].begin(), touched[a].end());
    touched[a].erase(std::unique(touched[a].begin(), touched[a].end()), touched[a].end());
    // An axis read nowhere (all fill, or no output) still needs one block to stand on.
    if (touched[a].empty()) touched[a].push_back(0);
    std::vector<std::int64_t> start;  // window offset of each touched chunk
    std::int64_t w = 0;
    for (auto c : touched[a]) {
      start.push_back(w);
      p.window[a].push_back(x.chunks[a][c]);
      w += x.chunks[a][c];
    }
    std::vector<std::int64_t> wi;
    for (auto g : index[a]) {
      if (g < 0) {
        wi.push_back(-1);
        continue;
      }
      const auto c = chunk_of(g);
      const auto s = std::lower_bound(touched[a].begin(), touched[a].end(), c) - touched[a].begin();
      wi.push_back(start[s] + g - offs[c]);
    }
    p.index.push_back(std::move(wi));
  }
  TaskListExpr::Call call;
  call.op = kGatherOp;
  // Blocks in row-major order over the touched chunks of every axis.
  std::vector<std::size_t> pos(nd, 0);
  while (true) {
    std::vector<std::int64_t> cc(nd);
    for (int a = 0; a < nd; ++a) cc[a] = touched[a][pos[a]];
    call.reads.emplace_back(input, chunk_flat(x.chunks, cc));
    int a = nd - 1;
    for (; a >= 0; --a) {
      if (++pos[a] < touched[a].size()) break;
      pos[a] = 0;
    }
    if (a < 0) break;
  }
  call.params.emplace_back(to_object(p, "GatherParams"));
  return call;
}

std::shared_ptr<TaskListExpr> make_task_list(DType dtype, Chunks chunks, std::vector<ExprPtr> inputs,
                                             const std::string& prefix) {
  Shape shape = shape_of_chunks(chunks);
  auto e = make_expr<TaskListExpr>(ExprKind::TaskList, dtype, std::move(shape), std::move(chunks), prefix);
  e->target = joint_target_of(inputs);
  e->inputs = std::move(inputs);
  return e;
}

Array rechunked(const Array& a, Chunks chunks) {
  if (expr_of(a).chunks == chunks) return a;
  require_known_chunks(expr_of(a), "rechunk");
  auto e = make_expr<RechunkExpr>(ExprKind::Rechunk, expr_of(a).dtype, expr_of(a).shape, std::move(chunks), "rechunk");
  e->input = a.expr();
  e->target = a.expr()->target;
  return Array(e);
}

void Lowering::lower_task_list(const TaskListExpr& e, std::vector<Key>& keys) {
  std::vector<const std::vector<Key>*> in;
  for (const auto& i : e.inputs) in.push_back(&lower(i));
  const std::int64_t n = shape_size(chunk_counts(e.chunks));
  if (static_cast<std::int64_t>(e.calls.size()) != n)
    throw Error("array " + e.name + ": " + std::to_string(e.calls.size()) + " tasks for " + std::to_string(n) +
                " chunks");
  for (std::int64_t f = 0; f < n; ++f) {
    const auto& call = e.calls[static_cast<std::size_t>(f)];
    Task t;
    t.key = chunk_key(e.name, chunk_coords(e.chunks, f));
    t.op = call.op;
    for (const auto& v : call.params) t.args.emplace_back(v);
    for (const auto& [i, c] : call.reads) t.args.emplace_back(KeyRef{(*in[static_cast<std::size_t>(i)])[static_cast<std::size_t>(c)]});
    keys.push_back(t.key);
    add_task(std::move(t));
  }
}

}  // namespace tessera::detail
