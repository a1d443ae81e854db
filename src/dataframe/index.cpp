// The index: set_index, known divisions and loc (docs/dataframe.md, "The index").
//
// A frame's index is one of its columns, marked as the index, whose values are sorted across the
// partitions: with known divisions d, partition i holds the values v with d[i] <= v < d[i + 1]
// (the last partition also v == d.back()), and every missing value is in the last partition.
// set_index computes the divisions when it is called, as Dask does (the column's approximate
// quantiles, quantiles.cpp), so that loc knows at build time which partitions to read. The rows
// move by a `division_split` task per input partition (the shuffle's split layout, so
// `shuffle_unpack` assembles each range) and each range is sorted on its own.
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/util/byte_size.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <type_traits>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "frame_index.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "quantiles.hpp"
#include "tessera/core/key.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe {

using namespace detail;

namespace detail {

namespace {

namespace cp = arrow::compute;

std::string index_columns_of(const arrow::Schema& s) {
  std::string out;
  for (const auto& f : s.fields()) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}

bool index_is_number(const Literal& v) {
  return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v) ||
         std::holds_alternative<bool>(v);
}

double index_as_double(const Literal& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return std::get<double>(v);
}

std::int64_t index_as_int(const Literal& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  return std::get<std::int64_t>(v);
}

// The values of a column as one array of `type` (Int: int64, Double: float64, String: utf8).
template <class ArrayT>
std::shared_ptr<ArrayT> index_values_as(const std::shared_ptr<arrow::ChunkedArray>& column,
                                        const std::shared_ptr<arrow::DataType>& type, const std::string& what) {
  auto d = unwrap(cp::Cast(arrow::Datum(column), type), what);
  auto chunks = d.chunked_array()->chunks();
  if (chunks.empty()) return std::static_pointer_cast<ArrayT>(unwrap(arrow::MakeEmptyArray(type), what));
  return std::static_pointer_cast<ArrayT>(unwrap(arrow::Concatenate(chunks), what));
}

struct DivisionSplitParams {
  std::string column;
  std::int32_t kind = 0;
  std::int64_t parts = 1;
  // The divisions (parts + 1 of them) in the kind's vector; none when they are missing (a column
  // with no values: every row goes to the one partition).
  std::vector<std::int64_t> ints;
  std::vector<double> doubles;
  std::vector<std::string> strings;
  bool check = false;
  template <class A>
  void serialize(A& ar) {
    ar(column, kind, parts, ints, doubles, strings, check);
  }
};

// Each row's range: the count of inner divisions at or below its value (missing: the last).
template <class T, class Get>
void place_rows(const std::vector<T>& bounds, std::int64_t rows, const arrow::Array& valid, Get&& get,
                bool check, const std::string& column, std::vector<std::uint32_t>& parts) {
  if (bounds.size() < 2) return;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (valid.IsNull(r)) continue;
    const T v = get(r);
    if constexpr (std::is_same_v<T, double>)
      if (std::isnan(v)) continue;
    if (check && (v < bounds.front() || bounds.back() < v)) {
      const Literal shown = v;
      throw Error("set_index: column '" + column + "' holds " + literal_text(shown) + ", outside the divisions [" +
                  literal_text(Literal(bounds.front())) + ", " + literal_text(Literal(bounds.back())) + "]");
    }
    parts[static_cast<std::size_t>(r)] =
        static_cast<std::uint32_t>(std::upper_bound(bounds.begin() + 1, bounds.end() - 1, v) - (bounds.begin() + 1));
  }
}

Value division_split_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<DivisionSplitParams>(arg(args, 0).object());
  if (p.parts < 1 || p.parts > (std::int64_t{1} << 31)) throw Error("set_index: bad partition count");
  auto table = table_of(arg(args, 1), "set_index")->ReplaceSchemaMetadata(nullptr);
  auto column = table->GetColumnByName(p.column);
  if (!column) throw Error("set_index: column '" + p.column + "' is missing from a partition");
  std::vector<std::uint32_t> parts(static_cast<std::size_t>(table->num_rows()), static_cast<std::uint32_t>(p.parts - 1));
  const std::string what = "set_index: column '" + p.column + "'";
  switch (static_cast<IndexKind>(p.kind)) {
    case IndexKind::Int: {
      auto a = index_values_as<arrow::Int64Array>(column, arrow::int64(), what);
      place_rows(p.ints, a->length(), *a, [&](std::int64_t r) { return a->Value(r); }, p.check, p.column, parts);
      break;
    }
    case IndexKind::Double: {
      auto a = index_values_as<arrow::DoubleArray>(column, arrow::float64(), what);
      place_rows(p.doubles, a->length(), *a, [&](std::int64_t r) { return a->Value(r); }, p.check, p.column, parts);
      break;
    }
    case IndexKind::String: {
      auto a = index_values_as<arrow::StringArray>(column, arrow::utf8(), what);
      place_rows(p.strings, a->length(), *a, [&](std::int64_t r) { return std::string(a->GetView(r)); }, p.check,
                 p.column, parts);
      break;
    }
  }
  return shuffle_split_layout(table, parts, p.parts);
}

