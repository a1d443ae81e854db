#pragma once
// Internal: the array operations registered in the op registry, and their parameter structs.
#include <cstdint>
#include <vector>

#include "program.hpp"

namespace tessera::detail {

inline constexpr const char* kBlockwiseOp = "tessera.array.blockwise";
inline constexpr const char* kCombineOp = "tessera.array.reduce_combine";
inline constexpr const char* kAssembleOp = "tessera.array.assemble";
inline constexpr const char* kMatmulOp = "tessera.array.matmul";
inline constexpr const char* kReshapeOp = "tessera.array.reshape";
inline constexpr const char* kIdentityOp = "tessera.identity";

/** Combines partial reductions; the last combine of a tree finalises them into the result. */
struct CombineParams {
  std::uint8_t kind = 0;
  DType partial_dtype = DType::Float64;
  bool finalize = false;
  DType out_dtype = DType::Float64;
  int ddof = 0;
  bool keepdims = false;
  std::vector<std::uint8_t> reduced;  // per input axis
  template <class Ar>
  void serialize(Ar& ar) {
    ar(kind, partial_dtype, finalize, out_dtype, ddof, keepdims, reduced);
  }
};

/** One rectangular piece copied from an argument block into the assembled block. */
struct AssemblePiece {
  std::int32_t arg = 0;
  std::vector<std::int64_t> src_start, dst_start, extent;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(arg, src_start, dst_start, extent);
  }
};

struct AssembleParams {
  DType dtype = DType::Float64;
  Shape shape;
  std::vector<AssemblePiece> pieces;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(dtype, shape, pieces);
  }
};

/** Copies a box of src (starting at src_start, of extent) into dst at dst_start (host, same dtype). */
void copy_box(const Block& src, const std::vector<std::int64_t>& src_start, Block& dst,
              const std::vector<std::int64_t>& dst_start, const std::vector<std::int64_t>& extent);

/** Which ISA level the kernels run with ("x86-64-v4", ...). */
const char* kernel_isa();

}  // namespace tessera::detail
