// Random arrays: counter-based generators (Philox4x32-10). kernels/random.cpp draws normals,
// uniforms and integers; random_semantics.hpp defines the other distributions, element by element.
#include "tessera/array/random.hpp"

#include <cmath>
#include <string>

#include "generator.hpp"
#include "tessera/array/creation.hpp"
#include "tessera/array/elementwise.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace random {
namespace {

/** NumPy's ValueError for a parameter out of its domain (NaN included). */
void require(bool ok, const char* fn, const std::string& what) {
  if (!ok) throw Error(std::string(fn) + ": " + what);
}

// Binomial counts and permutation indices travel as doubles (p0, p1): exact below 2^53.
constexpr double kMaxExactInt = 9007199254740992.0;
// PTRS keeps its counts in doubles too.
constexpr double kMaxPoissonLam = 1e15;
// choice with probabilities compares a uniform with each cumulative probability in one fused
// program; device programs hold at most 48 instructions.
constexpr std::size_t kMaxChoiceWeights = 12;

Array distribution(GenKind gen, DType dtype, Shape shape, const ChunkSpec& chunks, double p0, double p1,
                   std::uint64_t key, const char* name) {
  return make_generator(gen, dtype, std::move(shape), chunks, p0, p1, 0, 0, key, name);
}

}  // namespace

std::uint64_t Generator::next_key() { return mix_key(seed_, calls_++); }

Array Generator::normal(double mean, double stddev, Shape shape, ChunkSpec chunks) {
  require(stddev >= 0, "normal", "the standard deviation must be >= 0");
  return make_generator(GenKind::Normal, DType::Float64, std::move(shape), chunks, mean, stddev, 0, 0, next_key(),
                        "normal");
}
Array Generator::standard_normal(Shape shape, ChunkSpec chunks) { return normal(0.0, 1.0, std::move(shape), chunks); }

Array Generator::uniform(double low, double high, Shape shape, ChunkSpec chunks) {
  return make_generator(GenKind::Uniform, DType::Float64, std::move(shape), chunks, low, high, 0, 0, next_key(),
                        "uniform");
}
Array Generator::random(Shape shape, ChunkSpec chunks) { return uniform(0.0, 1.0, std::move(shape), chunks); }

Array Generator::integers(std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype,
                          bool endpoint) {
  if (!is_integer(dtype)) throw DTypeError("integers: dtype must be int32 or int64");
  if (endpoint ? high < low : high <= low) throw Error("integers: high must be greater than low");
  if (dtype == DType::Int32 && (low < INT32_MIN || high > INT32_MAX + std::int64_t{endpoint ? 0 : 1}))
    throw Error("integers: the bounds do not fit int32");
  // The kernels draw low + ((x * range) >> 64) with range = high - low as a 64-bit unsigned
  // number, so [INT64_MIN, INT64_MAX] (range 2^64) is the one range they cannot express.
  const std::uint64_t range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low) + (endpoint ? 1 : 0);
  if (range == 0) throw Error("integers: the range [INT64_MIN, INT64_MAX] is not supported");
  const auto top = static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + range);  // wraps for high = INT64_MAX
  // p0, p1: the bounds of the float-register path (integers read as doubles), as before endpoint.
  const double p1 = static_cast<double>(high) + (endpoint ? 1.0 : 0.0);
  return make_generator(GenKind::Integers, dtype, std::move(shape), chunks, static_cast<double>(low), p1, low, top,
                        next_key(), "integers");
}

Array Generator::exponential(double scale, Shape shape, ChunkSpec chunks) {
  require(scale >= 0, "exponential", "scale must be >= 0");
  return distribution(GenKind::Exponential, DType::Float64, std::move(shape), chunks, scale, 0, next_key(),
                      "exponential");
}
Array Generator::standard_exponential(Shape shape, ChunkSpec chunks) {
  return exponential(1.0, std::move(shape), chunks);
}