struct StatsParams {
  std::string column;  // "": rows and bytes only
  std::int32_t kind = 0;
  template <class A>
  void serialize(A& ar) {
    ar(column, kind);
  }
};

// A partition -> one row: rows, bytes, valid (values of the column), min, max (null without values).
Value partition_stats_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<StatsParams>(arg(args, 0).object());
  auto table = table_of(arg(args, 1), "partition statistics");
  auto bytes = arrow::util::ReferencedBufferSize(*table);
  arrow::FieldVector fields{arrow::field("rows", arrow::int64()), arrow::field("bytes", arrow::int64()),
                            arrow::field("valid", arrow::int64())};
  arrow::ArrayVector arrays;
  auto one = [&](std::int64_t v) {
    arrow::Int64Builder b;
    check_arrow(b.Append(v), "partition statistics");
    arrays.push_back(b.Finish().ValueOrDie());
  };
  one(table->num_rows());
  one(bytes.ok() ? *bytes : arrow::util::TotalBufferSize(*table));
  if (p.column.empty()) {
    one(0);
    return table_value(arrow::Table::Make(arrow::schema(fields), arrays, 1));
  }
  auto column = table->GetColumnByName(p.column);
  if (!column) throw Error("set_index: column '" + p.column + "' is missing from a partition");
  const std::string what = "set_index: column '" + p.column + "'";
  std::int64_t valid = 0;
  auto minmax = [&](const auto& a, auto get, auto&& builder, std::shared_ptr<arrow::DataType> type) {
    using T = decltype(get(0));
    std::optional<T> lo, hi;
    for (std::int64_t r = 0; r < a->length(); ++r) {
      if (a->IsNull(r)) continue;
      const T v = get(r);
      if constexpr (std::is_same_v<T, double>)
        if (std::isnan(v)) continue;
      ++valid;
      if (!lo || v < *lo) lo = v;
      if (!hi || *hi < v) hi = v;
    }
    auto finish = [&](const std::optional<T>& v) {
      builder.Reset();
      check_arrow(v ? builder.Append(*v) : builder.AppendNull(), "partition statistics");
      return builder.Finish().ValueOrDie();
    };
    auto lo_array = finish(lo), hi_array = finish(hi);
    one(valid);
    fields.push_back(arrow::field("min", type));
    fields.push_back(arrow::field("max", type));
    arrays.push_back(lo_array);
    arrays.push_back(hi_array);
  };
  switch (static_cast<IndexKind>(p.kind)) {
    case IndexKind::Int: {
      auto a = index_values_as<arrow::Int64Array>(column, arrow::int64(), what);
      minmax(a, [&](std::int64_t r) { return a->Value(r); }, arrow::Int64Builder(), arrow::int64());
      break;
    }
    case IndexKind::Double: {
      auto a = index_values_as<arrow::DoubleArray>(column, arrow::float64(), what);
      minmax(a, [&](std::int64_t r) { return a->Value(r); }, arrow::DoubleBuilder(), arrow::float64());
      break;
    }
    case IndexKind::String: {
      auto a = index_values_as<arrow::StringArray>(column, arrow::utf8(), what);
      minmax(a, [&](std::int64_t r) { return std::string(a->GetView(r)); }, arrow::StringBuilder(), arrow::utf8());
      break;
    }
  }
  return table_value(arrow::Table::Make(arrow::schema(fields), arrays, 1));
}

Literal index_literal_of(const std::shared_ptr<arrow::ChunkedArray>& column) {
  auto s = unwrap(column->GetScalar(0), "partition statistics");
  if (!s->is_valid) return Literal{};
  switch (s->type->id()) {
    case arrow::Type::INT64: return static_cast<const arrow::Int64Scalar&>(*s).value;
    case arrow::Type::DOUBLE: return static_cast<const arrow::DoubleScalar&>(*s).value;
    default: return std::string(static_cast<const arrow::StringScalar&>(*s).view());
  }
}

