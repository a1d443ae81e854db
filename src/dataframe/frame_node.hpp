#pragma once
/**
 * @file Private: the expression behind a DataFrame and how it lowers to tasks. See
 * docs/dataframe.md.
 *
 * A FrameNode is immutable and knows its schema (so errors are raised when the expression is
 * built) and its partition count. Lowering walks the nodes from the output, passing down the
 * columns the consumers need, so a source reads only those (Dask's column projection).
 */
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "column_expr.hpp"
#include "groupby_spec.hpp"
#include "join_host.hpp"
#include "tessera/core/value.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"

namespace arrow {
class Schema;
}

namespace tessera::dataframe::detail {

enum class NodeKind : std::uint8_t {
  Source,         ///< one task per partition: source_op(source_params[i], needed columns)
  Tables,         ///< partitions given as values (from_tables)
  Kept,           ///< persisted partitions
  Map,            ///< a partition program per partition
  MapPartitions,  ///< a registered partition function per partition
  Aggregate,      ///< groupby-aggregate (or a whole-frame reduction: no keys)
  SortValues,     ///< sorted by columns: range-partitioned by the first, each range sorted
  Head,           ///< the first n rows of the first partition(s), one partition
  Quantiles,      ///< approximate quantiles of columns, one partition
  ToDevice,       ///< partitions moved to GPUs as device frames
  ToHost,         ///< device frames back to Arrow tables
  Shuffle,        ///< rows moved to the partition their key hash names (docs/dataframe-shuffle.md)
  Merge,          ///< two frames joined (join_host.hpp), partition by partition
  Repartition,    ///< each output: pieces of input partitions concatenated (repartition.cpp)
  RangePartition, ///< rows moved to the partition whose divisions hold their index (index.cpp)
  TopN,           ///< the n first rows in a sort's order: each partition's, then one task (topn.cpp)
  Distinct,       ///< drop_duplicates: a tree of partitions deduplicated together (distinct.cpp)
};

/** @brief Rows [rows * piece / pieces, rows * (piece + 1) / pieces) of input partition `input`. */
struct PartitionPiece {
  std::int64_t input = 0;
  std::int64_t piece = 0, pieces = 1;
};

/** @brief Which partitions of the two sides a merge task joins. */
enum class MergeStrategy : std::uint8_t {
  Single,          ///< one task: every left partition with every right one
  BroadcastRight,  ///< one task per left partition, each with the whole right side
  BroadcastLeft,   ///< one task per right partition, each with the whole left side
  Partitioned,     ///< both sides hash-shuffled alike: task i joins left i with right i
};

struct FrameNode {
  NodeKind kind = NodeKind::Source;
  std::string name;
  std::int64_t npartitions = 0;
  std::shared_ptr<arrow::Schema> schema;
  bool device = false;
  std::shared_ptr<const FrameNode> input;

  // Source: the op and one parameter object per partition; the op's parameters end with the
  // columns to read (set at lowering), see sources.hpp.
  std::string source_op;
  std::vector<Object> source_params;  // the op's parameters (to_object of a struct)
  // Tables
  std::vector<Value> partitions;
  // Kept
  std::shared_ptr<const KeptResults> kept;
  // Map
  Program program;
  // MapPartitions
  std::string function;
  // Aggregate
  GroupbySpec spec;
  AggregateOptions options;
  // The input keeps every group's rows in one partition (it is hash-partitioned on some of the
  // keys): each partition is aggregated alone, one output partition per input partition.
  bool per_partition = false;
  // SortValues: with more than one partition, rows are placed by the first column's ranges,
  // whose bounds are the approximate quantiles `divisions` computes (a Quantiles node).
  std::vector<std::string> sort_columns;
  std::vector<bool> ascending;  // one per sort column
  std::shared_ptr<const FrameNode> divisions;
  // Head
  std::int64_t head_rows = 0;
  std::int64_t head_partitions = 1;
  // Quantiles
  std::vector<std::string> quantile_columns;
  std::vector<double> quantiles;
  // Shuffle: the key columns; rows are hashed over npartitions outputs.
  std::vector<std::string> shuffle_on;
  // Merge: `input` is the left side, `right` the right one.
  std::shared_ptr<const FrameNode> right;
  JoinSpec join;
  MergeStrategy strategy = MergeStrategy::Single;
  // Set when equal values of these columns are known to be in the same partition, by the hash of
  // partition_index.hpp over npartitions (a shuffle's output, a partitioned merge's): a merge on
  // them with as many partitions needs no shuffle.
  std::vector<std::string> hash_partitioned_by;

