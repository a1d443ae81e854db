// DataFrame, Series and GroupBy: building the expression (with every check done here) and
// computing it. The lowering to tasks is in frame_lowering.cpp.
#include "tessera/dataframe/dataframe.hpp"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <set>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "column_expr.hpp"
#include "device_program.hpp"
#include "frame_index.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "groupby_host.hpp"
#include "quantiles.hpp"

namespace tessera::dataframe {

using namespace detail;

namespace detail {

std::shared_ptr<FrameNode> make_node(NodeKind kind, const std::string& prefix) {
  auto n = std::make_shared<FrameNode>();
  n->kind = kind;
  n->name = unique_name(prefix);
  return n;
}

const FrameNode& node_of(const DataFrame& df) {
  if (!df.node()) throw Error("this DataFrame is empty (default-constructed)");
  return *df.node();
}

}  // namespace detail

namespace {

std::string column_list(const arrow::Schema& s) {
  std::string out;
  for (const auto& f : s.fields()) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}

void require_column(const arrow::Schema& s, const std::string& c) {
  if (!s.GetFieldByName(c)) throw Error("column '" + c + "' does not exist (columns: " + column_list(s) + ")");
}

// A partition program step on top of `df`, merged into df's own program when it has one.
DataFrame with_step(const DataFrame& df, Step step, std::shared_ptr<arrow::Schema> schema) {
  const FrameNode& in = node_of(df);
  if (in.device)
    for (const auto& e : step.exprs) {
      std::string why;
      if (!device_supported(e, &why))
        throw Error("on device frames only columns, numbers, + - * / and comparisons are computed; " + why +
                    " is not: compute it before to_device(), or to_host() first");
    }
  auto n = make_node(NodeKind::Map, "map");
  if (in.kind == NodeKind::Map) {
    n->input = in.input;
    n->program = in.program;
  } else {
    n->input = df.node();
  }
  // Rows stay in their partitions, so the frame stays hash-partitioned on columns the step
  // passes through unchanged (a filter; a projection that keeps them under their names).
  bool keeps_partitioning = true;
  if (step.kind == Step::Kind::Project)
    for (const auto& c : in.hash_partitioned_by) {
      auto at = std::find(step.names.begin(), step.names.end(), c);
      if (at == step.names.end()) {
        keeps_partitioning = false;
        break;
      }
      const auto& e = step.exprs[static_cast<std::size_t>(at - step.names.begin())];
      if (e.kind != ColumnExpr::Kind::Field || e.name != c) keeps_partitioning = false;
    }
  if (keeps_partitioning) n->hash_partitioned_by = in.hash_partitioned_by;
  // Rows stay in their partitions and in order, so the index and its divisions stay too: through a
  // filter, and through a projection that passes its column on unchanged (under a new name when
  // renamed); a projection without it, or one that computes it anew, drops the index.
  if (!in.index.empty()) {
    bool kept = step.kind == Step::Kind::Filter;
    std::string name = in.index;
    for (std::size_t i = 0; !kept && i < step.names.size(); ++i)
      if (step.exprs[i].kind == ColumnExpr::Kind::Field && step.exprs[i].name == in.index) {
        kept = true;
        name = step.names[i];
      }
    if (kept) {
      n->index = name;
      n->index_divisions = in.index_divisions;
    }
  }
  n->program.push_back(std::move(step));
  n->schema = std::move(schema);
  n->npartitions = in.npartitions;
  n->device = in.device;
  return DataFrame(n);
}

// Whether every group of `by` has all its rows in one partition of `in` (hash-partitioned on a
// subset of the keys), so that groups need no combining across partitions.
bool groups_within_partitions(const FrameNode& in, const std::vector<std::string>& by) {
  if (in.hash_partitioned_by.empty() || in.npartitions <= 1) return false;
  for (const auto& c : in.hash_partitioned_by)
    if (std::find(by.begin(), by.end(), c) == by.end()) return false;
  return true;
}

DataFrame aggregate(const DataFrame& df_in, GroupbySpec spec, const AggregateOptions& options) {
  // The device algorithms group by keys; whole-frame reductions of device frames (len, sum)
  // read the partitions back and reduce on the host.
  const DataFrame df = node_of(df_in).device && spec.by.empty() ? df_in.to_host() : df_in;
  const FrameNode& in = node_of(df);
  if (options.split_every < 2) throw Error("split_every must be at least 2, got " + std::to_string(options.split_every));
  if (options.split_out < 1) throw Error("split_out must be at least 1, got " + std::to_string(options.split_out));
  arrow::FieldVector fields;
  std::set<std::string> names;
  for (const auto& b : spec.by) {
    require_column(*in.schema, b);
    fields.push_back(in.schema->GetFieldByName(b));
    names.insert(b);
  }
  for (const auto& a : spec.aggs) {
    std::shared_ptr<arrow::DataType> t = arrow::int64();
    if (a.how != Agg::Size) {
      require_column(*in.schema, a.column);
      t = in.schema->GetFieldByName(a.column)->type();
    }
    check_aggregable(a, t);
    if (!names.insert(a.output).second) throw Error("groupby: two output columns are named '" + a.output + "'");
    fields.push_back(arrow::field(a.output, aggregate_type(a, t)));
  }
  if (in.device && options.split_out > 1)
    throw Error("split_out > 1 is not supported on device frames yet: use split_out = 1, or to_host() first");
  auto n = make_node(NodeKind::Aggregate, spec.by.empty() ? "reduce" : "groupby");
  n->device = in.device;
  n->input = df.node();
  n->spec = std::move(spec);
  n->options = options;
  n->schema = arrow::schema(fields);
  n->npartitions = n->spec.by.empty() ? 1 : options.split_out;
  // A frame already partitioned on (some of) the keys, as a shuffle or a hash join leaves it:
  // each partition is aggregated alone and the result keeps that partitioning (Dask reaches the
  // same by shuffle-based group-bys; split_out is then the input's partition count).
  if (!n->spec.by.empty() && options.split_out == 1 && groups_within_partitions(in, n->spec.by)) {
    n->per_partition = true;
    n->npartitions = in.npartitions;
    n->hash_partitioned_by = in.hash_partitioned_by;
  }
  return DataFrame(n);
}

// Every column `how` can aggregate, for DataFrame reductions (pandas' numeric_only).
DataFrame reduce_all(const DataFrame& df, Agg how) {
  GroupbySpec spec;
  for (const auto& f : node_of(df).schema->fields()) {
    AggSpec a{f->name(), how, f->name()};
    try {
      check_aggregable(a, f->type());
    } catch (const Error&) {
      continue;
    }
    spec.aggs.push_back(a);
  }
  return aggregate(df, std::move(spec), {});
}

std::shared_ptr<arrow::Table> concat(const std::vector<Value>& values, const arrow::Schema* schema) {
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (std::size_t i = 0; i < values.size(); ++i)
    tables.push_back(table_of(values[i], "partition " + std::to_string(i)));
  if (tables.empty()) {
    return arrow::Table::MakeEmpty(schema ? std::make_shared<arrow::Schema>(*schema) : arrow::schema({}))
        .ValueOrDie();
  }
  return unwrap(arrow::ConcatenateTables(tables), "concatenating partitions");
}

Series binary(const char* fn, const Series& a, const ColumnExpr& b_expr, const DataFrame* b_frame) {
  if (b_frame && b_frame->node() != a.frame().node())
    throw Error(std::string("cannot combine columns of two different frames ('") + a.name() + "' with a column of " +
                b_frame->name() + "): frames have no index to align on; assign both into one frame first");
  ColumnExpr e;
  // pandas compares a date or timestamp column with a string ("1998-09-02"): the string is read
  // as the column's type in each task, and once here, so that a string that is no date fails now.
  ColumnExpr b = b_expr;
  if (b.kind == ColumnExpr::Kind::Literal && std::holds_alternative<std::string>(b.literal)) {
    const auto t = type_of(*a.expr(), node_of(a.frame()).schema);
    if (arrow::is_temporal(t->id())) {
      const auto& text = std::get<std::string>(b.literal);
      auto read = arrow::compute::Cast(arrow::Datum(std::make_shared<arrow::StringScalar>(text)), t);
      if (!read.ok())
        throw Error("cannot read '" + text + "' as a " + t->ToString() + " to compare with '" + a.name() +
                    "': " + read.status().message());
      ColumnExpr c = call("cast", {std::move(b)});
      c.cast_to = t->ToString();
      parse_type(c.cast_to);  // throws for a type the tasks could not name
      b = std::move(c);
    }
  }
  if (std::string(fn) == "truediv") {
    auto f64 = [](ColumnExpr x) {
      ColumnExpr c = call("cast", {std::move(x)});
      c.cast_to = "float64";
      return c;
    };
    e = call("divide", {f64(*a.expr()), f64(b)});
  } else {
    e = call(fn, {*a.expr(), b});
  }
  type_of(e, node_of(a.frame()).schema);  // throws now for types the function cannot take
  return Series(a.frame(), std::make_shared<const ColumnExpr>(std::move(e)), a.name());
}

Series unary(const char* fn, const Series& a) {
  ColumnExpr e = call(fn, {*a.expr()});
  type_of(e, node_of(a.frame()).schema);
  return Series(a.frame(), std::make_shared<const ColumnExpr>(std::move(e)), a.name());
}

}  // namespace

// ---- DataFrame -----------------------------------------------------------------------------

const std::string& DataFrame::name() const { return node_of(*this).name; }
std::int64_t DataFrame::npartitions() const { return node_of(*this).npartitions; }
bool DataFrame::on_device() const { return node_of(*this).device; }

std::vector<std::string> DataFrame::columns() const {
  std::vector<std::string> out;
  for (const auto& f : node_of(*this).schema->fields()) out.push_back(f->name());
  return out;
}

std::string DataFrame::dtype(const std::string& column) const {
  const auto& s = *node_of(*this).schema;
  require_column(s, column);
  return s.GetFieldByName(column)->type()->ToString();
}

Series DataFrame::operator[](const std::string& column) const {
  require_column(*node_of(*this).schema, column);
  return Series(*this, std::make_shared<const ColumnExpr>(field(column)), column);
}

DataFrame DataFrame::operator[](const std::vector<std::string>& columns) const {
  const auto& s = *node_of(*this).schema;
  Step step;
  arrow::FieldVector fields;
  for (const auto& c : columns) {
    require_column(s, c);
    step.names.push_back(c);
    step.exprs.push_back(field(c));
    fields.push_back(s.GetFieldByName(c));
  }
  return with_step(*this, std::move(step), arrow::schema(fields));
}

DataFrame DataFrame::operator[](const Series& mask) const {
  if (mask.frame().node() != node_)
    throw Error("a filter mask must be a column expression of the same frame (frames have no index to align on)");
  const auto t = type_of(*mask.expr(), node_of(*this).schema);
  if (t->id() != arrow::Type::BOOL)
    throw Error("a filter mask must be bool, but " + to_string(*mask.expr()) + " is " + t->ToString());
  Step step;
  step.kind = Step::Kind::Filter;
  step.exprs.push_back(*mask.expr());
  return with_step(*this, std::move(step), node_of(*this).schema);
}

DataFrame DataFrame::assign(const std::string& column, const Series& value) const {
  if (value.frame().node() != node_)
    throw Error("assign: the value of '" + column + "' must be computed from this frame's columns");
  const auto& s = *node_of(*this).schema;
  const auto t = type_of(*value.expr(), node_of(*this).schema);
  Step step;
  arrow::FieldVector fields;
  bool replaced = false;
  for (const auto& f : s.fields()) {
    step.names.push_back(f->name());
    if (f->name() == column) {
      step.exprs.push_back(*value.expr());
      fields.push_back(arrow::field(column, t));
      replaced = true;
    } else {
      step.exprs.push_back(field(f->name()));
      fields.push_back(f);
    }
  }
  if (!replaced) {
    step.names.push_back(column);
    step.exprs.push_back(*value.expr());
    fields.push_back(arrow::field(column, t));
  }
  return with_step(*this, std::move(step), arrow::schema(fields));
}

DataFrame DataFrame::assign(const std::string& column, const Literal& value) const {
  // A literal broadcast over the rows, through a Series of this frame.
  return assign(column, Series(*this, std::make_shared<const ColumnExpr>(literal(value)), column));
}

DataFrame DataFrame::astype(const std::map<std::string, std::string>& types) const {
  const auto& s = *node_of(*this).schema;
  for (const auto& [c, t] : types) {
    require_column(s, c);
    parse_type(t);
  }
  Step step;
  arrow::FieldVector fields;
  for (const auto& f : s.fields()) {
    step.names.push_back(f->name());
    auto it = types.find(f->name());
    if (it == types.end()) {
      step.exprs.push_back(field(f->name()));
      fields.push_back(f);
      continue;
    }
    ColumnExpr c = call("cast", {field(f->name())});
    c.cast_to = it->second;
    fields.push_back(arrow::field(f->name(), type_of(c, node_of(*this).schema)));
    step.exprs.push_back(std::move(c));
  }
  return with_step(*this, std::move(step), arrow::schema(fields));
}

DataFrame DataFrame::rename(const std::map<std::string, std::string>& names) const {
  const auto& s = *node_of(*this).schema;
  for (const auto& [from, to] : names) require_column(s, from);
  Step step;
  arrow::FieldVector fields;
  for (const auto& f : s.fields()) {
    auto it = names.find(f->name());
    const std::string out = it == names.end() ? f->name() : it->second;
    step.names.push_back(out);
    step.exprs.push_back(field(f->name()));
    fields.push_back(arrow::field(out, f->type()));
  }
  return with_step(*this, std::move(step), arrow::schema(fields));
}

DataFrame DataFrame::map_partitions(const std::string& function) const {
  const FrameNode& in = node_of(*this);
  // Dask's meta: the function run on an empty partition tells the output's columns.
  auto empty = unwrap(arrow::Table::MakeEmpty(in.schema), "map_partitions");
  auto meta = run_partition_function(function, empty);
  auto n = make_node(NodeKind::MapPartitions, "map-partitions");
  n->input = node_;
  n->function = function;
  n->schema = meta->schema();
  n->npartitions = in.npartitions;
  return DataFrame(n);
}

GroupBy DataFrame::groupby(std::vector<std::string> by) const {
  if (by.empty()) throw Error("groupby needs at least one key column");
  for (const auto& b : by) require_column(*node_of(*this).schema, b);
  return GroupBy(*this, std::move(by));
}

DataFrame DataFrame::sum() const { return reduce_all(*this, Agg::Sum); }
DataFrame DataFrame::mean() const { return reduce_all(*this, Agg::Mean); }
DataFrame DataFrame::min() const { return reduce_all(*this, Agg::Min); }
DataFrame DataFrame::max() const { return reduce_all(*this, Agg::Max); }
DataFrame DataFrame::count() const { return reduce_all(*this, Agg::Count); }
DataFrame DataFrame::std() const { return reduce_all(*this, Agg::Std); }
DataFrame DataFrame::var() const { return reduce_all(*this, Agg::Var); }

std::shared_ptr<arrow::Table> DataFrame::describe(Executor& executor) const {
  const auto& s = *node_of(*this).schema;
  GroupbySpec spec;
  std::vector<std::string> numeric;
  for (const auto& f : s.fields()) {
    const auto id = f->type()->id();
    if (!(arrow::is_integer(id) || arrow::is_floating(id))) continue;
    numeric.push_back(f->name());
    for (Agg how : {Agg::Count, Agg::Mean, Agg::Std, Agg::Min, Agg::Max})
      spec.aggs.push_back({f->name(), how, f->name() + "/" + agg_name(how)});
  }
  if (numeric.empty()) throw Error("describe: the frame has no numeric columns (columns: " + column_list(s) + ")");
  // One graph: the partitions are read once for the moments and the percentiles.
  auto both = dataframe::compute({aggregate(*this, spec, {}), quantiles(*this, numeric, {0.25, 0.5, 0.75})}, executor);
  const auto& row = both[0];
  const auto& pct = both[1];
  ensure_arrow_compute();
  const char* stats[] = {"count", "mean", "std", "min", "25%", "50%", "75%", "max"};
  arrow::StringBuilder names;
  for (const char* st : stats) check_arrow(names.Append(st), "describe");
  arrow::FieldVector fields{arrow::field("statistic", arrow::utf8())};
  arrow::ArrayVector arrays{names.Finish().ValueOrDie()};
  auto append = [](arrow::DoubleBuilder& b, const std::shared_ptr<arrow::ChunkedArray>& col, std::int64_t row_index) {
    auto as_double = unwrap(arrow::compute::Cast(col, arrow::float64()), "describe").chunked_array();
    auto scalar = unwrap(as_double->GetScalar(row_index), "describe");
    if (scalar->is_valid) check_arrow(b.Append(static_cast<const arrow::DoubleScalar&>(*scalar).value), "describe");
    else check_arrow(b.AppendNull(), "describe");
  };
  for (const auto& c : numeric) {
    arrow::DoubleBuilder b;
    for (const char* st : {"count", "mean", "std", "min"}) append(b, row->GetColumnByName(c + "/" + st), 0);
    for (std::int64_t q = 0; q < 3; ++q) append(b, pct->GetColumnByName(c), q);
    append(b, row->GetColumnByName(c + "/max"), 0);
    fields.push_back(arrow::field(c, arrow::float64()));
    arrays.push_back(b.Finish().ValueOrDie());
  }
  return arrow::Table::Make(arrow::schema(fields), arrays, 8);
}

std::shared_ptr<arrow::Table> DataFrame::head(std::int64_t n, Executor& executor) const {
  if (n < 0) throw Error("head: n must be >= 0, got " + std::to_string(n));
  // The first rows of a sort are its top-n: each partition's n first, then one task (topn.cpp).
  if (auto top = head_as_top_n(*this, n)) return top->compute(executor);
  const FrameNode& in = node_of(*this);
  // Like Dask: the first partition; more only when it has fewer than n rows.
  for (std::int64_t parts = 1;; parts = std::min(in.npartitions, parts * 4)) {
    auto node = make_node(NodeKind::Head, "head");
    node->input = node_;
    node->head_rows = n;
    node->npartitions = 1;
    node->schema = in.schema;
    node->head_partitions = std::min<std::int64_t>(parts, in.npartitions);
    auto t = DataFrame(node).compute(executor);
    if (t->num_rows() >= n || parts >= in.npartitions) return t;
  }
}

DataFrame DataFrame::length() const {
  GroupbySpec spec;
  spec.aggs.push_back({"", Agg::Size, "rows"});
  return aggregate(*this, spec, {});
}

std::int64_t DataFrame::len(Executor& executor) const {
  auto t = length().compute(executor);
  auto v = unwrap(t->GetColumnByName("rows")->GetScalar(0), "len");
  return static_cast<const arrow::Int64Scalar&>(*v).value;
}

Graph DataFrame::to_graph(std::vector<Key>* partition_keys) const {
  FrameLowering low(nullptr);
  auto keys = low.lower(node_);
  if (partition_keys) *partition_keys = keys;
  return std::move(low.graph());
}

std::shared_ptr<arrow::Table> DataFrame::compute(Executor& executor) const {
  return dataframe::compute({*this}, executor).front();
}

std::vector<std::shared_ptr<arrow::Table>> compute(const std::vector<DataFrame>& frames, Executor& executor) {
  std::vector<NodePtr> nodes;
  for (const auto& f : frames) nodes.push_back((node_of(f).device ? f.to_host() : f).node());
  FrameLowering low(&executor);
  const auto keys = low.lower_all(nodes);
  std::vector<Key> all;
  for (const auto& k : keys) all.insert(all.end(), k.begin(), k.end());
  const auto values = executor.get(low.graph(), all);
  std::vector<std::shared_ptr<arrow::Table>> out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    std::vector<Value> mine(values.begin() + static_cast<std::ptrdiff_t>(at),
                            values.begin() + static_cast<std::ptrdiff_t>(at + keys[i].size()));
    at += keys[i].size();
    out.push_back(concat(mine, node_of(frames[i]).schema.get()));
  }
  return out;
}

