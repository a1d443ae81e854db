// numpy.random.Generator's distributions: each against its exact distribution (Kolmogorov-Smirnov
// for continuous ones, chi-square over the bins for discrete ones, and the mean and variance),
// with fixed seeds and loose bounds (p about 1e-4), so a test fails for a wrong distribution,
// not by chance. Then the counter-based contract: the same numbers for any chunking, executor,
// slice or transpose; and the parameter checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/cauchy.hpp>
#include <boost/math/distributions/extreme_value.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/inverse_gaussian.hpp>
#include <boost/math/distributions/laplace.hpp>
#include <boost/math/distributions/logistic.hpp>
#include <boost/math/distributions/negative_binomial.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>
#include <boost/math/distributions/non_central_f.hpp>
#include <boost/math/distributions/pareto.hpp>
#include <boost/math/distributions/rayleigh.hpp>
#include <boost/math/distributions/triangular.hpp>
#include <boost/math/distributions/weibull.hpp>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/exponential.hpp>
#include <boost/math/distributions/gamma.hpp>
#include <boost/math/distributions/geometric.hpp>
#include <boost/math/distributions/lognormal.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/poisson.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/distributions/uniform.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/tessera.hpp"

namespace {

using namespace tessera;
namespace bm = boost::math;

constexpr std::int64_t kSamples = 40000;

std::vector<double> values(const Array& a, const char* executor = "threads") {
  return a.compute(local_executor(executor)).to_doubles();
}

/** Kolmogorov-Smirnov distance between the sample and a continuous CDF. */
double ks_distance(std::vector<double> x, const std::function<double(double)>& cdf) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double f = cdf(x[i]);
    d = std::max({d, (static_cast<double>(i) + 1) / n - f, f - static_cast<double>(i) / n});
  }
  return d;
}

/** KS at p about 1e-4: sqrt(-ln(p / 2) / 2) / sqrt(n) = 2.23 / sqrt(n). */
void expect_ks(const std::vector<double>& x, const std::function<double(double)>& cdf) {
  const double d = ks_distance(x, cdf);
  EXPECT_LT(d, 2.23 / std::sqrt(static_cast<double>(x.size()))) << "KS distance " << d;
}

/**
 * Chi-square of integer samples against a pmf, over bins [lo, hi] holding an expected count of
 * at least 20 each (the tails lumped into the first and last), at p = 1e-4.
 */
void expect_chi_square(const std::vector<double>& x, const std::function<double(std::int64_t)>& pmf,
                       const std::function<double(std::int64_t)>& cdf) {
  const double n = static_cast<double>(x.size());
  std::map<std::int64_t, double> count;
  for (double v : x) {
    ASSERT_EQ(v, std::floor(v)) << "not an integer";
    count[static_cast<std::int64_t>(v)] += 1;
  }
  const std::int64_t lo_v = count.begin()->first, hi_v = count.rbegin()->first;
  // Bins: (-inf, b0], (b0, b1], ..., (b_last, inf), each with an expected count >= 20.
  std::vector<std::int64_t> edges;
  double acc = 0;
  for (std::int64_t k = std::min<std::int64_t>(lo_v, 0); k <= hi_v; ++k) {
    acc += pmf(k) * n;
    if (acc >= 20 && n * (1 - cdf(k)) >= 20) {
      edges.push_back(k);
      acc = 0;
    }
  }
  ASSERT_GE(edges.size(), 1u);
  std::vector<double> observed(edges.size() + 1, 0), expected(edges.size() + 1, 0);
  for (const auto& [k, c] : count) {
    const std::size_t bin = std::lower_bound(edges.begin(), edges.end(), k) - edges.begin();
    observed[bin] += c;
  }
  double prev = 0;
  for (std::size_t b = 0; b < edges.size(); ++b) {
    const double f = cdf(edges[b]);
    expected[b] = n * (f - prev);
    prev = f;
  }
  expected.back() = n * (1 - prev);
  double chi2 = 0;
  for (std::size_t b = 0; b < observed.size(); ++b) chi2 += (observed[b] - expected[b]) * (observed[b] - expected[b]) / expected[b];
  const double dof = static_cast<double>(observed.size() - 1);
  const double limit = dof > 0 ? bm::quantile(bm::chi_squared(dof), 1 - 1e-4) : 15.0;
  EXPECT_LT(chi2, limit) << "chi-square " << chi2 << " over " << observed.size() << " bins";
}

/** Sample mean and variance within 5 standard errors of the exact ones. */
void expect_moments(const std::vector<double>& x, double mean, double var) {
  const double n = static_cast<double>(x.size());
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  double s2 = 0;
  for (double v : x) s2 += (v - m) * (v - m);
  s2 /= n - 1;
  EXPECT_NEAR(m, mean, 5 * std::sqrt(var / n)) << "mean";
  // The variance's standard error needs the fourth moment; 5% is loose for these samples.
  EXPECT_NEAR(s2, var, 0.05 * var) << "variance";
}

