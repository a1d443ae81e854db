// Top-n: the n first rows in a sort's order without sorting the frame (Dask's nlargest and
// nsmallest: each partition's n best, then one task over those). head(n) of a sort_values lowers
// to it, and nlargest / nsmallest are built on it.
#include <arrow/api.h>
#include <arrow/compute/api.h>

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

struct TopNParams {
  std::vector<std::string> columns;
  std::vector<bool> ascending;
  bool nulls_first = false;
  std::int64_t n = 0;
  bool drop_missing_first = false;
  template <class A>
  void serialize(A& ar) {
    ar(columns, ascending, nulls_first, n, drop_missing_first);
  }
};

// The partitions given, concatenated in order, stably sorted (ties keep the earlier row) and cut
// to n rows: a partition's own top-n, or the top-n of several partitions' top-ns.
Value top_n_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<TopNParams>(arg(args, 0).object());
  std::vector<std::shared_ptr<arrow::Table>> parts;
  for (std::size_t i = 1; i < args.size(); ++i) parts.push_back(table_of(args[i], "top-n")->ReplaceSchemaMetadata(nullptr));
  if (parts.empty()) throw Error("top-n: a task reads no partition");
  auto t = parts.size() == 1 ? parts.front() : unwrap(arrow::ConcatenateTables(parts), "top-n");
  if (p.drop_missing_first && !p.columns.empty()) {  // pandas' nlargest never picks a missing value
    auto first = t->GetColumnByName(p.columns.front());
    if (!first) throw Error("top-n: column '" + p.columns.front() + "' is missing from a partition");
    auto missing = unwrap(cp::CallFunction("is_null", std::vector<arrow::Datum>{arrow::Datum(first)}), "top-n");
    if (arrow::is_floating(first->type()->id()))
      missing = unwrap(cp::CallFunction("or_kleene", std::vector<arrow::Datum>{missing, unwrap(cp::CallFunction("is_nan", std::vector<arrow::Datum>{arrow::Datum(first)}), "top-n")}),
                       "top-n");
    auto keep = unwrap(cp::CallFunction("invert", std::vector<arrow::Datum>{missing}), "top-n");
    t = unwrap(cp::Filter(arrow::Datum(t), keep), "top-n").table();
  }
  std::vector<cp::SortKey> keys;
  for (std::size_t i = 0; i < p.columns.size(); ++i)
    keys.emplace_back(p.columns[i], p.ascending.at(i) ? cp::SortOrder::Ascending : cp::SortOrder::Descending,
                      p.nulls_first ? cp::NullPlacement::AtStart : cp::NullPlacement::AtEnd);
  // select_k_unstable would be O(rows) but keeps no order among ties; a stable sort keeps pandas'
  // "first" among equal rows.
  auto idx = unwrap(cp::SortIndices(arrow::Datum(t), cp::SortOptions(keys)), "top-n");
  auto first_n = idx->Slice(0, std::min<std::int64_t>(p.n, idx->length()));
  return table_value(unwrap(cp::Take(arrow::Datum(t), arrow::Datum(first_n)), "top-n").table());
}

const bool top_n_registered = [] {
  register_op(kOpTopN, top_n_op);
  return true;
}();

}  // namespace

Object top_n_params(const std::vector<std::string>& columns, const std::vector<bool>& ascending, bool nulls_first,
                    std::int64_t n, bool drop_missing_first) {
  return to_object(TopNParams{columns, ascending, nulls_first, n, drop_missing_first}, "tessera.frame.TopNParams");
}

DataFrame top_n(const DataFrame& df, const std::vector<std::string>& by, const std::vector<bool>& ascending,
                bool nulls_first, std::int64_t n, bool drop_missing_first) {
  const FrameNode& in = node_of(df);
  auto node = make_node(NodeKind::TopN, "top-n");
  node->input = df.node();
  node->schema = in.schema;
  node->npartitions = 1;
  node->sort_columns = by;
  node->ascending = ascending;
  node->nulls_first = nulls_first;
  node->head_rows = n;
  node->drop_missing_first = drop_missing_first;
  return DataFrame(node);
}

std::optional<DataFrame> head_as_top_n(const DataFrame& df, std::int64_t n) {
  const FrameNode& in = node_of(df);
  if (in.kind != NodeKind::SortValues || !in.input) return std::nullopt;
  return top_n(DataFrame(in.input), in.sort_columns, in.ascending, in.nulls_first, n, false);
}

}  // namespace detail

namespace {

DataFrame select_n(const DataFrame& df, std::int64_t n, const std::vector<std::string>& columns, bool largest) {
  const char* what = largest ? "nlargest" : "nsmallest";
  const FrameNode& in = node_of(df);
  if (in.device) throw Error(std::string(what) + " is not supported on device frames yet: to_host() first");
  if (n < 0) throw Error(std::string(what) + ": n must be >= 0, got " + std::to_string(n));
  if (columns.empty()) throw Error(std::string(what) + ": no columns given");
  for (const auto& c : columns) {
    auto f = in.schema->GetFieldByName(c);
    if (!f) throw Error(std::string(what) + ": column '" + c + "' does not exist");
    const auto id = f->type()->id();
    if (!(arrow::is_integer(id) || arrow::is_floating(id) || id == arrow::Type::BOOL))
      throw Error(std::string(what) + ": column '" + c + "' is " + f->type()->ToString() + ", not a number (pandas refuses it too)");
  }
  return top_n(df, columns, std::vector<bool>(columns.size(), !largest), false, n, true);
}

}  // namespace

DataFrame DataFrame::nlargest(std::int64_t n, const std::vector<std::string>& columns) const {
  return select_n(*this, n, columns, true);
}

DataFrame DataFrame::nsmallest(std::int64_t n, const std::vector<std::string>& columns) const {
  return select_n(*this, n, columns, false);
}

}  // namespace tessera::dataframe
