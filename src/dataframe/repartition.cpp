// DataFrame::repartition (Dask's): by a partition count (fewer: neighbours concatenated; more:
// partitions split into pieces of equal row counts), by new divisions of a frame with known ones
// (rows move by value, each output reading only the inputs whose divisions meet its range), or by
// bytes per partition (sizes computed when it is called). The concat and slice tasks are here.
#include <arrow/api.h>

#include <algorithm>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "frame_index.hpp"
#include "frame_node.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe {

using namespace detail;

namespace detail {
namespace {

struct SlicePieceParams {
  std::int64_t piece = 0, pieces = 1;
  template <class A>
  void serialize(A& ar) {
    ar(piece, pieces);
  }
};

// The partitions given, concatenated in order (the first argument is unused).
Value concat_op(const OpContext&, std::span<const Value> args) {
  std::vector<std::shared_ptr<arrow::Table>> parts;
  for (std::size_t i = 1; i < args.size(); ++i)
    parts.push_back(table_of(args[i], "repartition")->ReplaceSchemaMetadata(nullptr));
  if (parts.empty()) throw Error("repartition: a task concatenates no partition");
  if (parts.size() == 1) return table_value(parts.front());
  return table_value(unwrap(arrow::ConcatenateTables(parts), "repartition: concatenating partitions"));
}

Value slice_piece_op(const OpContext&, std::span<const Value> args) {
  const auto p = from_object<SlicePieceParams>(arg(args, 0).object());
  if (p.pieces < 1 || p.piece < 0 || p.piece >= p.pieces) throw Error("repartition: bad piece of a partition");
  auto t = table_of(arg(args, 1), "repartition");
  const std::int64_t rows = t->num_rows(), begin = rows * p.piece / p.pieces, end = rows * (p.piece + 1) / p.pieces;
  return table_value(t->Slice(begin, end - begin));
}

const bool repartition_ops_registered = [] {
  register_op(kOpConcat, concat_op);
  register_op(kOpSlicePiece, slice_piece_op);
  return true;
}();

}  // namespace

Object slice_piece_params(std::int64_t piece, std::int64_t pieces) {
  return to_object(SlicePieceParams{piece, pieces}, "tessera.frame.SlicePieceParams");
}

}  // namespace detail

