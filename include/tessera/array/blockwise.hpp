#pragma once
/** @file
 * blockwise, like dask.array.blockwise: a registered op applied to blocks lined up by index
 * letters, with contractions and new axes. */
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

/** @brief One input of blockwise: an array and one index letter per axis, e.g. {x, "ij"}. */
struct BlockwiseInput {
  Array array;
  std::string index;
};

/**
 * @brief Applies the registered op (e.g. a TESSERA_REGISTER_FUNCTION taking and returning
 * Blocks) to the inputs' blocks, lined up by index letters as in dask.array.blockwise: output
 * block (i, j) of out_index "ij" gets, from each input, the block whose letters take those chunk
 * indices. Letters shared between inputs are rechunked alike. A letter absent from out_index is
 * contracted: with concatenate (as Dask's concatenate=True) that axis is one chunk, so each call
 * sees it whole; without, the op gets every block along the contracted letters, in row-major
 * order, as consecutive arguments of that input. Letters of out_index in no input are new axes
 * of the sizes given in new_axes (one chunk each). Each call must return a block of the output
 * chunk's shape.
 */
Array blockwise(const std::string& op, const std::string& out_index, const std::vector<BlockwiseInput>& inputs,
                DType dtype, bool concatenate = true, const std::map<char, std::int64_t>& new_axes = {});

}  // namespace tessera
