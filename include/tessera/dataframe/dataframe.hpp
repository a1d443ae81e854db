#pragma once
/** @file
 * DataFrame and Series: lazy, partitioned tables whose partitions are Apache Arrow tables (on
 * the host) or device frames (on a GPU), built into task graphs like Array and computed by any
 * Executor: the local thread pool or a cluster's Client, unchanged.
 *
 *     auto df = dataframe::read_csv("trips-*.csv", {.assume_missing = true});
 *     auto mean = df.groupby({"passenger_count"})["tip_amount"].mean();
 *     std::shared_ptr<arrow::Table> t = mean.compute();   // passenger_count, tip_amount
 *
 * Every check (a column that does not exist, types an operation cannot take, an unknown
 * aggregation) happens when the expression is built and throws at once; only what depends on
 * the data (a malformed row) fails in a task, as a TaskError naming the file and line.
 * Arrow is only forward-declared here: include <arrow/api.h> to use a computed table.
 */
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"

namespace arrow {
class Table;
}

namespace tessera::dataframe {

namespace detail {
struct FrameNode;
struct ColumnExpr;
}  // namespace detail

class Series;
class GroupBy;

/** @brief A constant in a column expression: null, bool, integer, floating-point or string. */
using Literal = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

/** @brief Options of GroupBy aggregations (Dask's split_every and split_out). */
struct AggregateOptions {
  /** Partial results combined per task in the reduction tree (at least 2). */
  int split_every = 8;
  /** Output partitions: groups are hash-partitioned over this many (for many groups). */
  int split_out = 1;
};

/**
 * @brief How DataFrame::merge joins (pandas' merge arguments, Dask's strategies).
 *
 * Semantics are pandas' (checked against it): missing keys (null or NaN) match each other; keys
 * are compared as their common type (int32 with float64: float64); a key named alike on both
 * sides is one result column, other names both sides have get the suffixes. Rows of a side with
 * no match get nulls of the column's own type (pandas turns an int64 column with missing values
 * into float64). Row order is not pandas': sort to compare.
 */
struct MergeOptions {
  /** inner, left, right, outer, leftsemi (left rows with a match), leftanti (without one). */
  std::string how = "inner";
  /** Key columns both frames have; empty with left_on/right_on empty: the columns they share. */
  std::vector<std::string> on;
  /** Key columns of each side, paired in order (instead of `on`). */
  std::vector<std::string> left_on, right_on;
  /** Appended to the other columns both sides have (pandas' suffixes). */
  std::string left_suffix = "_x", right_suffix = "_y";
  /**
   * Output partitions of a hash join (both sides shuffled on their keys); 0: the larger side's
   * partition count.
   */
  std::int64_t npartitions = 0;
  /**
   * Dask's broadcast: true sends every partition of the side `how` allows (the right for inner,
   * left, leftsemi, leftanti; the left for right) to each partition of the other, with no
   * shuffle; false always hash-joins; unset: Dask's rule, broadcast that side when it has one
   * partition or fewer than broadcast_bias * log2(the other side's partitions), else hash-join.
   */
  std::optional<bool> broadcast;
  /** Dask's broadcast_bias: larger broadcasts sides of more partitions when `broadcast` is unset. */
  double broadcast_bias = 0.5;
  /**
   * Join on the left frame's index column (instead of left_on; set_index first), or the right's.
   * With both and equal known divisions each partition joins its counterpart with no shuffle; with
   * both known but different, both sides are repartitioned to the union of the divisions first
   * (Dask's align_partitions). The result keeps the index where its column is in the result.
   */
  bool left_index = false, right_index = false;
};

/**
 * @brief How DataFrame::set_index partitions (Dask's set_index arguments).
 *
 * The index is a column the frame marks as its index (pandas moves it out of the columns; here it
 * stays one, see docs/dataframe.md). Partition i holds the index values v with
 * divisions[i] <= v < divisions[i + 1] (the last partition also v == divisions.back()) and each
 * partition is sorted by it; missing values (null, NaN) are in the last partition.
 */
struct SetIndexOptions {
  /**
   * Partition bounds: npartitions + 1 strictly increasing values of the index's kind (numbers for
   * a numeric column, strings for a string one); a row outside them fails its task. Empty: the
   * column's approximate quantiles (Dask's), computed when set_index is called.
   */
  std::vector<Literal> divisions;
  /**
   * The frame is already sorted by the column across partitions (each partition's values below the
   * next's; missing values only in the last partition with rows): no shuffle, each partition is
   * sorted on its own and the divisions are the partitions' minima and the last maximum. Checked
   * when set_index is called (an Error says which partitions overlap); empty partitions join a
   * neighbour.
   */
  bool sorted = false;
  /** Output partitions for computed divisions (0: as many as now); fewer when keys repeat. */
  std::int64_t npartitions = 0;
};

/** @brief What DataFrame::repartition makes: give exactly one of these. */
struct RepartitionOptions {
  /**
   * Fewer partitions concatenate neighbours (divisions kept, as a subset); more split each
   * partition into pieces of equal row counts (divisions then unknown: the bounds are rows).
   */
  std::int64_t npartitions = 0;
  /** New bounds of a frame with known divisions (covering the old ones): rows move by value. */
  std::vector<Literal> divisions;
  /**
   * Bytes per partition (Arrow buffer sizes, computed when repartition is called): larger
   * partitions are split by rows, then neighbours concatenated while they fit (Dask's).
   */
  std::int64_t partition_size = 0;
};

/**
 * @brief A lazy partitioned table. Cheap to copy: copies share the expression.
 */
class DataFrame {
 public:
  DataFrame() = default;
  explicit DataFrame(std::shared_ptr<const detail::FrameNode> node) : node_(std::move(node)) {}

