#pragma once
/** @file
 * Random arrays (counter-based, the same numbers for any chunking, on host or GPU). */
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera {

namespace random {

/**
 * @brief numpy.random.Generator's distributions as lazy chunked arrays.
 *
 * Counter-based (Philox4x32-10): element i of an array is a pure function of (key, i), where the
 * key comes from the seed and the number of arrays this Generator has made before. The same
 * seed gives the same numbers for any chunking, on host or GPU, and a slice draws only the
 * elements it keeps. Distributions that need a varying number of draws (gamma, beta, poisson,
 * binomial, standard_t) give each element its own Philox stream. The numbers are not NumPy's
 * (its bit generators are sequential), the distributions are. Parameters are checked when the
 * array is built (Error for a value NumPy rejects with ValueError).
 */
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  /** @brief Uniform floats in [0, 1). */
  Array random(Shape shape, ChunkSpec chunks);
  Array standard_normal(Shape shape, ChunkSpec chunks);
  Array normal(double mean, double stddev, Shape shape, ChunkSpec chunks);
  Array uniform(double low, double high, Shape shape, ChunkSpec chunks);
  /** @brief Integers in [low, high), or [low, high] with endpoint (int32 or int64). */
  Array integers(std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype = DType::Int64,
                 bool endpoint = false);
  Array standard_exponential(Shape shape, ChunkSpec chunks);
  Array exponential(double scale, Shape shape, ChunkSpec chunks);
  Array standard_gamma(double shape_k, Shape shape, ChunkSpec chunks);
  /** @brief Gamma(shape_k, scale): mean shape_k * scale. */
  Array gamma(double shape_k, double scale, Shape shape, ChunkSpec chunks);
  Array beta(double a, double b, Shape shape, ChunkSpec chunks);
  Array chisquare(double df, Shape shape, ChunkSpec chunks);
  Array standard_t(double df, Shape shape, ChunkSpec chunks);
  /** @brief exp of normal(mean, sigma). */
  Array lognormal(double mean, double sigma, Shape shape, ChunkSpec chunks);
  /** @brief int64 counts. */
  Array poisson(double lam, Shape shape, ChunkSpec chunks);
  /** @brief int64 successes of n trials. */
  Array binomial(std::int64_t n, double p, Shape shape, ChunkSpec chunks);
  /** @brief int64 trials up to and including the first success (>= 1). */
  Array geometric(double p, Shape shape, ChunkSpec chunks);
  /** @brief A random ordering of 0 .. n-1 (int64), in chunks of `chunk`. */
  Array permutation(std::int64_t n, std::int64_t chunk = -1);
  /**
   * @brief Draws from range(a): with replacement (optionally with probabilities p, which must
   * sum to 1; at most 32 of them), or without (the first elements of a permutation).
   */
  Array choice(std::int64_t a, Shape size, ChunkSpec chunks, bool replace = true, std::vector<double> p = {});

  // Continuous distributions built from the ones above as fused element-wise programs (each
  // input array takes the next key, so they are independent).
  Array laplace(double loc, double scale, Shape shape, ChunkSpec chunks);
  Array logistic(double loc, double scale, Shape shape, ChunkSpec chunks);
  Array gumbel(double loc, double scale, Shape shape, ChunkSpec chunks);
  Array rayleigh(double scale, Shape shape, ChunkSpec chunks);
  Array weibull(double a, Shape shape, ChunkSpec chunks);
  /** @brief Pareto II (Lomax), as NumPy: the classical Pareto minus 1. */
  Array pareto(double a, Shape shape, ChunkSpec chunks);
  Array power(double a, Shape shape, ChunkSpec chunks);
  Array standard_cauchy(Shape shape, ChunkSpec chunks);
  /** @brief Inverse Gaussian (mean > 0, scale > 0). */
  Array wald(double mean, double scale, Shape shape, ChunkSpec chunks);
  Array triangular(double left, double mode, double right, Shape shape, ChunkSpec chunks);
  Array f(double dfnum, double dfden, Shape shape, ChunkSpec chunks);
  Array noncentral_f(double dfnum, double dfden, double nonc, Shape shape, ChunkSpec chunks);
  // Element-by-element samplers (random_semantics.hpp), on host and device alike.
  Array noncentral_chisquare(double df, double nonc, Shape shape, ChunkSpec chunks);
  /** @brief Von Mises angles in [-pi, pi). */
  Array vonmises(double mu, double kappa, Shape shape, ChunkSpec chunks);
  /** @brief int64 failures before the n-th success (n > 0 need not be whole). */
  Array negative_binomial(double n, double p, Shape shape, ChunkSpec chunks);
  /** @brief int64 values >= 1 (a > 1). */
  Array zipf(double a, Shape shape, ChunkSpec chunks);
  /** @brief int64 values >= 1 (0 <= p < 1). */
  Array logseries(double p, Shape shape, ChunkSpec chunks);
  /** @brief int64 good items in nsample drawn without replacement (ngood + nbad < 1e9). */
  Array hypergeometric(std::int64_t ngood, std::int64_t nbad, std::int64_t nsample, Shape shape, ChunkSpec chunks);

  // Rows of counts: the result has the shape size + (k,), chunked as `chunks` says along size's
  // axes and whole along the last. Each row draws from its own stream (any chunking, same rows).
  /** @brief int64 counts of n trials over len(pvals) outcomes; the last takes what the others leave. */
  Array multinomial(std::int64_t n, std::vector<double> pvals, Shape size, ChunkSpec chunks);
  /**
   * @brief int64 counts of each colour in nsample items drawn without replacement; method
   * "marginals" (a hypergeometric per colour; sum(colors) < 1e9) or "count" (item by item).
   */
  Array multivariate_hypergeometric(std::vector<std::int64_t> colors, std::int64_t nsample, Shape size,
                                    ChunkSpec chunks, const std::string& method = "marginals");

 protected:
  /** The Philox key of the next array. */
  std::uint64_t next_key();

 private:
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
};

/** @brief numpy.random.default_rng(seed). */
inline Generator default_rng(std::uint64_t seed = 0) { return Generator(seed); }

/** @brief Like numpy.random.RandomState: successive calls draw independent streams. */
class RandomState : public Generator {
 public:
  using Generator::Generator;
};

// One array from a seed: the first array of Generator(seed).
Array normal(std::uint64_t seed, double mean, double stddev, Shape shape, ChunkSpec chunks);
Array uniform(std::uint64_t seed, double low, double high, Shape shape, ChunkSpec chunks);
/** @brief Integers in [low, high) ([low, high] with endpoint). */
Array integers(std::uint64_t seed, std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks,
               DType dtype = DType::Int64, bool endpoint = false);
Array random(std::uint64_t seed, Shape shape, ChunkSpec chunks);
Array standard_normal(std::uint64_t seed, Shape shape, ChunkSpec chunks);
Array standard_exponential(std::uint64_t seed, Shape shape, ChunkSpec chunks);
Array exponential(std::uint64_t seed, double scale, Shape shape, ChunkSpec chunks);
Array standard_gamma(std::uint64_t seed, double shape_k, Shape shape, ChunkSpec chunks);
Array gamma(std::uint64_t seed, double shape_k, double scale, Shape shape, ChunkSpec chunks);
Array beta(std::uint64_t seed, double a, double b, Shape shape, ChunkSpec chunks);
Array chisquare(std::uint64_t seed, double df, Shape shape, ChunkSpec chunks);
Array standard_t(std::uint64_t seed, double df, Shape shape, ChunkSpec chunks);
Array lognormal(std::uint64_t seed, double mean, double sigma, Shape shape, ChunkSpec chunks);
Array poisson(std::uint64_t seed, double lam, Shape shape, ChunkSpec chunks);
Array binomial(std::uint64_t seed, std::int64_t n, double p, Shape shape, ChunkSpec chunks);
Array geometric(std::uint64_t seed, double p, Shape shape, ChunkSpec chunks);
Array permutation(std::uint64_t seed, std::int64_t n, std::int64_t chunk = -1);
Array choice(std::uint64_t seed, std::int64_t a, Shape size, ChunkSpec chunks, bool replace = true,
             std::vector<double> p = {});

}  // namespace random

}  // namespace tessera
