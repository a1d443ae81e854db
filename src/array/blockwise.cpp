// blockwise (dask.array.blockwise): letters give each axis a name; shared letters are chunked
// alike; output block coordinates pick each input's block; contracted letters are one chunk
// (concatenate) or every block along them. Inputs indexed exactly like the output are
// map_blocks; the rest become explicit tasks (TaskListExpr).
#include "tessera/array/blockwise.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <set>

#include "expr.hpp"
#include "task_list.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"

namespace tessera {

using namespace detail;

Array blockwise(const std::string& op, const std::string& out_index, const std::vector<BlockwiseInput>& inputs,
                DType dtype, bool concatenate, const std::map<char, std::int64_t>& new_axes) {
  if (inputs.empty()) throw Error("blockwise: need at least one input");
  if (!OpRegistry::global().contains(op))
    throw UnknownOperationError("blockwise: unknown operation '" + op + "' (register it with TESSERA_REGISTER_FUNCTION)");
  if (std::set<char>(out_index.begin(), out_index.end()).size() != out_index.size())
    throw ShapeError("blockwise: repeated letter in the output index '" + out_index + "'");
  // Every letter's extent and the chunkings it has in the inputs.
  std::map<char, std::int64_t> extent;
  std::map<char, std::vector<std::vector<std::int64_t>>> options;
  for (const auto& in : inputs) {
    const Expr& e = expr_of(in.array);
    if (in.index.size() != e.shape.size())
      throw ShapeError("blockwise: index '" + in.index + "' for an array of " + std::to_string(e.shape.size()) +
                       " dimensions");
    if (std::set<char>(in.index.begin(), in.index.end()).size() != in.index.size())
      throw ShapeError("blockwise: repeated letter in the input index '" + in.index + "'");
    require_known_chunks(e, "blockwise");
    for (std::size_t k = 0; k < in.index.size(); ++k) {
      const char l = in.index[k];
      if (auto it = extent.find(l); it != extent.end() && it->second != e.shape[k])
        throw ShapeError("blockwise: letter '" + std::string(1, l) + "' has extents " + std::to_string(it->second) +
                         " and " + std::to_string(e.shape[k]));
      extent[l] = e.shape[k];
      options[l].push_back(e.chunks[k]);
    }
  }
  const std::set<char> out_letters(out_index.begin(), out_index.end());
  std::map<char, std::vector<std::int64_t>> chunks_of;
  for (auto& [l, opts] : options)
    chunks_of[l] = concatenate && !out_letters.count(l) ? std::vector<std::int64_t>{extent[l]} : refine_axis_chunks(opts);
  Chunks out_chunks;
  for (char l : out_index) {
    if (chunks_of.count(l)) {
      out_chunks.push_back(chunks_of[l]);
    } else if (auto it = new_axes.find(l); it != new_axes.end()) {
      out_chunks.push_back({it->second});
    } else {
      throw ShapeError("blockwise: output letter '" + std::string(1, l) + "' is in no input and not in new_axes");
    }
  }

  // Inputs indexed like the output, all of them: one block each, in the same grid.
  bool plain = true;
  for (const auto& in : inputs) plain &= in.index == out_index;
  std::vector<Array> aligned;
  for (const auto& in : inputs) {
    Chunks c;
    for (char l : in.index) c.push_back(chunks_of[l]);
    aligned.push_back(rechunked(in.array, std::move(c)));
  }
  if (plain) return map_blocks(op, aligned, dtype, out_chunks);

  std::vector<ExprPtr> exprs;
  for (const auto& a : aligned) exprs.push_back(a.expr());
  auto t = make_task_list(dtype, out_chunks, exprs, "blockwise-" + op);
  const std::int64_t n = shape_size(chunk_counts(out_chunks));
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(out_chunks, f);
    std::map<char, std::int64_t> at;
    for (std::size_t o = 0; o < out_index.size(); ++o) at[out_index[o]] = cc[o];
    TaskListExpr::Call call;
    call.op = op;
    for (std::size_t i = 0; i < aligned.size(); ++i) {
      const Expr& e = *exprs[i];
      const std::string& index = inputs[i].index;
      // The input's block coordinates: fixed by the output letters, every chunk along the
      // contracted ones (a single chunk with concatenate).
      std::vector<std::int64_t> coords(index.size(), 0), counts(index.size(), 1);
      for (std::size_t k = 0; k < index.size(); ++k) {
        if (at.count(index[k])) coords[k] = at[index[k]];
        else counts[k] = static_cast<std::int64_t>(e.chunks[k].size());
      }
      std::vector<std::int64_t> c = coords;
      while (true) {
        call.reads.emplace_back(static_cast<int>(i), chunk_flat(e.chunks, c));
        int k = static_cast<int>(index.size()) - 1;
        for (; k >= 0; --k) {
          if (counts[k] == 1) continue;
          if (++c[k] < counts[k]) break;
          c[k] = 0;
        }
        if (k < 0) break;
      }
    }
    t->calls.push_back(std::move(call));
  }
  return Array(t);
}

}  // namespace tessera
