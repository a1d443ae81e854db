// One merge task: two host tables joined on Acero's hash join, with pandas' merge semantics
// (join_host.hpp). The output columns are planned from the two schemas alone (output_columns),
// once when the merge is built and again in each task, so that the two always agree.
#include "join_host.hpp"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <map>
#include <set>

#include "arrow_util.hpp"
#include "column_expr.hpp"
#include "device_convert.hpp"

namespace tessera::dataframe::detail {

namespace {

namespace cp = arrow::compute;
namespace ac = arrow::acero;

bool is_semi(JoinHow how) { return how == JoinHow::LeftSemi || how == JoinHow::LeftAnti; }

std::shared_ptr<arrow::DataType> value_type(const std::shared_ptr<arrow::DataType>& t) {
  if (t->id() == arrow::Type::DICTIONARY) return static_cast<const arrow::DictionaryType&>(*t).value_type();
  return t;
}

bool is_string_like(const arrow::DataType& t) {
  return t.id() == arrow::Type::STRING || t.id() == arrow::Type::LARGE_STRING;
}

// The type a key pair is compared as (join_host.hpp); throws when the two cannot be compared.
std::shared_ptr<arrow::DataType> common_key_type(const std::string& lname, const std::shared_ptr<arrow::DataType>& l_in,
                                                 const std::string& rname,
                                                 const std::shared_ptr<arrow::DataType>& r_in) {
  const auto l = value_type(l_in), r = value_type(r_in);
  if (l->Equals(*r)) return l;
  if (arrow::is_integer(l->id()) && arrow::is_integer(r->id())) return arrow::int64();
  const auto numeric = [](const arrow::DataType& t) { return arrow::is_integer(t.id()) || arrow::is_floating(t.id()); };
  if (numeric(*l) && numeric(*r)) return arrow::float64();
  if (is_string_like(*l) && is_string_like(*r)) return arrow::large_utf8();
  throw Error("merge: cannot compare key '" + lname + "' (" + l->ToString() + ") of the left frame with key '" + rname +
              "' (" + r->ToString() + ") of the right: cast one with astype first");
}

struct OutColumn {
  enum class From : std::uint8_t { Left, Right, Key } from = From::Left;
  std::size_t index = 0;  // the side's column index, or the key pair for Key
  std::string name;
};

// The result's columns, in pandas' order and with its names (join_host.hpp).
std::vector<OutColumn> output_columns(const arrow::Schema& left, const arrow::Schema& right, const JoinSpec& spec) {
  std::set<std::string> merged;  // keys named alike on both sides: one output column
  std::map<std::string, std::size_t> merged_pair;
  for (std::size_t i = 0; i < spec.left_on.size(); ++i)
    if (spec.left_on[i] == spec.right_on[i] && merged.insert(spec.left_on[i]).second) merged_pair[spec.left_on[i]] = i;
  const std::set<std::string> clashing(spec.suffixed.begin(), spec.suffixed.end());
  const bool semi = is_semi(spec.how);
  std::vector<OutColumn> out;
  for (int i = 0; i < left.num_fields(); ++i) {
    const auto& name = left.field(i)->name();
    if (!semi && merged.count(name)) {
      out.push_back({OutColumn::From::Key, merged_pair.at(name), name});
      continue;
    }
    const bool clash = !semi && clashing.count(name);
    out.push_back({OutColumn::From::Left, static_cast<std::size_t>(i), clash ? name + spec.left_suffix : name});
  }
  if (semi) return out;
  for (int i = 0; i < right.num_fields(); ++i) {
    const auto& name = right.field(i)->name();
    if (merged.count(name)) continue;
    const bool clash = clashing.count(name) > 0;
    out.push_back({OutColumn::From::Right, static_cast<std::size_t>(i), clash ? name + spec.right_suffix : name});
  }
  return out;
}

// Key column of a side compared as `type`: dictionary decoded, cast, NaN made null (missing keys
// match each other whether they arrived as null or as NaN) and -0.0 made +0.0 (equal keys, as in
// pandas, whose hash tables hash the two zeros alike; Acero hashes their bits).
std::shared_ptr<arrow::ChunkedArray> prepared_key(const std::shared_ptr<arrow::ChunkedArray>& column,
                                                  const std::shared_ptr<arrow::DataType>& type,
                                                  const std::string& name) {
  arrow::Datum d(column);
  if (!column->type()->Equals(*type)) d = unwrap(cp::Cast(d, type), "merge: casting key '" + name + "'");
  if (arrow::is_floating(type->id())) {
    auto nan = unwrap(cp::CallFunction("is_nan", {d}), "merge: key '" + name + "'");
    d = unwrap(cp::CallFunction("if_else", {nan, arrow::MakeNullScalar(type), d}), "merge: key '" + name + "'");
    // x + 0.0 is x, except that -0.0 + 0.0 is +0.0.
    auto zero = unwrap(cp::Cast(arrow::Datum(arrow::MakeScalar(0.0)), type), "merge: key '" + name + "'");
    d = unwrap(cp::CallFunction("add", {d, zero}), "merge: key '" + name + "'");
  }
  return d.chunked_array();
}

// A side with its columns named <prefix><i> (no name clashes inside Acero), keys prepared.
std::shared_ptr<arrow::Table> prepared_side(const std::shared_ptr<arrow::Table>& t, const std::vector<std::string>& keys,
                                            const std::vector<std::shared_ptr<arrow::DataType>>& key_types,
                                            const std::string& prefix) {
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns = t->columns();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const int i = t->schema()->GetFieldIndex(keys[k]);
    if (i < 0) throw Error("merge: key column '" + keys[k] + "' is missing from a partition");
    columns[static_cast<std::size_t>(i)] = prepared_key(t->column(i), key_types[k], keys[k]);
  }
  arrow::FieldVector fields;
  for (std::size_t i = 0; i < columns.size(); ++i)
    fields.push_back(arrow::field(prefix + std::to_string(i), columns[i]->type()));
  return arrow::Table::Make(arrow::schema(fields), columns, t->num_rows());
}

ac::JoinType acero_type(JoinHow how) {
  switch (how) {
    case JoinHow::Inner: return ac::JoinType::INNER;
    case JoinHow::Left: return ac::JoinType::LEFT_OUTER;
    case JoinHow::Right: return ac::JoinType::RIGHT_OUTER;
    case JoinHow::Outer: return ac::JoinType::FULL_OUTER;
    case JoinHow::LeftSemi: return ac::JoinType::LEFT_SEMI;
    case JoinHow::LeftAnti: return ac::JoinType::LEFT_ANTI;
  }
  throw Error("merge: unknown join type");
}

std::vector<std::shared_ptr<arrow::DataType>> key_types_of(const JoinSpec& spec) {
  std::vector<std::shared_ptr<arrow::DataType>> out;
  for (const auto& t : spec.key_types) out.push_back(parse_type(t));
  if (out.size() != spec.left_on.size()) throw Error("merge: the task's key types do not match its keys");
  return out;
}

// The result's schema for sides with these schemas (which may be projections of the planned ones).
std::shared_ptr<arrow::Schema> output_schema(const arrow::Schema& left, const arrow::Schema& right,
                                             const JoinSpec& spec) {
  const auto types = key_types_of(spec);
  std::map<std::string, std::size_t> left_key, right_key;
  for (std::size_t i = 0; i < spec.left_on.size(); ++i) {
    left_key.emplace(spec.left_on[i], i);
    right_key.emplace(spec.right_on[i], i);
  }
  arrow::FieldVector fields;
  std::set<std::string> seen;
  for (const auto& c : output_columns(left, right, spec)) {
    std::shared_ptr<arrow::DataType> type;
    if (c.from == OutColumn::From::Key) {
      type = types[c.index];
    } else {
      const auto& f = c.from == OutColumn::From::Left ? left.field(static_cast<int>(c.index))
                                                       : right.field(static_cast<int>(c.index));
      const auto& keys = c.from == OutColumn::From::Left ? left_key : right_key;
      auto k = keys.find(f->name());
      type = k != keys.end() ? types[k->second] : f->type();
    }
    if (!seen.insert(c.name).second)
      throw Error("merge: two result columns would be named '" + c.name + "' (choose other suffixes)");
    fields.push_back(arrow::field(c.name, type));
  }
  return arrow::schema(fields);
}

}  // namespace

