// DataFrame::shuffle and DataFrame::merge: building the expression, with every check done here,
// and choosing how a merge runs (Dask's choices: a side of one partition is broadcast, otherwise
// both sides are hash-shuffled alike). The tasks are in shuffle_ops.cpp, a partition's join in
// join_host.cpp.
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "frame_index.hpp"
#include "frame_node.hpp"
#include "join_host.hpp"
#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe {

using namespace detail;

namespace {

// Whether `n` already holds equal `on` values in the same one of `parts` partitions.
bool partitioned_alike(const FrameNode& n, const std::vector<std::string>& on, std::int64_t parts) {
  return !n.hash_partitioned_by.empty() && n.hash_partitioned_by == on && n.npartitions == parts;
}

bool can_broadcast_right(JoinHow how) {
  return how == JoinHow::Inner || how == JoinHow::Left || how == JoinHow::LeftSemi || how == JoinHow::LeftAnti;
}
bool can_broadcast_left(JoinHow how) { return how == JoinHow::Inner || how == JoinHow::Right; }

std::string merge_columns_of(const arrow::Schema& s) {
  std::string out;
  for (const auto& f : s.fields()) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}

// Whether both sides have known divisions of values (not only missing ones); when they differ,
// both are repartitioned to the union of the two (Dask's align_partitions), which covers each.
bool aligned_on_index(DataFrame& left, DataFrame& right) {
  const auto &a = node_of(left).index_divisions, &b = node_of(right).index_divisions;
  auto valued = [](const std::vector<Literal>& d) {
    return !d.empty() && std::none_of(d.begin(), d.end(), [](const Literal& v) { return is_missing(v); });
  };
  if (!valued(a) || !valued(b)) return false;
  if (same_divisions(a, b)) return true;
  std::vector<Literal> all(a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const Literal& x, const Literal& y) { return compare_literals(x, y, "merge") < 0; });
  std::vector<Literal> bounds;
  for (const auto& v : all)
    if (bounds.empty() || compare_literals(bounds.back(), v, "merge") < 0) bounds.push_back(v);
  if (bounds.size() < 2) bounds.push_back(bounds.front());
  if (bounds.size() == 2 && compare_literals(bounds[0], bounds[1], "merge") == 0) return false;
  left = left.repartition({.divisions = bounds});
  right = right.repartition({.divisions = bounds});
  return true;
}

// Dask's rule for a merge left to choose: broadcast a side of one partition, or one whose count
// is below broadcast_bias * log2 of the other's (each of the other side's partitions then joins
// the whole small side, sent to it, instead of both sides crossing a shuffle).
bool small_enough_to_broadcast(std::int64_t small, std::int64_t big, double bias) {
  if (small == 1) return true;
  return small < big && static_cast<double>(small) < std::log2(static_cast<double>(big)) * bias;
}

}  // namespace

DataFrame DataFrame::shuffle(const std::vector<std::string>& on, std::int64_t npartitions) const {
  const FrameNode& in = node_of(*this);
  if (on.empty()) throw Error("shuffle: no key columns given");
  std::set<std::string> seen;
  for (const auto& c : on) {
    if (!in.schema->GetFieldByName(c)) throw Error("shuffle: the frame has no column '" + c + "'");
    if (!seen.insert(c).second) throw Error("shuffle: key column '" + c + "' is given twice");
  }
  if (npartitions < 0) throw Error("shuffle: npartitions must be 0 (as many as now) or more");
  const std::int64_t parts = npartitions == 0 ? in.npartitions : npartitions;
  if (partitioned_alike(in, on, parts)) return *this;
  auto n = make_node(NodeKind::Shuffle, "shuffle");
  n->input = node();
  n->schema = in.schema;
  n->npartitions = parts;
  n->shuffle_on = on;
  n->hash_partitioned_by = on;
  n->device = in.device;
  return DataFrame(n);
}

