#pragma once
// Internal: the gather ops behind fancy indexing, halos (overlap) and chunks of unknown size.
//
// Each op plans its output as runs of contiguous elements copied from one input block (or
// filled with a constant) and then executes the plan: with memcpy on the host, with the device
// runtime's copy_async on a GPU (so the same plan runs on a real GPU and on the tests' fake
// device). Index lists that depend on data (a mask, an index array) are read on the host.
#include <cstdint>
#include <vector>

#include "tessera/core/block.hpp"
#include "tessera/core/device.hpp"

namespace tessera::detail {

inline constexpr const char* kGatherOp = "tessera.array.gather";
inline constexpr const char* kMaskSelectOp = "tessera.array.mask_select";
inline constexpr const char* kArgwhereOp = "tessera.array.argwhere";
inline constexpr const char* kChunkShapeOp = "tessera.array.chunk_shape";
inline constexpr const char* kMaskBandOp = "tessera.array.mask_band";
// Device only, registered by the CUDA back end (cuda/gather_op.cpp) and called by the gathers'
// device variants for plans of many short runs: one kernel instead of a copy per run.
inline constexpr const char* kGatherElementsOp = "tessera.array.gather_elements";

/**
 * An outer gather: out[i0, i1, ...] = window[index[0][i0], index[1][i1], ...], where the window
 * is the blocks passed (row-major over the per-axis lists `window` of their extents) laid side
 * by side. An index of -1 reads `fill` instead (constant boundaries of halos).
 */
struct GatherParams {
  DType dtype = DType::Float64;
  std::vector<std::vector<std::int64_t>> window;  // per axis: extents of the blocks passed, in order
  std::vector<std::vector<std::int64_t>> index;   // per axis: window coordinate per output element
  double fill = 0;
  // >= 0: this axis's indices are the values of the last argument (an integer block), global
  // coordinates along an axis of length axis_len (negative ones count from the end); the window
  // on that axis must then be the whole axis.
  int index_axis = -1;
  std::int64_t axis_len = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(dtype, window, index, fill, index_axis, axis_len);
  }
};

/** Keeps the elements of a block whose mask (1-d, along `axis`) is true. */
struct MaskSelectParams {
  int axis = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(axis);
  }
};

/**
 * x[mask] for one band of chunks along the first axis (x and mask of the same shape): the selected
 * elements of the band in row-major order. Arguments: the band's blocks of x, row-major over the
 * chunk grid of axes 1.. (counts[k] chunks on axis k + 1), then the mask's blocks alike.
 */
struct MaskBandParams {
  std::vector<std::int64_t> counts;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(counts);
  }
};

/** The coordinates (rows of ndim int64) of the nonzero elements of a 1-d piece of a raveled
 *  array of shape `shape` that starts at flat index `start`; column >= 0 keeps only that
 *  coordinate (a 1-d result). */
struct ArgwhereParams {
  std::int64_t start = 0;
  Shape shape;
  int column = -1;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(start, shape, column);
  }
};

/**
 * kGatherElementsOp's first argument; then a host int32 block (block of each output element, -1:
 * fill), a host int64 block (its element offset in that block) and the device blocks.
 */
struct GatherElementsParams {
  DType dtype = DType::Float64;
  Shape shape;
  std::vector<unsigned char> fill;  // one element of dtype
  template <class Ar>
  void serialize(Ar& ar) {
    ar(dtype, shape, fill);
  }
};

/** A contiguous run of the output: `n` elements from element `src` of block `block`, or the
 *  fill value when block < 0. */
struct CopyRun {
  int block = -1;
  std::int64_t src = 0, dst = 0, n = 0;
};

/** Plans an outer gather over blocks of the given shapes (row-major over the windows). */
std::vector<CopyRun> plan_gather(const GatherParams& p, const std::vector<Shape>& block_shapes);

/**
 * Executes a plan into a new block of `shape`: on the host, or (device >= 0) in device memory of
 * `device` ordered on `stream`. Blocks must all live where the output goes.
 */
Block run_copy_plan(DType dtype, const Shape& shape, const std::vector<CopyRun>& runs,
                    const std::vector<const Block*>& blocks, double fill, int device, StreamView stream);

}  // namespace tessera::detail
