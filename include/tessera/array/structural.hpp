#pragma once
/** @file
 * Structural operations: concatenate, stack, map_blocks (rechunk and reshape are members; matmul
 * is tessera/array/matmul.hpp, dot tessera/array/linalg.hpp). */
#include <optional>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

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