template <class Dist>
void expect_continuous(const Array& a, const Dist& dist) {
  const auto x = values(a);
  ASSERT_EQ(static_cast<std::int64_t>(x.size()), kSamples);
  for (double v : x) ASSERT_TRUE(std::isfinite(v)) << v;
  expect_ks(x, [&](double v) { return bm::cdf(dist, v); });
  expect_moments(x, bm::mean(dist), bm::variance(dist));
}

template <class Dist>
void expect_discrete(const Array& a, const Dist& dist, std::int64_t offset = 0) {
  EXPECT_EQ(a.dtype(), DType::Int64);
  const auto x = values(a);
  ASSERT_EQ(static_cast<std::int64_t>(x.size()), kSamples);
  expect_chi_square(
      x, [&](std::int64_t k) { return k - offset < 0 ? 0.0 : bm::pdf(dist, static_cast<double>(k - offset)); },
      [&](std::int64_t k) { return k - offset < 0 ? 0.0 : bm::cdf(dist, static_cast<double>(k - offset)); });
  expect_moments(x, bm::mean(dist) + static_cast<double>(offset), bm::variance(dist));
}

const Shape kShape{200, 200};
const ChunkSpec kChunks{64, 50};

TEST(RandomDistributions, UniformAndNormal) {
  SCOPED_TRACE("random");
  expect_continuous(random::random(1, kShape, kChunks), bm::uniform(0, 1));
  SCOPED_TRACE("standard_normal");
  expect_continuous(random::standard_normal(2, kShape, kChunks), bm::normal(0, 1));
}

TEST(RandomDistributions, Exponential) {
  expect_continuous(random::standard_exponential(3, kShape, kChunks), bm::exponential(1.0));
  expect_continuous(random::exponential(4, 2.5, kShape, kChunks), bm::exponential(1 / 2.5));
}

TEST(RandomDistributions, Gamma) {
  for (double k : {0.3, 1.0, 3.7, 150.0}) {
    SCOPED_TRACE("shape " + std::to_string(k));
    expect_continuous(random::gamma(5, k, 2.0, kShape, kChunks), bm::gamma_distribution<>(k, 2.0));
  }
  expect_continuous(random::standard_gamma(6, 0.9, kShape, kChunks), bm::gamma_distribution<>(0.9, 1.0));
  const auto zero = values(random::gamma(6, 0.0, 1.0, {10}, {-1}));
  for (double v : zero) EXPECT_EQ(v, 0.0);
}

TEST(RandomDistributions, Beta) {
  for (auto [a, b] : {std::pair{0.5, 0.5}, {2.0, 5.0}, {0.7, 3.0}, {40.0, 40.0}}) {
    SCOPED_TRACE("a " + std::to_string(a) + " b " + std::to_string(b));
    expect_continuous(random::beta(7, a, b, kShape, kChunks), bm::beta_distribution<>(a, b));
  }
  // Tiny shapes: the powers underflow and the logarithmic branch answers (NumPy's Johnk).
  const auto x = values(random::beta(8, 1e-3, 2e-3, {5000}, {1000}));
  std::int64_t ones = 0;
  for (double v : x) {
    ASSERT_TRUE(v >= 0 && v <= 1) << v;
    ones += v > 0.5;
  }
  // Tiny shapes put the mass at 0 and 1 in the ratio 1/a : 1/b, so P(X > 1/2) = a / (a + b) = 1/3.
  EXPECT_NEAR(static_cast<double>(ones) / 5000, 1.0 / 3.0, 0.03);
}

TEST(RandomDistributions, ChisquareStudentTAndLognormal) {
  expect_continuous(random::chisquare(9, 3.0, kShape, kChunks), bm::chi_squared(3.0));
  {
    // t's variance needs df > 4 and converges slowly: KS and the mean.
    const auto t = values(random::standard_t(10, 6.0, kShape, kChunks));
    const bm::students_t dist(6.0);
    expect_ks(t, [&](double v) { return bm::cdf(dist, v); });
    const auto t1 = values(random::standard_t(10, 1.0, kShape, kChunks));  // Cauchy
    expect_ks(t1, [&](double v) { return bm::cdf(bm::students_t(1.0), v); });
  }
  {
    const auto x = values(random::lognormal(11, 0.5, 0.4, kShape, kChunks));
    const bm::lognormal dist(0.5, 0.4);
    expect_ks(x, [&](double v) { return bm::cdf(dist, v); });
    expect_moments(x, bm::mean(dist), bm::variance(dist));
  }
}

TEST(RandomDistributions, Poisson) {
  // Below 10 by multiplication, PTRS above.
  for (double lam : {0.2, 3.5, 9.99, 10.0, 47.0, 1e4}) {
    SCOPED_TRACE("lam " + std::to_string(lam));
    expect_discrete(random::poisson(12, lam, kShape, kChunks), bm::poisson(lam));
  }
  for (double v : values(random::poisson(12, 0.0, {10}, {-1}))) EXPECT_EQ(v, 0.0);
}