const bool index_ops_registered = [] {
  register_op(kOpDivisionSplit, division_split_op);
  register_op(kOpPartitionStats, partition_stats_op);
  return true;
}();

}  // namespace

IndexKind index_kind_of(const arrow::DataType& type, const std::string& column, const std::string& what) {
  if (arrow::is_integer(type.id()) || type.id() == arrow::Type::BOOL) return IndexKind::Int;
  if (arrow::is_floating(type.id())) return IndexKind::Double;
  if (type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING) return IndexKind::String;
  throw Error(what + ": column '" + column + "' is " + type.ToString() +
              "; an index holds integers, floats or strings");
}

std::string literal_text(const Literal& v) {
  if (is_missing(v)) return "null";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << *d;
    return os.str();
  }
  return "'" + std::get<std::string>(v) + "'";
}

int compare_literals(const Literal& a, const Literal& b, const std::string& what) {
  if (is_missing(a) || is_missing(b)) throw Error(what + ": a missing value cannot be compared");
  if (index_is_number(a) && index_is_number(b)) {
    const bool ints = !std::holds_alternative<double>(a) && !std::holds_alternative<double>(b);
    if (ints) {
      const auto x = index_as_int(a), y = index_as_int(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const double x = index_as_double(a), y = index_as_double(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const auto* x = std::get_if<std::string>(&a);
  const auto* y = std::get_if<std::string>(&b);
  if (!x || !y) throw Error(what + ": " + literal_text(a) + " and " + literal_text(b) + " cannot be compared");
  return x->compare(*y) < 0 ? -1 : x->compare(*y) > 0 ? 1 : 0;
}

IndexKind split_kind(IndexKind column, const std::vector<Literal>& divisions, const std::string& column_name,
                     const std::string& what) {
  bool all_int = column == IndexKind::Int;
  for (const auto& d : divisions) {
    if (is_missing(d)) continue;
    const bool number = index_is_number(d);
    if ((column == IndexKind::String) == number)
      throw Error(what + ": " + literal_text(d) + " cannot be compared with index column '" + column_name + "' (" +
                  (column == IndexKind::String ? "strings" : "numbers") + ")");
    if (std::holds_alternative<double>(d)) all_int = false;
  }
  if (column == IndexKind::String) return IndexKind::String;
  return all_int ? IndexKind::Int : IndexKind::Double;
}

bool same_divisions(const std::vector<Literal>& a, const std::vector<Literal>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (is_missing(a[i]) != is_missing(b[i])) return false;
    if (is_missing(a[i])) continue;
    if ((std::holds_alternative<std::string>(a[i])) != (std::holds_alternative<std::string>(b[i]))) return false;
    if (compare_literals(a[i], b[i], "divisions") != 0) return false;
  }
  return true;
}

std::vector<std::vector<std::int64_t>> overlapping_inputs(const std::vector<Literal>& from,
                                                          const std::vector<Literal>& to) {
  const auto inputs = static_cast<std::int64_t>(from.size()) - 1, outputs = static_cast<std::int64_t>(to.size()) - 1;
  auto at = [](const std::vector<Literal>& d, std::int64_t i) -> const Literal& { return d[static_cast<std::size_t>(i)]; };
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(outputs));
  for (std::int64_t j = 0; j < outputs; ++j) {
    const bool last_out = j == outputs - 1;
    const Literal &b0 = at(to, j), &b1 = at(to, j + 1);
    for (std::int64_t i = 0; i < inputs; ++i) {
      const bool last_in = i == inputs - 1;
      const Literal &a0 = at(from, i), &a1 = at(from, i + 1);
      bool meets = false;
      if (!is_missing(a0) && !is_missing(a1) && !is_missing(b0) && !is_missing(b1)) {
        const bool a_empty = !last_in && compare_literals(a0, a1, "divisions") >= 0;
        const bool b_empty = !last_out && compare_literals(b0, b1, "divisions") >= 0;
        const int lo = compare_literals(a0, b1, "divisions"), hi = compare_literals(b0, a1, "divisions");
        meets = !a_empty && !b_empty && (last_out ? lo <= 0 : lo < 0) && (last_in ? hi <= 0 : hi < 0);
      }
      // The last input holds the missing values, which go to the last output.
      if (meets || (last_in && last_out)) out[static_cast<std::size_t>(j)].push_back(i);
    }
    if (out[static_cast<std::size_t>(j)].empty()) out[static_cast<std::size_t>(j)].push_back(0);
  }
  return out;
}

Object division_split_params(const std::string& column, IndexKind kind, const std::vector<Literal>& divisions,
                             bool check) {
  DivisionSplitParams p;
  p.column = column;
  p.kind = static_cast<std::int32_t>(kind);
  p.parts = static_cast<std::int64_t>(divisions.size()) - 1;
  p.check = check;
  const bool missing = std::any_of(divisions.begin(), divisions.end(), [](const Literal& d) { return is_missing(d); });
  if (!missing)
    for (const auto& d : divisions) {
      switch (kind) {
        case IndexKind::Int: p.ints.push_back(index_as_int(d)); break;
        case IndexKind::Double: p.doubles.push_back(index_as_double(d)); break;
        case IndexKind::String: p.strings.push_back(std::get<std::string>(d)); break;
      }
    }
  return to_object(p, "tessera.frame.DivisionSplitParams");
}

std::vector<PartitionStats> partition_stats(const DataFrame& df_in, const std::string& column, Executor& executor) {
  const DataFrame df = df_in.to_host();
  const FrameNode& in = node_of(df);
  StatsParams p;
  p.column = column;
  if (!column.empty()) p.kind = static_cast<std::int32_t>(index_kind_of(*in.schema->GetFieldByName(column)->type(), column, "statistics"));
  const Object params = to_object(p, "tessera.frame.StatsParams");
  FrameLowering low(&executor);
  const auto keys = low.lower(df.node());
  std::vector<Key> stats;
  const std::string prefix = unique_name("partition-stats");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    Task t;
    t.key = prefix + "-" + std::to_string(i);
    t.op = kOpPartitionStats;
    t.args = {Value(params), KeyRef{keys[i]}};
    stats.push_back(t.key);
    low.graph().add(std::move(t));
  }
  std::vector<PartitionStats> out;
  for (const auto& v : executor.get(low.graph(), stats)) {
    auto t = table_of(v, "partition statistics");
    PartitionStats s;
    s.rows = std::get<std::int64_t>(index_literal_of(t->GetColumnByName("rows")));
    s.bytes = std::get<std::int64_t>(index_literal_of(t->GetColumnByName("bytes")));
    s.valid = std::get<std::int64_t>(index_literal_of(t->GetColumnByName("valid")));
    if (auto lo = t->GetColumnByName("min")) s.min = index_literal_of(lo);
    if (auto hi = t->GetColumnByName("max")) s.max = index_literal_of(hi);
    out.push_back(std::move(s));
  }
  return out;
}

DataFrame range_partition(const DataFrame& df, const std::string& column, const std::vector<Literal>& divisions,
                          const std::vector<std::vector<std::int64_t>>& sources, bool sort, bool check) {
  const FrameNode& in = node_of(df);
  auto n = make_node(NodeKind::RangePartition, sort ? "set-index" : "repartition-divisions");
  n->input = df.node();
  n->schema = in.schema;
  n->npartitions = static_cast<std::int64_t>(divisions.size()) - 1;
  n->sort_columns = {column};
  n->ascending = {true};
  n->sort_each = sort;
  n->split_divisions = divisions;
  n->split_sources = sources;
  n->split_check = check;
  n->index = column;
  n->index_divisions = divisions;
  return DataFrame(n);
}

}  // namespace detail

