// DataFrame::sort_values: building the expression. Dask's way: the first sort column's
// approximate quantiles (quantiles.cpp, a task in the same graph, not computed at build time)
// bound one range per output partition; each input partition's rows go to their ranges
// (range_split in shuffle_ops.cpp, the shuffle's split layout and unpack), and each range is
// sorted on its own, so the partitions in order are the sorted frame.
#include <arrow/api.h>

#include <set>

#include "frame_node.hpp"
#include "quantiles.hpp"
#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe {

using namespace detail;

namespace {

// Whether ranges of the column's values can be bounded by its quantiles (which are numbers).
bool rangeable(const arrow::DataType& t) {
  return arrow::is_integer(t.id()) || arrow::is_floating(t.id()) || t.id() == arrow::Type::BOOL;
}

}  // namespace

DataFrame DataFrame::sort_values(const std::vector<std::string>& by, bool ascending, const std::string& na_position) const {
  return sort_values(by, std::vector<bool>(by.size(), ascending), na_position);
}

DataFrame DataFrame::sort_values(const std::vector<std::string>& by, const std::vector<bool>& ascending,
                                 const std::string& na_position) const {
  const FrameNode& in = node_of(*this);
  if (na_position != "last" && na_position != "first")
    throw Error("sort_values: na_position is 'last' or 'first', not '" + na_position + "'");
  if (by.empty()) throw Error("sort_values: no columns to sort by");
  if (ascending.size() != by.size())
    throw Error("sort_values: " + std::to_string(ascending.size()) + " directions for " + std::to_string(by.size()) +
                " columns (give one per column)");
  std::set<std::string> seen;
  for (const auto& c : by) {
    if (!in.schema->GetFieldByName(c)) throw Error("sort_values: the frame has no column '" + c + "'");
    if (!seen.insert(c).second) throw Error("sort_values: column '" + c + "' is given twice");
  }
  auto n = make_node(NodeKind::SortValues, "sort-values");
  n->input = node();
  n->schema = in.schema;
  n->sort_columns = by;
  n->ascending = ascending;
  n->nulls_first = na_position == "first";
  n->device = in.device;
  // Strings, timestamps and the like have no numeric quantiles yet: their sort is one task over
  // every partition (right, but one partition's worth of memory for the whole frame).
  const bool ranged = in.npartitions > 1 && rangeable(*in.schema->GetFieldByName(by.front())->type());
  n->npartitions = ranged ? in.npartitions : 1;
  if (ranged) {
    std::vector<double> q;
    for (std::int64_t j = 1; j < in.npartitions; ++j)
      q.push_back(static_cast<double>(j) / static_cast<double>(in.npartitions));
    n->divisions = quantiles((*this)[std::vector<std::string>{by.front()}], {by.front()}, q).node();
    // The ranges follow the first column's direction.
  }
  return DataFrame(n);
}

}  // namespace tessera::dataframe