Array Generator::gamma(double shape_k, double scale, Shape shape, ChunkSpec chunks) {
  require(shape_k >= 0 && std::isfinite(shape_k), "gamma", "shape must be >= 0 and finite");
  require(scale >= 0, "gamma", "scale must be >= 0");
  return distribution(GenKind::Gamma, DType::Float64, std::move(shape), chunks, shape_k, scale, next_key(), "gamma");
}
Array Generator::standard_gamma(double shape_k, Shape shape, ChunkSpec chunks) {
  return gamma(shape_k, 1.0, std::move(shape), chunks);
}
Array Generator::chisquare(double df, Shape shape, ChunkSpec chunks) {
  require(df > 0 && std::isfinite(df), "chisquare", "df must be > 0 and finite");
  return distribution(GenKind::Gamma, DType::Float64, std::move(shape), chunks, df / 2, 2.0, next_key(), "chisquare");
}

Array Generator::beta(double a, double b, Shape shape, ChunkSpec chunks) {
  require(a > 0 && std::isfinite(a), "beta", "a must be > 0 and finite");
  require(b > 0 && std::isfinite(b), "beta", "b must be > 0 and finite");
  return distribution(GenKind::Beta, DType::Float64, std::move(shape), chunks, a, b, next_key(), "beta");
}

Array Generator::standard_t(double df, Shape shape, ChunkSpec chunks) {
  require(df > 0 && std::isfinite(df), "standard_t", "df must be > 0 and finite");
  return distribution(GenKind::StandardT, DType::Float64, std::move(shape), chunks, df, 0, next_key(), "standard_t");
}

Array Generator::lognormal(double mean, double sigma, Shape shape, ChunkSpec chunks) {
  require(sigma >= 0, "lognormal", "sigma must be >= 0");
  return exp(normal(mean, sigma, std::move(shape), chunks));
}

Array Generator::poisson(double lam, Shape shape, ChunkSpec chunks) {
  require(lam >= 0 && lam <= kMaxPoissonLam, "poisson", "lam must be in [0, 1e15]");
  return distribution(GenKind::Poisson, DType::Int64, std::move(shape), chunks, lam, 0, next_key(), "poisson");
}

Array Generator::binomial(std::int64_t n, double p, Shape shape, ChunkSpec chunks) {
  require(n >= 0 && static_cast<double>(n) < kMaxExactInt, "binomial", "n must be in [0, 2^53)");
  require(p >= 0 && p <= 1, "binomial", "p must be in [0, 1]");
  return distribution(GenKind::Binomial, DType::Int64, std::move(shape), chunks, p, static_cast<double>(n), next_key(),
                      "binomial");
}

Array Generator::geometric(double p, Shape shape, ChunkSpec chunks) {
  require(p > 0 && p <= 1, "geometric", "p must be in (0, 1]");
  return distribution(GenKind::Geometric, DType::Int64, std::move(shape), chunks, p, 0, next_key(), "geometric");
}

Array Generator::permutation(std::int64_t n, std::int64_t chunk) {
  require(n >= 0 && static_cast<double>(n) < kMaxExactInt, "permutation", "n must be in [0, 2^53)");
  return distribution(GenKind::Permutation, DType::Int64, Shape{n}, ChunkSpec{chunk}, static_cast<double>(n), 0,
                      next_key(), "permutation");
}

Array Generator::choice(std::int64_t a, Shape size, ChunkSpec chunks, bool replace, std::vector<double> p) {
  require(a > 0 && static_cast<double>(a) < kMaxExactInt, "choice", "a must be in (0, 2^53)");
  if (!p.empty()) {
    require(replace, "choice", "probabilities are supported with replace=true only");
    require(static_cast<std::int64_t>(p.size()) == a, "choice", "a and p must have the same size");
    require(p.size() <= kMaxChoiceWeights, "choice",
            "at most " + std::to_string(kMaxChoiceWeights) + " probabilities are supported");
    double total = 0;
    for (double w : p) {
      require(w >= 0 && w <= 1, "choice", "probabilities must be in [0, 1]");
      total += w;
    }
    require(std::fabs(total - 1.0) <= 1.4901161193847656e-08, "choice", "probabilities do not sum to 1");
    // Index = how many cumulative probabilities the uniform reaches (inverse CDF, in one program).
    const Array u = uniform(0.0, 1.0, std::move(size), chunks);
    Array index = zeros(u.shape(), chunks, DType::Int64);
    double cumulative = 0;
    for (std::size_t j = 0; j + 1 < p.size(); ++j) {
      cumulative += p[j] / total;
      index = index + (u >= cumulative);
    }
    return index;
  }
  if (replace) return integers(0, a, std::move(size), chunks);
  std::int64_t count = 1;
  for (auto n : size) count *= n;
  require(count <= a, "choice", "cannot take a larger sample than the population when replace=false");
  // The first `count` elements of a permutation of range(a), in the requested shape.
  return distribution(GenKind::Permutation, DType::Int64, std::move(size), chunks, static_cast<double>(a), 0,
                      next_key(), "choice");
}

