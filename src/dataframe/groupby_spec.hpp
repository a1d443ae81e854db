#pragma once
/**
 * @file Private: what a groupby-aggregate task computes, shared by the host (Arrow) and device
 * (Thrust) implementations so the two give the same answer. C++17 clean (nvcc includes it).
 *
 * Semantics are pandas' `df.groupby(by).agg(...)` with its defaults: rows whose key is null
 * are dropped; null (and, for floating-point columns, NaN) values are skipped; the result has one
 * row per group, sorted by the keys ascending; sum of no values is 0; mean, min, max of no
 * values are null; var and std use ddof=1 (null with fewer than 2 values); count counts the
 * values present; size counts the group's rows. Result types: sum keeps int64 for integer (and
 * bool) columns, float64 otherwise; mean, var, std are float64; count, size are int64; min, max
 * keep the column's type.
 *
 * The tree reduction: a partial task turns one partition into per-group partial states, a
 * combine task merges partial states, the last one finalises them into the result columns.
 */
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::dataframe {

enum class Agg : std::uint8_t { Sum, Mean, Count, Min, Max, Std, Var, Size };

/** @brief "sum" ... "size"; throws std::invalid_argument listing the valid names. */
Agg agg_from_name(const std::string& name);
const char* agg_name(Agg agg);

/** @brief One output column: `how` applied to `column` (ignored for Size), named `output`. */
struct AggSpec {
  std::string column;
  Agg how = Agg::Sum;
  std::string output;
  template <class A>
  void serialize(A& ar) {
    ar(column, how, output);
  }
};

/** @brief The parameters of the groupby tasks (tessera.frame.groupby_*). */
struct GroupbySpec {
  std::vector<std::string> by;
  std::vector<AggSpec> aggs;
  /** combine: finalise (the last combine of the tree) instead of returning partial states. */
  bool finalize = false;
  template <class A>
  void serialize(A& ar) {
    ar(by, aggs, finalize);
  }
};

}  // namespace tessera::dataframe