DataFrame DataFrame::persist(Executor& executor) const {
  const FrameNode& in = node_of(*this);
  FrameLowering low(&executor);
  auto keys = low.lower(node_);
  auto kept = executor.keep(low.graph(), keys);
  auto n = make_node(executor.holds(*kept) ? NodeKind::Kept : NodeKind::Tables, "persist");
  n->schema = in.schema;
  n->npartitions = in.npartitions;
  n->device = in.device;
  n->index = in.index;
  n->index_divisions = in.index_divisions;
  if (n->kind == NodeKind::Kept) n->kept = std::move(kept);
  else n->partitions = kept->values();
  return DataFrame(n);
}

DataFrame DataFrame::to_device() const {
  const FrameNode& in = node_of(*this);
  if (in.device) return *this;
  auto n = make_node(NodeKind::ToDevice, "to-device");
  n->input = node_;
  n->schema = in.schema;
  n->npartitions = in.npartitions;
  n->index = in.index;
  n->index_divisions = in.index_divisions;
  n->device = true;
  return DataFrame(n);
}

DataFrame DataFrame::to_host() const {
  const FrameNode& in = node_of(*this);
  if (!in.device) return *this;
  auto n = make_node(NodeKind::ToHost, "to-host");
  n->input = node_;
  n->schema = in.schema;
  n->npartitions = in.npartitions;
  n->index = in.index;
  n->index_divisions = in.index_divisions;
  return DataFrame(n);
}

