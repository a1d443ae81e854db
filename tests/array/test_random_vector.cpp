// multinomial and multivariate_hypergeometric (src/array/random_vector.cpp): every row adds up,
// each column has its exact marginal (binomial, hypergeometric: chi-square at p about 1e-4 and
// the mean), the rows are the same for any chunking and executor, and bad parameters throw.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

constexpr std::int64_t kRows = 20000;

std::vector<std::int64_t> values(const Array& a, const char* executor = "threads") {
  const Block b = a.compute(local_executor(executor));
  EXPECT_EQ(b.dtype(), DType::Int64);
  const auto* p = b.data<std::int64_t>();
  return {p, p + b.size()};
}

double log_choose(double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); }

/** Chi-square of column j of rows of k counts against pmf, bins of expected count >= 20 (tails lumped). */
void expect_column(const std::vector<std::int64_t>& x, int k, int j, const std::function<double(std::int64_t)>& pmf,
                   std::int64_t top) {
  const auto rows = static_cast<double>(x.size() / static_cast<std::size_t>(k));
  std::map<std::int64_t, double> count;
  double mean = 0;
  for (std::size_t r = 0; r < x.size(); r += static_cast<std::size_t>(k)) {
    count[x[r + static_cast<std::size_t>(j)]] += 1;
    mean += static_cast<double>(x[r + static_cast<std::size_t>(j)]);
  }
  mean /= rows;
  // Bins: consecutive values merged until each expects at least 20.
  double chi2 = 0, expected = 0, observed = 0, want_mean = 0, want_var = 0;
  int bins = 0;
  for (std::int64_t v = 0; v <= top; ++v) {
    const double p = pmf(v);
    want_mean += p * static_cast<double>(v);
    want_var += p * static_cast<double>(v) * static_cast<double>(v);
    expected += p * rows;
    observed += count.count(v) ? count[v] : 0;
    if (expected >= 20 || v == top) {
      if (expected > 0) chi2 += (observed - expected) * (observed - expected) / expected;
      ++bins;
      expected = observed = 0;
    }
  }
  want_var -= want_mean * want_mean;
  // chi-square's 1 - 1e-4 quantile is below dof + 4 sqrt(2 dof) + 16 for these bin counts.
  const double dof = bins - 1;
  EXPECT_LT(chi2, dof + 4 * std::sqrt(2 * dof) + 16) << "column " << j << ": chi-square " << chi2 << " over " << bins << " bins";
  EXPECT_NEAR(mean, want_mean, 5 * std::sqrt(want_var / rows)) << "column " << j;
}

TEST(RandomVector, MultinomialRowsAddUpAndColumnsAreBinomial) {
  const std::vector<double> pvals{0.05, 0.15, 0.6, 0.2};
  for (std::int64_t n : {20, 500}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const Array m = random::Generator(3).multinomial(n, pvals, {kRows / 100, 100}, {64, 30});
    EXPECT_EQ(m.shape(), (Shape{kRows / 100, 100, 4}));
    EXPECT_EQ(m.chunks().back(), (std::vector<std::int64_t>{4}));
    const auto x = values(m);
    for (std::size_t r = 0; r < x.size(); r += 4) {
      ASSERT_EQ(x[r] + x[r + 1] + x[r + 2] + x[r + 3], n) << "row " << r / 4;
      for (int j = 0; j < 4; ++j) ASSERT_GE(x[r + static_cast<std::size_t>(j)], 0);
    }
    for (int j = 0; j < 4; ++j) {
      const double p = pvals[static_cast<std::size_t>(j)];
      expect_column(x, 4, j, [&](std::int64_t v) {
        return std::exp(log_choose(static_cast<double>(n), static_cast<double>(v)) + static_cast<double>(v) * std::log(p) +
                        static_cast<double>(n - v) * std::log1p(-p));
      }, n);
    }
  }
  // The last outcome takes what the others leave, as NumPy's.
  for (auto v : values(random::Generator(4).multinomial(9, {1.0, 0.7}, {5}, {-1}))) EXPECT_TRUE(v == 9 || v == 0);
}

