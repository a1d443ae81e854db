#pragma once
/** @file Private: parameters of the dataframe tasks that have device variants, shared by the host ops and the CUDA
 * back end's device variants (no Arrow). */
#include <cstdint>
#include <string>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "groupby_spec.hpp"

namespace tessera::dataframe::detail {

struct CombineParams {
  GroupbySpec spec;
  /** The aggregated columns' Arrow types in the source frame (the host path's result types). */
  std::vector<std::string> input_types;
  template <class A>
  void serialize(A& ar) {
    ar(spec, input_types);
  }
};

/** The sort_values task's parameters: the partitions given, concatenated and sorted. */
struct SortParams {
  std::vector<std::string> columns;
  std::vector<bool> ascending;  // one per column
  bool nulls_first = false;     // na_position="first"
  template <class A>
  void serialize(A& ar) {
    ar(columns, ascending, nulls_first);
  }
};

/** A task-based hash shuffle's split: rows by the hash of `on` among `parts` outputs. */
struct ShuffleSplitParams {
  std::vector<std::string> on;
  std::int64_t parts = 1;
  template <class A>
  void serialize(A& ar) {
    ar(on, parts);
  }
};

/** A sort's range split: rows by their range of `column` between the bounds (the task's second input). */
struct RangeSplitParams {
  std::string column;
  std::int64_t parts = 1;
  bool ascending = true;
  bool nulls_first = false;  // na_position="first": missing values in the first range
  template <class A>
  void serialize(A& ar) {
    ar(column, parts, ascending, nulls_first);
  }
};

/** Names under which the CUDA back end registers the device frame algorithms (device variants). */
inline constexpr const char* kCudaFrameMap = "tessera.frame.cuda.map";
inline constexpr const char* kCudaFrameGroupbyPartial = "tessera.frame.cuda.groupby_partial";
inline constexpr const char* kCudaFrameGroupbyCombine = "tessera.frame.cuda.groupby_combine";
/** Returns the back end's relational algorithms (device_backend.hpp, kRelationalBackendType). */
inline constexpr const char* kCudaFrameRelational = "tessera.frame.cuda.relational";
/** Returns a bool scalar: whether the process's device runtime is the CUDA back end's (a test's
 * stand-in runtime replaces it: the algorithms then run on Thrust's host system instead). */
inline constexpr const char* kCudaFrameActive = "tessera.frame.cuda.active";

}  // namespace tessera::dataframe::detail
