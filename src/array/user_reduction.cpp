// User-defined tree reductions (Dask's da.reduction) with registered ops: a chunk op per chunk,
// then partials concatenated along one reduced axis at a time, split_every per combine, and the
// aggregate op on the last group. The partials' extents are whatever the user's ops return, so
// the tree is built by a node that lowers itself and concatenates at run time.
#include <algorithm>
#include <map>
#include <span>

#include "array_ops.hpp"
#include "chunk_map.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

constexpr const char* kConcatenateBlocksOp = "tessera.array.concatenate_blocks";

/** Concatenates blocks along one axis (their other extents must agree). */
Value concatenate_blocks_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("concatenate_blocks: expected an axis and blocks");
  const auto axis = from_value<std::int32_t>(args[0]);
  const Block& first = args[1].block();
  if (axis < 0 || axis >= first.ndim()) throw ShapeError("concatenate_blocks: axis out of range");
  Shape shape = first.shape();
  shape[static_cast<std::size_t>(axis)] = 0;
  for (const auto& v : args.subspan(1)) {
    const Block& b = v.block();
    if (b.ndim() != first.ndim() || b.dtype() != first.dtype())
      throw ShapeError("concatenate_blocks: partials of different dtypes or dimensions");
    for (int a = 0; a < b.ndim(); ++a)
      if (a != axis && b.shape()[static_cast<std::size_t>(a)] != first.shape()[static_cast<std::size_t>(a)])
        throw ShapeError("concatenate_blocks: partials of shapes " + shape_to_string(first.shape()) + " and " +
                         shape_to_string(b.shape()) + " differ outside axis " + std::to_string(axis));
    shape[static_cast<std::size_t>(axis)] += b.shape()[static_cast<std::size_t>(axis)];
  }
  Block out(first.dtype(), shape);
  std::vector<std::int64_t> dst(shape.size(), 0);
  for (const auto& v : args.subspan(1)) {
    const Block& b = v.block();
    copy_box(b, std::vector<std::int64_t>(shape.size(), 0), out, dst, b.shape());
    dst[static_cast<std::size_t>(axis)] += b.shape()[static_cast<std::size_t>(axis)];
  }
  return Value(std::move(out));
}

const bool user_reduction_registered = [] {
  register_op(kConcatenateBlocksOp, concatenate_blocks_op);
  return true;
}();

struct ReductionExpr : CustomExpr {
  ExprPtr input;
  std::string chunk_op, combine_op, aggregate_op;
  std::vector<int> axes;
  bool keepdims = false;
  int split_every = 8;
  using CustomExpr::CustomExpr;