TEST(RandomDistributions, Binomial) {
  // Inversion (n p < 10), BTRS, and p > 1/2 by symmetry.
  for (auto [n, p] : {std::pair<std::int64_t, double>{20, 0.3}, {1, 0.5}, {1000, 0.004}, {1000, 0.4}, {100, 0.9},
                      {1000000, 0.25}}) {
    SCOPED_TRACE("n " + std::to_string(n) + " p " + std::to_string(p));
    expect_discrete(random::binomial(13, n, p, kShape, kChunks), bm::binomial(static_cast<double>(n), p));
  }
  for (double v : values(random::binomial(13, 7, 1.0, {10}, {-1}))) EXPECT_EQ(v, 7.0);
  for (double v : values(random::binomial(13, 7, 0.0, {10}, {-1}))) EXPECT_EQ(v, 0.0);
}

TEST(RandomDistributions, Geometric) {
  // boost's geometric counts failures; NumPy's (and ours) counts trials: one more.
  for (double p : {0.02, 0.3, 0.9}) {
    SCOPED_TRACE("p " + std::to_string(p));
    expect_discrete(random::geometric(14, p, kShape, kChunks), bm::geometric(p), 1);
  }
  for (double v : values(random::geometric(14, 1.0, {10}, {-1}))) EXPECT_EQ(v, 1.0);
}

TEST(RandomDistributions, IntegersWithEndpoint) {
  const auto x = values(random::integers(15, -3, 3, {kSamples}, {999}, DType::Int64, true));
  std::map<double, int> seen;
  for (double v : x) ++seen[v];
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen.begin()->first, -3);
  EXPECT_EQ(seen.rbegin()->first, 3);
  for (const auto& [v, c] : seen) EXPECT_NEAR(c, kSamples / 7.0, 5 * std::sqrt(kSamples / 7.0)) << v;
  // A single value, and the top of int64.
  for (double v : values(random::integers(15, 5, 5, {20}, {-1}, DType::Int64, true))) EXPECT_EQ(v, 5);
  const Block top = random::integers(15, INT64_MAX - 1, INT64_MAX, {200}, {-1}, DType::Int64, true).compute();
  std::set<std::int64_t> tops(top.data<std::int64_t>(), top.data<std::int64_t>() + 200);
  EXPECT_EQ(tops, (std::set<std::int64_t>{INT64_MAX - 1, INT64_MAX}));
  const Block i32 = random::integers(15, -2, 2, {100}, {30}, DType::Int32, true).compute();
  EXPECT_EQ(i32.dtype(), DType::Int32);
}

TEST(RandomDistributions, PermutationIsAPermutation) {
  for (std::int64_t n : {0, 1, 2, 3, 5, 64, 1000, 4097}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const Array p = random::permutation(21, n, 300);
    EXPECT_EQ(p.dtype(), DType::Int64);
    const Block b = p.compute(local_executor("threads"));
    std::vector<std::int64_t> v(b.data<std::int64_t>(), b.data<std::int64_t>() + n);
    std::sort(v.begin(), v.end());
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i);
  }
  // Shuffled: for n = 1000 few elements stay put (1 expected).
  const Block b = random::permutation(22, 1000, 128).compute();
  int fixed = 0;
  for (int i = 0; i < 1000; ++i) fixed += b.data<std::int64_t>()[i] == i;
  EXPECT_LT(fixed, 8);
}

TEST(RandomDistributions, PermutationPositionsAreUniform) {
  // Where element 0 goes, over many seeds, in a permutation of 10: uniform over 10 positions.
  std::vector<double> where;
  for (std::uint64_t seed = 0; seed < 4000; ++seed) {
    const Block b = random::permutation(seed, 10).compute(local_executor("sync"));
    for (int i = 0; i < 10; ++i)
      if (b.data<std::int64_t>()[i] == 0) where.push_back(i);
  }
  ASSERT_EQ(where.size(), 4000u);
  std::vector<double> count(10, 0);
  for (double w : where) count[static_cast<int>(w)] += 1;
  double chi2 = 0;
  for (double c : count) chi2 += (c - 400) * (c - 400) / 400;
  EXPECT_LT(chi2, bm::quantile(bm::chi_squared(9), 1 - 1e-4));
}

