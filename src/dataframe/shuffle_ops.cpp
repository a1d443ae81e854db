// The tasks of a hash shuffle, of a sort's range shuffle and of a merge (docs/dataframe-shuffle.md).
//
// Today's shuffle is the task-based one: a split task per input partition orders its rows by
// output partition (the offsets of each output's rows in the schema's metadata), and an unpack
// task per output partition reads every split and keeps its own slice of each. That is N + M
// tasks, but each unpack fetches whole splits, so on a cluster every worker receives every split
// it runs an unpack for; the peer-to-peer service of the design doc replaces that transport
// without changing these tasks' results.
#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "frame_params.hpp"
#include "join_host.hpp"
#include "partition_host.hpp"
#include "partition_index.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe::detail {

namespace {

namespace cp = arrow::compute;

// Where a split keeps the row offsets of each output partition (M + 1 numbers, comma-separated).
constexpr const char* kOffsetsKey = "tessera.shuffle.offsets";


// `table` with its rows ordered by output partition and the offsets of each partition's rows in
// the schema's metadata: what an unpack task slices.
Value split_layout(const std::shared_ptr<arrow::Table>& table, const std::vector<std::uint32_t>& parts,
                   std::int64_t count) {
  std::vector<std::int64_t> offsets;
  auto sorted = order_by_partition(table, parts, count, offsets);
  std::string text;
  for (const auto o : offsets) text += (text.empty() ? "" : ",") + std::to_string(o);
  auto metadata = std::make_shared<arrow::KeyValueMetadata>(std::vector<std::string>{kOffsetsKey},
                                                            std::vector<std::string>{text});
  return table_value(sorted->ReplaceSchemaMetadata(metadata));
}

void check_parts(std::int64_t parts, const char* what) {
  if (parts < 1 || parts > (std::int64_t{1} << 31))
    throw Error(std::string(what) + ": " + std::to_string(parts) + " output partitions (1 to 2^31)");
}

Value shuffle_split_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<ShuffleSplitParams>(arg(args, 0).object());
  check_parts(p.parts, "shuffle");
  auto table = table_of(arg(args, 1), "shuffle");
  return split_layout(table, hash_partitions(*table, p.on, static_cast<std::uint32_t>(p.parts)), p.parts);
}


// A column's values as doubles (null stays null): how a sort compares them to the bounds. The
// conversion is monotonic, so equal values share a range and the ranges keep the order.
std::shared_ptr<arrow::DoubleArray> as_doubles(const std::shared_ptr<arrow::ChunkedArray>& column,
                                               const std::string& name) {
  auto d = unwrap(cp::Cast(arrow::Datum(column), arrow::float64()), "sort_values: column '" + name + "'");
  auto combined = unwrap(arrow::Concatenate(d.chunked_array()->chunks()), "sort_values");
  return std::static_pointer_cast<arrow::DoubleArray>(combined);
}

// A sort's split: each row's range among `parts`, by the bounds (the first column's approximate
// quantiles, the second argument); missing values (null, NaN) in the last range, as pandas puts
// them last whichever the direction.
Value range_split_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<RangeSplitParams>(arg(args, 0).object());
  check_parts(p.parts, "sort_values");
  auto table = table_of(arg(args, 1), "sort_values");
  auto bounds_table = table_of(arg(args, 2), "sort_values (bounds)");
  return split_layout(table, range_partitions(*table, *bounds_table, p.column, p.parts, p.ascending, p.nulls_first),
                      p.parts);
}

// The rows of output partition `part` in one split.
std::shared_ptr<arrow::Table> slice_of(const std::shared_ptr<arrow::Table>& split, std::int64_t part) {
  const auto& metadata = split->schema()->metadata();
  const int at = metadata ? metadata->FindKey(kOffsetsKey) : -1;
  if (at < 0) throw Error("shuffle: an unpack task's input is not a shuffle split (no row offsets)");
  const std::string& text = metadata->value(at);
  std::vector<std::int64_t> offsets;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data() + from, text.data() + comma, v);
    if (ec != std::errc() || end != text.data() + comma || v < 0 || v > split->num_rows() ||
        (!offsets.empty() && v < offsets.back()))
      throw Error("shuffle: a split's row offsets are malformed");
    offsets.push_back(v);
    from = comma + 1;
  }
  if (part < 0 || part + 1 >= static_cast<std::int64_t>(offsets.size()))
    throw Error("shuffle: output partition " + std::to_string(part) + " is not in a split of " +
                std::to_string(offsets.size() - 1) + " partitions");
  const auto begin = offsets[static_cast<std::size_t>(part)], stop = offsets[static_cast<std::size_t>(part) + 1];
  return split->Slice(begin, stop - begin)->ReplaceSchemaMetadata(nullptr);
}

Value shuffle_unpack_op(const OpContext&, std::span<const Value> args) {
  const auto part = from_object<std::int64_t>(arg(args, 0).object());
  if (args.size() < 2) throw Error("shuffle: an unpack task reads no split");
  std::vector<std::shared_ptr<arrow::Table>> pieces;
  for (std::size_t i = 1; i < args.size(); ++i) pieces.push_back(slice_of(table_of(args[i], "shuffle"), part));
  return table_value(unwrap(arrow::ConcatenateTables(pieces), "shuffle: assembling a partition"));
}