DataFrame from_tables(const std::vector<std::shared_ptr<arrow::Table>>& partitions) {
  if (partitions.empty()) throw Error("from_tables: no partitions");
  auto n = make_node(NodeKind::Tables, "from-tables");
  n->schema = partitions.front()->schema();
  for (std::size_t i = 0; i < partitions.size(); ++i) {
    if (!partitions[i]) throw Error("from_tables: partition " + std::to_string(i) + " is null");
    if (!partitions[i]->schema()->Equals(*n->schema))
      throw Error("from_tables: partition " + std::to_string(i) + " has columns " + partitions[i]->schema()->ToString() +
                  ", partition 0 has " + n->schema->ToString());
    n->partitions.push_back(table_value(partitions[i]));
  }
  n->npartitions = static_cast<std::int64_t>(partitions.size());
  return DataFrame(n);
}

// ---- Series --------------------------------------------------------------------------------

Series::Series(DataFrame frame, std::shared_ptr<const ColumnExpr> expr, std::string name)
    : frame_(std::move(frame)), expr_(std::move(expr)), name_(std::move(name)) {}

std::string Series::dtype() const { return type_of(*expr_, node_of(frame_).schema)->ToString(); }

Series Series::rename(const std::string& name) const { return Series(frame_, expr_, name); }