// ---- distributions composed of the ones above -------------------------------------------------
// Written as NumPy's own transformations of uniforms, normals, exponentials and gammas, so they
// fuse into one program per chunk and run wherever those run (host, device, any executor).

Array Generator::laplace(double loc, double scale, Shape shape, ChunkSpec chunks) {
  require(scale >= 0, "laplace", "scale must be >= 0");
  // The difference of two independent standard exponentials is a standard Laplace variable.
  const Array e1 = standard_exponential(shape, chunks);
  const Array e2 = standard_exponential(std::move(shape), chunks);
  return (e1 - e2) * scale + loc;
}

Array Generator::logistic(double loc, double scale, Shape shape, ChunkSpec chunks) {
  require(scale >= 0, "logistic", "scale must be >= 0");
  // u in (0, 1): the inverse CDF log(u / (1 - u)) stays finite.
  const Array u = random(std::move(shape), chunks) + 0x1.0p-54;
  return log(u / (1.0 - u)) * scale + loc;
}

Array Generator::gumbel(double loc, double scale, Shape shape, ChunkSpec chunks) {
  require(scale >= 0, "gumbel", "scale must be >= 0");
  // -log(-log(U)) with -log(U) a standard exponential.
  return loc - log(standard_exponential(std::move(shape), chunks)) * scale;
}

Array Generator::rayleigh(double scale, Shape shape, ChunkSpec chunks) {
  require(scale >= 0, "rayleigh", "scale must be >= 0");
  return sqrt(standard_exponential(std::move(shape), chunks) * 2.0) * scale;
}

Array Generator::weibull(double a, Shape shape, ChunkSpec chunks) {
  require(a >= 0, "weibull", "a must be >= 0");
  if (a == 0) return zeros(shape, chunks, DType::Float64);
  return tessera::power(standard_exponential(std::move(shape), chunks), 1.0 / a);
}

Array Generator::pareto(double a, Shape shape, ChunkSpec chunks) {
  require(a > 0, "pareto", "a must be > 0");
  return expm1(standard_exponential(std::move(shape), chunks) / a);
}

Array Generator::power(double a, Shape shape, ChunkSpec chunks) {
  require(a > 0, "power", "a must be > 0");
  // U^(1/a) with U = 1 - exp(-E) uniform on [0, 1).
  return tessera::power(-expm1(-standard_exponential(std::move(shape), chunks)), 1.0 / a);
}

Array Generator::standard_cauchy(Shape shape, ChunkSpec chunks) {
  const Array num = standard_normal(shape, chunks);
  return num / standard_normal(std::move(shape), chunks);
}

Array Generator::wald(double mean, double scale, Shape shape, ChunkSpec chunks) {
  require(mean > 0, "wald", "mean must be > 0");
  require(scale > 0, "wald", "scale must be > 0");
  // Michael, Schucany and Haas (1976): a root of the chi-square(1) equation, chosen by a uniform.
  const Array n = standard_normal(shape, chunks);
  const Array u = random(std::move(shape), chunks);
  const Array y = n * n * mean;
  const Array x = mean + (mean / (2.0 * scale)) * (y - sqrt(y * (4.0 * scale) + y * y));
  return where(u <= mean / (x + mean), x, (mean * mean) / x);
}