  /** @brief The expression's unique name (the prefix of its partition keys). */
  const std::string& name() const;
  std::int64_t npartitions() const;
  /** @brief Column names, in order. */
  std::vector<std::string> columns() const;
  /** @brief A column's Arrow type name ("double", "int64", "string", "timestamp[s]", ...). */
  std::string dtype(const std::string& column) const;
  /** @brief Whether partitions live on GPUs (to_device). */
  bool on_device() const;
  /** @brief The column set_index made the index ("" when none). */
  const std::string& index_column() const;
  /** @brief Whether the partitions' index bounds are known (Dask's known_divisions). */
  bool known_divisions() const;
  /** @brief npartitions() + 1 bounds of the index (SetIndexOptions); empty when unknown. */
  std::vector<Literal> divisions() const;

  /** @brief One column; throws Error naming the column and the columns there are. */
  Series operator[](const std::string& column) const;
  /** @brief Only these columns, in this order. */
  DataFrame operator[](const std::vector<std::string>& columns) const;
  /** @brief The rows where `mask` (a bool Series of this frame) is true; null counts as false. */
  DataFrame operator[](const Series& mask) const;
  /** @brief Adds or replaces a column (pandas' assign); `value` must come from this frame. */
  DataFrame assign(const std::string& column, const Series& value) const;
  DataFrame assign(const std::string& column, const Literal& value) const;
  /** @brief Converts columns to Arrow types ("float64", "int32", "string", ...). */
  DataFrame astype(const std::map<std::string, std::string>& types) const;
  /** @brief Renames columns. */
  DataFrame rename(const std::map<std::string, std::string>& names) const;
  /**
   * @brief Applies a function registered with register_partition_function to every partition.
   * The output's columns are learnt by running it on an empty table of this frame's columns.
   */
  DataFrame map_partitions(const std::string& function) const;

