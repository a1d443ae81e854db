#pragma once
/** @file
 * Options of the Array reductions (sum, mean, var, argmin, ...; members of Array). */
#include <vector>

namespace tessera {

/** @brief Options of a reduction. Empty axes means all axes. */
struct ReduceOptions {
  std::vector<int> axes;
  bool keepdims = false;
  int split_every = 0;  ///< fan-in of the tree reduction; 0 means the default (8)
  int ddof = 0;         ///< for var and std
};

}  // namespace tessera