Array Generator::triangular(double left, double mode, double right, Shape shape, ChunkSpec chunks) {
  require(left <= mode, "triangular", "left must be <= mode");
  require(mode <= right, "triangular", "mode must be <= right");
  require(left < right, "triangular", "left must be < right");
  const double base = right - left, left_part = mode - left, right_part = right - mode;
  const Array u = random(std::move(shape), chunks);
  return where(u <= left_part / base, left + sqrt(u * (base * left_part)),
               right - sqrt((1.0 - u) * (base * right_part)));
}

Array Generator::f(double dfnum, double dfden, Shape shape, ChunkSpec chunks) {
  require(dfnum > 0 && std::isfinite(dfnum), "f", "dfnum must be > 0 and finite");
  require(dfden > 0 && std::isfinite(dfden), "f", "dfden must be > 0 and finite");
  const Array num = chisquare(dfnum, shape, chunks);
  return (num * dfden) / (chisquare(dfden, std::move(shape), chunks) * dfnum);
}

Array Generator::noncentral_f(double dfnum, double dfden, double nonc, Shape shape, ChunkSpec chunks) {
  require(dfnum > 0 && std::isfinite(dfnum), "noncentral_f", "dfnum must be > 0 and finite");
  require(dfden > 0 && std::isfinite(dfden), "noncentral_f", "dfden must be > 0 and finite");
  require(nonc >= 0 && std::isfinite(nonc), "noncentral_f", "nonc must be >= 0 and finite");
  const Array num = noncentral_chisquare(dfnum, nonc, shape, chunks);
  return (num * dfden) / (chisquare(dfden, std::move(shape), chunks) * dfnum);
}

Array Generator::noncentral_chisquare(double df, double nonc, Shape shape, ChunkSpec chunks) {
  require(df > 0 && std::isfinite(df), "noncentral_chisquare", "df must be > 0 and finite");
  require(nonc >= 0 && nonc <= kMaxPoissonLam, "noncentral_chisquare", "nonc must be in [0, 1e15]");
  return distribution(GenKind::NoncentralChisquare, DType::Float64, std::move(shape), chunks, df, nonc, next_key(),
                      "noncentral_chisquare");
}

Array Generator::vonmises(double mu, double kappa, Shape shape, ChunkSpec chunks) {
  require(std::isfinite(mu), "vonmises", "mu must be finite");
  require(kappa >= 0 && std::isfinite(kappa), "vonmises", "kappa must be >= 0 and finite");
  return distribution(GenKind::VonMises, DType::Float64, std::move(shape), chunks, mu, kappa, next_key(), "vonmises");
}

Array Generator::negative_binomial(double n, double p, Shape shape, ChunkSpec chunks) {
  require(n > 0 && std::isfinite(n), "negative_binomial", "n must be > 0 and finite");
  require(p > 0 && p <= 1, "negative_binomial", "p must be in (0, 1]");
  return distribution(GenKind::NegativeBinomial, DType::Int64, std::move(shape), chunks, n, p, next_key(),
                      "negative_binomial");
}

Array Generator::zipf(double a, Shape shape, ChunkSpec chunks) {
  require(a > 1 && std::isfinite(a), "zipf", "a must be > 1 and finite");
  return distribution(GenKind::Zipf, DType::Int64, std::move(shape), chunks, a, 0, next_key(), "zipf");
}

Array Generator::logseries(double p, Shape shape, ChunkSpec chunks) {
  require(p >= 0 && p < 1, "logseries", "p must be in [0, 1)");
  return distribution(GenKind::Logseries, DType::Int64, std::move(shape), chunks, p, 0, next_key(), "logseries");
}

Array Generator::hypergeometric(std::int64_t ngood, std::int64_t nbad, std::int64_t nsample, Shape shape,
                                ChunkSpec chunks) {
  require(ngood >= 0, "hypergeometric", "ngood must be >= 0");
  require(nbad >= 0, "hypergeometric", "nbad must be >= 0");
  require(nsample >= 0, "hypergeometric", "nsample must be >= 0");
  // NumPy's limit: the sampler's ratio-of-uniforms bounds work in doubles.
  require(ngood < 1000000000 && nbad < 1000000000 && ngood + nbad < 1000000000, "hypergeometric",
          "ngood + nbad must be less than 1e9");
  require(nsample <= ngood + nbad, "hypergeometric", "ngood + nbad < nsample");
  // ngood and nbad are exact in doubles (p0, p1); the sample travels in the instruction's i0.
  return make_generator(GenKind::Hypergeometric, DType::Int64, std::move(shape), chunks, static_cast<double>(ngood),
                        static_cast<double>(nbad), nsample, 0, next_key(), "hypergeometric");
}