  /**
   * @brief The same rows in `npartitions` partitions (0: as many as now), each row in the one its
   * `on` columns hash to (docs/dataframe-shuffle.md): equal keys end in the same partition,
   * whatever their numeric type. Host frames only.
   */
  DataFrame shuffle(const std::vector<std::string>& on, std::int64_t npartitions = 0) const;
  /**
   * @brief The rows sorted by `by` (ties by the next column; missing values last, as pandas'
   * default na_position: NaN, then null), as many partitions as now, in order: partition i's rows come before
   * partition i + 1's. With a numeric first column the partitions are ranges bounded by its
   * approximate quantiles and sorted in parallel; otherwise one task sorts the whole frame.
   * Rows equal in every sort column keep no particular order between partitions. Host frames only.
   */
  DataFrame sort_values(const std::vector<std::string>& by, bool ascending = true,
                        const std::string& na_position = "last") const;
  /**
   * @brief The same with a direction per column (pandas' `ascending=[False, True]`);
   * na_position "first" puts the missing values first instead.
   */
  DataFrame sort_values(const std::vector<std::string>& by, const std::vector<bool>& ascending,
                        const std::string& na_position = "last") const;
  /**
   * @brief The frame sorted by `column` with known divisions (SetIndexOptions): shuffled into
   * ranges of its approximate quantiles, computed now on `executor`, unless `sorted` or
   * `divisions` say otherwise. Numeric columns (integers compared exactly, floats), and strings
   * with given divisions or sorted = true. Host frames only.
   */
  DataFrame set_index(const std::string& column, const SetIndexOptions& options = {},
                      Executor& executor = local_executor()) const;
  /**
   * @brief The rows whose index equals `key` (pandas' df.loc[key]), read only from the partitions
   * whose divisions can hold it. Needs known divisions.
   */
  DataFrame loc(const Literal& key) const;
  /**
   * @brief The rows whose index is in [lo, hi], both included (pandas' label slice df.loc[lo:hi]);
   * a null bound is open (df.loc[:hi]). Only the partitions whose divisions meet the range are read.
   */
  DataFrame loc(const Literal& lo, const Literal& hi) const;
  /** @brief The same rows in other partitions (RepartitionOptions); partition_size computes sizes now. */
  DataFrame repartition(const RepartitionOptions& options, Executor& executor = local_executor()) const;
  /**
   * @brief pandas' drop_duplicates: the first (keep = "first") or last ("last") row of each
   * distinct `subset` (empty: every column), missing values equal to each other, in the rows'
   * order. A tree of split_every partitions per task into one partition; with split_out > 1 the
   * rows are shuffled on the subset first (then each partition keeps its rows' order).
   */
  DataFrame drop_duplicates(const std::vector<std::string>& subset = {}, const std::string& keep = "first",
                            const AggregateOptions& options = {}) const;
  /**
   * @brief The n rows with the largest values of `columns` (ties by the next column, then the
   * earlier row), largest first, as pandas' nlargest(keep="first"): each partition's n best, then
   * one task. Rows missing the first column are never chosen. Numeric columns only.
   */
  DataFrame nlargest(std::int64_t n, const std::vector<std::string>& columns) const;
  /** @brief The n rows with the smallest values, smallest first (pandas' nsmallest). */
  DataFrame nsmallest(std::int64_t n, const std::vector<std::string>& columns) const;
  /** @brief The lowered plan: one line per node (kind, name, partitions, columns, columns read). */
  std::string explain() const;
  /** @brief This frame (the left side) joined with `right` (pandas' merge; MergeOptions). */
  DataFrame merge(const DataFrame& right, const MergeOptions& options = {}) const;

  /** @brief Groups rows by the values of these columns. */
  GroupBy groupby(std::vector<std::string> by) const;

  /** @brief One row: each numeric column's sum (likewise mean, min, max, count, std, var). */
  DataFrame sum() const;
  DataFrame mean() const;
  DataFrame min() const;
  DataFrame max() const;
  DataFrame count() const;
  DataFrame std() const;
  DataFrame var() const;
  /**
   * @brief pandas' describe() of the numeric columns: a table with a `statistic` column (count,
   * mean, std, min, 25%, 50%, 75%, max) and one column per numeric column. The percentiles are
   * approximate, as Dask's: each partition's exact percentiles merged by their weights.
   */
  std::shared_ptr<arrow::Table> describe(Executor& executor = local_executor()) const;

  /**
   * @brief The first n rows, read from the first partition(s) only. After sort_values it is a
   * top-n (each partition's n first rows in the sort's order, then one task): nothing else sorts.
   */
  std::shared_ptr<arrow::Table> head(std::int64_t n = 5, Executor& executor = local_executor()) const;
  /** @brief Number of rows, lazily: a one-row frame with the column "rows". */
  DataFrame length() const;
  /** @brief Number of rows (computed). */
  std::int64_t len(Executor& executor = local_executor()) const;