Series Series::astype(const std::string& type) const {
  parse_type(type);
  ColumnExpr c = call("cast", {*expr_});
  c.cast_to = type;
  type_of(c, node_of(frame_).schema);
  return Series(frame_, std::make_shared<const ColumnExpr>(std::move(c)), name_);
}

Series Series::isnull() const { return unary("is_null_nan", *this); }

namespace {

// A call of `fn` on this Series with literal options after it (is_in's values, a pattern).
Series with_literals(const char* fn, const Series& s, const std::vector<Literal>& literals) {
  std::vector<ColumnExpr> args{*s.expr()};
  for (const auto& l : literals) args.push_back(literal(l));
  ColumnExpr e = call(fn, std::move(args));
  type_of(e, node_of(s.frame()).schema);  // throws now for a type the function cannot take
  return Series(s.frame(), std::make_shared<const ColumnExpr>(std::move(e)), s.name());
}

void require_same_frame(const Series& a, const Series& b, const char* what) {
  if (a.frame().node() != b.frame().node())
    throw Error(std::string(what) + ": the Series come from different frames; assign them into one frame first");
}

}  // namespace

Series Series::isin(const std::vector<Literal>& values) const { return with_literals("is_in", *this, values); }
Series Series::str_startswith(const std::string& prefix) const { return with_literals("starts_with", *this, {prefix}); }
Series Series::str_endswith(const std::string& suffix) const { return with_literals("ends_with", *this, {suffix}); }
Series Series::str_contains(const std::string& text) const { return with_literals("match_substring", *this, {text}); }
Series Series::str_like(const std::string& pattern) const { return with_literals("match_like", *this, {pattern}); }
Series Series::str_slice(std::int64_t start, std::int64_t stop) const {
  if (start < 0 || stop < start)
    throw Error("str_slice: start " + std::to_string(start) + " and stop " + std::to_string(stop) +
                " (0 <= start <= stop; negative indices are not supported)");
  return with_literals("utf8_slice_codeunits", *this, {start, stop});
}
Series Series::dt_year() const { return unary("year", *this); }

