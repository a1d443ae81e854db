// The random distributions on the host: one element at a time through random_semantics.hpp, the
// definitions the device kernels compile too. Built once (not per ISA level, not with
// -ffast-math, unlike kernels/random.cpp): a rejection test or a discrete value that an ulp can
// move must come out the same on every machine of a cluster.
#include "random_semantics.hpp"

#include "program.hpp"

namespace tessera::detail {

static_assert(rng::kExponential == static_cast<int>(GenKind::Exponential));
static_assert(rng::kGamma == static_cast<int>(GenKind::Gamma));
static_assert(rng::kBeta == static_cast<int>(GenKind::Beta));
static_assert(rng::kPoisson == static_cast<int>(GenKind::Poisson));
static_assert(rng::kBinomial == static_cast<int>(GenKind::Binomial));
static_assert(rng::kStandardT == static_cast<int>(GenKind::StandardT));
static_assert(rng::kGeometric == static_cast<int>(GenKind::Geometric));
static_assert(rng::kPermutation == static_cast<int>(GenKind::Permutation));
static_assert(rng::kNegativeBinomial == static_cast<int>(GenKind::NegativeBinomial));
static_assert(rng::kNoncentralChisquare == static_cast<int>(GenKind::NoncentralChisquare));
static_assert(rng::kVonMises == static_cast<int>(GenKind::VonMises));
static_assert(rng::kZipf == static_cast<int>(GenKind::Zipf));
static_assert(rng::kLogseries == static_cast<int>(GenKind::Logseries));
static_assert(rng::kHypergeometric == static_cast<int>(GenKind::Hypergeometric));

void sample_distribution_f64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t n0,
                             std::int64_t start, std::int64_t delta, std::int64_t n, double* out) {
  for (std::int64_t j = 0; j < n; ++j)
    out[j] = rng::sample_f64(gen, key, p0, p1, n0, static_cast<std::uint64_t>(start + delta * j));
}

void sample_distribution_i64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t n0,
                             std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out) {
  for (std::int64_t j = 0; j < n; ++j)
    out[j] = rng::sample_i64(gen, key, p0, p1, n0, static_cast<std::uint64_t>(start + delta * j));
}

}  // namespace tessera::detail