TEST(RandomVector, MultivariateHypergeometricBothMethods) {
  const std::vector<std::int64_t> colors{300, 120, 500, 80};
  const std::int64_t total = 1000;
  for (const char* method : {"marginals", "count"}) {
    SCOPED_TRACE(method);
    for (std::int64_t nsample : {8, 400}) {
      SCOPED_TRACE("nsample " + std::to_string(nsample));
      const auto x = values(random::Generator(5).multivariate_hypergeometric(colors, nsample, {kRows}, {3000}, method));
      ASSERT_EQ(x.size(), static_cast<std::size_t>(kRows * 4));
      for (std::size_t r = 0; r < x.size(); r += 4) {
        ASSERT_EQ(x[r] + x[r + 1] + x[r + 2] + x[r + 3], nsample) << "row " << r / 4;
        for (std::size_t j = 0; j < 4; ++j) ASSERT_TRUE(x[r + j] >= 0 && x[r + j] <= colors[j]);
      }
      for (int j = 0; j < 4; ++j) {
        const double good = static_cast<double>(colors[static_cast<std::size_t>(j)]), bad = static_cast<double>(total) - good;
        expect_column(x, 4, j, [&](std::int64_t v) {
          const double k = static_cast<double>(v), n = static_cast<double>(nsample);
          if (k > good || n - k > bad) return 0.0;
          return std::exp(log_choose(good, k) + log_choose(bad, n - k) - log_choose(static_cast<double>(total), n));
        }, nsample);
      }
    }
  }
  // All of them: each colour whole.
  const auto all = values(random::Generator(6).multivariate_hypergeometric({4, 0, 7}, 11, {3}, {-1}));
  EXPECT_EQ(all, (std::vector<std::int64_t>{4, 0, 7, 4, 0, 7, 4, 0, 7}));
}

TEST(RandomVector, SameRowsForAnyChunkingAndExecutor) {
  auto multinomial = [](const ChunkSpec& c) { return random::Generator(9).multinomial(50, {0.3, 0.3, 0.4}, {37, 23}, c); };
  auto hyper = [](const ChunkSpec& c) {
    return random::Generator(9).multivariate_hypergeometric({30, 40, 50}, 60, {37, 23}, c);
  };
  for (auto make : {std::function<Array(const ChunkSpec&)>(multinomial), std::function<Array(const ChunkSpec&)>(hyper)}) {
    const auto want = values(make(ChunkSpec{-1}), "sync");
    for (const ChunkSpec& c : {ChunkSpec{5}, ChunkSpec{37, 1}, ChunkSpec{1, 23}, ChunkSpec{10, 7}})
      EXPECT_EQ(values(make(c), "threads"), want) << "chunks " << c[0];
    // A slice reads the same rows.
    const auto part = values(make(ChunkSpec{10, 7})[{slice(3, 9)}], "threads");
    EXPECT_EQ(part, std::vector<std::int64_t>(want.begin() + 3 * 23 * 3, want.begin() + 9 * 23 * 3));
  }
  // Another Generator call draws other rows.
  random::Generator g(9);
  const auto first = values(g.multinomial(50, {0.3, 0.3, 0.4}, {37, 23}, {-1}));
  EXPECT_NE(values(g.multinomial(50, {0.3, 0.3, 0.4}, {37, 23}, {-1})), first);
}

TEST(RandomVector, BadParametersThrowWhenBuilt) {
  random::Generator g(1);
  EXPECT_THROW(g.multinomial(-1, {0.5, 0.5}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {0.9, 0.9, 0.1}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {-0.1, 1.1}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {std::nan(""), 1.0}, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, 3}, 6, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, -3}, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, 3}, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({}, 0, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, 3}, 1, {4}, {-1}, "fast"), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({600000000, 500000000}, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {0.5, 0.5}, {-4}, {-1}), ShapeError);
}

}  // namespace