void join_reads(const arrow::Schema& left, const arrow::Schema& right, const JoinSpec& spec,
                const std::set<std::string>& needed, std::set<std::string>& left_reads,
                std::set<std::string>& right_reads) {
  left_reads.insert(spec.left_on.begin(), spec.left_on.end());
  right_reads.insert(spec.right_on.begin(), spec.right_on.end());
  for (const auto& c : output_columns(left, right, spec)) {
    if (!needed.count(c.name) || c.from == OutColumn::From::Key) continue;
    if (c.from == OutColumn::From::Left) left_reads.insert(left.field(static_cast<int>(c.index))->name());
    else right_reads.insert(right.field(static_cast<int>(c.index))->name());
  }
}

JoinHow join_how_from_name(const std::string& name) {
  static const std::map<std::string, JoinHow> names{{"inner", JoinHow::Inner},       {"left", JoinHow::Left},
                                                    {"right", JoinHow::Right},       {"outer", JoinHow::Outer},
                                                    {"leftsemi", JoinHow::LeftSemi}, {"leftanti", JoinHow::LeftAnti}};
  auto it = names.find(name);
  if (it == names.end())
    throw Error("merge: unknown how '" + name + "' (inner, left, right, outer, leftsemi, leftanti)");
  return it->second;
}