TEST(RandomDistributions, Choice) {
  // With replacement: uniform over range(a).
  const auto u = values(random::choice(31, 6, {kSamples}, {5000}));
  expect_chi_square(
      u, [](std::int64_t k) { return k >= 0 && k < 6 ? 1.0 / 6 : 0.0; },
      [](std::int64_t k) { return k < 0 ? 0.0 : std::min(1.0, (k + 1) / 6.0); });
  // With probabilities.
  const std::vector<double> p{0.1, 0.0, 0.25, 0.5, 0.15};
  const Array w = random::choice(32, 5, {200, 200}, {64, 64}, true, p);
  EXPECT_EQ(w.dtype(), DType::Int64);
  const auto x = values(w);
  std::vector<double> cdf(p.size());
  double acc = 0;
  for (std::size_t k = 0; k < p.size(); ++k) cdf[k] = acc += p[k];
  std::vector<double> count(p.size(), 0);
  for (double v : x) {
    ASSERT_TRUE(v >= 0 && v < 5) << v;
    count[static_cast<int>(v)] += 1;
  }
  EXPECT_EQ(count[1], 0);
  for (std::size_t k = 0; k < p.size(); ++k)
    EXPECT_NEAR(count[k], p[k] * kSamples, 5 * std::sqrt(kSamples * p[k] + 1)) << k;
  // Without replacement: distinct values of range(a).
  const Block d = random::choice(33, 50, {5, 8}, {2, 3}, false).compute();
  EXPECT_EQ(d.shape(), (Shape{5, 8}));
  std::set<std::int64_t> distinct(d.data<std::int64_t>(), d.data<std::int64_t>() + 40);
  EXPECT_EQ(distinct.size(), 40u);
  EXPECT_GE(*distinct.begin(), 0);
  EXPECT_LT(*distinct.rbegin(), 50);
  // All of them: a permutation.
  const Block all = random::choice(33, 7, {7}, {3}, false).compute();
  std::set<std::int64_t> every(all.data<std::int64_t>(), all.data<std::int64_t>() + 7);
  EXPECT_EQ(every.size(), 7u);
}

// ---- the counter-based contract -------------------------------------------------------------------

struct Named {
  const char* name;
  std::function<Array(std::uint64_t seed, const Shape&, const ChunkSpec&)> make;
};

std::vector<Named> all_distributions() {
  return {
      {"exponential", [](auto s, auto& sh, auto& c) { return random::exponential(s, 1.5, sh, c); }},
      {"gamma<1", [](auto s, auto& sh, auto& c) { return random::gamma(s, 0.4, 1.0, sh, c); }},
      {"gamma", [](auto s, auto& sh, auto& c) { return random::gamma(s, 2.5, 3.0, sh, c); }},
      {"beta", [](auto s, auto& sh, auto& c) { return random::beta(s, 2.0, 3.0, sh, c); }},
      {"beta<1", [](auto s, auto& sh, auto& c) { return random::beta(s, 0.5, 0.3, sh, c); }},
      {"chisquare", [](auto s, auto& sh, auto& c) { return random::chisquare(s, 4.0, sh, c); }},
      {"standard_t", [](auto s, auto& sh, auto& c) { return random::standard_t(s, 3.0, sh, c); }},
      {"lognormal", [](auto s, auto& sh, auto& c) { return random::lognormal(s, 0.0, 1.0, sh, c); }},
      {"poisson", [](auto s, auto& sh, auto& c) { return random::poisson(s, 4.0, sh, c); }},
      {"poisson_large", [](auto s, auto& sh, auto& c) { return random::poisson(s, 400.0, sh, c); }},
      {"binomial", [](auto s, auto& sh, auto& c) { return random::binomial(s, 30, 0.2, sh, c); }},
      {"binomial_large", [](auto s, auto& sh, auto& c) { return random::binomial(s, 5000, 0.7, sh, c); }},
      {"geometric", [](auto s, auto& sh, auto& c) { return random::geometric(s, 0.25, sh, c); }},
      {"choice", [](auto s, auto& sh, auto& c) { return random::choice(s, 1000, sh, c, false); }},
      {"noncentral_chisquare", [](auto s, auto& sh, auto& c) { return random::Generator(s).noncentral_chisquare(0.7, 2.0, sh, c); }},
      {"vonmises", [](auto s, auto& sh, auto& c) { return random::Generator(s).vonmises(0.5, 3.0, sh, c); }},
      {"negative_binomial", [](auto s, auto& sh, auto& c) { return random::Generator(s).negative_binomial(2.5, 0.3, sh, c); }},
      {"zipf", [](auto s, auto& sh, auto& c) { return random::Generator(s).zipf(1.7, sh, c); }},
      {"logseries", [](auto s, auto& sh, auto& c) { return random::Generator(s).logseries(0.9, sh, c); }},
      {"hypergeometric", [](auto s, auto& sh, auto& c) { return random::Generator(s).hypergeometric(40, 70, 33, sh, c); }},
  };
}

std::vector<std::uint8_t> bytes_of(const Block& b) {
  const auto* p = static_cast<const std::uint8_t*>(b.raw());
  return {p, p + b.nbytes()};
}

