#pragma once
/**
 * @file Private: the index's helpers shared by set_index and loc (index.cpp), repartition
 * (repartition.cpp), merges on the index (merge.cpp), the top-n (topn.cpp) and drop_duplicates
 * (distinct.cpp): comparing bounds, the parameters of their tasks, partition statistics.
 */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frame_node.hpp"
#include "tessera/core/value.hpp"
#include "tessera/dataframe/dataframe.hpp"

namespace arrow {
class DataType;
}

namespace tessera::dataframe::detail {

/** @brief How index values are compared: integers exactly, floats, strings. */
enum class IndexKind : std::int32_t { Int = 0, Double = 1, String = 2 };

/** @brief The kind of a column's values; throws Error naming `what` and the column otherwise. */
IndexKind index_kind_of(const arrow::DataType& type, const std::string& column, const std::string& what);
/** @brief Whether a Literal is missing (null). */
inline bool is_missing(const Literal& v) { return std::holds_alternative<std::monostate>(v); }
/**
 * @brief <0, 0 or >0 as a is below, equal to or above b (numbers of any kind with each other,
 * strings with strings); throws Error naming `what` for a string against a number or a null.
 */
int compare_literals(const Literal& a, const Literal& b, const std::string& what);
/** @brief A bound as text for messages and explain(). */
std::string literal_text(const Literal& v);
/**
 * @brief The kind divisions of a column of kind `column` are compared in: Int when they are all
 * integers, Double when numbers, String when strings; throws Error naming the column for others.
 */
IndexKind split_kind(IndexKind column, const std::vector<Literal>& divisions, const std::string& column_name,
                     const std::string& what);
/** @brief Whether two division lists are the same bounds (nulls equal nulls). */
bool same_divisions(const std::vector<Literal>& a, const std::vector<Literal>& b);
/**
 * @brief The inputs whose divisions `from` can hold values of output j of `to` (both as
 * index_divisions), for each j; the last input (the missing values) is always read by the last
 * output, and an output that meets none reads one input (an empty slice).
 */
std::vector<std::vector<std::int64_t>> overlapping_inputs(const std::vector<Literal>& from,
                                                          const std::vector<Literal>& to);

/** @brief A RangePartition split: rows of `column` placed among the ranges of `divisions`. */
Object division_split_params(const std::string& column, IndexKind kind, const std::vector<Literal>& divisions,
                             bool check);
/** @brief Rows [rows * piece / pieces, rows * (piece + 1) / pieces) of a partition. */
Object slice_piece_params(std::int64_t piece, std::int64_t pieces);
/** @brief A top-n task: the n first rows by the columns (topn.cpp). */
Object top_n_params(const std::vector<std::string>& columns, const std::vector<bool>& ascending, bool nulls_first,
                    std::int64_t n, bool drop_missing_first);
/** @brief A drop_duplicates task (distinct.cpp). */
Object distinct_params(const std::vector<std::string>& on, bool keep_last);

/** @brief One partition's rows, Arrow buffer bytes, and its column's count of values, min and max. */
struct PartitionStats {
  std::int64_t rows = 0, bytes = 0, valid = 0;
  Literal min, max;  // null when the partition has no values of the column
};
/** @brief Every partition's statistics, computed now (column "": rows and bytes only). */
std::vector<PartitionStats> partition_stats(const DataFrame& df, const std::string& column, Executor& executor);

/**
 * @brief A RangePartition of `df` by `column` into the ranges of `divisions` (valid bounds of its
 * kind), each output reading `sources[j]`; sorted by the column when `sort`.
 */
DataFrame range_partition(const DataFrame& df, const std::string& column, const std::vector<Literal>& divisions,
                          const std::vector<std::vector<std::int64_t>>& sources, bool sort, bool check);

/**
 * @brief The top-n of `df` by `by` (the TopN node): what head(n) of a sort lowers to, and nlargest.
 */
DataFrame top_n(const DataFrame& df, const std::vector<std::string>& by, const std::vector<bool>& ascending,
                bool nulls_first, std::int64_t n, bool drop_missing_first);
/** @brief head(n)'s frame when it is a top-n (`df` is a sort_values), else nullopt. */
std::optional<DataFrame> head_as_top_n(const DataFrame& df, std::int64_t n);

}  // namespace tessera::dataframe::detail
