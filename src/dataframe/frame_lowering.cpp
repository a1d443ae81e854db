// Lowering a DataFrame's expression to tasks. Consumers tell their input which columns they
// read, so sources parse only those (column projection, as dask-expr does).
#include <arrow/api.h>

#include <algorithm>

#include "arrow_util.hpp"
#include "frame_index.hpp"
#include "frame_node.hpp"
#include "frame_ops.hpp"
#include "quantiles.hpp"
#include "shuffle_p2p.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe::detail {

namespace {

Key part_key(const std::string& name, std::size_t i) { return name + "-" + std::to_string(i); }

Task make_task(Key key, const char* op, std::vector<Arg> args, bool device) {
  Task t;
  t.key = std::move(key);
  t.op = op;
  t.args = std::move(args);
  if (device) {
    t.annotations.target = Target::Device;
    t.annotations.resources["GPU"] = 1;
  }
  return t;
}

std::set<std::string> all_columns(const FrameNode& n) {
  std::set<std::string> s;
  for (const auto& f : n.schema->fields()) s.insert(f->name());
  return s;
}

// The columns a program reads from its input to produce the `needed` outputs.
std::set<std::string> program_inputs(const Program& program, const std::set<std::string>& needed) {
  std::set<std::string> want = needed;
  for (auto it = program.rbegin(); it != program.rend(); ++it) {
    std::vector<std::string> fields;
    if (it->kind == Step::Kind::Filter) {
      fields_of(it->exprs[0], fields);
    } else {
      for (std::size_t i = 0; i < it->names.size(); ++i)
        if (want.count(it->names[i])) fields_of(it->exprs[i], fields);
      want.clear();
    }
    want.insert(fields.begin(), fields.end());
  }
  return want;
}

// A program that produces only `needed` of its outputs (the last projection trimmed).
Program trimmed(Program program, const std::set<std::string>& needed) {
  std::set<std::string> want = needed;
  for (auto it = program.rbegin(); it != program.rend(); ++it) {
    if (it->kind == Step::Kind::Filter) {
      std::vector<std::string> f;
      fields_of(it->exprs[0], f);
      want.insert(f.begin(), f.end());
      continue;
    }
    Step s;
    s.kind = Step::Kind::Project;
    std::vector<std::string> reads;
    for (std::size_t i = 0; i < it->names.size(); ++i)
      if (want.count(it->names[i])) {
        s.names.push_back(it->names[i]);
        s.exprs.push_back(it->exprs[i]);
        fields_of(it->exprs[i], reads);
      }
    *it = std::move(s);
    want = std::set<std::string>(reads.begin(), reads.end());
  }
  return program;
}

}  // namespace

