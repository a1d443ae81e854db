#pragma once
// Internal: the complex array path. Complex values never enter the fused blockwise programs
// (their registers are double or int64): element-wise operations on complex arrays are one
// "tessera.array.complex" task per chunk instead, and reductions split into real and imaginary
// parts. elementwise.cpp and reductions.cpp hand complex operands here.
#include <complex>
#include <optional>
#include <vector>

#include "expr.hpp"

namespace tessera::detail {

inline constexpr const char* kComplexOp = "tessera.array.complex";

/** Element-wise op with a complex operand or a complex result dtype (astype). */
Array complex_elementwise(EwOp op, const std::vector<Array>& args, std::optional<DType> dtype);
/** sum, prod or mean of a complex array (other reductions throw DTypeError). */
Array complex_reduce(const Array& a, ReduceKind kind, const ReduceOptions& options, const char* name);

/** A block's values as complex128 (real dtypes with a zero imaginary part). */
std::vector<std::complex<double>> complex_values(const Block& b);
/** A block of a complex dtype from complex128 values (rounded to complex64 when asked). */
Block complex_block(const std::vector<std::complex<double>>& v, const Shape& shape, DType out);

/** The array with exactly these chunks (a Rechunk node unless it has them already). */
Array rechunked_to(const Array& a, const Chunks& chunks);
/** A MapBlocks node running `op` with literal parameters on matching chunks of the inputs. */
Array map_blocks_with(const std::string& op, Value params, const std::vector<Array>& inputs, DType out_dtype,
                      Chunks out_chunks, const char* name);

}  // namespace tessera::detail
