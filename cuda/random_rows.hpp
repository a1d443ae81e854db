#pragma once
// Internal to the CUDA back end: the kernel behind the device variant of multinomial's and
// multivariate_hypergeometric's rows (src/array/random_vector.cpp, registered by
// random_rows_op.cpp). Plain C++17 for nvcc.
#include <cstdint>

#include "array/random_rows.hpp"

namespace tessera::cuda {

/**
 * @brief rng::RowsKernel on a GPU: one thread per row of the chunk, each calling rng::draw_row
 * (the host op's definition) and writing its k counts at out + r * k. `args` points into device
 * memory of `device`; queued on `stream`, not waited for.
 */
void random_rows_kernel(const detail::rng::RowsArgs& args, std::int64_t n, std::int64_t* out, int device,
                        StreamView stream);

}  // namespace tessera::cuda