namespace {
// A mask whose missing values count as false (pandas' where and filters).
ColumnExpr mask_expr(const Series& mask) { return call("coalesce", {*mask.expr(), literal(false)}); }
}  // namespace

Series Series::where(const Series& mask, const Literal& other) const {
  require_same_frame(*this, mask, "where");
  ColumnExpr e = call("if_else", {mask_expr(mask), *expr_, literal(other)});
  type_of(e, node_of(frame_).schema);
  return Series(frame_, std::make_shared<const ColumnExpr>(std::move(e)), name_);
}

Series Series::where(const Series& mask, const Series& other) const {
  require_same_frame(*this, mask, "where");
  require_same_frame(*this, other, "where");
  ColumnExpr e = call("if_else", {mask_expr(mask), *expr_, *other.expr()});
  type_of(e, node_of(frame_).schema);
  return Series(frame_, std::make_shared<const ColumnExpr>(std::move(e)), name_);
}
Series Series::notnull() const { return ~unary("is_null_nan", *this); }

DataFrame Series::to_frame() const {
  Step step;
  step.names.push_back(name_);
  step.exprs.push_back(*expr_);
  return with_step(frame_, std::move(step), arrow::schema({arrow::field(name_, type_of(*expr_, node_of(frame_).schema))}));
}

