#pragma once
/** @file
 * NumPy's matmul over chunked arrays (one task per output chunk; OpenBLAS on the host, cuBLAS on
 * a GPU worker). dot, tensordot and einsum are in tessera/array/linalg.hpp. */
#include "tessera/array/array.hpp"

namespace tessera {

/**
 * @brief NumPy's matmul, OpenBLAS on host: 2-d matrices, 1-d vectors (a vector on the left is a
 * row, on the right a column; that axis is dropped from the result), and n-d stacks of
 * matrices whose leading (batch) axes broadcast; bools give a bool result (any a_ik && b_kj).
 */
Array matmul(const Array& a, const Array& b);

}  // namespace tessera