namespace {

// set_index(sorted = true): no shuffle. Each partition holding values starts a group, partitions
// without values (empty ones, or missing values at the end) join the group before; each group is
// one output partition, sorted on its own. The divisions are the groups' minima and the last maximum.
DataFrame presorted_index(const DataFrame& df, const std::string& column, Executor& executor) {
  const auto stats = partition_stats(df, column, executor);
  const std::string what = "set_index(sorted = true): column '" + column + "'";
  std::int64_t last_with_rows = -1;
  for (std::size_t i = 0; i < stats.size(); ++i)
    if (stats[i].rows > 0) last_with_rows = static_cast<std::int64_t>(i);
  std::vector<std::vector<PartitionPiece>> groups;
  std::vector<Literal> divisions;
  std::int64_t previous = -1;  // the last partition with values
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const auto& s = stats[i];
    const auto at = static_cast<std::int64_t>(i);
    if (s.valid < s.rows && at != last_with_rows)
      throw Error(what + " has missing values in partition " + std::to_string(i) +
                  ", which is not the last with rows (they sort last: set_index without sorted)");
    if (s.valid > 0) {
      if (previous >= 0 && compare_literals(stats[static_cast<std::size_t>(previous)].max, s.min, what) >= 0)
        throw Error(what + " is not sorted across partitions: partition " + std::to_string(previous) +
                    " holds values up to " + literal_text(stats[static_cast<std::size_t>(previous)].max) +
                    " and partition " + std::to_string(i) + " from " + literal_text(s.min) +
                    " (set_index without sorted shuffles it)");
      previous = at;
      groups.emplace_back();
      divisions.push_back(s.min);
    }
    if (groups.empty()) groups.emplace_back();  // partitions before the first with values
    groups.back().push_back(PartitionPiece{at, 0, 1});
  }
  if (previous < 0) divisions = {Literal{}, Literal{}};  // no values at all: one partition
  else divisions.push_back(stats[static_cast<std::size_t>(previous)].max);
  // Partitions before the first with values were put in a group of their own: join it to the next.
  if (groups.size() > divisions.size() - 1) {
    auto first = groups.front();
    groups.erase(groups.begin());
    groups.front().insert(groups.front().begin(), first.begin(), first.end());
  }
  const FrameNode& in = node_of(df);
  auto n = make_node(NodeKind::Repartition, "set-index-sorted");
  n->input = df.node();
  n->schema = in.schema;
  n->npartitions = static_cast<std::int64_t>(groups.size());
  n->plan = std::move(groups);
  n->sort_each = true;
  n->sort_columns = {column};
  n->ascending = {true};
  n->index = column;
  n->index_divisions = std::move(divisions);
  return DataFrame(n);
}

