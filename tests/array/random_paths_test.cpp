// The normal generator has two code paths: contiguous runs share Box-Muller pairs, strided reads
// compute each element alone. Both must give the same value for every element, at every ISA.
#include <gtest/gtest.h>

#include <cmath>

#include <Random123/philox.h>

#include <bit>
#include <cstdint>

#include "array/generator.hpp"
#include "array/program.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

// The uniform generator's documented definition (kernels/random.cpp), with Random123's own
// Philox4x32-10, for every alignment and tail length of the vectorised kernels (blocks of 32
// and 8 counters, masked tails) and strided reads.
TEST(RandomPaths, UniformsArePhilox4x32_10OfTheirIndex) {
  const std::uint64_t key = detail::mix_key(5, 0);
  const philox4x32_key_t k = {{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)}};
  auto reference = [&](std::uint64_t i) {
    const std::uint64_t c = i >> 1;
    const philox4x32_ctr_t x = philox4x32_R(10, philox4x32_ctr_t{{static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32), 2u, 0u}}, k);
    const std::uint64_t w = (i & 1) ? (static_cast<std::uint64_t>(x.v[3]) << 32 | x.v[2])
                                    : (static_cast<std::uint64_t>(x.v[1]) << 32 | x.v[0]);
    return std::bit_cast<double>(0x3ff0000000000000ULL | (w >> 12)) - 1.0;
  };
  const auto uniform = static_cast<std::uint8_t>(detail::GenKind::Uniform);
  for (std::int64_t start : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{(1LL << 33) + 3}})
    for (std::int64_t delta : {1, 2, 3, 1001})
      for (std::int64_t n : {1, 7, 8, 9, 31, 32, 33, 100, 257, 700}) {
        std::vector<double> out(static_cast<std::size_t>(n));
        detail::generate_f64(uniform, key, 0.0, 1.0, start, delta, n, out.data());
        for (std::int64_t j = 0; j < n; ++j)
          ASSERT_EQ(out[static_cast<std::size_t>(j)], reference(static_cast<std::uint64_t>(start + delta * j)))
              << "start " << start << " delta " << delta << " n " << n << " element " << j;
      }
}

TEST(RandomPaths, PairedAndStridedNormalsAgree) {
  // Odd extents so that rows start on both even and odd element indices.
  auto x = random::normal(7, 10.0, 2.0, {13, 9}, {5, 4});
  const auto direct = x.compute(local_executor("sync")).to_doubles();     // rows: contiguous, paired
  const auto through_t = x.T().compute(local_executor("sync"));           // columns: stride 9, one by one
  const auto t = through_t.to_doubles();
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 9; ++j) {
      const double a = direct[i * 9 + j], b = t[j * 13 + i];
      ASSERT_NEAR(a, b, 1e-13 * std::fabs(a) + 1e-14) << "element (" << i << ", " << j << ")";
    }
}

TEST(RandomPaths, ChunkingDoesNotChangeNormals) {
  auto a = random::normal(3, 0.0, 1.0, {37, 41}, {37, 41}).compute(local_executor("sync")).to_doubles();
  auto b = random::normal(3, 0.0, 1.0, {37, 41}, {5, 3}).compute(local_executor("threads")).to_doubles();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-13 * std::fabs(a[i]) + 1e-14) << i;
}

TEST(RandomPaths, SliceDrawsTheSameElements) {
  auto x = random::normal(11, 10.0, 1.0, {20, 30}, {6, 7});
  const auto full = x.compute().to_doubles();
  const auto sliced = x[{slice(1, std::nullopt, 3), step(2)}].compute().to_doubles();
  std::size_t k = 0;
  for (int i = 1; i < 20; i += 3)
    for (int j = 0; j < 30; j += 2, ++k) ASSERT_NEAR(sliced[k], full[i * 30 + j], 1e-13 * std::fabs(full[i * 30 + j]) + 1e-14);
  EXPECT_EQ(k, sliced.size());
}

TEST(RandomPaths, TransposedReadsDrawTwoRowsPerCallWithTheSameValues) {
  // x.T of an n x m random x: along a row of x.T the index moves by m (even here, so the row-pair
  // path runs), from one row to the next by 1. Chunk heights odd and even, so that pairs start on
  // even and odd rows and a chunk's last row has no partner.
  for (std::int64_t m : {10, 64}) {
    for (const ChunkSpec& c : {ChunkSpec{-1, -1}, ChunkSpec{5, 7}, ChunkSpec{4, 3}, ChunkSpec{3, 8}}) {
      SCOPED_TRACE("m " + std::to_string(m) + " chunks " + std::to_string(c[0]) + "x" + std::to_string(c[1]));
      const std::int64_t n = 13;
      const Array u = random::uniform(21, -1.0, 3.0, {n, m}, c);
      const Array g = random::normal(22, 5.0, 2.0, {n, m}, c);
      const auto uw = u.compute(local_executor("sync")).to_doubles();
      const auto gw = g.compute(local_executor("sync")).to_doubles();
      const auto ut = u.T().compute(local_executor("threads")).to_doubles();
      const auto gt = g.T().compute(local_executor("threads")).to_doubles();
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < m; ++j) {
          ASSERT_EQ(ut[j * n + i], uw[i * m + j]) << "uniform (" << i << ", " << j << ")";
          ASSERT_NEAR(gt[j * n + i], gw[i * m + j], 1e-13 * std::fabs(gw[i * m + j]) + 1e-14) << "normal (" << i << ", " << j << ")";
        }
    }
  }
  // Fused with a contiguous read of the same array: the local_cupy workload.
  const Array x = random::uniform(23, 0.0, 1.0, {40, 40}, {16, 16});
  const auto w = x.compute().to_doubles();
  double want = 0;
  for (double v : w) want += 2 * v;
  EXPECT_NEAR((x + x.T()).sum().compute().item(), want, 1e-12 * want);
}

}  // namespace
