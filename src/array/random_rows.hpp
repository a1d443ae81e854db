#pragma once
// Internal: one row of multinomial or multivariate_hypergeometric counts (random_vector.cpp), as a
// function of the chunk's parameters and the row's place in the chunk. The host op calls it row by
// row; the CUDA back end's kernel (cuda/random_rows.cu) calls it with one thread per row; the
// tests' stand-in kernel calls it on fake device memory. One definition, so a chunk made on the
// host, on a GPU or under the stand-in holds the same counts.
//
// Only C++17, <math.h> and Random123, as random_semantics.hpp (nvcc builds .cu files as C++17),
// and tessera/core/stream.hpp (plain C++17, no includes).
#include <cstdint>

#include "random_semantics.hpp"
#include "tessera/core/stream.hpp"

// random_semantics.hpp undefines its TESSERA_RNG; draw_row needs the same qualifiers.
#if defined(__CUDACC__)
#define TESSERA_RNG_ROW __host__ __device__ inline
#else
#define TESSERA_RNG_ROW inline
#endif

namespace tessera::detail::rng {

/**
 * What a chunk of rows needs, as plain pointers (host memory for the host op, device memory for
 * the kernel). `rows` of the chunk start at `start` within the rows' shape `size` (nd axes each).
 */
struct RowsArgs {
  std::int32_t code = 0;  // kMultinomial or kMultivariateHypergeometric
  std::uint64_t key = 0;
  std::int64_t count = 0;                // trials (multinomial) or the sample (hypergeometric)
  const double* pvals = nullptr;         // k probabilities (multinomial)
  const std::int64_t* colors = nullptr;  // k colours (multivariate_hypergeometric)
  std::int32_t k = 0;
  bool by_count = false;  // multivariate_hypergeometric's method "count"
  std::int32_t nd = 0;
  const std::int64_t* size = nullptr;
  const std::int64_t* start = nullptr;
  const std::int64_t* rows = nullptr;
};

/**
 * Runs the n rows of a chunk (one thread per row on a GPU), writing row r's k counts at
 * out + r * k; `out` is device memory of `device`, the work is queued on `stream`. The CUDA back
 * end's is cuda::random_rows_kernel; tests pass a host loop.
 */
using RowsKernel = void (*)(const RowsArgs& args, std::int64_t n, std::int64_t* out, int device, StreamView stream);

namespace {

/** Row r of the chunk (row-major within it): its global row picks its Philox stream. */
TESSERA_RNG_ROW void draw_row(const RowsArgs& a, std::int64_t r, std::int64_t* out) {
  std::int64_t row = 0, stride = 1, rest = r;
  for (int ax = a.nd - 1; ax >= 0; --ax) {
    const std::int64_t extent = a.rows[ax] > 0 ? a.rows[ax] : 1;
    row += (a.start[ax] + rest % extent) * stride;
    rest /= extent;
    stride *= a.size[ax];
  }
  Draws d(a.key, kStreamBase + static_cast<std::uint32_t>(a.code), static_cast<std::uint64_t>(row));
  if (a.code == kMultinomial) multinomial_row(d, a.count, a.pvals, a.k, out);
  else multivariate_hypergeometric_row(d, a.colors, a.k, a.count, a.by_count, out);
}

}  // namespace

}  // namespace tessera::detail::rng

#undef TESSERA_RNG_ROW