// The divisions of `parts` ranges from the column's approximate quantiles (computed now): integers
// rounded, repeated bounds dropped (a key holding many rows makes fewer partitions, as in Dask).
std::vector<Literal> quantile_divisions(const DataFrame& df, const std::string& column, IndexKind kind,
                                        std::int64_t parts, Executor& executor) {
  std::vector<double> q;
  for (std::int64_t j = 0; j <= parts; ++j) q.push_back(static_cast<double>(j) / static_cast<double>(parts));
  auto t = quantiles(df[std::vector<std::string>{column}], {column}, q).compute(executor);
  auto values = unwrap(arrow::Concatenate(t->GetColumnByName(column)->chunks()), "set_index");
  const auto& a = static_cast<const arrow::DoubleArray&>(*values);
  std::vector<Literal> out;
  for (std::int64_t i = 0; i < a.length(); ++i) {
    if (a.IsNull(i) || std::isnan(a.Value(i))) return {Literal{}, Literal{}};  // no values
    Literal d = kind == IndexKind::Int ? Literal(static_cast<std::int64_t>(std::llround(a.Value(i)))) : Literal(a.Value(i));
    if (out.empty() || compare_literals(out.back(), d, "set_index") < 0) out.push_back(d);
  }
  if (out.size() == 1) out.push_back(out.front());  // one value: one partition [v, v]
  return out;
}

// The partitions whose divisions meet [lo, hi] (a missing bound: open), contiguous and in order.
std::vector<std::int64_t> partitions_meeting(const std::vector<Literal>& d, const Literal& lo, const Literal& hi,
                                             const std::string& what) {
  std::vector<std::int64_t> keep;
  const auto n = static_cast<std::int64_t>(d.size()) - 1;
  for (std::int64_t i = 0; i < n; ++i) {
    const Literal &a = d[static_cast<std::size_t>(i)], &b = d[static_cast<std::size_t>(i) + 1];
    if (is_missing(a) || is_missing(b)) continue;  // missing values only: no key matches them
    const bool last = i == n - 1;
    if (!last && compare_literals(a, b, what) >= 0) continue;  // an empty range
    if (!is_missing(hi) && compare_literals(a, hi, what) > 0) continue;
    if (!is_missing(lo)) {
      const int c = compare_literals(b, lo, what);
      if (last ? c < 0 : c <= 0) continue;
    }
    keep.push_back(i);
  }
  return keep;
}