  void lower_custom(Lowering& low, std::vector<Key>& keys) const override {
    const std::vector<Key> in = low.lower(input);
    const int nd = static_cast<int>(input->shape.size());
    std::vector<bool> reduced(static_cast<std::size_t>(nd), false);
    for (int a : axes) reduced[static_cast<std::size_t>(a)] = true;
    auto task = [&](const std::string& op, std::vector<Arg> args, const Key& key, bool keep) {
      Task t;
      t.key = key;
      t.op = op;
      t.args = std::move(args);
      if (op != kConcatenateBlocksOp) {  // the user's ops: (Block, axes, keepdims)
        t.args.emplace_back(to_task_value(axes));
        t.args.emplace_back(to_task_value(keep));
      }
      low.add_custom_task(std::move(t));
    };
    // Partials per output chunk: a grid over the reduced axes (chunk counts of the input).
    std::vector<std::int64_t> grid;
    for (int a : axes) grid.push_back(static_cast<std::int64_t>(input->chunks[static_cast<std::size_t>(a)].size()));
    std::map<std::vector<std::int64_t>, std::map<std::vector<std::int64_t>, Key>> groups;
    const std::int64_t n = static_cast<std::int64_t>(in.size());
    for (std::int64_t f = 0; f < n; ++f) {
      const auto cc = chunk_coords(input->chunks, f);
      std::vector<std::int64_t> out_cc, red_cc;
      for (int a = 0; a < nd; ++a)
        if (reduced[static_cast<std::size_t>(a)]) red_cc.push_back(cc[static_cast<std::size_t>(a)]);
        else out_cc.push_back(cc[static_cast<std::size_t>(a)]);
      const Key k = chunk_key(name + "-chunk", cc);
      task(chunk_op, {Arg(KeyRef{in[static_cast<std::size_t>(f)]})}, k, true);
      groups[out_cc][red_cc] = k;
    }
    keys.assign(static_cast<std::size_t>(shape_size(chunk_counts(chunks))), Key{});
    int serial = 0;
    for (auto& [out_cc, parts] : groups) {
      std::vector<std::int64_t> g = grid;
      // Along one reduced axis at a time: runs of split_every partials are concatenated and
      // combined, until that axis holds one partial; the last run goes to the aggregate.
      for (std::size_t r = 0; r < g.size(); ++r) {
        while (g[r] > 1) {
          bool others_done = true;
          for (std::size_t s = r + 1; s < g.size(); ++s) others_done &= g[s] == 1;
          const bool last = others_done && g[r] <= split_every;
          const std::int64_t groups_r = last ? 1 : (g[r] + split_every - 1) / split_every;
          std::map<std::vector<std::int64_t>, Key> next;
          for (auto& [red_cc, key] : parts) {
            if (red_cc[r] % (last ? g[r] : split_every) != 0) continue;
            std::vector<Arg> args{Arg(Value(to_object(static_cast<std::int32_t>(axes[r]), "int32")))};
            std::vector<std::int64_t> probe = red_cc;
            for (std::int64_t j = red_cc[r]; j < std::min(g[r], red_cc[r] + (last ? g[r] : split_every)); ++j) {
              probe[r] = j;
              args.emplace_back(KeyRef{parts.at(probe)});
            }
            const Key cat = chunk_key(name + "-concat", {serial++});
            task(kConcatenateBlocksOp, std::move(args), cat, true);
            std::vector<std::int64_t> to = red_cc;
            to[r] = red_cc[r] / (last ? g[r] : split_every);
            if (last) {
              next[to] = cat;  // the aggregate reads it below
            } else {
              const Key comb = chunk_key(name + "-combine", {serial++});
              task(combine_op.empty() ? aggregate_op : combine_op, {Arg(KeyRef{cat})}, comb, true);
              next[to] = comb;
            }
          }
          parts = std::move(next);
          g[r] = groups_r;
        }
      }
      std::vector<std::int64_t> out_coords = out_cc;
      if (keepdims) {
        out_coords.clear();
        std::size_t i = 0;
        for (int a = 0; a < nd; ++a) out_coords.push_back(reduced[static_cast<std::size_t>(a)] ? 0 : out_cc[i++]);
      }
      const Key k = chunk_key(name, out_coords);
      task(aggregate_op, {Arg(KeyRef{parts.begin()->second})}, k, keepdims);
      keys[static_cast<std::size_t>(chunk_flat(chunks, out_coords))] = k;
    }
  }
};

void check_op(const std::string& op, const char* role) {
  if (!OpRegistry::global().contains(op))
    throw UnknownOperationError(std::string("reduction: unknown ") + role + " operation '" + op +
                                "' (register it with TESSERA_REGISTER_FUNCTION)");
}

}  // namespace

Array reduction(const Array& x, const std::string& chunk_op, const std::string& aggregate_op, const ReductionOptions& o) {
  check_op(chunk_op, "chunk");
  check_op(aggregate_op, "aggregate");
  if (!o.combine_op.empty()) check_op(o.combine_op, "combine");
  if (o.split_every != 0 && o.split_every < 2) throw Error("reduction: split_every must be >= 2");
  const Expr& e = expr_of(x);
  const int nd = x.ndim();
  const auto axes = normalize_axes(o.axes, nd, "reduction");
  Shape shape;
  Chunks chunks;
  for (int a = 0; a < nd; ++a) {
    if (!std::binary_search(axes.begin(), axes.end(), a)) {
      shape.push_back(e.shape[static_cast<std::size_t>(a)]);
      chunks.push_back(e.chunks[static_cast<std::size_t>(a)]);
    } else if (o.keepdims) {
      shape.push_back(1);
      chunks.push_back({1});
    }
  }
  auto r = make_expr<ReductionExpr>(ExprKind::Custom, o.dtype.value_or(e.dtype), std::move(shape), std::move(chunks), "reduction");
  r->input = x.expr();
  r->chunk_op = chunk_op;
  r->combine_op = o.combine_op;
  r->aggregate_op = aggregate_op;
  r->axes = axes;
  r->keepdims = o.keepdims;
  r->split_every = o.split_every ? o.split_every : 8;
  r->target = e.target;
  return Array(r);
}

}  // namespace tessera
