// The per-partition operations of dataframe tasks (op names in frame_node.hpp). Each takes its
// parameters as one Object followed by the partitions it reads.
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/expression.h>

#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>

#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "column_expr.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "frame_params.hpp"
#include "groupby_host.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe {
namespace detail {

namespace cp = arrow::compute;

namespace {

struct PartitionFunctions {
  std::shared_mutex mutex;
  std::map<std::string, PartitionFunction> functions;
};
PartitionFunctions& partition_functions() {
  static PartitionFunctions f;
  return f;
}

// One step over one record batch.
std::shared_ptr<arrow::RecordBatch> run_step(const Step& step, const std::shared_ptr<arrow::RecordBatch>& batch) {
  const cp::ExecBatch input(*batch);
  auto eval = [&](const ColumnExpr& e) {
    auto bound = unwrap(to_arrow(e).Bind(*batch->schema()), "cannot compute " + to_string(e));
    auto d = unwrap(cp::ExecuteScalarExpression(bound, input), "computing " + to_string(e));
    if (d.is_scalar()) return unwrap(arrow::MakeArrayFromScalar(*d.scalar(), batch->num_rows()), "broadcasting");
    return d.make_array();
  };
  if (step.kind == Step::Kind::Filter) {
    auto mask = eval(step.exprs.at(0));
    // A null in the mask drops the row (FilterOptions' default), as pandas treats NA as false.
    return unwrap(cp::Filter(arrow::Datum(batch), arrow::Datum(mask)), "filter").record_batch();
  }
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (std::size_t i = 0; i < step.names.size(); ++i) {
    const ColumnExpr& e = step.exprs[i];
    auto a = e.kind == ColumnExpr::Kind::Field ? batch->GetColumnByName(e.name) : eval(e);
    if (!a) throw Error("column '" + e.name + "' is missing from a partition");
    fields.push_back(arrow::field(step.names[i], a->type()));
    arrays.push_back(std::move(a));
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), batch->num_rows(), arrays);
}

Value map_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto program = from_object<Program>(arg(args, 0).object());
  auto table = table_of(arg(args, 1), "map");
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  std::shared_ptr<arrow::Schema> schema;
  for_each_batch(*table, "map", [&](std::shared_ptr<arrow::RecordBatch> batch) {
    for (const auto& step : program) batch = run_step(step, batch);
    schema = batch->schema();
    out.push_back(std::move(batch));
  });
  if (!schema) {  // no batches: run the program on an empty batch for the output schema
    auto empty = unwrap(arrow::RecordBatch::MakeEmpty(table->schema()), "map");
    for (const auto& step : program) empty = run_step(step, empty);
    return table_value(unwrap(arrow::Table::FromRecordBatches(empty->schema(), {}), "map"));
  }
  return table_value(unwrap(arrow::Table::FromRecordBatches(schema, out), "map"));
}

Value map_partitions_op(const OpContext&, std::span<const Value> args) {
  const auto name = from_object<std::string>(arg(args, 0).object());
  return table_value(run_partition_function(name, table_of(arg(args, 1), "map_partitions")));
}

Value groupby_partial_op(const OpContext&, std::span<const Value> args) {
  const auto spec = from_object<GroupbySpec>(arg(args, 0).object());
  return table_value(groupby_partial(table_of(arg(args, 1), "groupby"), spec));
}

Value groupby_combine_op(const OpContext&, std::span<const Value> args) {
  const auto p = from_object<CombineParams>(arg(args, 0).object());
  std::vector<std::shared_ptr<arrow::Table>> parts;
  for (std::size_t i = 1; i < args.size(); ++i) parts.push_back(table_of(args[i], "groupby"));
  std::vector<std::shared_ptr<arrow::DataType>> types;
  for (const auto& t : p.input_types) types.push_back(parse_type(t));
  return table_value(groupby_combine(parts, p.spec, types));
}