/** Equal, or for lognormal (exp of the vectorised normal kernels) within a few ulps. */
::testing::AssertionResult same_values(const std::vector<double>& got, const std::vector<double>& want, bool ulps) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i)
    if (ulps ? std::fabs(got[i] - want[i]) > 1e-13 * std::fabs(want[i]) : got[i] != want[i])
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

TEST(RandomDistributions, SameSeedSameValuesForAnyChunkingAndExecutor) {
  const Shape shape{37, 23};
  for (const auto& d : all_distributions()) {
    SCOPED_TRACE(d.name);
    // Distributions of random_semantics.hpp are bit-identical everywhere; lognormal is exp of
    // normal, whose paired and strided kernels agree to an ulp or two (random_paths_test.cpp).
    const bool ulps = std::strcmp(d.name, "lognormal") == 0;
    const Block want = d.make(77, shape, {-1}).compute(local_executor("sync"));
    const auto w = want.to_doubles();
    for (const ChunkSpec& c : {ChunkSpec{5}, ChunkSpec{37, 1}, ChunkSpec{1, 23}, ChunkSpec{10, 7}}) {
      const Block got = d.make(77, shape, c).compute(local_executor("threads"));
      if (ulps) ASSERT_TRUE(same_values(got.to_doubles(), w, true)) << "chunks " << c[0];
      else ASSERT_EQ(bytes_of(got), bytes_of(want)) << "chunks " << c[0];
    }
    // The same flat sequence for another shape of the same size.
    EXPECT_TRUE(same_values(d.make(77, {37 * 23}, {100}).compute().to_doubles(), w, ulps));
    // Slices and transposes draw the elements they keep, one by one.
    const Array x = d.make(77, shape, {8, 8});
    const auto tv = x.T().compute().to_doubles();
    const auto sv = x[{slice(3, std::nullopt, 4), step(-3)}].compute().to_doubles();
    std::vector<double> tw, sw;
    for (int j = 0; j < 23; ++j)
      for (int i = 0; i < 37; ++i) tw.push_back(w[i * 23 + j]);
    for (int i = 3; i < 37; i += 4)
      for (int j = 22; j >= 0; j -= 3) sw.push_back(w[i * 23 + j]);
    EXPECT_TRUE(same_values(tv, tw, ulps)) << "transpose";
    EXPECT_TRUE(same_values(sv, sw, ulps)) << "slice";
    // Another seed: other numbers.
    EXPECT_NE(bytes_of(d.make(78, shape, {-1}).compute()), bytes_of(want));
  }
}

TEST(RandomDistributions, ExpressionsOverDistributionsFuse) {
  // A distribution is a generator leaf like normal: sliced sums draw only the kept elements.
  const Array g = random::gamma(3, 2.0, 1.0, {300, 300}, {64, 64});
  const double fused = (g + 1)[{step(2), step(2)}].sum().compute().item();
  const auto all = values(g);
  double want = 0;
  for (int i = 0; i < 300; i += 2)
    for (int j = 0; j < 300; j += 2) want += all[i * 300 + j] + 1;
  EXPECT_NEAR(fused, want, 1e-9 * want);
}

TEST(RandomDistributions, GeneratorCallsAreIndependentStreams) {
  random::Generator rng(5);
  const Array a = rng.gamma(2.0, 1.0, {100}, {30});
  const Array b = rng.gamma(2.0, 1.0, {100}, {30});
  EXPECT_NE(values(a), values(b));
  // The first array of Generator(seed) is the free function's.
  random::Generator again(5);
  EXPECT_EQ(values(again.gamma(2.0, 1.0, {100}, {7})), values(random::gamma(5, 2.0, 1.0, {100}, {-1})));
  // RandomState is a Generator: the same streams as before.
  random::RandomState rs(9);
  auto rng9 = random::default_rng(9);
  EXPECT_EQ(values(rs.normal(0, 1, {50}, {10})), values(rng9.normal(0, 1, {50}, {10})));
  EXPECT_EQ(values(rs.poisson(3.0, {50}, {10})), values(rng9.poisson(3.0, {50}, {10})));
  // Different distributions from one seed are not the same numbers in disguise.
  EXPECT_NE(values(random::standard_exponential(1, {50}, {-1})), values(random::exponential(1, 2.0, {50}, {-1})));
}

