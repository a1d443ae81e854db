#pragma once
/**
 * @file Private: joining two host tables (what one merge task computes), with pandas' merge
 * semantics, on Arrow Acero's hash join. See docs/dataframe-shuffle.md ("Joins").
 *
 * - Keys are compared as their common type (int32 with int64: int64; an integer with a float:
 *   float64); a key pair of types that cannot be compared (a string with a number) is refused
 *   when the merge is built, as pandas refuses it.
 * - Missing keys (null, and NaN in float keys) match each other, as in pandas' merge (SQL's
 *   joins never match them).
 * - Columns: the left frame's in order, then the right's without the shared keys; a key named
 *   alike on both sides (`on`) is one column holding the key of whichever side has the row; other
 *   names both sides have get the suffixes ("_x", "_y"). leftsemi and leftanti give the left
 *   columns only.
 * - Missing values of the side a row has no match on are nulls of the column's Arrow type (an
 *   int64 column stays int64 with nulls; pandas would make it float64 with NaN).
 * - Row order inside a result partition is not pandas' (it is Acero's); compare sorted.
 */
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "device_algorithms_types.hpp"
#include "join_how.hpp"

namespace arrow {
class DataType;
class Schema;
class Table;
}  // namespace arrow

namespace tessera::dataframe::detail {

/** @brief "inner", "left", "right", "outer", "leftsemi", "leftanti"; throws Error otherwise. */
JoinHow join_how_from_name(const std::string& name);
const char* join_how_name(JoinHow how);

/** @brief What a merge task computes (its parameters). */
struct JoinSpec {
  JoinHow how = JoinHow::Inner;
  std::vector<std::string> left_on, right_on;
  /** The type each key pair is compared as (Arrow type names, parse_type). */
  std::vector<std::string> key_types;
  std::string left_suffix = "_x", right_suffix = "_y";
  /**
   * The column names both sides have (other than keys merged into one column), which get the
   * suffixes: fixed by plan_join from the whole schemas, so that a task reading only some columns
   * of each side (column projection) names its result columns the same.
   */
  std::vector<std::string> suffixed;
  /** The task's first `left_parts` arguments after the parameters are left partitions, the rest right. */
  std::int64_t left_parts = 1;
  template <class A>
  void serialize(A& ar) {
    ar(how, left_on, right_on, key_types, left_suffix, right_suffix, suffixed, left_parts);
  }
};

/**
 * @brief Checks a merge of frames with these schemas and fills `spec.key_types`; returns the
 * result's schema. Throws Error naming the problem: a key that does not exist, key counts that
 * differ, key types that cannot be compared, an output column name given twice.
 */
std::shared_ptr<arrow::Schema> plan_join(const arrow::Schema& left, const arrow::Schema& right, JoinSpec& spec);

/**
 * @brief The columns of each side a merge must read to give the `needed` result columns: their
 * sources, and always the keys.
 */
void join_reads(const arrow::Schema& left, const arrow::Schema& right, const JoinSpec& spec,
                const std::set<std::string>& needed, std::set<std::string>& left_reads,
                std::set<std::string>& right_reads);

/**
 * @brief The same merge as a plan for the device join (device_relational.cuh) of frames with
 * these schemas: the key pairs as device types, and the host's result columns (names, order).
 */
JoinPlan device_join_plan(const arrow::Schema& left, const arrow::Schema& right, const JoinSpec& spec);

/** @brief The rows of `left` joined with those of `right` (spec from plan_join). */
std::shared_ptr<arrow::Table> join_tables(const std::shared_ptr<arrow::Table>& left,
                                          const std::shared_ptr<arrow::Table>& right, const JoinSpec& spec);

}  // namespace tessera::dataframe::detail
