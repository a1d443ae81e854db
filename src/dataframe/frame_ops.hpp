#pragma once
/** @file Private: parameters of the per-partition ops (frame_ops.cpp) for the lowering. */
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "column_expr.hpp"
#include "groupby_spec.hpp"
#include "tessera/core/value.hpp"

namespace arrow {
class Table;
}

namespace tessera::dataframe::detail {

using PartitionFunction = std::function<std::shared_ptr<arrow::Table>(const std::shared_ptr<arrow::Table>&)>;

Object map_params(const Program& program);
Object combine_params(const GroupbySpec& spec, const std::vector<std::string>& input_types);
/** @brief A sort (missing values last, or first with nulls_first). */
Object sort_params(const std::vector<std::string>& columns, const std::vector<bool>& ascending, bool nulls_first = false);
/**
 * @brief A sort's range split: rows of `column` placed among `parts` ranges (ascending or not),
 * missing values in the last range (the first with nulls_first).
 */
Object range_split_params(const std::string& column, std::int64_t parts, bool ascending, bool nulls_first = false);
/**
 * @brief A shuffle split's value: `table`'s rows ordered by their output partition `parts[r]` (of
 * `count`), the layout shuffle_unpack reads (shuffle_ops.cpp).
 */
Value shuffle_split_layout(const std::shared_ptr<arrow::Table>& table, const std::vector<std::uint32_t>& parts,
                           std::int64_t count);
/** @brief A shuffle's split task: hash `on` over `parts` outputs. */
Object shuffle_split_params(const std::vector<std::string>& on, std::int64_t parts);
/** @brief A shuffle's unpack task for output partition `part`. */
Object shuffle_unpack_params(std::int64_t part);
/**
 * @brief The row numbers ordered by output partition (`parts[r]` < `count`; a stable counting
 * sort) and, in `offsets`, where each partition's rows begin (count + 1 numbers).
 */
std::shared_ptr<arrow::Array> partition_order(const std::vector<std::uint32_t>& parts, std::int64_t count,
                                              std::vector<std::int64_t>& offsets);
/**
 * @brief `table`'s rows ordered by output partition (`parts[r]` < `count`; a stable counting
 * sort) and, in `offsets`, where each partition's rows begin (count + 1 numbers).
 */
std::shared_ptr<arrow::Table> order_by_partition(const std::shared_ptr<arrow::Table>& table,
                                                 const std::vector<std::uint32_t>& parts, std::int64_t count,
                                                 std::vector<std::int64_t>& offsets);
/**
 * @brief A sort's range bounds from its bounds table (the first sort column's approximate
 * quantiles): the values, ascending, no missing ones, at most parts - 1 of them.
 */
std::vector<double> range_bounds(const arrow::Table& bounds, const std::string& column, std::int64_t parts);
/**
 * @brief Each row's range among `parts` by the bounds in `bounds` (a sort's quantiles); missing
 * values in the last range, or the first with nulls_first.
 */
std::vector<std::uint32_t> range_partitions(const arrow::Table& table, const arrow::Table& bounds,
                                            const std::string& column, std::int64_t parts, bool ascending,
                                            bool nulls_first = false);
struct JoinSpec;
Object merge_params(const JoinSpec& spec);
/** @brief Runs a registered partition function; throws UnknownOperationError when none has the name. */
std::shared_ptr<arrow::Table> run_partition_function(const std::string& name, const std::shared_ptr<arrow::Table>& t);

}  // namespace tessera::dataframe::detail
