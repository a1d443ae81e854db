#pragma once
// Internal: chunks of unknown size (unknown_size in Chunks, like Dask's NaN chunks).
//
// Blockwise programs over such chunks are compiled with the unknown extents left open; the op
// kUnknownBlockwiseOp fills them in from the input blocks' shapes when the task runs, then runs
// the ordinary blockwise op (host or device variant).
#include <cstdint>
#include <vector>

#include "expr.hpp"

namespace tessera::detail {

inline constexpr const char* kUnknownBlockwiseOp = "tessera.array.blockwise_unknown";

/**
 * A program input read from a chunk of unknown size: its coordinate on axis k is
 * offset[k] + stride[k] * o[src[k]] for output coordinate o (src[k] < 0: the constant
 * offset[k]), relative to the chunk. Its base and coefficients are computed at run time from the
 * chunk's shape.
 */
struct UnknownInput {
  std::int32_t instr = 0;
  std::vector<int> src;
  std::vector<std::int64_t> offset, stride;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(instr, src, offset, stride);
  }
};

struct UnknownPatch {
  std::vector<UnknownInput> inputs;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(inputs);
  }
};

/** True when any chunk size is unknown. */
bool has_unknown_chunks(const Chunks& chunks);
/** The shape of these chunks: the sum per axis, unknown_size where any chunk is unknown. */
Shape shape_of_chunks(const Chunks& chunks);
/** Throws ShapeError naming `what` when any chunk size of e is unknown. */
void require_known_chunks(const Expr& e, const char* what);
/** e's chunks with the unknown sizes read from the shapes of its computed chunks (row-major
 *  chunk order); throws ShapeError when chunks in one slice disagree. */
Chunks resolved_chunks(const Expr& e, const std::vector<Shape>& shapes);

}  // namespace tessera::detail