DataFrame DataFrame::merge(const DataFrame& right, const MergeOptions& options_in) const {
  const FrameNode& l = node_of(*this);
  const FrameNode& r = node_of(right);
  if (l.device != r.device)
    throw Error(std::string("merge: the ") + (l.device ? "left" : "right") + " frame is on the device and the " +
                (l.device ? "right" : "left") + " on the host: move one with to_device() or to_host() first");
  // left_index / right_index: the index column is that side's key (pandas'), as left_on / right_on.
  MergeOptions options = options_in;
  auto index_key = [&](const FrameNode& side, bool use, std::vector<std::string>& on, const char* which) {
    if (!use) return;
    if (!options.on.empty()) throw Error(std::string("merge: give on, or ") + which + "_index, not both");
    if (!on.empty()) throw Error(std::string("merge: give ") + which + "_on or " + which + "_index, not both");
    if (side.index.empty())
      throw Error(std::string("merge: ") + which + "_index, but the " + which +
                  " frame has no index (set_index first; columns: " + merge_columns_of(*side.schema) + ")");
    on = {side.index};
  };
  index_key(l, options.left_index, options.left_on, "left");
  index_key(r, options.right_index, options.right_on, "right");
  JoinSpec spec;
  spec.how = join_how_from_name(options.how);
  spec.left_suffix = options.left_suffix;
  spec.right_suffix = options.right_suffix;
  if (!options.on.empty()) {
    if (!options.left_on.empty() || !options.right_on.empty())
      throw Error("merge: give on, or left_on and right_on, not both");
    spec.left_on = spec.right_on = options.on;
  } else if (!options.left_on.empty() || !options.right_on.empty()) {
    if (options.left_on.empty() || options.right_on.empty())
      throw Error("merge: left_on and right_on go together (or give on)");
    spec.left_on = options.left_on;
    spec.right_on = options.right_on;
  } else {  // pandas: the columns both frames have
    for (const auto& f : l.schema->fields())
      if (r.schema->GetFieldByName(f->name())) spec.left_on.push_back(f->name());
    if (spec.left_on.empty()) throw Error("merge: the frames share no column name; give on, or left_on and right_on");
    spec.right_on = spec.left_on;
  }
  if (options.npartitions < 0) throw Error("merge: npartitions must be 0 (the larger side's count) or more");
  if (!(options.broadcast_bias >= 0)) throw Error("merge: broadcast_bias must be 0 or more");
  auto n = make_node(NodeKind::Merge, "merge");
  n->schema = plan_join(*l.schema, *r.schema, spec);
  n->join = spec;
  n->device = l.device;

  const bool force = options.broadcast.value_or(false);
  const bool never = options.broadcast.has_value() && !*options.broadcast;
  DataFrame left_side = *this, right_side = right;
  // (Device frames have no repartition yet: their merges by index shuffle, as by columns.)
  if (options.left_index && options.right_index && !force && !l.device && aligned_on_index(left_side, right_side)) {
    // Both indexes with known divisions, made the same ones: partition i of each side holds the
    // same range of keys (and the last one the missing ones), so task i joins left i with right i
    // and no row moves. The result keeps the divisions where its index column is the key's.
    n->strategy = MergeStrategy::Partitioned;
    n->npartitions = left_side.npartitions();
    std::string index;
    if (l.index == r.index) index = l.index;  // one key column in the result
    else if (can_broadcast_right(spec.how)) index = l.index;
    else if (spec.how == JoinHow::Right) index = r.index;
    if (!index.empty() && n->schema->GetFieldByName(index)) {
      n->index = index;
      n->index_divisions = node_of(left_side).index_divisions;
    }
    n->input = left_side.node();
    n->right = right_side.node();
    return DataFrame(n);
  }
  if (!never && l.npartitions == 1 && r.npartitions == 1) {
    n->strategy = MergeStrategy::Single;
    n->npartitions = 1;
  } else if (!never && can_broadcast_right(spec.how) &&
             (force || small_enough_to_broadcast(r.npartitions, l.npartitions, options.broadcast_bias))) {
    n->strategy = MergeStrategy::BroadcastRight;
    n->npartitions = l.npartitions;
  } else if (!never && can_broadcast_left(spec.how) &&
             (force || small_enough_to_broadcast(l.npartitions, r.npartitions, options.broadcast_bias))) {
    n->strategy = MergeStrategy::BroadcastLeft;
    n->npartitions = r.npartitions;
  } else if (force) {
    throw Error(std::string("merge: how='") + join_how_name(spec.how) +
                "' cannot broadcast either side (outer keeps the unmatched rows of both)");
  } else {
    const std::int64_t parts =
        options.npartitions > 0 ? options.npartitions : std::max(l.npartitions, r.npartitions);
    left_side = left_side.shuffle(spec.left_on, parts);
    right_side = right_side.shuffle(spec.right_on, parts);
    n->strategy = MergeStrategy::Partitioned;
    n->npartitions = parts;
    // Result partition i holds the rows whose keys hash to i (a key column of the result holds the
    // left or the right key, equal and so hashing alike), so a later merge or shuffle on the same
    // keys and partition count needs no new shuffle (chained joins on one key shuffle once).
    if (spec.left_on == spec.right_on) n->hash_partitioned_by = spec.left_on;
  }
  n->input = left_side.node();
  n->right = right_side.node();
  return DataFrame(n);
}

DataFrame merge(const DataFrame& left, const DataFrame& right, const MergeOptions& options) {
  return left.merge(right, options);
}

}  // namespace tessera::dataframe