std::vector<Key> FrameLowering::lower_node(const NodePtr& node, const std::optional<std::set<std::string>>& needed_in) {
  const FrameNode& n = *node;
  // Needs narrower than the node's columns get their own keys (a projection of the same node).
  std::set<std::string> needed = needed_in ? *needed_in : all_columns(n);
  for (auto it = needed.begin(); it != needed.end();)
    it = n.schema->GetFieldByName(*it) ? std::next(it) : needed.erase(it);
  // Every consumer of a node gets the same keys, for the union of the columns they all read (a
  // first pass records it): a shuffle or a read that two consumers share runs once, not once per
  // set of columns.
  if (reads_fixed_) {
    if (auto it = node_reads_.find(n.name); it != node_reads_.end()) needed.insert(it->second.begin(), it->second.end());
  } else if (auto [it, first] = node_reads_.try_emplace(n.name, needed); !first && it->second != needed) {
    it->second.insert(needed.begin(), needed.end());
    reads_differ_ = true;
  }
  const bool narrowed = needed.size() < static_cast<std::size_t>(n.schema->num_fields());
  std::string name = n.name;
  if (narrowed) {
    name += "-cols";
    for (const auto& c : needed) name += "." + std::to_string(std::hash<std::string>{}(c) % 100000);
  }
  if (auto it = done_.find(name); it != done_.end()) return it->second;

  std::vector<Key> keys;
  const auto np = static_cast<std::size_t>(n.npartitions);
  switch (n.kind) {
    case NodeKind::Source: {
      std::vector<std::string> include;
      for (const auto& f : n.schema->fields())
        if (needed.count(f->name())) include.push_back(f->name());
      // Reading nothing is not a thing Arrow does; a count of rows reads the first column.
      if (include.empty()) include.push_back(n.schema->field(0)->name());
      const Object cols = to_object(include, "tessera.frame.Columns");
      for (std::size_t i = 0; i < np; ++i) {
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), n.source_op.c_str(), {Value(n.source_params[i]), Value(cols)}, false));
      }
      break;
    }
    case NodeKind::Tables:
      for (std::size_t i = 0; i < np; ++i) {
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), "tessera.identity", {n.partitions[i]}, false));
      }
      break;
    case NodeKind::Kept:
      if (executor_ && executor_->holds(*n.kept)) {
        keys = n.kept->keys;
      } else {
        const auto values = n.kept->values();
        for (std::size_t i = 0; i < np; ++i) {
          keys.push_back(part_key(name, i));
          graph_.add(make_task(keys.back(), "tessera.identity", {values[i]}, false));
        }
      }
      break;
    case NodeKind::Map: {
      auto in = lower_node(n.input, program_inputs(n.program, needed));
      // Always trimmed: earlier steps (an astype of every column) must not read columns the
      // source below was told it need not read, even when this node's own outputs are all needed.
      const Object params = map_params(trimmed(n.program, needed));
      for (std::size_t i = 0; i < np; ++i) {
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), kOpMap, {Value(params), KeyRef{in[i]}}, n.device));
      }
      break;
    }
    case NodeKind::MapPartitions: {
      auto in = lower_node(n.input);
      const Object fn = to_object(n.function, "tessera.frame.Function");
      for (std::size_t i = 0; i < np; ++i) {
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), kOpMapPartitions, {Value(fn), KeyRef{in[i]}}, false));
      }
      break;
    }
    case NodeKind::Aggregate: {
      std::set<std::string> reads(n.spec.by.begin(), n.spec.by.end());
      for (const auto& a : n.spec.aggs)
        if (a.how != Agg::Size) reads.insert(a.column);
      keys = lower_aggregate(n, lower_node(n.input, reads));
      break;
    }
    case NodeKind::SortValues: {
      auto in = lower_node(n.input);
      const Object sort = sort_params(n.sort_columns, n.ascending, n.nulls_first);
      if (np == 1) {  // one task sorts every partition together
        std::vector<Arg> args{Value(sort)};
        for (const auto& k : in) args.push_back(KeyRef{k});
        keys.push_back(part_key(name, 0));
        graph_.add(make_task(keys.back(), kOpSortValues, std::move(args), n.device));
        break;
      }
      // Range-partitioned by the first column (its bounds from the divisions task), then each
      // range sorted: partition j holds only values at or past those of partition j - 1.
      const Key bounds = lower_node(n.divisions).at(0);
      if (shuffle_method(executor_) == ShuffleMethod::PeerToPeer && !in.empty()) {
        const auto ranges = add_p2p_shuffle(graph_, name + "-range", in, n.npartitions, {}, n.sort_columns.front(),
                                            n.ascending.front(), n.nulls_first, bounds, n.device);
        for (std::size_t j = 0; j < np; ++j) {
          keys.push_back(part_key(name, j));
          graph_.add(make_task(keys.back(), kOpSortValues, {Value(sort), KeyRef{ranges[j]}}, n.device));
        }
        break;
      }
      const Object split =
          range_split_params(n.sort_columns.front(), n.npartitions, n.ascending.front(), n.nulls_first);
      std::vector<Key> splits;
      for (std::size_t i = 0; i < in.size(); ++i) {
        splits.push_back(name + "-split-" + std::to_string(i));
        graph_.add(make_task(splits.back(), kOpRangeSplit, {Value(split), KeyRef{in[i]}, KeyRef{bounds}}, n.device));
      }
      for (std::size_t j = 0; j < np; ++j) {
        const Key unpacked = name + "-range-" + std::to_string(j);
        std::vector<Arg> args{Value(shuffle_unpack_params(static_cast<std::int64_t>(j)))};
        for (const auto& k : splits) args.push_back(KeyRef{k});
        graph_.add(make_task(unpacked, kOpShuffleUnpack, std::move(args), n.device));
        keys.push_back(part_key(name, j));
        graph_.add(make_task(keys.back(), kOpSortValues, {Value(sort), KeyRef{unpacked}}, n.device));
      }
      break;
    }
    case NodeKind::Head: {
      auto in = lower_node(n.input);
      std::vector<Arg> args{Value(to_object(n.head_rows, "tessera.frame.Rows"))};
      for (std::int64_t i = 0; i < n.head_partitions && i < static_cast<std::int64_t>(in.size()); ++i)
        args.push_back(KeyRef{in[i]});
      keys.push_back(part_key(name, 0));
      graph_.add(make_task(keys.back(), kOpHead, std::move(args), false));
      break;
    }
    case NodeKind::Quantiles: {
      auto in = lower_node(n.input, std::set<std::string>(n.quantile_columns.begin(), n.quantile_columns.end()));
      const Object params = quantile_params(n.quantile_columns, n.quantiles);
      std::vector<Arg> args{Value(params)};
      for (std::size_t i = 0; i < in.size(); ++i) {
        const Key k = name + "-partial-" + std::to_string(i);
        graph_.add(make_task(k, kOpQuantilePartial, {Value(params), KeyRef{in[i]}}, false));
        args.push_back(KeyRef{k});
      }
      keys.push_back(part_key(name, 0));
      graph_.add(make_task(keys.back(), kOpQuantileCombine, std::move(args), false));
      break;
    }
    case NodeKind::ToDevice: {
      auto in = lower_node(n.input, needed);
      const Object none = to_object(std::int64_t{0}, "tessera.frame.None");
      for (std::size_t i = 0; i < np; ++i) {
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), kOpToDevice, {Value(none), KeyRef{in[i]}}, true));
      }
      break;
    }
    case NodeKind::ToHost: {
      auto in = lower_node(n.input, needed);
      const Object none = to_object(std::int64_t{0}, "tessera.frame.None");
      for (std::size_t i = 0; i < np; ++i) {
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), kOpToHost, {Value(none), KeyRef{in[i]}}, false));
      }
      break;
    }
    case NodeKind::Shuffle: {
      std::set<std::string> reads = needed;
      reads.insert(n.shuffle_on.begin(), n.shuffle_on.end());
      auto in = lower_node(n.input, reads);
      if (shuffle_method(executor_) == ShuffleMethod::PeerToPeer && !in.empty()) {
        keys = add_p2p_shuffle(graph_, name, in, n.npartitions, n.shuffle_on, {}, true, false, std::nullopt, n.device);
        break;
      }
      const Object split = shuffle_split_params(n.shuffle_on, n.npartitions);
      std::vector<Key> splits;
      for (std::size_t i = 0; i < in.size(); ++i) {
        splits.push_back(name + "-split-" + std::to_string(i));
        graph_.add(make_task(splits.back(), kOpShuffleSplit, {Value(split), KeyRef{in[i]}}, n.device));
      }
      for (std::size_t j = 0; j < np; ++j) {
        std::vector<Arg> args{Value(shuffle_unpack_params(static_cast<std::int64_t>(j)))};
        for (const auto& k : splits) args.push_back(KeyRef{k});
        keys.push_back(part_key(name, j));
        graph_.add(make_task(keys.back(), kOpShuffleUnpack, std::move(args), n.device));
      }
      break;
    }
    case NodeKind::Merge: {
      // Each side reads only the columns the needed result columns come from, and its keys.
      std::set<std::string> left_reads, right_reads;
      join_reads(*n.input->schema, *n.right->schema, n.join, needed, left_reads, right_reads);
      const auto left = lower_node(n.input, left_reads), right = lower_node(n.right, right_reads);
      // Every task of one merge has the same count of left partitions: one parameter object.
      JoinSpec spec = n.join;
      spec.left_parts =
          n.strategy == MergeStrategy::Single || n.strategy == MergeStrategy::BroadcastLeft ? static_cast<std::int64_t>(left.size()) : 1;
      const Object params = merge_params(spec);
      auto add = [&](std::size_t i, const std::vector<Key>& l, const std::vector<Key>& r) {
        std::vector<Arg> args{Value(params)};
        for (const auto& k : l) args.push_back(KeyRef{k});
        for (const auto& k : r) args.push_back(KeyRef{k});
        keys.push_back(part_key(name, i));
        graph_.add(make_task(keys.back(), kOpMerge, std::move(args), n.device));
      };
      for (std::size_t i = 0; i < np; ++i) {
        switch (n.strategy) {
          case MergeStrategy::Single: add(i, left, right); break;
          case MergeStrategy::BroadcastRight: add(i, {left.at(i)}, right); break;
          case MergeStrategy::BroadcastLeft: add(i, left, {right.at(i)}); break;
          case MergeStrategy::Partitioned: add(i, {left.at(i)}, {right.at(i)}); break;
        }
      }
      break;
    }
    case NodeKind::Repartition: {
      // Output j concatenates its pieces (a lone whole partition is passed on as it is, no task);
      // sort_each sorts each output too (set_index(sorted = true)).
      std::set<std::string> reads = needed;
      if (n.sort_each) reads.insert(n.sort_columns.begin(), n.sort_columns.end());
      auto in = lower_node(n.input, reads);
      const Object params = n.sort_each ? sort_params(n.sort_columns, n.ascending, n.nulls_first)
                                        : to_object(std::int64_t{0}, "tessera.frame.None");
      for (std::size_t j = 0; j < np; ++j) {
        const auto& pieces = n.plan.at(j);
        if (!n.sort_each && pieces.size() == 1 && pieces.front().pieces == 1) {
          keys.push_back(in.at(static_cast<std::size_t>(pieces.front().input)));
          continue;
        }
        std::vector<Arg> args{Value(params)};
        for (const auto& p : pieces) {
          const Key& whole = in.at(static_cast<std::size_t>(p.input));
          if (p.pieces == 1) {
            args.push_back(KeyRef{whole});
            continue;
          }
          const Key piece = name + "-piece-" + std::to_string(p.input) + "-" + std::to_string(p.piece);
          graph_.add(make_task(piece, kOpSlicePiece, {Value(slice_piece_params(p.piece, p.pieces)), KeyRef{whole}}, false));
          args.push_back(KeyRef{piece});
        }
        keys.push_back(part_key(name, j));
        graph_.add(make_task(keys.back(), n.sort_each ? kOpSortValues : kOpConcat, std::move(args), false));
      }
      break;
    }
    case NodeKind::RangePartition: {
      // A division_split per input partition places its rows by the index's divisions (the
      // shuffle's split layout); output j unpacks its slice of the splits of the inputs whose
      // divisions meet its range only, then (set_index) sorts it.
      std::set<std::string> reads = needed;
      reads.insert(n.sort_columns.begin(), n.sort_columns.end());
      auto in = lower_node(n.input, reads);
      const Object sort = sort_params(n.sort_columns, n.ascending, n.nulls_first);
      const Object none = to_object(std::int64_t{0}, "tessera.frame.None");
      if (np == 1 && !n.split_check) {  // one range: one task over every partition
        std::vector<Arg> args{Value(n.sort_each ? sort : none)};
        for (const auto& k : in) args.push_back(KeyRef{k});
        keys.push_back(part_key(name, 0));
        graph_.add(make_task(keys.back(), n.sort_each ? kOpSortValues : kOpConcat, std::move(args), false));
        break;
      }
      const std::string& column = n.sort_columns.front();
      const IndexKind kind = split_kind(index_kind_of(*n.input->schema->GetFieldByName(column)->type(), column, "set_index"),
                                        n.split_divisions, column, "set_index");
      const Object split = division_split_params(column, kind, n.split_divisions, n.split_check);
      std::vector<Key> splits;
      for (std::size_t i = 0; i < in.size(); ++i) {
        splits.push_back(name + "-split-" + std::to_string(i));
        graph_.add(make_task(splits.back(), kOpDivisionSplit, {Value(split), KeyRef{in[i]}}, false));
      }
      for (std::size_t j = 0; j < np; ++j) {
        std::vector<Arg> args{Value(shuffle_unpack_params(static_cast<std::int64_t>(j)))};
        for (const auto i : n.split_sources.at(j)) args.push_back(KeyRef{splits.at(static_cast<std::size_t>(i))});
        const Key unpacked = n.sort_each ? name + "-range-" + std::to_string(j) : part_key(name, j);
        graph_.add(make_task(unpacked, kOpShuffleUnpack, std::move(args), false));
        if (n.sort_each) graph_.add(make_task(part_key(name, j), kOpSortValues, {Value(sort), KeyRef{unpacked}}, false));
        keys.push_back(part_key(name, j));
      }
      break;
    }
    case NodeKind::TopN: {
      // Each partition's n first rows in the sort's order, then one task over those: no task
      // sorts more than one partition, or the partitions' n-row heads together.
      std::set<std::string> reads = needed;
      reads.insert(n.sort_columns.begin(), n.sort_columns.end());
      auto in = lower_node(n.input, reads);
      const Object params = top_n_params(n.sort_columns, n.ascending, n.nulls_first, n.head_rows, n.drop_missing_first);
      std::vector<Arg> args{Value(params)};
      if (in.size() == 1) {
        args.push_back(KeyRef{in.front()});
      } else {
        for (std::size_t i = 0; i < in.size(); ++i) {
          const Key k = name + "-partial-" + std::to_string(i);
          graph_.add(make_task(k, kOpTopN, {Value(params), KeyRef{in[i]}}, false));
          args.push_back(KeyRef{k});
        }
      }
      keys.push_back(part_key(name, 0));
      graph_.add(make_task(keys.back(), kOpTopN, std::move(args), false));
      break;
    }
    case NodeKind::Distinct: {
      // drop_duplicates: each partition deduplicated, then split_every results per task, in the
      // partitions' order, until one is left (the first or last row of each key stays where it is).
      std::set<std::string> reads = needed;
      reads.insert(n.distinct_on.begin(), n.distinct_on.end());
      auto in = lower_node(n.input, reads);
      const Object params = distinct_params(n.distinct_on, n.keep_last);
      std::vector<Key> level;
      for (std::size_t i = 0; i < in.size(); ++i) {
        level.push_back(n.per_partition ? part_key(name, i) : name + "-partial-" + std::to_string(i));
        graph_.add(make_task(level.back(), kOpDistinct, {Value(params), KeyRef{in[i]}}, false));
      }
      if (n.per_partition) {
        keys = level;
        break;
      }
      const auto every = static_cast<std::size_t>(std::max(2, n.options.split_every));
      for (int depth = 0; level.size() > every; ++depth) {
        std::vector<Key> next;
        for (std::size_t i = 0; i < level.size(); i += every) {
          next.push_back(name + "-combine-" + std::to_string(depth) + "-" + std::to_string(i / every));
          std::vector<Arg> args{Value(params)};
          for (std::size_t j = i; j < std::min(level.size(), i + every); ++j) args.push_back(KeyRef{level[j]});
          graph_.add(make_task(next.back(), kOpDistinct, std::move(args), false));
        }
        level = std::move(next);
      }
      std::vector<Arg> args{Value(params)};
      for (const auto& k : level) args.push_back(KeyRef{k});
      keys.push_back(part_key(name, 0));
      graph_.add(make_task(keys.back(), kOpDistinct, std::move(args), false));
      break;
    }
  }
  done_[name] = keys;
  return keys;
}