namespace {
DataFrame reduce_series(const Series& s, Agg how) {
  GroupbySpec spec;
  spec.aggs.push_back({s.name(), how, s.name()});
  return aggregate(s.to_frame(), spec, {});
}
}  // namespace

DataFrame Series::sum() const { return reduce_series(*this, Agg::Sum); }
DataFrame Series::mean() const { return reduce_series(*this, Agg::Mean); }
DataFrame Series::min() const { return reduce_series(*this, Agg::Min); }
DataFrame Series::max() const { return reduce_series(*this, Agg::Max); }
DataFrame Series::count() const { return reduce_series(*this, Agg::Count); }
DataFrame Series::std() const { return reduce_series(*this, Agg::Std); }
DataFrame Series::var() const { return reduce_series(*this, Agg::Var); }

DataFrame Series::nunique(const AggregateOptions& options) const {
  // The distinct values (a group-by on them), then how many are not missing.
  const bool floating = arrow::is_floating(type_of(*expr_, node_of(frame_).schema)->id());
  const Series values_of = floating ? where(notnull(), Literal{}) : *this;  // NaN is missing, as in pandas
  const DataFrame values = values_of.to_frame().groupby({name_}).size(options);
  return values[name_].count();
}

DataFrame Series::value_counts() const {
  GroupbySpec spec;
  spec.by = {name_};
  spec.aggs.push_back({"", Agg::Size, "count"});
  auto counts = aggregate(to_frame(), spec, {});
  auto n = make_node(NodeKind::SortValues, "value-counts");
  n->input = counts.node();
  n->sort_columns = {"count"};
  n->ascending = {false};
  n->schema = counts.node()->schema;
  n->npartitions = 1;
  return DataFrame(n);
}