const char* join_how_name(JoinHow how) {
  switch (how) {
    case JoinHow::Inner: return "inner";
    case JoinHow::Left: return "left";
    case JoinHow::Right: return "right";
    case JoinHow::Outer: return "outer";
    case JoinHow::LeftSemi: return "leftsemi";
    case JoinHow::LeftAnti: return "leftanti";
  }
  return "?";
}

std::shared_ptr<arrow::Schema> plan_join(const arrow::Schema& left, const arrow::Schema& right, JoinSpec& spec) {
  if (spec.left_on.empty()) throw Error("merge: no key columns (give on, or left_on and right_on)");
  if (spec.left_on.size() != spec.right_on.size())
    throw Error("merge: left_on has " + std::to_string(spec.left_on.size()) + " columns and right_on " +
                std::to_string(spec.right_on.size()) + "; they must pair up");
  spec.key_types.clear();
  spec.suffixed.clear();
  {
    std::set<std::string> merged;
    for (std::size_t i = 0; i < spec.left_on.size(); ++i)
      if (spec.left_on[i] == spec.right_on[i]) merged.insert(spec.left_on[i]);
    for (const auto& f : left.fields())
      if (right.GetFieldByName(f->name()) && !merged.count(f->name())) spec.suffixed.push_back(f->name());
  }
  std::vector<std::shared_ptr<arrow::DataType>> types;
  for (std::size_t i = 0; i < spec.left_on.size(); ++i) {
    auto lf = left.GetFieldByName(spec.left_on[i]);
    auto rf = right.GetFieldByName(spec.right_on[i]);
    if (!lf) throw Error("merge: the left frame has no column '" + spec.left_on[i] + "'");
    if (!rf) throw Error("merge: the right frame has no column '" + spec.right_on[i] + "'");
    types.push_back(common_key_type(spec.left_on[i], lf->type(), spec.right_on[i], rf->type()));
    spec.key_types.push_back(types.back()->ToString());
    // The tasks learn the type back from its name: refuse one that does not come back whole
    // (a timestamp with a time zone, a decimal) now rather than in every task.
    std::shared_ptr<arrow::DataType> named;
    try {
      named = parse_type(spec.key_types.back());
    } catch (const Error&) {
    }
    if (!named || !named->Equals(*types.back()))
      throw Error("merge: keys of type " + spec.key_types.back() + " ('" + spec.left_on[i] +
                  "') are not supported yet: cast them with astype first");
  }
  return output_schema(left, right, spec);
}