TEST(RandomDistributions, BadParametersThrowWhenBuilt) {
  const double nan = std::nan("");
  EXPECT_THROW(random::exponential(1, -1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::gamma(1, -0.5, 1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::gamma(1, 1.0, -1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::gamma(1, nan, 1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::beta(1, 0.0, 1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::beta(1, 1.0, nan, {4}, {-1}), Error);
  EXPECT_THROW(random::chisquare(1, 0.0, {4}, {-1}), Error);
  EXPECT_THROW(random::standard_t(1, -2.0, {4}, {-1}), Error);
  EXPECT_THROW(random::lognormal(1, 0.0, -1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::poisson(1, -1.0, {4}, {-1}), Error);
  EXPECT_THROW(random::poisson(1, nan, {4}, {-1}), Error);
  EXPECT_THROW(random::poisson(1, 1e300, {4}, {-1}), Error);
  EXPECT_THROW(random::binomial(1, -1, 0.5, {4}, {-1}), Error);
  EXPECT_THROW(random::binomial(1, 10, 1.5, {4}, {-1}), Error);
  EXPECT_THROW(random::geometric(1, 0.0, {4}, {-1}), Error);
  EXPECT_THROW(random::geometric(1, 1.1, {4}, {-1}), Error);
  EXPECT_THROW(random::permutation(1, -1), Error);
  EXPECT_THROW(random::choice(1, 0, {4}, {-1}), Error);
  EXPECT_THROW(random::choice(1, 3, {4}, {-1}, false), Error);
  EXPECT_THROW(random::choice(1, 3, {4}, {-1}, true, {0.5, 0.5}), Error);
  EXPECT_THROW(random::choice(1, 2, {4}, {-1}, true, {0.5, 0.6}), Error);
  EXPECT_THROW(random::choice(1, 2, {4}, {-1}, true, {-0.5, 1.5}), Error);
  EXPECT_THROW(random::choice(1, 2, {4}, {-1}, false, {0.5, 0.5}), Error);
  EXPECT_THROW(random::integers(1, 5, 4, {4}, {-1}, DType::Int64, true), Error);
  EXPECT_THROW(random::integers(1, 0, std::int64_t{1} << 40, {4}, {-1}, DType::Int32), Error);
  EXPECT_THROW(random::integers(1, INT64_MIN, INT64_MAX, {4}, {-1}, DType::Int64, true), Error);
  EXPECT_THROW(random::gamma(1, 1.0, 1.0, {-4}, {-1}), ShapeError);
}


// ---- the distributions added after the first set: composed ones and more samplers ------------------

/** KS only: for heavy tails, where the sample variance does not settle. */
template <class Dist>
void expect_ks_only(const Array& a, const Dist& dist) {
  const auto x = values(a);
  ASSERT_EQ(static_cast<std::int64_t>(x.size()), kSamples);
  expect_ks(x, [&](double v) { return bm::cdf(dist, v); });
}

TEST(RandomDistributions, ComposedContinuous) {
  random::Generator g(40);
  expect_continuous(g.laplace(1.0, 2.0, kShape, kChunks), bm::laplace(1.0, 2.0));
  expect_continuous(g.logistic(-1.0, 0.5, kShape, kChunks), bm::logistic(-1.0, 0.5));
  // Gumbel (maximum) is boost's extreme value distribution.
  expect_continuous(g.gumbel(0.5, 2.0, kShape, kChunks), bm::extreme_value(0.5, 2.0));
  expect_continuous(g.rayleigh(1.5, kShape, kChunks), bm::rayleigh(1.5));
  expect_continuous(g.weibull(0.7, kShape, kChunks), bm::weibull(0.7, 1.0));
  expect_continuous(g.weibull(3.0, kShape, kChunks), bm::weibull(3.0, 1.0));
  // NumPy's pareto is Lomax: the classical Pareto(scale 1) minus 1.
  expect_ks_only(g.pareto(3.0, kShape, kChunks) + 1.0, bm::pareto(1.0, 3.0));
  // power(a) is Beta(a, 1).
  expect_continuous(g.power(0.5, kShape, kChunks), bm::beta_distribution<>(0.5, 1.0));
  expect_continuous(g.power(4.0, kShape, kChunks), bm::beta_distribution<>(4.0, 1.0));
  expect_ks_only(g.standard_cauchy(kShape, kChunks), bm::cauchy(0.0, 1.0));
  expect_continuous(g.wald(1.5, 2.0, kShape, kChunks), bm::inverse_gaussian(1.5, 2.0));
  expect_continuous(g.triangular(-1.0, 0.5, 3.0, kShape, kChunks), bm::triangular(-1.0, 0.5, 3.0));
  expect_continuous(g.triangular(0.0, 0.0, 1.0, kShape, kChunks), bm::triangular(0.0, 0.0, 1.0));
  expect_continuous(g.f(5.0, 12.0, kShape, kChunks), bm::fisher_f(5.0, 12.0));
  expect_ks_only(g.noncentral_f(3.0, 20.0, 3.0, kShape, kChunks), bm::non_central_f(3.0, 20.0, 3.0));
  for (double v : values(g.weibull(0.0, {10}, {-1}))) EXPECT_EQ(v, 0.0);
}

TEST(RandomDistributions, NoncentralChisquare) {
  // df > 1 (a central chi-square plus a shifted normal squared), df <= 1 (Poisson mixture), and
  // nonc 0 (central).
  random::Generator g(41);
  for (auto [df, nonc] : {std::pair{3.0, 2.0}, {0.5, 1.5}, {1.0, 10.0}, {2.0, 0.0}, {40.0, 200.0}}) {
    SCOPED_TRACE("df " + std::to_string(df) + " nonc " + std::to_string(nonc));
    const Array x = g.noncentral_chisquare(df, nonc, kShape, kChunks);
    if (nonc == 0) expect_continuous(x, bm::chi_squared(df));
    else expect_continuous(x, bm::non_central_chi_squared(df, nonc));
  }
}

TEST(RandomDistributions, VonMises) {
  // No von Mises in boost: its CDF by numerical integration of the density
  // exp(kappa cos(x - mu)) / (2 pi I0(kappa)) on [-pi, pi), and E[cos(x - mu)] = I1 / I0.
  random::Generator g(42);
  constexpr double pi = 3.14159265358979323846;
  for (auto [mu, kappa] : {std::pair{0.5, 3.0}, {-3.0, 0.5}, {2.0, 50.0}, {0.0, 1e-9}}) {
    SCOPED_TRACE("mu " + std::to_string(mu) + " kappa " + std::to_string(kappa));
    const auto x = values(g.vonmises(mu, kappa, kShape, kChunks));
    for (double v : x) ASSERT_TRUE(v >= -pi && v < pi) << v;
    constexpr int kGrid = 20000;
    std::vector<double> cdf(kGrid + 1, 0.0);
    const double h = 2 * pi / kGrid;
    for (int i = 1; i <= kGrid; ++i) {  // the trapezoid rule, with the density scaled by exp(-kappa)
      const double a = -pi + (i - 1) * h, b = a + h;
      cdf[i] = cdf[i - 1] + 0.5 * h * (std::exp(kappa * (std::cos(a - mu) - 1)) + std::exp(kappa * (std::cos(b - mu) - 1)));
    }
    for (double& c : cdf) c /= cdf.back();
    expect_ks(x, [&](double v) {
      const double t = (v + pi) / h;
      const int i = std::clamp(static_cast<int>(t), 0, kGrid - 1);
      return cdf[i] + (t - i) * (cdf[i + 1] - cdf[i]);
    });
    if (kappa > 1e-6) {
      double m = 0;
      for (double v : x) m += std::cos(v - mu);
      m /= static_cast<double>(x.size());
      const double want = std::cyl_bessel_i(1.0, kappa) / std::cyl_bessel_i(0.0, kappa);
      EXPECT_NEAR(m, want, 0.01) << "mean resultant length";
    }
  }
}

/** The CDF of a pmf on k >= 1, its partial sums kept as they are asked for (in rising k). */
std::function<double(std::int64_t)> cumulative(std::function<double(std::int64_t)> pmf) {
  auto sums = std::make_shared<std::vector<double>>(1, 0.0);  // sums[k] = P(X <= k)
  return [pmf = std::move(pmf), sums](std::int64_t k) {
    if (k < 1) return 0.0;
    while (static_cast<std::int64_t>(sums->size()) <= k)
      sums->push_back(sums->back() + pmf(static_cast<std::int64_t>(sums->size())));
    return (*sums)[static_cast<std::size_t>(k)];
  };
}

TEST(RandomDistributions, NegativeBinomialZipfAndLogseries) {
  random::Generator g(43);
  for (auto [n, p] : {std::pair{5.0, 0.4}, {0.7, 0.05}, {30.0, 0.9}}) {
    SCOPED_TRACE("negative_binomial n " + std::to_string(n) + " p " + std::to_string(p));
    expect_discrete(g.negative_binomial(n, p, kShape, kChunks), bm::negative_binomial(n, p));
  }
  for (double v : values(g.negative_binomial(3.0, 1.0, {10}, {-1}))) EXPECT_EQ(v, 0.0);
  // Zipf: P(k) = k^-a / zeta(a), k >= 1 (heavy-tailed: chi-square over the bins only).
  for (double a : {2.0, 2.5, 6.0}) {
    SCOPED_TRACE("zipf a " + std::to_string(a));
    const Array z = g.zipf(a, kShape, kChunks);
    EXPECT_EQ(z.dtype(), DType::Int64);
    const double zeta = std::riemann_zeta(a);
    auto pmf = [&](std::int64_t k) { return k < 1 ? 0.0 : std::pow(static_cast<double>(k), -a) / zeta; };
    expect_chi_square(values(z), pmf, cumulative(pmf));
  }
  // Logarithmic series: P(k) = -p^k / (k ln(1 - p)), k >= 1.
  for (double p : {0.3, 0.9, 0.999}) {
    SCOPED_TRACE("logseries p " + std::to_string(p));
    auto pmf = [&](std::int64_t k) {
      return k < 1 ? 0.0 : -std::pow(p, static_cast<double>(k)) / (static_cast<double>(k) * std::log1p(-p));
    };
    const auto x = values(g.logseries(p, kShape, kChunks));
    expect_chi_square(x, pmf, cumulative(pmf));
    const double mean = -p / ((1 - p) * std::log1p(-p));
    const double var = -p * (p + std::log1p(-p)) / ((1 - p) * (1 - p) * std::log1p(-p) * std::log1p(-p));
    expect_moments(x, mean, var);
  }
  for (double v : values(g.logseries(0.0, {10}, {-1}))) EXPECT_EQ(v, 1.0);
}

TEST(RandomDistributions, Hypergeometric) {
  random::Generator g(44);
  // Both of the sampler's paths: fewer than 10 draws (the sample or its complement) item by item,
  // more through ratio-of-uniforms; the colours either way round.
  for (auto [good, bad, sample] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{7, 12, 5}, {7, 12, 16},
                                   {400, 900, 300}, {900, 400, 1000}, {50, 50, 1}, {3000, 20, 1500}}) {
    SCOPED_TRACE("hypergeometric " + std::to_string(good) + " " + std::to_string(bad) + " " + std::to_string(sample));
    const double total = static_cast<double>(good + bad);
    // P(k) = C(good, k) C(bad, sample - k) / C(total, sample), in logarithms.
    auto log_choose = [](double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); };
    auto pmf = [&, good = good, bad = bad, sample = sample](std::int64_t k) {
      if (k < 0 || k > good || sample - k < 0 || sample - k > bad) return 0.0;
      return std::exp(log_choose(static_cast<double>(good), static_cast<double>(k)) +
                      log_choose(static_cast<double>(bad), static_cast<double>(sample - k)) -
                      log_choose(total, static_cast<double>(sample)));
    };
    auto cdf = [&](std::int64_t k) {
      double c = 0;
      for (std::int64_t j = 0; j <= k; ++j) c += pmf(j);
      return c;
    };
    const Array h = g.hypergeometric(good, bad, sample, kShape, kChunks);
    EXPECT_EQ(h.dtype(), DType::Int64);
    const auto x = values(h);
    expect_chi_square(x, pmf, cdf);
    const double p = static_cast<double>(good) / total, n = static_cast<double>(sample);
    expect_moments(x, n * p, n * p * (1 - p) * (total - n) / (total - 1));
  }
  // The ends of the support.
  for (double v : values(g.hypergeometric(0, 9, 4, {10}, {-1}))) EXPECT_EQ(v, 0.0);
  for (double v : values(g.hypergeometric(9, 0, 4, {10}, {-1}))) EXPECT_EQ(v, 4.0);
  for (double v : values(g.hypergeometric(9, 5, 0, {10}, {-1}))) EXPECT_EQ(v, 0.0);
  for (double v : values(g.hypergeometric(9, 5, 14, {10}, {-1}))) EXPECT_EQ(v, 9.0);
}

TEST(RandomDistributions, MoreBadParametersThrowWhenBuilt) {
  random::Generator h(1);
  EXPECT_THROW(h.hypergeometric(-1, 5, 2, {4}, {-1}), Error);
  EXPECT_THROW(h.hypergeometric(1, -5, 2, {4}, {-1}), Error);
  EXPECT_THROW(h.hypergeometric(1, 5, -2, {4}, {-1}), Error);
  EXPECT_THROW(h.hypergeometric(1, 5, 7, {4}, {-1}), Error);
  EXPECT_THROW(h.hypergeometric(600000000, 500000000, 7, {4}, {-1}), Error);
  random::Generator g(1);
  const double nan = std::nan("");
  EXPECT_THROW(g.laplace(0, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.logistic(0, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.gumbel(0, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.rayleigh(-1, {4}, {-1}), Error);
  EXPECT_THROW(g.weibull(-1, {4}, {-1}), Error);
  EXPECT_THROW(g.pareto(0, {4}, {-1}), Error);
  EXPECT_THROW(g.power(0, {4}, {-1}), Error);
  EXPECT_THROW(g.wald(0, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.wald(1, 0, {4}, {-1}), Error);
  EXPECT_THROW(g.triangular(1, 0, 2, {4}, {-1}), Error);
  EXPECT_THROW(g.triangular(0, 3, 2, {4}, {-1}), Error);
  EXPECT_THROW(g.triangular(1, 1, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.f(0, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.noncentral_f(1, 1, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.noncentral_chisquare(0, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.noncentral_chisquare(1, nan, {4}, {-1}), Error);
  EXPECT_THROW(g.vonmises(0, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.vonmises(nan, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.negative_binomial(0, 0.5, {4}, {-1}), Error);
  EXPECT_THROW(g.negative_binomial(1, 0, {4}, {-1}), Error);
  EXPECT_THROW(g.zipf(1.0, {4}, {-1}), Error);
  EXPECT_THROW(g.logseries(1.0, {4}, {-1}), Error);
  EXPECT_THROW(g.logseries(-0.1, {4}, {-1}), Error);
}

}  // namespace
