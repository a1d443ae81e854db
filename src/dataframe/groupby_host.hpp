#pragma once
/** @file Private: groupby-aggregate on host partitions (Arrow tables); see groupby_spec.hpp. */
#include <memory>
#include <vector>

#include <arrow/api.h>

#include "groupby_spec.hpp"

namespace tessera::dataframe::detail {

/** @brief The type of AggSpec `a`'s result for an input column of type `input`. */
std::shared_ptr<arrow::DataType> aggregate_type(const AggSpec& a, const std::shared_ptr<arrow::DataType>& input);
/** @brief Throws Error when `a` cannot aggregate a column of type `t` (a string's mean, ...). */
void check_aggregable(const AggSpec& a, const std::shared_ptr<arrow::DataType>& t);
bool accumulates_as_double(const arrow::DataType& t);

/** @brief One partition's rows into per-group partial states. */
std::shared_ptr<arrow::Table> groupby_partial(const std::shared_ptr<arrow::Table>& table, const GroupbySpec& spec);
/**
 * @brief Partial states merged: into partial states again, or (spec.finalize) into the result,
 * sorted by the keys. `input_types`: the aggregated columns' types in the source frame.
 */
std::shared_ptr<arrow::Table> groupby_combine(const std::vector<std::shared_ptr<arrow::Table>>& partials,
                                              const GroupbySpec& spec,
                                              const std::vector<std::shared_ptr<arrow::DataType>>& input_types);

}  // namespace tessera::dataframe::detail
