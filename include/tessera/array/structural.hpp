#pragma once
/** @file
 * Structural operations: matmul, concatenate, stack, map_blocks (rechunk and reshape are members). */
#include <optional>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief NumPy's matmul, OpenBLAS on host: 2-d matrices, 1-d vectors (a vector on the left is a
 * row, on the right a column; that axis is dropped from the result), and n-d stacks of
 * matrices whose leading (batch) axes broadcast; bools give a bool result (any a_ik && b_kj).
 */
Array matmul(const Array& a, const Array& b);
/**
 * @brief NumPy's dot: matmul for vectors and matrices; for n-d operands the sum over the last
 * axis of a and the second-to-last of b (as tensordot, tessera/array/linalg.hpp).
 */
Array dot(const Array& a, const Array& b);
Array concatenate(const std::vector<Array>& arrays, int axis = 0);
Array stack(const std::vector<Array>& arrays, int axis = 0);
/**
 * @brief Applies a registered op (e.g. a TESSERA_REGISTER_FUNCTION taking and returning Blocks)
 * to matching chunks of the inputs. The inputs are rechunked to the first one's chunks; each
 * output chunk must have the input chunk's shape unless out_chunks gives the output chunking.
 */
Array map_blocks(const std::string& op, const std::vector<Array>& inputs, DType out_dtype,
                 std::optional<Chunks> out_chunks = std::nullopt);

}  // namespace tessera
