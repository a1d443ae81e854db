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

/** @brief The Native type of a host partition. */
inline constexpr const char* kArrowTableType = "arrow.table";

}  // namespace tessera::dataframe::detail