  // The index (set_index): a column sorted across partitions. With known divisions (npartitions +
  // 1 of them) partition i holds the values v with index_divisions[i] <= v < index_divisions[i + 1]
  // (the last one also v == the last division) and every missing value is in the last partition.
  // Empty index: none; empty divisions: unknown. Kept by filters and projections that keep the column.
  std::string index;
  std::vector<Literal> index_divisions;
  // SortValues, TopN, RangePartition: missing values first rather than last.
  bool nulls_first = false;
  // Repartition: output i concatenates plan[i]'s pieces in order (a lone whole partition is passed
  // on with no task); with sort_each, each output is sorted by sort_columns too.
  std::vector<std::vector<PartitionPiece>> plan;
  bool sort_each = false;
  // RangePartition: rows placed by sort_columns[0] among the ranges of split_divisions (as
  // index_divisions; missing values last); output j reads the splits of inputs split_sources[j].
  // split_check: a value outside the divisions fails its task. sort_each: each range sorted.
  std::vector<Literal> split_divisions;
  std::vector<std::vector<std::int64_t>> split_sources;
  bool split_check = false;
  // TopN: head_rows first rows by sort_columns / ascending / nulls_first; drop_missing_first: rows
  // missing the first column are never chosen (nlargest, nsmallest).
  bool drop_missing_first = false;
  // Distinct: the columns compared, and which row of equal ones is kept (options.split_every per
  // task; per_partition: every duplicate is within one partition, each is deduplicated alone).
  std::vector<std::string> distinct_on;
  bool keep_last = false;
};

using NodePtr = std::shared_ptr<const FrameNode>;

/** @brief A node with a fresh name ("<prefix>-<n>"). */
std::shared_ptr<FrameNode> make_node(NodeKind kind, const std::string& prefix);
const FrameNode& node_of(const DataFrame& df);

/** @brief Lowers nodes into one graph, memoising each node's partition keys. */
class FrameLowering {
 public:
  explicit FrameLowering(const Executor* executor) : executor_(executor) {}
  /** Keys of `node`'s partitions (lower_all of one node). */
  std::vector<Key> lower(const NodePtr& node);
  Graph& graph() { return graph_; }
  /**
   * @brief Keys of several outputs in one graph: each node (a source, a shuffle, a merge) is
   * lowered once, for the union of the columns all its consumers read (a first pass records
   * them; a second lowers again only when some node was read for two different sets).
   */
  std::vector<std::vector<Key>> lower_all(const std::vector<NodePtr>& nodes);
  /** @brief Node name -> the columns its consumers read (after lowering; explain()). */
  const std::unordered_map<std::string, std::set<std::string>>& reads() const { return node_reads_; }

 private:
  /** Keys of `node`'s partitions; `needed`: the columns consumers read (nullopt: all). */
  std::vector<Key> lower_node(const NodePtr& node, const std::optional<std::set<std::string>>& needed = std::nullopt);
  std::vector<Key> lower_aggregate(const FrameNode& n, const std::vector<Key>& in);
  const Executor* executor_;
  Graph graph_;
  std::unordered_map<std::string, std::vector<Key>> done_;
  // Node name -> the columns all its consumers read (lower_all's first pass).
  std::unordered_map<std::string, std::set<std::string>> node_reads_;
  bool reads_differ_ = false;  // some node was read for two sets of columns: lower again
  bool reads_fixed_ = false;
};

/** @brief Op names (registered by frame_ops.cpp). */
inline constexpr const char* kOpMap = "tessera.frame.map";
inline constexpr const char* kOpMapPartitions = "tessera.frame.map_partitions";
inline constexpr const char* kOpGroupbyPartial = "tessera.frame.groupby_partial";
inline constexpr const char* kOpGroupbyCombine = "tessera.frame.groupby_combine";
inline constexpr const char* kOpSortValues = "tessera.frame.sort_values";
inline constexpr const char* kOpHead = "tessera.frame.head";
inline constexpr const char* kOpShuffleSplit = "tessera.frame.shuffle_split";
inline constexpr const char* kOpShuffleUnpack = "tessera.frame.shuffle_unpack";
inline constexpr const char* kOpRangeSplit = "tessera.frame.range_split";
inline constexpr const char* kOpMerge = "tessera.frame.merge";
inline constexpr const char* kOpQuantilePartial = "tessera.frame.quantile_partial";
inline constexpr const char* kOpQuantileCombine = "tessera.frame.quantile_combine";
inline constexpr const char* kOpToDevice = "tessera.frame.to_device";
inline constexpr const char* kOpToHost = "tessera.frame.to_host";
inline constexpr const char* kOpReadCsv = "tessera.frame.read_csv";
inline constexpr const char* kOpReadParquet = "tessera.frame.read_parquet";
inline constexpr const char* kOpTimeseries = "tessera.frame.timeseries";
inline constexpr const char* kOpWriteParquet = "tessera.frame.write_parquet";
inline constexpr const char* kOpDivisionSplit = "tessera.frame.division_split";
inline constexpr const char* kOpPartitionStats = "tessera.frame.partition_stats";
inline constexpr const char* kOpConcat = "tessera.frame.concat";
inline constexpr const char* kOpSlicePiece = "tessera.frame.slice_piece";
inline constexpr const char* kOpTopN = "tessera.frame.top_n";
inline constexpr const char* kOpDistinct = "tessera.frame.distinct";

/** @brief The Native type of a host partition. */
inline constexpr const char* kArrowTableType = "arrow.table";

}  // namespace tessera::dataframe::detail