DataFrame index_range(const DataFrame& df, const Literal& lo, const Literal& hi, bool exact) {
  const FrameNode& in = node_of(df);
  if (in.index.empty())
    throw Error("loc: the frame has no index (set_index first; columns: " + index_columns_of(*in.schema) + ")");
  if (in.index_divisions.empty())
    throw Error("loc: the divisions of index '" + in.index + "' are unknown (repartition(divisions) or set_index first)");
  const auto type = in.schema->GetFieldByName(in.index)->type();
  const IndexKind kind = index_kind_of(*type, in.index, "loc");
  const std::string what = "loc on index '" + in.index + "' (" + type->ToString() + ")";
  for (const auto* key : {&lo, &hi})
    if (!is_missing(*key) && (kind == IndexKind::String) != std::holds_alternative<std::string>(*key))
      throw Error(what + ": the key " + literal_text(*key) + " cannot be compared with it");
  auto keep = partitions_meeting(in.index_divisions, lo, hi, what);
  // No partition can hold the keys: one is read all the same, for an empty result of the schema.
  if (keep.empty()) keep.push_back(0);
  auto n = make_node(NodeKind::Repartition, "loc");
  n->input = df.node();
  n->schema = in.schema;
  n->npartitions = static_cast<std::int64_t>(keep.size());
  for (auto i : keep) {
    n->plan.push_back({PartitionPiece{i, 0, 1}});
    n->index_divisions.push_back(in.index_divisions[static_cast<std::size_t>(i)]);
  }
  n->index_divisions.push_back(in.index_divisions[static_cast<std::size_t>(keep.back()) + 1]);
  n->index = in.index;
  const DataFrame picked(n);
  const Series idx = picked[in.index];
  if (exact) return picked[idx == lo];
  if (is_missing(lo) && is_missing(hi)) return picked;
  if (is_missing(lo)) return picked[idx <= hi];
  if (is_missing(hi)) return picked[idx >= lo];
  return picked[(idx >= lo) & (idx <= hi)];
}

}  // namespace

const std::string& DataFrame::index_column() const { return node_of(*this).index; }
bool DataFrame::known_divisions() const { return !node_of(*this).index_divisions.empty(); }
std::vector<Literal> DataFrame::divisions() const { return node_of(*this).index_divisions; }

DataFrame DataFrame::set_index(const std::string& column, const SetIndexOptions& options, Executor& executor) const {
  const FrameNode& in = node_of(*this);
  if (in.device) throw Error("set_index is not supported on device frames yet: to_host() first (issue 30)");
  const auto f = in.schema->GetFieldByName(column);
  if (!f)
    throw Error("set_index: column '" + column + "' does not exist (columns: " + index_columns_of(*in.schema) + ")");
  const IndexKind kind = index_kind_of(*f->type(), column, "set_index");
  if (options.sorted && !options.divisions.empty()) throw Error("set_index: give divisions or sorted = true, not both");
  if (options.npartitions < 0) throw Error("set_index: npartitions must be 0 (as many as now) or more");
  if (options.sorted) return presorted_index(*this, column, executor);
  std::vector<Literal> divisions = options.divisions;
  const bool given = !divisions.empty();
  if (given) {
    if (divisions.size() < 2) throw Error("set_index: divisions needs at least two bounds (one partition)");
    for (const auto& d : divisions)
      if (is_missing(d)) throw Error("set_index: a division is null");
    split_kind(kind, divisions, column, "set_index");
    for (std::size_t i = 1; i < divisions.size(); ++i)
      if (compare_literals(divisions[i - 1], divisions[i], "set_index") >= 0)
        throw Error("set_index: divisions must increase strictly, but " + literal_text(divisions[i - 1]) + " comes before " +
                    literal_text(divisions[i]));
  } else {
    if (kind == IndexKind::String)
      throw Error("set_index: column '" + column + "' is " + f->type()->ToString() +
                  ": approximate quantiles need numbers; give divisions, or sorted = true");
    divisions = quantile_divisions(*this, column, kind, options.npartitions > 0 ? options.npartitions : in.npartitions,
                                   executor);
  }
  std::vector<std::int64_t> all;
  for (std::int64_t i = 0; i < in.npartitions; ++i) all.push_back(i);
  std::vector<std::vector<std::int64_t>> sources(divisions.size() - 1, all);
  return range_partition(*this, column, divisions, sources, /*sort=*/true, /*check=*/given);
}

DataFrame DataFrame::loc(const Literal& key) const {
  if (is_missing(key)) throw Error("loc: a null key matches no row");
  return index_range(*this, key, key, true);
}

DataFrame DataFrame::loc(const Literal& lo, const Literal& hi) const { return index_range(*this, lo, hi, false); }

}  // namespace tessera::dataframe