// The partitions given, concatenated and sorted by the columns (ties broken by the next column;
// missing values, null and NaN, last in either direction, as pandas' na_position="last"). Stable:
// rows equal in every sort column keep their order.
Value sort_values_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<SortParams>(arg(args, 0).object());
  std::vector<std::shared_ptr<arrow::Table>> parts;
  for (std::size_t i = 1; i < args.size(); ++i)
    parts.push_back(table_of(args[i], "sort_values")->ReplaceSchemaMetadata(nullptr));
  if (parts.empty()) throw Error("sort_values: a task sorts no partition");
  auto t = parts.size() == 1 ? parts.front() : unwrap(arrow::ConcatenateTables(parts), "sort_values");
  std::vector<cp::SortKey> keys;
  if (p.ascending.size() != p.columns.size()) throw Error("sort_values: one direction per column is needed");
  for (std::size_t i = 0; i < p.columns.size(); ++i)
    keys.emplace_back(p.columns[i], p.ascending[i] ? cp::SortOrder::Ascending : cp::SortOrder::Descending,
                      p.nulls_first ? cp::NullPlacement::AtStart : cp::NullPlacement::AtEnd);
  auto idx = unwrap(cp::SortIndices(arrow::Datum(t), cp::SortOptions(keys)), "sort_values");
  return table_value(unwrap(cp::Take(arrow::Datum(t), arrow::Datum(idx)), "sort_values").table());
}

// The first n rows of the partitions given, in order.
Value head_op(const OpContext&, std::span<const Value> args) {
  auto n = from_object<std::int64_t>(arg(args, 0).object());
  std::vector<std::shared_ptr<arrow::Table>> parts;
  for (std::size_t i = 1; i < args.size() && n > 0; ++i) {
    auto t = table_of(args[i], "head");
    parts.push_back(t->Slice(0, n));
    n -= parts.back()->num_rows();
  }
  if (parts.empty()) return args.size() > 1 ? table_value(unwrap(arrow::Table::MakeEmpty(table_of(args[1], "head")->schema()), "head")) : Value();
  return table_value(unwrap(arrow::ConcatenateTables(parts), "head"));
}

const bool frame_ops_registered = [] {
  register_op(kOpMap, map_op);
  register_op(kOpMapPartitions, map_partitions_op);
  register_op(kOpGroupbyPartial, groupby_partial_op);
  register_op(kOpGroupbyCombine, groupby_combine_op);
  register_op(kOpSortValues, sort_values_op);
  register_op(kOpHead, head_op);
  return true;
}();

}  // namespace

Object map_params(const Program& program) { return to_object(program, "tessera.frame.Program"); }
Object combine_params(const GroupbySpec& spec, const std::vector<std::string>& input_types) {
  return to_object(CombineParams{spec, input_types}, "tessera.frame.CombineParams");
}
Object sort_params(const std::vector<std::string>& columns, const std::vector<bool>& ascending, bool nulls_first) {
  return to_object(SortParams{columns, ascending, nulls_first}, "tessera.frame.SortParams");
}

std::shared_ptr<arrow::Table> run_partition_function(const std::string& name, const std::shared_ptr<arrow::Table>& t) {
  PartitionFunction f;
  {
    auto& fs = partition_functions();
    std::shared_lock lock(fs.mutex);
    auto it = fs.functions.find(name);
    if (it == fs.functions.end())
      throw UnknownOperationError("map_partitions: no partition function '" + name +
                                  "' is registered in this process (register_partition_function)");
    f = it->second;
  }
  auto out = f(t);
  if (!out) throw Error("map_partitions: function '" + name + "' returned no table");
  return out;
}

}  // namespace detail

void register_partition_function(const std::string& name, detail::PartitionFunction function) {
  auto& fs = detail::partition_functions();
  std::unique_lock lock(fs.mutex);
  fs.functions[name] = std::move(function);
}

}  // namespace tessera::dataframe