std::shared_ptr<arrow::Table> Series::compute(Executor& executor) const { return to_frame().compute(executor); }

DataFrame Series::quantile(const std::vector<double>& q) const { return quantiles(to_frame(), {name_}, q); }

Series operator+(const Series& a, const Series& b) { return binary("add", a, *b.expr(), &b.frame()); }
Series operator-(const Series& a, const Series& b) { return binary("subtract", a, *b.expr(), &b.frame()); }
Series operator*(const Series& a, const Series& b) { return binary("multiply", a, *b.expr(), &b.frame()); }
Series operator/(const Series& a, const Series& b) { return binary("truediv", a, *b.expr(), &b.frame()); }
Series operator==(const Series& a, const Series& b) { return binary("equal", a, *b.expr(), &b.frame()); }
Series operator!=(const Series& a, const Series& b) { return binary("not_equal", a, *b.expr(), &b.frame()); }
Series operator<(const Series& a, const Series& b) { return binary("less", a, *b.expr(), &b.frame()); }
Series operator<=(const Series& a, const Series& b) { return binary("less_equal", a, *b.expr(), &b.frame()); }
Series operator>(const Series& a, const Series& b) { return binary("greater", a, *b.expr(), &b.frame()); }
Series operator>=(const Series& a, const Series& b) { return binary("greater_equal", a, *b.expr(), &b.frame()); }
Series operator&(const Series& a, const Series& b) { return binary("and_kleene", a, *b.expr(), &b.frame()); }
Series operator|(const Series& a, const Series& b) { return binary("or_kleene", a, *b.expr(), &b.frame()); }
Series operator~(const Series& a) { return unary("invert", a); }
Series operator+(const Series& a, const Literal& b) { return binary("add", a, literal(b), nullptr); }
Series operator-(const Series& a, const Literal& b) { return binary("subtract", a, literal(b), nullptr); }
Series operator*(const Series& a, const Literal& b) { return binary("multiply", a, literal(b), nullptr); }
Series operator/(const Series& a, const Literal& b) { return binary("truediv", a, literal(b), nullptr); }
Series operator==(const Series& a, const Literal& b) { return binary("equal", a, literal(b), nullptr); }
Series operator!=(const Series& a, const Literal& b) { return binary("not_equal", a, literal(b), nullptr); }
Series operator<(const Series& a, const Literal& b) { return binary("less", a, literal(b), nullptr); }
Series operator<=(const Series& a, const Literal& b) { return binary("less_equal", a, literal(b), nullptr); }
Series operator>(const Series& a, const Literal& b) { return binary("greater", a, literal(b), nullptr); }
Series operator>=(const Series& a, const Literal& b) { return binary("greater_equal", a, literal(b), nullptr); }