std::shared_ptr<arrow::Table> concatenated(std::span<const Value> parts, const std::string& side) {
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (const auto& v : parts) tables.push_back(table_of(v, "merge (" + side + ")")->ReplaceSchemaMetadata(nullptr));
  if (tables.size() == 1) return tables.front();
  return unwrap(arrow::ConcatenateTables(tables), "merge: concatenating the " + side + " partitions");
}

Value merge_op(const OpContext&, std::span<const Value> args) {
  const auto spec = from_object<JoinSpec>(arg(args, 0).object());
  const auto inputs = args.subspan(1);
  if (spec.left_parts < 1 || spec.left_parts >= static_cast<std::int64_t>(inputs.size()))
    throw Error("merge: a task needs at least one partition of each side (got " + std::to_string(inputs.size()) +
                " partitions, " + std::to_string(spec.left_parts) + " of them left)");
  const auto left_count = static_cast<std::size_t>(spec.left_parts);
  return table_value(
      join_tables(concatenated(inputs.first(left_count), "left"), concatenated(inputs.subspan(left_count), "right"), spec));
}

const bool shuffle_ops_registered = [] {
  register_op(kOpShuffleSplit, shuffle_split_op);
  register_op(kOpShuffleUnpack, shuffle_unpack_op);
  register_op(kOpRangeSplit, range_split_op);
  register_op(kOpMerge, merge_op);
  return true;
}();

}  // namespace

std::shared_ptr<arrow::Array> partition_order(const std::vector<std::uint32_t>& parts, std::int64_t count,
                                              std::vector<std::int64_t>& offsets) {
  // A stable counting sort: rows keep their input order within each partition.
  offsets.assign(static_cast<std::size_t>(count) + 1, 0);
  for (const auto part : parts) ++offsets[part + 1];
  for (std::size_t j = 1; j < offsets.size(); ++j) offsets[j] += offsets[j - 1];
  std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
  arrow::Int64Builder order;
  check_arrow(order.AppendEmptyValues(static_cast<std::int64_t>(parts.size())), "shuffle");
  auto* slots = order.GetMutableValue(0);
  for (std::size_t r = 0; r < parts.size(); ++r) slots[next[parts[r]]++] = static_cast<std::int64_t>(r);
  std::shared_ptr<arrow::Array> indices;
  check_arrow(order.Finish(&indices), "shuffle");
  return indices;
}

std::shared_ptr<arrow::Table> order_by_partition(const std::shared_ptr<arrow::Table>& table,
                                                 const std::vector<std::uint32_t>& parts, std::int64_t count,
                                                 std::vector<std::int64_t>& offsets) {
  auto indices = partition_order(parts, count, offsets);
  return unwrap(cp::Take(arrow::Datum(table), arrow::Datum(indices)), "shuffle").table();
}

std::vector<double> range_bounds(const arrow::Table& bounds_table, const std::string& column, std::int64_t parts) {
  check_parts(parts, "sort_values");
  auto bounds_column = bounds_table.GetColumnByName(column);
  if (!bounds_column) throw Error("sort_values: column '" + column + "' is missing from the bounds");
  std::vector<double> bounds;
  if (bounds_column->length() > 0) {
    auto b = as_doubles(bounds_column, column);
    for (std::int64_t i = 0; i < b->length(); ++i)
      if (b->IsValid(i) && !std::isnan(b->Value(i))) bounds.push_back(b->Value(i));
  }
  std::sort(bounds.begin(), bounds.end());
  if (bounds.size() > static_cast<std::size_t>(parts - 1)) bounds.resize(static_cast<std::size_t>(parts - 1));
  return bounds;
}

std::vector<std::uint32_t> range_partitions(const arrow::Table& table, const arrow::Table& bounds_table,
                                            const std::string& column, std::int64_t parts, bool ascending,
                                            bool nulls_first) {
  auto values = table.GetColumnByName(column);
  if (!values) throw Error("sort_values: column '" + column + "' is missing from a partition");
  const std::vector<double> bounds = range_bounds(bounds_table, column, parts);
  const auto last = static_cast<std::uint32_t>(parts - 1);
  std::vector<std::uint32_t> result(static_cast<std::size_t>(table.num_rows()), nulls_first ? 0u : last);
  if (table.num_rows() > 0) {
    auto v = as_doubles(values, column);
    for (std::int64_t r = 0; r < v->length(); ++r)
      result[static_cast<std::size_t>(r)] =
          partition_index::range_of(v->Value(r), v->IsNull(r), bounds.data(), static_cast<std::uint32_t>(bounds.size()),
                                    last, ascending, nulls_first);
  }
  return result;
}

Object shuffle_split_params(const std::vector<std::string>& on, std::int64_t parts) {
  return to_object(ShuffleSplitParams{on, parts}, "tessera.frame.ShuffleSplitParams");
}
Object shuffle_unpack_params(std::int64_t part) { return to_object(part, "tessera.frame.Part"); }
Object range_split_params(const std::string& column, std::int64_t parts, bool ascending, bool nulls_first) {
  return to_object(RangeSplitParams{column, parts, ascending, nulls_first}, "tessera.frame.RangeSplitParams");
}
Value shuffle_split_layout(const std::shared_ptr<arrow::Table>& table, const std::vector<std::uint32_t>& parts,
                           std::int64_t count) {
  return split_layout(table, parts, count);
}
Object merge_params(const JoinSpec& spec) { return to_object(spec, "tessera.frame.JoinSpec"); }

}  // namespace tessera::dataframe::detail