  /** @brief Every partition computed and concatenated into one host table. */
  std::shared_ptr<arrow::Table> compute(Executor& executor = local_executor()) const;
  /**
   * @brief Computes the partitions and keeps them: on a cluster's workers (their GPUs for a
   * device frame) while the returned frame lives, or in this process for local executors.
   */
  DataFrame persist(Executor& executor = local_executor()) const;
  /** @brief The same frame with partitions on GPUs (strings dictionary-encoded on the host). */
  DataFrame to_device() const;
  /** @brief Partitions back on the host as Arrow tables. */
  DataFrame to_host() const;
  /** @brief Writes one Parquet file per partition (part.N.parquet) into `directory`. */
  void to_parquet(const std::string& directory, Executor& executor = local_executor()) const;

  /** @brief The lowered task graph and the keys of the partitions, in order. */
  Graph to_graph(std::vector<Key>* partition_keys) const;
  const std::shared_ptr<const detail::FrameNode>& node() const { return node_; }

 private:
  std::shared_ptr<const detail::FrameNode> node_;
};

/**
 * @brief One column of a DataFrame, or an expression over its columns (`df["x"] + df["y"]`).
 */
class Series {
 public:
  Series() = default;
  Series(DataFrame frame, std::shared_ptr<const detail::ColumnExpr> expr, std::string name);

  const std::string& name() const { return name_; }
  /** @brief The Arrow type of its values. */
  std::string dtype() const;
  /** @brief The same values under another name. */
  Series rename(const std::string& name) const;
  Series astype(const std::string& type) const;
  Series isnull() const;
  Series notnull() const;
  /**
   * @brief Whether each value is one of `values` (pandas' isin): a missing value is only when
   * `values` holds a null (`Literal{}`), as pandas matches NaN with NaN.
   */
  Series isin(const std::vector<Literal>& values) const;
  /** @name String tests (pandas' .str accessor; literal text, no regular expressions) */
  ///@{
  Series str_startswith(const std::string& prefix) const;
  Series str_endswith(const std::string& suffix) const;
  Series str_contains(const std::string& text) const;
  /** @brief SQL's LIKE: `%` any text, `_` one character. */
  Series str_like(const std::string& pattern) const;
  /** @brief Characters [start, stop) of each string (pandas' .str.slice; no negative indices). */
  Series str_slice(std::int64_t start, std::int64_t stop) const;
  ///@}
  /** @brief The year of a date or timestamp (pandas' .dt.year). */
  Series dt_year() const;
  /** @brief These values where `mask` is true, `other` elsewhere (pandas' Series.where). */
  Series where(const Series& mask, const Literal& other) const;
  Series where(const Series& mask, const Series& other) const;

  /** @brief A one-column frame holding the values (what compute() computes). */
  DataFrame to_frame() const;
  /** @brief One row: the sum (likewise the others), a one-partition frame of one column. */
  DataFrame sum() const;
  DataFrame mean() const;
  DataFrame min() const;
  DataFrame max() const;
  DataFrame count() const;
  DataFrame std() const;
  DataFrame var() const;
  /**
   * @brief Approximate quantiles (Dask's Series.quantile): a one-partition frame with columns
   * "quantile" and this Series' name. Each partition's exact percentiles, merged by weight.
   */
  DataFrame quantile(const std::vector<double>& q) const;
  /** @brief Each value and how often it occurs, most frequent first (pandas' value_counts). */
  DataFrame value_counts() const;
  /** @brief Distinct values, missing ones not counted (pandas' nunique), in one row. */
  DataFrame nunique(const AggregateOptions& options = {}) const;
  /** @brief The distinct values, missing ones once, in order of appearance (pandas' unique). */
  DataFrame unique(const AggregateOptions& options = {}) const;
  std::shared_ptr<arrow::Table> compute(Executor& executor = local_executor()) const;

  const DataFrame& frame() const { return frame_; }
  const std::shared_ptr<const detail::ColumnExpr>& expr() const { return expr_; }

