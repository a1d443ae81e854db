#pragma once
/** @file Private: parameters of the groupby combine task, shared by the host ops and the CUDA
 * back end's device variants (no Arrow). */
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

/** Names under which the CUDA back end registers the device frame algorithms (device variants). */
inline constexpr const char* kCudaFrameMap = "tessera.frame.cuda.map";
inline constexpr const char* kCudaFrameGroupbyPartial = "tessera.frame.cuda.groupby_partial";
inline constexpr const char* kCudaFrameGroupbyCombine = "tessera.frame.cuda.groupby_combine";
/** Returns a bool scalar: whether the process's device runtime is the CUDA back end's (a test's
 * stand-in runtime replaces it: the algorithms then run on Thrust's host system instead). */
inline constexpr const char* kCudaFrameActive = "tessera.frame.cuda.active";

}  // namespace tessera::dataframe::detail
