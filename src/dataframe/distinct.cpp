// drop_duplicates and Series::unique (pandas'): the first (or last) row of each distinct key,
// missing values equal to each other, rows in their order. Dask's tree: each partition
// deduplicated, then split_every results per task in the partitions' order until one is left,
// which keeps pandas' row order; with split_out > 1 the rows are hash-shuffled on the key first
// (the shuffle keeps the rows' order within each output) and each partition is deduplicated alone.
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/row/grouper.h>

#include <algorithm>
#include <set>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

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

namespace cp = arrow::compute;

struct DistinctParams {
  std::vector<std::string> on;
  bool keep_last = false;
  template <class A>
  void serialize(A& ar) {
    ar(on, keep_last);
  }
};

Value distinct_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<DistinctParams>(arg(args, 0).object());
  std::vector<std::shared_ptr<arrow::Table>> parts;
  for (std::size_t i = 1; i < args.size(); ++i)
    parts.push_back(table_of(args[i], "drop_duplicates")->ReplaceSchemaMetadata(nullptr));
  if (parts.empty()) throw Error("drop_duplicates: a task reads no partition");
  auto t = parts.size() == 1 ? parts.front() : unwrap(arrow::ConcatenateTables(parts), "drop_duplicates");
  if (t->num_rows() == 0) return table_value(t);
  // The keys as one batch; NaN made null so that every missing value is one key, as in pandas.
  std::vector<arrow::Datum> keys;
  std::vector<arrow::TypeHolder> types;
  for (const auto& c : p.on) {
    auto column = t->GetColumnByName(c);
    if (!column) throw Error("drop_duplicates: column '" + c + "' is missing from a partition");
    arrow::Datum d(unwrap(arrow::Concatenate(column->chunks()), "drop_duplicates"));
    if (arrow::is_floating(column->type()->id())) {
      auto nan = unwrap(cp::CallFunction("is_nan", std::vector<arrow::Datum>{d}), "drop_duplicates");
      auto no_nan = unwrap(cp::CallFunction("coalesce", std::vector<arrow::Datum>{nan, arrow::Datum(false)}), "drop_duplicates");
      d = unwrap(cp::CallFunction("if_else", std::vector<arrow::Datum>{no_nan, arrow::Datum(arrow::MakeNullScalar(column->type())), d}),
                 "drop_duplicates");
    }
    types.emplace_back(d.type());
    keys.push_back(std::move(d));
  }
  auto grouper = unwrap(cp::Grouper::Make(types), "drop_duplicates");
  cp::ExecBatch batch(std::move(keys), t->num_rows());
  auto ids_datum = unwrap(grouper->Consume(cp::ExecSpan(batch)), "drop_duplicates");
  auto ids_array = ids_datum.make_array();
  const auto* ids = static_cast<const arrow::UInt32Array&>(*ids_array).raw_values();
  std::vector<bool> seen(static_cast<std::size_t>(grouper->num_groups()), false);
  std::vector<std::int64_t> rows;
  const std::int64_t n = t->num_rows();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t r = p.keep_last ? n - 1 - k : k;
    if (seen[ids[r]]) continue;
    seen[ids[r]] = true;
    rows.push_back(r);
  }
  if (p.keep_last) std::reverse(rows.begin(), rows.end());  // the kept rows in their order
  if (static_cast<std::int64_t>(rows.size()) == n) return table_value(t);
  arrow::Int64Builder b;
  check_arrow(b.AppendValues(rows), "drop_duplicates");
  auto indices = b.Finish().ValueOrDie();
  return table_value(unwrap(cp::Take(arrow::Datum(t), arrow::Datum(indices)), "drop_duplicates").table());
}

const bool distinct_registered = [] {
  register_op(kOpDistinct, distinct_op);
  return true;
}();

}  // namespace

Object distinct_params(const std::vector<std::string>& on, bool keep_last) {
  return to_object(DistinctParams{on, keep_last}, "tessera.frame.DistinctParams");
}

}  // namespace detail

DataFrame DataFrame::drop_duplicates(const std::vector<std::string>& subset, const std::string& keep,
                                     const AggregateOptions& options) const {
  const FrameNode& in = node_of(*this);
  if (in.device) throw Error("drop_duplicates is not supported on device frames yet: to_host() first");
  if (keep != "first" && keep != "last")
    throw Error("drop_duplicates: keep is 'first' or 'last', not '" + keep + "'");
  if (options.split_every < 2) throw Error("split_every must be at least 2, got " + std::to_string(options.split_every));
  if (options.split_out < 1) throw Error("split_out must be at least 1, got " + std::to_string(options.split_out));
  std::vector<std::string> on = subset;
  if (on.empty())
    for (const auto& f : in.schema->fields()) on.push_back(f->name());
  std::set<std::string> seen;
  for (const auto& c : on) {
    if (!in.schema->GetFieldByName(c)) {
      std::string columns;
      for (const auto& f : in.schema->fields()) columns += (columns.empty() ? "" : ", ") + f->name();
      throw Error("drop_duplicates: column '" + c + "' does not exist (columns: " + columns + ")");
    }
    if (!seen.insert(c).second) throw Error("drop_duplicates: column '" + c + "' is given twice");
  }
  DataFrame input = *this;
  bool per_partition = false;
  if (options.split_out > 1) {
    input = shuffle(on, options.split_out);
    per_partition = true;
  }
  auto n = make_node(NodeKind::Distinct, "drop-duplicates");
  n->input = input.node();
  n->schema = in.schema;
  n->distinct_on = on;
  n->keep_last = keep == "last";
  n->options = options;
  n->per_partition = per_partition;
  n->npartitions = per_partition ? node_of(input).npartitions : 1;
  if (per_partition) n->hash_partitioned_by = node_of(input).hash_partitioned_by;
  return DataFrame(n);
}

DataFrame Series::unique(const AggregateOptions& options) const {
  return to_frame().drop_duplicates({name_}, "first", options);
}

}  // namespace tessera::dataframe