// One array from a seed: the first array of Generator(seed).
Array normal(std::uint64_t seed, double mean, double stddev, Shape shape, ChunkSpec chunks) {
  return Generator(seed).normal(mean, stddev, std::move(shape), std::move(chunks));
}
Array uniform(std::uint64_t seed, double low, double high, Shape shape, ChunkSpec chunks) {
  return Generator(seed).uniform(low, high, std::move(shape), std::move(chunks));
}
Array integers(std::uint64_t seed, std::int64_t low, std::int64_t high, Shape shape, ChunkSpec chunks, DType dtype,
               bool endpoint) {
  return Generator(seed).integers(low, high, std::move(shape), std::move(chunks), dtype, endpoint);
}
Array random(std::uint64_t seed, Shape shape, ChunkSpec chunks) {
  return Generator(seed).random(std::move(shape), std::move(chunks));
}
Array standard_normal(std::uint64_t seed, Shape shape, ChunkSpec chunks) {
  return Generator(seed).standard_normal(std::move(shape), std::move(chunks));
}
Array standard_exponential(std::uint64_t seed, Shape shape, ChunkSpec chunks) {
  return Generator(seed).standard_exponential(std::move(shape), std::move(chunks));
}
Array exponential(std::uint64_t seed, double scale, Shape shape, ChunkSpec chunks) {
  return Generator(seed).exponential(scale, std::move(shape), std::move(chunks));
}
Array standard_gamma(std::uint64_t seed, double shape_k, Shape shape, ChunkSpec chunks) {
  return Generator(seed).standard_gamma(shape_k, std::move(shape), std::move(chunks));
}
Array gamma(std::uint64_t seed, double shape_k, double scale, Shape shape, ChunkSpec chunks) {
  return Generator(seed).gamma(shape_k, scale, std::move(shape), std::move(chunks));
}
Array beta(std::uint64_t seed, double a, double b, Shape shape, ChunkSpec chunks) {
  return Generator(seed).beta(a, b, std::move(shape), std::move(chunks));
}
Array chisquare(std::uint64_t seed, double df, Shape shape, ChunkSpec chunks) {
  return Generator(seed).chisquare(df, std::move(shape), std::move(chunks));
}
Array standard_t(std::uint64_t seed, double df, Shape shape, ChunkSpec chunks) {
  return Generator(seed).standard_t(df, std::move(shape), std::move(chunks));
}
Array lognormal(std::uint64_t seed, double mean, double sigma, Shape shape, ChunkSpec chunks) {
  return Generator(seed).lognormal(mean, sigma, std::move(shape), std::move(chunks));
}
Array poisson(std::uint64_t seed, double lam, Shape shape, ChunkSpec chunks) {
  return Generator(seed).poisson(lam, std::move(shape), std::move(chunks));
}
Array binomial(std::uint64_t seed, std::int64_t n, double p, Shape shape, ChunkSpec chunks) {
  return Generator(seed).binomial(n, p, std::move(shape), std::move(chunks));
}
Array geometric(std::uint64_t seed, double p, Shape shape, ChunkSpec chunks) {
  return Generator(seed).geometric(p, std::move(shape), std::move(chunks));
}
Array permutation(std::uint64_t seed, std::int64_t n, std::int64_t chunk) {
  return Generator(seed).permutation(n, chunk);
}
Array choice(std::uint64_t seed, std::int64_t a, Shape size, ChunkSpec chunks, bool replace, std::vector<double> p) {
  return Generator(seed).choice(a, std::move(size), std::move(chunks), replace, std::move(p));
}

}  // namespace random

}  // namespace tessera