std::vector<Key> FrameLowering::lower(const NodePtr& node) { return lower_all({node}).front(); }

std::vector<std::vector<Key>> FrameLowering::lower_all(const std::vector<NodePtr>& nodes) {
  std::vector<std::vector<Key>> first;
  for (const auto& n : nodes) first.push_back(lower_node(n));
  if (!reads_differ_) return first;  // every node was read for one set of columns: lowered once already
  graph_ = Graph();
  done_.clear();
  reads_fixed_ = true;
  std::vector<std::vector<Key>> out;
  for (const auto& n : nodes) out.push_back(lower_node(n));
  return out;
}

std::vector<Key> FrameLowering::lower_aggregate(const FrameNode& n, const std::vector<Key>& in) {
  const bool device = n.input->device;
  const auto& input_schema = *n.input->schema;
  std::vector<std::string> input_types;
  for (const auto& a : n.spec.aggs) {
    auto f = a.how == Agg::Size ? nullptr : input_schema.GetFieldByName(a.column);
    input_types.push_back(f ? f->type()->ToString() : "int64");
  }
  GroupbySpec partial = n.spec;
  partial.finalize = false;
  const Object partial_params = to_object(partial, "tessera.frame.GroupbySpec");
  std::vector<Key> partials;
  for (std::size_t i = 0; i < in.size(); ++i) {
    partials.push_back(n.name + "-partial-" + std::to_string(i));
    graph_.add(make_task(partials.back(), kOpGroupbyPartial, {Value(partial_params), KeyRef{in[i]}}, device));
  }
  GroupbySpec final_spec = n.spec;
  final_spec.finalize = true;
  const Object combine = combine_params(partial, input_types), finish = combine_params(final_spec, input_types);
  // A tree: split_every partial results per combine task until one is left, which finalises.
  auto tree = [&](std::vector<Key> level, const std::string& prefix) {
    const auto every = static_cast<std::size_t>(n.options.split_every);
    for (int depth = 0; level.size() > every; ++depth) {
      std::vector<Key> next;
      for (std::size_t i = 0; i < level.size(); i += every) {
        next.push_back(prefix + "-combine-" + std::to_string(depth) + "-" + std::to_string(i / every));
        std::vector<Arg> args{Value(combine)};
        for (std::size_t j = i; j < std::min(level.size(), i + every); ++j) args.push_back(KeyRef{level[j]});
        graph_.add(make_task(next.back(), kOpGroupbyCombine, std::move(args), device));
      }
      level = std::move(next);
    }
    std::vector<Arg> args{Value(finish)};
    for (const auto& k : level) args.push_back(KeyRef{k});
    graph_.add(make_task(prefix, kOpGroupbyCombine, std::move(args), device));
    return prefix;
  };
  std::vector<Key> out;
  if (n.per_partition) {  // every group within one partition: finalise each partial alone
    for (std::size_t i = 0; i < partials.size(); ++i) {
      out.push_back(n.name + "-" + std::to_string(i));
      graph_.add(make_task(out.back(), kOpGroupbyCombine, {Value(finish), KeyRef{partials[i]}}, device));
    }
    return out;
  }
  if (n.options.split_out <= 1 || n.spec.by.empty()) {
    out.push_back(tree(partials, n.name + "-0"));
    return out;
  }
  // Each partial table is split once by its keys' hash (the shuffle's split, so its rows are
  // hashed once, not once per output); piece (part, i) is part's slice of split i, and each part
  // has its own tree.
  const Object split = shuffle_split_params(n.spec.by, n.options.split_out);
  std::vector<Key> splits;
  for (std::size_t i = 0; i < partials.size(); ++i) {
    splits.push_back(n.name + "-split-" + std::to_string(i));
    graph_.add(make_task(splits.back(), kOpShuffleSplit, {Value(split), KeyRef{partials[i]}}, false));
  }
  for (int part = 0; part < n.options.split_out; ++part) {
    std::vector<Key> pieces;
    const Object slice = shuffle_unpack_params(part);
    for (std::size_t i = 0; i < splits.size(); ++i) {
      pieces.push_back(n.name + "-piece-" + std::to_string(part) + "-" + std::to_string(i));
      graph_.add(make_task(pieces.back(), kOpShuffleUnpack, {Value(slice), KeyRef{splits[i]}}, false));
    }
    out.push_back(tree(pieces, n.name + "-" + std::to_string(part)));
  }
  return out;
}

}  // namespace tessera::dataframe::detail