namespace {

// A Repartition node of `df` following `plan`; the divisions stay known only when given.
DataFrame repartition_planned(const DataFrame& df, std::vector<std::vector<PartitionPiece>> plan, std::vector<Literal> divisions) {
  const FrameNode& in = node_of(df);
  auto n = make_node(NodeKind::Repartition, "repartition");
  n->input = df.node();
  n->schema = in.schema;
  n->npartitions = static_cast<std::int64_t>(plan.size());
  n->plan = std::move(plan);
  n->index = in.index;
  n->index_divisions = std::move(divisions);
  return DataFrame(n);
}

// Neighbours concatenated: output j takes inputs [starts[j], starts[j + 1]); the divisions are
// the first input's lower bound for each output, and the last one.
DataFrame repartition_grouped(const DataFrame& df, const std::vector<std::int64_t>& starts) {
  const FrameNode& in = node_of(df);
  std::vector<std::vector<PartitionPiece>> plan;
  std::vector<Literal> divisions;
  for (std::size_t j = 0; j + 1 < starts.size(); ++j) {
    plan.emplace_back();
    for (std::int64_t i = starts[j]; i < starts[j + 1]; ++i) plan.back().push_back(PartitionPiece{i, 0, 1});
    if (!in.index_divisions.empty()) divisions.push_back(in.index_divisions[static_cast<std::size_t>(starts[j])]);
  }
  if (!in.index_divisions.empty()) divisions.push_back(in.index_divisions.back());
  return repartition_planned(df, std::move(plan), std::move(divisions));
}

DataFrame repartition_by_count(const DataFrame& df, std::int64_t parts) {
  const std::int64_t have = df.npartitions();
  if (parts == have) return df;
  if (parts < have) {  // Dask's: output j takes inputs [j * have / parts, (j + 1) * have / parts)
    std::vector<std::int64_t> starts;
    for (std::int64_t j = 0; j <= parts; ++j) starts.push_back(j * have / parts);
    return repartition_grouped(df, starts);
  }
  // More: input i into parts / have pieces, the first parts % have inputs one more; rows are the
  // bounds now, so the divisions are unknown (the index stays, sorted).
  std::vector<std::vector<PartitionPiece>> plan;
  for (std::int64_t i = 0; i < have; ++i) {
    const std::int64_t pieces = parts / have + (i < parts % have ? 1 : 0);
    for (std::int64_t p = 0; p < pieces; ++p) plan.push_back({PartitionPiece{i, p, pieces}});
  }
  return repartition_planned(df, std::move(plan), {});
}

DataFrame repartition_by_divisions(const DataFrame& df, const std::vector<Literal>& divisions) {
  const FrameNode& in = node_of(df);
  if (in.index.empty() || in.index_divisions.empty())
    throw Error("repartition(divisions): the frame has no index with known divisions (set_index first)");
  const auto type = in.schema->GetFieldByName(in.index)->type();
  const IndexKind kind = index_kind_of(*type, in.index, "repartition");
  if (divisions.size() < 2) throw Error("repartition: divisions needs at least two bounds (one partition)");
  for (const auto& d : divisions)
    if (is_missing(d)) throw Error("repartition: a division is null");
  split_kind(kind, divisions, in.index, "repartition");
  for (std::size_t i = 1; i < divisions.size(); ++i)
    if (compare_literals(divisions[i - 1], divisions[i], "repartition") >= 0)
      throw Error("repartition: divisions must increase strictly, but " + literal_text(divisions[i - 1]) +
                  " comes before " + literal_text(divisions[i]));
  const auto& old = in.index_divisions;
  if (!is_missing(old.front()) && !is_missing(old.back()) &&
      (compare_literals(divisions.front(), old.front(), "repartition") > 0 ||
       compare_literals(divisions.back(), old.back(), "repartition") < 0))
    throw Error("repartition: the new divisions [" + literal_text(divisions.front()) + ", " + literal_text(divisions.back()) +
                "] must cover the old ones [" + literal_text(old.front()) + ", " + literal_text(old.back()) +
                "] of index '" + in.index + "'");
  if (same_divisions(old, divisions)) return df;
  return range_partition(df, in.index, divisions, overlapping_inputs(old, divisions), /*sort=*/false, /*check=*/false);
}

// Dask's repartition(partition_size): partitions larger than `size` split into ceil(bytes / size)
// pieces, then neighbouring pieces concatenated while their sum fits.
DataFrame repartition_by_size(const DataFrame& df, std::int64_t size, Executor& executor) {
  const FrameNode& in = node_of(df);
  const auto stats = partition_stats(df, "", executor);
  struct Sized {
    PartitionPiece piece;
    std::int64_t bytes;
  };
  std::vector<Sized> pieces;
  bool split = false;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const auto at = static_cast<std::int64_t>(i);
    const std::int64_t count = std::max<std::int64_t>(1, (stats[i].bytes + size - 1) / size);
    // A piece must hold a row at least: a partition is never cut into more pieces than rows.
    const std::int64_t cut = std::max<std::int64_t>(1, std::min(count, stats[i].rows));
    split = split || cut > 1;
    for (std::int64_t p = 0; p < cut; ++p) pieces.push_back({PartitionPiece{at, p, cut}, stats[i].bytes / cut});
  }
  std::vector<std::vector<PartitionPiece>> plan;
  std::vector<std::int64_t> starts;  // for the divisions when nothing was split
  std::int64_t total = 0;
  for (const auto& s : pieces) {
    if (plan.empty() || total + s.bytes > size) {
      plan.emplace_back();
      starts.push_back(s.piece.input);
      total = 0;
    }
    plan.back().push_back(s.piece);
    total += s.bytes;
  }
  std::vector<Literal> divisions;
  if (!split && !in.index_divisions.empty()) {
    for (const auto s : starts) divisions.push_back(in.index_divisions[static_cast<std::size_t>(s)]);
    divisions.push_back(in.index_divisions.back());
  }
  return repartition_planned(df, std::move(plan), std::move(divisions));
}

}  // namespace

DataFrame DataFrame::repartition(const RepartitionOptions& options, Executor& executor) const {
  const FrameNode& in = node_of(*this);
  if (in.device) throw Error("repartition is not supported on device frames yet: to_host() first (issue 30)");
  const int given = (options.npartitions != 0) + !options.divisions.empty() + (options.partition_size != 0);
  if (given != 1) throw Error("repartition: give exactly one of npartitions, divisions and partition_size");
  if (options.npartitions < 0) throw Error("repartition: npartitions must be positive");
  if (options.partition_size < 0) throw Error("repartition: partition_size must be positive");
  if (options.npartitions > 0) return repartition_by_count(*this, options.npartitions);
  if (!options.divisions.empty()) return repartition_by_divisions(*this, options.divisions);
  return repartition_by_size(*this, options.partition_size, executor);
}

}  // namespace tessera::dataframe