JoinPlan device_join_plan(const arrow::Schema& left, const arrow::Schema& right, const JoinSpec& spec) {
  const auto types = key_types_of(spec);
  JoinPlan plan;
  plan.how = spec.how;
  for (std::size_t k = 0; k < types.size(); ++k) {
    JoinKeyPlan key;
    key.left = spec.left_on[k];
    key.right = spec.right_on[k];
    key.strings = is_string_like(*types[k]);
    key.dtype = key.strings ? DType::Int32 : device_dtype_of(*types[k], "merge: key '" + key.left + "'");
    key.logical_type = key.strings ? "string" : types[k]->ToString();
    plan.keys.push_back(std::move(key));
  }
  for (const auto& c : output_columns(left, right, spec)) {
    JoinOutPlan o;
    o.name = c.name;
    if (c.from == OutColumn::From::Key) {
      o.from = JoinOutPlan::From::Key;
      o.key = c.index;
    } else {
      const bool is_left = c.from == OutColumn::From::Left;
      o.from = is_left ? JoinOutPlan::From::Left : JoinOutPlan::From::Right;
      o.column = (is_left ? left : right).field(static_cast<int>(c.index))->name();
    }
    plan.outputs.push_back(std::move(o));
  }
  return plan;
}

std::shared_ptr<arrow::Table> join_tables(const std::shared_ptr<arrow::Table>& left,
                                          const std::shared_ptr<arrow::Table>& right, const JoinSpec& spec) {
  ensure_arrow_compute();
  const auto types = key_types_of(spec);
  auto l = prepared_side(left, spec.left_on, types, "l");
  auto r = prepared_side(right, spec.right_on, types, "r");
  std::vector<arrow::FieldRef> lkeys, rkeys;
  for (const auto& k : spec.left_on) lkeys.emplace_back("l" + std::to_string(left->schema()->GetFieldIndex(k)));
  for (const auto& k : spec.right_on) rkeys.emplace_back("r" + std::to_string(right->schema()->GetFieldIndex(k)));
  std::vector<arrow::FieldRef> lout, rout;
  for (const auto& f : l->schema()->fields()) lout.emplace_back(f->name());
  if (!is_semi(spec.how))
    for (const auto& f : r->schema()->fields()) rout.emplace_back(f->name());
  ac::HashJoinNodeOptions options(acero_type(spec.how), lkeys, rkeys, lout, rout,
                                  std::vector<ac::JoinKeyCmp>(lkeys.size(), ac::JoinKeyCmp::IS));
  ac::Declaration join{"hashjoin",
                       {ac::Declaration{"table_source", ac::TableSourceNodeOptions(l)},
                        ac::Declaration{"table_source", ac::TableSourceNodeOptions(r)}},
                       std::move(options)};
  // On the task's own thread: the executor already runs a task per core.
  auto joined = unwrap(ac::DeclarationToTable(std::move(join), /*use_threads=*/false), "merge");

  const auto schema = output_schema(*left->schema(), *right->schema(), spec);
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
  for (const auto& c : output_columns(*left->schema(), *right->schema(), spec)) {
    std::shared_ptr<arrow::ChunkedArray> column;
    if (c.from == OutColumn::From::Key) {
      auto lc = joined->GetColumnByName(*lkeys[c.index].name());
      auto rc = joined->GetColumnByName(*rkeys[c.index].name());
      column = unwrap(cp::CallFunction("coalesce", {lc, rc}), "merge: key '" + c.name + "'").chunked_array();
    } else {
      const std::string name = (c.from == OutColumn::From::Left ? "l" : "r") + std::to_string(c.index);
      column = joined->GetColumnByName(name);
    }
    if (!column) throw Error("merge: the join gave no column for '" + c.name + "'");
    columns.push_back(std::move(column));
  }
  return arrow::Table::Make(schema, columns, joined->num_rows());
}

}  // namespace tessera::dataframe::detail