// ---- GroupBy -------------------------------------------------------------------------------

GroupBy::GroupBy(DataFrame frame, std::vector<std::string> by, std::vector<std::string> selected)
    : frame_(std::move(frame)), by_(std::move(by)), selected_(std::move(selected)) {}

GroupBy GroupBy::operator[](const std::string& column) const { return (*this)[std::vector<std::string>{column}]; }

GroupBy GroupBy::operator[](const std::vector<std::string>& columns) const {
  for (const auto& c : columns) require_column(*node_of(frame_).schema, c);
  return GroupBy(frame_, by_, columns);
}

DataFrame GroupBy::agg(const std::map<std::string, std::vector<std::string>>& how, const AggregateOptions& options) const {
  GroupbySpec spec;
  spec.by = by_;
  for (const auto& [column, hows] : how) {
    if (hows.empty()) throw Error("agg: no aggregation given for column '" + column + "'");
    for (const auto& h : hows) {
      Agg a;
      try {
        a = agg_from_name(h);
      } catch (const std::invalid_argument& e) {
        throw Error(std::string("agg: ") + e.what());
      }
      spec.aggs.push_back({column, a, hows.size() == 1 ? column : column + "_" + h});
    }
  }
  return aggregate(frame_, std::move(spec), options);
}

DataFrame GroupBy::agg(const std::string& how, const AggregateOptions& options) const {
  std::vector<std::string> columns = selected_;
  if (columns.empty())
    for (const auto& f : node_of(frame_).schema->fields())
      if (std::find(by_.begin(), by_.end(), f->name()) == by_.end()) columns.push_back(f->name());
  std::map<std::string, std::vector<std::string>> m;
  for (const auto& c : columns) m[c] = {how};
  return agg(m, options);
}

DataFrame GroupBy::nunique(const AggregateOptions& options) const {
  std::vector<std::string> columns = selected_;
  if (columns.empty())
    for (const auto& f : node_of(frame_).schema->fields())
      if (std::find(by_.begin(), by_.end(), f->name()) == by_.end()) columns.push_back(f->name());
  if (columns.empty()) throw Error("nunique: no column to count besides the keys");
  for (const auto& c : columns)
    if (std::find(by_.begin(), by_.end(), c) != by_.end())
      throw Error("nunique: '" + c + "' is a key of this groupby");
  // Distinct (keys, value) pairs, then the non-missing values per group. With many groups the
  // rows are shuffled on the keys once, so both group-bys run within partitions.
  std::vector<std::string> cols = by_;
  cols.insert(cols.end(), columns.begin(), columns.end());
  DataFrame base = frame_[cols];
  for (const auto& c : columns)  // NaN is missing, as in pandas: one null group, not counted
    if (arrow::is_floating(node_of(base).schema->GetFieldByName(c)->type()->id()))
      base = base.assign(c, base[c].where(base[c].notnull(), Literal{}));
  if (options.split_out > 1 && !groups_within_partitions(node_of(base), by_)) base = base.shuffle(by_, options.split_out);
  AggregateOptions within = options;
  within.split_out = 1;
  // Every group (a group whose values are all missing counts 0, and has no distinct pair).
  DataFrame out = base.groupby(by_).size(within);
  MergeOptions left;
  left.on = by_;
  left.how = "left";
  for (const auto& c : columns) {
    std::vector<std::string> keys = by_;
    keys.push_back(c);
    const DataFrame pairs = base[keys].groupby(keys).size(within);
    out = out.merge(pairs.groupby(by_)[c].count(within), left);
    out = out.assign(c, out[c].where(out[c].notnull(), Literal{std::int64_t{0}}));
  }
  std::vector<std::string> result = by_;
  result.insert(result.end(), columns.begin(), columns.end());
  return out[result];
}

DataFrame GroupBy::size(const AggregateOptions& options) const {
  GroupbySpec spec;
  spec.by = by_;
  spec.aggs.push_back({"", Agg::Size, "size"});
  return aggregate(frame_, std::move(spec), options);
}

}  // namespace tessera::dataframe