 private:
  DataFrame frame_;
  std::shared_ptr<const detail::ColumnExpr> expr_;
  std::string name_;
};

/** @name Column arithmetic and comparisons (Arrow's kernels; NumPy-like promotion) */
///@{
Series operator+(const Series& a, const Series& b);
Series operator-(const Series& a, const Series& b);
Series operator*(const Series& a, const Series& b);
Series operator/(const Series& a, const Series& b);
Series operator==(const Series& a, const Series& b);
Series operator!=(const Series& a, const Series& b);
Series operator<(const Series& a, const Series& b);
Series operator<=(const Series& a, const Series& b);
Series operator>(const Series& a, const Series& b);
Series operator>=(const Series& a, const Series& b);
Series operator&(const Series& a, const Series& b);
Series operator|(const Series& a, const Series& b);
Series operator~(const Series& a);
Series operator+(const Series& a, const Literal& b);
Series operator-(const Series& a, const Literal& b);
Series operator*(const Series& a, const Literal& b);
Series operator/(const Series& a, const Literal& b);
Series operator==(const Series& a, const Literal& b);
Series operator!=(const Series& a, const Literal& b);
Series operator<(const Series& a, const Literal& b);
Series operator<=(const Series& a, const Literal& b);
Series operator>(const Series& a, const Literal& b);
Series operator>=(const Series& a, const Literal& b);
///@}

/**
 * @brief A grouping of a DataFrame's rows, aggregated into one row per group (key columns
 * first, sorted by the keys; rows with a null key are dropped, as pandas' groupby does).
 */
class GroupBy {
 public:
  GroupBy(DataFrame frame, std::vector<std::string> by, std::vector<std::string> selected = {});
  /** @brief Only this column is aggregated. */
  GroupBy operator[](const std::string& column) const;
  /** @brief Only these columns are aggregated. */
  GroupBy operator[](const std::vector<std::string>& columns) const;

  /**
   * @brief Several aggregations at once: {column, {"sum", "mean", ...}}; the output columns are
   * named "column" for one aggregation of a column and "column_how" for several.
   * Aggregations: sum, mean, count, min, max, std, var, size. Unknown names throw at once.
   */
  DataFrame agg(const std::map<std::string, std::vector<std::string>>& how,
                const AggregateOptions& options = {}) const;
  /** @brief One aggregation of every selected (or every non-key) column. */
  DataFrame agg(const std::string& how, const AggregateOptions& options = {}) const;
  DataFrame sum(const AggregateOptions& options = {}) const { return agg("sum", options); }
  DataFrame mean(const AggregateOptions& options = {}) const { return agg("mean", options); }
  DataFrame count(const AggregateOptions& options = {}) const { return agg("count", options); }
  DataFrame min(const AggregateOptions& options = {}) const { return agg("min", options); }
  DataFrame max(const AggregateOptions& options = {}) const { return agg("max", options); }
  DataFrame std(const AggregateOptions& options = {}) const { return agg("std", options); }
  DataFrame var(const AggregateOptions& options = {}) const { return agg("var", options); }
  /** @brief Rows per group, in a column named "size". */
  DataFrame size(const AggregateOptions& options = {}) const;
  /**
   * @brief Distinct values of each selected (or every non-key) column per group, missing values
   * not counted (pandas' nunique); int64 columns under the selected names. With split_out > 1
   * the frame is shuffled on the keys first and each partition counts alone, as Dask does for
   * many groups; an input already partitioned on the keys is not shuffled again.
   */
  DataFrame nunique(const AggregateOptions& options = {}) const;

 private:
  DataFrame frame_;
  std::vector<std::string> by_;
  std::vector<std::string> selected_;
};

/**
 * @brief Computes several frames in one graph (Dask's `dask.compute(a, b)`): what they share,
 * such as reading the same files, runs once.
 */
std::vector<std::shared_ptr<arrow::Table>> compute(const std::vector<DataFrame>& frames,
                                                   Executor& executor = local_executor());

/** @brief `left.merge(right, options)`, as pandas' `pd.merge(left, right, ...)`. */
DataFrame merge(const DataFrame& left, const DataFrame& right, const MergeOptions& options = {});

/** @brief A frame over tables already in memory, one partition each. */
DataFrame from_tables(const std::vector<std::shared_ptr<arrow::Table>>& partitions);

/** @brief Registers a partition function for map_partitions (in every process that runs it). */
void register_partition_function(
    const std::string& name,
    std::function<std::shared_ptr<arrow::Table>(const std::shared_ptr<arrow::Table>&)> function);

}  // namespace tessera::dataframe
