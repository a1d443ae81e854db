// DataFrame::explain: the expression as lowered, one line per node from the output down (inputs
// indented below their consumer): its kind, name, partitions, columns, what it does, and the
// columns its consumers read from it (the projection lowering pushed down to it).
#include <arrow/api.h>

#include <set>
#include <sstream>

#include "frame_index.hpp"
#include "frame_node.hpp"

namespace tessera::dataframe {

using namespace detail;

namespace {

const char* explain_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Source: return "Source";
    case NodeKind::Tables: return "Tables";
    case NodeKind::Kept: return "Kept";
    case NodeKind::Map: return "Map";
    case NodeKind::MapPartitions: return "MapPartitions";
    case NodeKind::Aggregate: return "Aggregate";
    case NodeKind::SortValues: return "SortValues";
    case NodeKind::Head: return "Head";
    case NodeKind::Quantiles: return "Quantiles";
    case NodeKind::ToDevice: return "ToDevice";
    case NodeKind::ToHost: return "ToHost";
    case NodeKind::Shuffle: return "Shuffle";
    case NodeKind::Merge: return "Merge";
    case NodeKind::Repartition: return "Repartition";
    case NodeKind::RangePartition: return "RangePartition";
    case NodeKind::TopN: return "TopN";
    case NodeKind::Distinct: return "Distinct";
  }
  return "?";
}

std::string explain_joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return "[" + out + "]";
}

std::string explain_joined(const std::set<std::string>& v) { return explain_joined(std::vector<std::string>(v.begin(), v.end())); }

// What a node does, beyond its kind.
std::string explain_detail(const FrameNode& n) {
  std::ostringstream os;
  switch (n.kind) {
    case NodeKind::Source: os << " op=" << n.source_op; break;
    case NodeKind::Map: os << " steps=" << n.program.size(); break;
    case NodeKind::MapPartitions: os << " function=" << n.function; break;
    case NodeKind::Aggregate:
      os << " by=" << explain_joined(n.spec.by) << (n.per_partition ? " per-partition" : "")
         << " split_every=" << n.options.split_every << " split_out=" << n.options.split_out;
      break;
    case NodeKind::SortValues:
    case NodeKind::TopN:
      os << " by=" << explain_joined(n.sort_columns) << (n.nulls_first ? " na=first" : "");
      if (n.kind == NodeKind::TopN) os << " n=" << n.head_rows;
      break;
    case NodeKind::Head: os << " n=" << n.head_rows; break;
    case NodeKind::Quantiles: os << " of=" << explain_joined(n.quantile_columns); break;
    case NodeKind::Shuffle: os << " on=" << explain_joined(n.shuffle_on); break;
    case NodeKind::Merge: {
      const char* strategy[] = {"single", "broadcast-right", "broadcast-left", "partitioned"};
      os << " how=" << join_how_name(n.join.how) << " left_on=" << explain_joined(n.join.left_on)
         << " right_on=" << explain_joined(n.join.right_on) << " strategy=" << strategy[static_cast<int>(n.strategy)];
      break;
    }
    case NodeKind::Repartition: {
      std::size_t pieces = 0;
      for (const auto& p : n.plan) pieces += p.size();
      os << " pieces=" << pieces << (n.sort_each ? " sorted-by=" + explain_joined(n.sort_columns) : "");
      break;
    }
    case NodeKind::RangePartition: os << " by=" << n.sort_columns.front() << (n.sort_each ? " sorted" : ""); break;
    case NodeKind::Distinct: os << " on=" << explain_joined(n.distinct_on) << " keep=" << (n.keep_last ? "last" : "first"); break;
    default: break;
  }
  if (!n.index.empty()) {
    os << " index=" << n.index;
    if (!n.index_divisions.empty()) {
      std::vector<std::string> d;
      for (const auto& v : n.index_divisions) d.push_back(literal_text(v));
      os << " divisions=" << explain_joined(d);
    }
  }
  return os.str();
}

void explain_print(const NodePtr& node, const FrameLowering& low, int depth, std::set<std::string>& seen, std::ostringstream& os) {
  const FrameNode& n = *node;
  os << std::string(static_cast<std::size_t>(depth) * 2, ' ') << explain_kind_name(n.kind) << " " << n.name << ": "
     << n.npartitions << (n.npartitions == 1 ? " partition" : " partitions");
  std::vector<std::string> columns;
  for (const auto& f : n.schema->fields()) columns.push_back(f->name());
  os << ", columns " << explain_joined(columns);
  if (auto it = low.reads().find(n.name); it != low.reads().end() && it->second.size() < columns.size())
    os << ", reads " << explain_joined(it->second);
  os << explain_detail(n);
  if (!seen.insert(n.name).second) {  // shared by two consumers: listed once
    os << " (above)\n";
    return;
  }
  os << "\n";
  for (const auto* child : {&n.input, &n.right, &n.divisions})
    if (*child) explain_print(*child, low, depth + 1, seen, os);
}

}  // namespace

std::string DataFrame::explain() const {
  node_of(*this);  // throws for a default-constructed frame
  FrameLowering low(nullptr);
  low.lower(node());
  std::ostringstream os;
  std::set<std::string> seen;
  explain_print(node(), low, 0, seen, os);
  return os.str();
}

}  // namespace tessera::dataframe
