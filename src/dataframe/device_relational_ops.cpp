// The device variants of the task-based shuffle (split, unpack), of the sort's range split and
// per-range sort, and of the merge: the same tasks as shuffle_ops.cpp and frame_ops.cpp, over
// device frames, on the algorithms of device_relational.cuh (device_backend.hpp says where they
// run). A device split is its frame with the rows ordered by output partition plus one column,
// kSplitPartColumn, holding each row's partition: an unpack finds its rows in it by binary search.
#include <arrow/api.h>

#include <algorithm>

#include "device_backend.hpp"
#include "device_convert.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "frame_params.hpp"
#include "join_host.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe::detail {
namespace {

// The output partition of each row of a device split (int32, ascending).
constexpr const char* kSplitPartColumn = "__tessera.shuffle_part";

// `sorted` (rows ordered by partition, `offsets` where each begins) with its partition column.
DeviceFrame with_parts(DeviceFrame sorted, const std::vector<std::int64_t>& offsets, const Relational& rel) {
  Block part(DType::Int32, {sorted.rows});
  auto* p = part.data<std::int32_t>();
  for (std::size_t j = 0; j + 1 < offsets.size(); ++j)
    std::fill(p + offsets[j], p + offsets[j + 1], static_cast<std::int32_t>(j));
  DeviceColumn c;
  c.name = kSplitPartColumn;
  c.values = std::move(part);
  c.logical_type = "int32";
  // Made on the host; on a GPU it joins the other columns there.
  sorted.columns.push_back(rel.input(DeviceFrame{sorted.rows, {std::move(c)}}).columns.front());
  return sorted;
}

Value shuffle_split_device(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<ShuffleSplitParams>(arg(args, 0).object());
  const Relational rel(ctx);
  std::vector<std::int64_t> offsets;
  auto sorted = rel.hash_split(rel.input(device_frame_arg(arg(args, 1), "shuffle")), p.on, p.parts, offsets);
  return rel.output(with_parts(std::move(sorted), offsets, rel));
}

Value range_split_device(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<RangeSplitParams>(arg(args, 0).object());
  const Relational rel(ctx);
  const auto bounds = range_bounds(*table_of(arg(args, 2), "sort_values (bounds)"), p.column, p.parts);
  std::vector<std::int64_t> offsets;
  auto sorted = rel.range_split(rel.input(device_frame_arg(arg(args, 1), "sort_values")), p.column, bounds, p.parts,
                                p.ascending, p.nulls_first, offsets);
  return rel.output(with_parts(std::move(sorted), offsets, rel));
}

// The rows of output partition `part` in a device split, without the partition column.
DeviceFrame rows_of_part(const DeviceFrame& split, std::int64_t part) {
  const DeviceColumn* parts = split.find(kSplitPartColumn);
  if (!parts || parts->values.dtype() != DType::Int32)
    throw Error("shuffle: an unpack task's input is not a device shuffle split (no partition column)");
  const Block host = tessera::to_host(parts->values);
  const auto* p = host.data<std::int32_t>();
  const auto lo = std::lower_bound(p, p + split.rows, static_cast<std::int32_t>(part)) - p;
  const auto hi = std::upper_bound(p, p + split.rows, static_cast<std::int32_t>(part)) - p;
  DeviceFrame rows = frame_slice(split, lo, hi - lo);
  rows.columns.erase(std::remove_if(rows.columns.begin(), rows.columns.end(),
                                    [](const DeviceColumn& c) { return c.name == kSplitPartColumn; }),
                     rows.columns.end());
  return rows;
}

Value shuffle_unpack_device(const OpContext& ctx, std::span<const Value> args) {
  const auto part = from_object<std::int64_t>(arg(args, 0).object());
  if (args.size() < 2) throw Error("shuffle: an unpack task reads no split");
  const Relational rel(ctx);
  std::vector<DeviceFrame> pieces;
  for (std::size_t i = 1; i < args.size(); ++i)
    pieces.push_back(rel.input(rows_of_part(device_frame_arg(args[i], "shuffle"), part)));
  return rel.output(rel.concat(pieces));
}

Value sort_values_device(const OpContext& ctx, std::span<const Value> args) {
  const auto p = from_object<SortParams>(arg(args, 0).object());
  if (args.size() < 2) throw Error("sort_values: a task sorts no partition");
  if (p.ascending.size() != p.columns.size()) throw Error("sort_values: one direction per column is needed");
  const Relational rel(ctx);
  std::vector<DeviceFrame> parts;
  for (std::size_t i = 1; i < args.size(); ++i) parts.push_back(rel.input(device_frame_arg(args[i], "sort_values")));
  std::vector<SortKeySpec> keys;
  for (std::size_t i = 0; i < p.columns.size(); ++i) keys.push_back(SortKeySpec{p.columns[i], p.ascending[i]});
  return rel.output(rel.sort(rel.concat(parts), keys, p.nulls_first));
}

Value merge_device(const OpContext& ctx, std::span<const Value> args) {
  const auto spec = from_object<JoinSpec>(arg(args, 0).object());
  const auto inputs = args.subspan(1);
  if (spec.left_parts < 1 || spec.left_parts >= static_cast<std::int64_t>(inputs.size()))
    throw Error("merge: a task needs at least one partition of each side (got " + std::to_string(inputs.size()) +
                " partitions, " + std::to_string(spec.left_parts) + " of them left)");
  const Relational rel(ctx);
  std::vector<DeviceFrame> left, right;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    (static_cast<std::int64_t>(i) < spec.left_parts ? left : right)
        .push_back(rel.input(device_frame_arg(inputs[i], "merge")));
  const DeviceFrame l = rel.concat(left), r = rel.concat(right);
  return rel.output(rel.join(l, r, device_join_plan(*schema_of(l), *schema_of(r), spec)));
}

const bool device_relational_ops_registered = [] {
  register_device_op(kOpShuffleSplit, shuffle_split_device);
  register_device_op(kOpRangeSplit, range_split_device);
  register_device_op(kOpShuffleUnpack, shuffle_unpack_device);
  register_device_op(kOpSortValues, sort_values_device);
  register_device_op(kOpMerge, merge_device);
  return true;
}();

}  // namespace
}  // namespace tessera::dataframe::detail
