#pragma once
// Internal: the random distributions (gamma, beta, poisson, binomial, ...) as a pure function of
// (key, element index), written once for the host (src/array/random_distributions.cpp) and the
// device (cuda/program_kernel.cuh, as device code under nvcc and as host code in the emulation),
// so a chunk made anywhere, on any executor or GPU, holds the same numbers.
//
// Element i draws from its own Philox4x32-10 stream: counter {i.lo, i.hi, stream, draw}, where
// stream is kStreamBase + the distribution's code and draw counts the Philox calls the element
// has made. Each call gives two 64-bit words, used in order. So a rejection sampler may take any
// number of draws without touching another element's numbers.
//
// Only C++17, <math.h> and Random123 (nvcc builds the project's .cu files as C++17).
#include <math.h>

#include <cstdint>

#include <Random123/philox.h>

#if defined(__CUDACC__)
#define TESSERA_RNG __host__ __device__ __forceinline__
// The entry points stay calls in the program kernel: inlined, the samplers' loops would add
// their registers to every program's evaluation loop, random or not.
#define TESSERA_RNG_ENTRY __host__ __device__ __noinline__
#else
#define TESSERA_RNG inline
#define TESSERA_RNG_ENTRY inline
#endif

namespace tessera::detail::rng {
// The C library's functions (<math.h>, which device code has too), never tessera's Array
// functions of the same names (tessera::sqrt, tessera::log, ...), which unqualified lookup from
// inside namespace tessera would find first wherever an array header came before this one (a
// unity batch, say).
using ::acos;
using ::ceil;
using ::cos;
using ::exp;
using ::exp2;
using ::expm1;
using ::fabs;
using ::floor;
using ::fmod;
using ::lgamma;
using ::log;
using ::log1p;
using ::pow;
using ::sin;
using ::sqrt;
// Internal linkage, as element_semantics.hpp, for the same reason: translation units built with
// different flags must not share an out-of-line copy.
namespace {

// The distribution codes: GenKind's values (src/array/program.hpp, which needs C++20 and so is
// spelled again here; random_distributions.cpp checks that the two agree).
enum : int {
  kExponential = 5,
  kGamma = 6,         // p0 = shape, p1 = scale
  kBeta = 7,          // p0 = a, p1 = b
  kPoisson = 8,       // p0 = lam
  kBinomial = 9,      // p0 = p, p1 = n
  kStandardT = 10,    // p0 = df
  kGeometric = 11,    // p0 = p
  kPermutation = 12,  // p0 = n: element i of a random permutation of [0, n)
  kNegativeBinomial = 13,    // p0 = n, p1 = p
  kNoncentralChisquare = 14, // p0 = df, p1 = nonc
  kVonMises = 15,            // p0 = mu, p1 = kappa
  kZipf = 16,                // p0 = a
  kLogseries = 17,           // p0 = p
  kHypergeometric = 18,      // p0 = ngood, p1 = nbad, n0 = nsample
  // Vector samplers, one row of counts per stream (random_vector.cpp; no GenKind).
  kMultinomial = 19,
  kMultivariateHypergeometric = 20,
};
/** Philox stream of distribution code g (normal, uniform and integers use 1, 2 and 3). */
constexpr std::uint32_t kStreamBase = 16;

TESSERA_RNG double lgamma_of(double x) {
#if defined(__CUDACC__)
  return lgamma(x);
#else
  int sign;  // lgamma writes the global signgam: not safe from several task threads
  return lgamma_r(x, &sign);
#endif
}

/** The Philox draws of one element. */
class Draws {
 public:
  TESSERA_RNG Draws(std::uint64_t key, std::uint32_t stream, std::uint64_t i) : key_(key), i_(i), stream_(stream) {}

  TESSERA_RNG std::uint64_t next_u64() {
    if (left_ == 0) {
      const philox4x32_key_t k = {{static_cast<std::uint32_t>(key_), static_cast<std::uint32_t>(key_ >> 32)}};
      const philox4x32_ctr_t c = {{static_cast<std::uint32_t>(i_), static_cast<std::uint32_t>(i_ >> 32), stream_, draw_++}};
      const philox4x32_ctr_t x = philox4x32_R(10, c, k);
      words_[0] = (static_cast<std::uint64_t>(x.v[1]) << 32) | x.v[0];
      words_[1] = (static_cast<std::uint64_t>(x.v[3]) << 32) | x.v[2];
      left_ = 2;
    }
    return words_[2 - left_--];
  }
  /** [0, 1), 53 random bits. */
  TESSERA_RNG double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  /** (0, 1]. */
  TESSERA_RNG double uniform_pos() { return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53; }
  /** Standard normal (Box-Muller; the sine of a pair is kept for the next call). */
  TESSERA_RNG double normal() {
    if (has_normal_) {
      has_normal_ = false;
      return spare_;
    }
    const double r = sqrt(-2.0 * log(uniform_pos()));
    const double t = 6.283185307179586476925286766559 * uniform();
    spare_ = r * sin(t);
    has_normal_ = true;
    return r * cos(t);
  }

 private:
  std::uint64_t key_, i_;
  std::uint32_t stream_, draw_ = 0;
  std::uint64_t words_[2] = {0, 0};
  int left_ = 0;
  bool has_normal_ = false;
  double spare_ = 0;
};

/** Gamma(shape >= 1, 1): Marsaglia and Tsang's squeeze-and-reject method. */
TESSERA_RNG double gamma_ge1(Draws& d, double shape) {
  const double b = shape - 1.0 / 3.0;
  const double c = 1.0 / sqrt(9.0 * b);
  for (;;) {
    double x, v;
    do {
      x = d.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = d.uniform_pos();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return b * v;
    if (log(u) < 0.5 * x2 + b * (1.0 - v + log(v))) return b * v;
  }
}

/** Gamma(shape, 1); shapes below 1 through Gamma(shape + 1) * U^(1 / shape). */
TESSERA_RNG double standard_gamma(Draws& d, double shape) {
  if (shape <= 0.0) return 0.0;
  if (shape >= 1.0) return gamma_ge1(d, shape);
  const double g = gamma_ge1(d, shape + 1.0);
  return g * exp(log(d.uniform_pos()) / shape);
}

TESSERA_RNG double beta(Draws& d, double a, double b) {
  if (a > 1.0 || b > 1.0) {
    const double x = standard_gamma(d, a);
    const double y = standard_gamma(d, b);
    return x / (x + y);
  }
  // Both shapes <= 1: Johnk's method, in logarithms when the powers underflow (tiny shapes).
  for (;;) {
    const double u = d.uniform_pos(), v = d.uniform_pos();
    const double x = exp(log(u) / a), y = exp(log(v) / b);
    const double s = x + y;
    if (s > 1.0) continue;
    if (s > 0.0) return x / s;
    double lx = log(u) / a, ly = log(v) / b;
    const double m = lx > ly ? lx : ly;
    lx -= m;
    ly -= m;
    return exp(lx - log(exp(lx) + exp(ly)));
  }
}

/** Poisson: multiplication of uniforms below lam 10, Hoermann's PTRS (1993) from there on. */
TESSERA_RNG std::int64_t poisson(Draws& d, double lam) {
  if (lam <= 0.0) return 0;
  if (lam < 10.0) {
    const double limit = exp(-lam);
    double prod = 1.0;
    std::int64_t k = 0;
    for (;;) {
      prod *= d.uniform();
      if (prod <= limit) return k;
      ++k;
    }
  }
  const double slam = sqrt(lam), loglam = log(lam);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = d.uniform() - 0.5;
    const double v = d.uniform_pos();
    const double us = 0.5 - fabs(u);
    const double k = floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return static_cast<std::int64_t>(k);
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma_of(k + 1.0))
      return static_cast<std::int64_t>(k);
  }
}

/** Binomial(n, p <= 1/2): inversion while n p < 10, Hoermann's BTRS (1993) above. */
TESSERA_RNG std::int64_t binomial_low(Draws& d, double n, double p) {
  const double q = 1.0 - p;
  if (n * p < 10.0) {
    const double s = p / q, a = (n + 1.0) * s;
    const double r0 = exp(n * log1p(-p));
    // Rounding can leave u above every remaining term: start again past a bound the exact search
    // reaches with negligible probability.
    const double bound_f = n * p + 10.0 * sqrt(n * p * q + 1.0);
    const double bound = bound_f < n ? bound_f : n;
    for (;;) {
      double u = d.uniform(), r = r0, x = 0.0;
      while (u > r) {
        u -= r;
        x += 1.0;
        if (x > bound) break;
        r *= a / x - s;
      }
      if (x <= bound) return static_cast<std::int64_t>(x);
    }
  }
  const double spq = sqrt(n * p * q);
  const double b = 1.15 + 2.53 * spq;
  const double a = -0.0873 + 0.0248 * b + 0.01 * p;
  const double c = n * p + 0.5;
  const double alpha = (2.83 + 5.1 / b) * spq;
  const double vr = 0.92 - 4.2 / b;
  const double m = floor((n + 1.0) * p);
  const double lpq = log(p / q);
  const double h = lgamma_of(m + 1.0) + lgamma_of(n - m + 1.0);
  for (;;) {
    const double u = d.uniform() - 0.5;
    double v = d.uniform_pos();
    const double us = 0.5 - fabs(u);
    const double k = floor((2.0 * a / us + b) * u + c);
    if (k < 0.0 || k > n) continue;
    if (us >= 0.07 && v <= vr) return static_cast<std::int64_t>(k);
    v = log(v * alpha / (a / (us * us) + b));
    if (v <= h - lgamma_of(k + 1.0) - lgamma_of(n - k + 1.0) + (k - m) * lpq) return static_cast<std::int64_t>(k);
  }
}

TESSERA_RNG std::int64_t binomial(Draws& d, double n, double p) {
  if (n <= 0.0 || p <= 0.0) return 0;
  if (p >= 1.0) return static_cast<std::int64_t>(n);
  if (p > 0.5) return static_cast<std::int64_t>(n) - binomial_low(d, n, 1.0 - p);
  return binomial_low(d, n, p);
}

/** Trials up to the first success (>= 1), by inversion. */
TESSERA_RNG std::int64_t geometric(Draws& d, double p) {
  if (p >= 1.0) return 1;
  const double x = ceil(log1p(-d.uniform()) / log1p(-p));
  if (x < 1.0) return 1;
  return x < 9.2e18 ? static_cast<std::int64_t>(x) : INT64_MAX;
}

/** Failures before the n-th success: Poisson with a Gamma(n, (1 - p) / p) mean. */
TESSERA_RNG std::int64_t negative_binomial(Draws& d, double n, double p) {
  if (p >= 1.0) return 0;
  const double lam = standard_gamma(d, n) * ((1.0 - p) / p);
  // Past PTRS's range the count is lam to within its own noise (sqrt(lam) / lam < 3e-8).
  return lam < 1e15 ? poisson(d, lam) : (lam < 9.2e18 ? static_cast<std::int64_t>(lam) : INT64_MAX);
}

/**
 * Noncentral chi-square: for df > 1 a central chi-square on df - 1 degrees plus the square of a
 * normal shifted by sqrt(nonc); below, a chi-square on df + 2 K degrees with K ~ Poisson(nonc / 2).
 */
TESSERA_RNG double noncentral_chisquare(Draws& d, double df, double nonc) {
  if (nonc == 0.0) return 2.0 * standard_gamma(d, 0.5 * df);
  if (df > 1.0) {
    const double central = 2.0 * standard_gamma(d, 0.5 * (df - 1.0));
    const double z = d.normal() + sqrt(nonc);
    return central + z * z;
  }
  const double k = static_cast<double>(poisson(d, 0.5 * nonc));
  return 2.0 * standard_gamma(d, 0.5 * df + k);
}

/**
 * Von Mises on [-pi, pi): Best and Fisher's (1979) wrapped-Cauchy envelope; a normal with
 * variance 1 / kappa past kappa 1e6, where the envelope's constants lose their precision and the
 * distribution is that normal to within the precision of a double.
 */
TESSERA_RNG double vonmises(Draws& d, double mu, double kappa) {
  const double pi = 3.14159265358979323846;
  double theta;
  if (kappa < 1e-8) {
    theta = pi * (2.0 * d.uniform() - 1.0);
  } else if (kappa > 1e6) {
    theta = d.normal() / sqrt(kappa);
  } else {
    const double tau = 1.0 + sqrt(1.0 + 4.0 * kappa * kappa);
    const double rho = (tau - sqrt(2.0 * tau)) / (2.0 * kappa);
    const double r = (1.0 + rho * rho) / (2.0 * rho);
    double f;
    for (;;) {
      const double z = cos(pi * d.uniform());
      f = (1.0 + r * z) / (r + z);
      const double c = kappa * (r - f);
      const double u = d.uniform_pos();
      if (c * (2.0 - c) - u > 0.0 || log(c / u) + 1.0 - c >= 0.0) break;
    }
    if (f > 1.0) f = 1.0;
    if (f < -1.0) f = -1.0;
    theta = d.uniform() < 0.5 ? -acos(f) : acos(f);
  }
  // Into [-pi, pi) around mu.
  double x = fmod(theta + mu + pi, 2.0 * pi);
  if (x < 0.0) x += 2.0 * pi;
  return x - pi;
}

/** Zipf (a > 1): Devroye's rejection from the continuous Pareto envelope. */
TESSERA_RNG std::int64_t zipf(Draws& d, double a) {
  const double am1 = a - 1.0;
  const double b = exp2(am1);
  for (;;) {
    const double u = d.uniform_pos();
    const double v = d.uniform();
    const double x = floor(pow(u, -1.0 / am1));
    if (!(x >= 1.0) || x > 9.2e18) continue;  // beyond int64: NumPy rejects those too
    const double t = pow(1.0 + 1.0 / x, am1);
    if (v * x * (t - 1.0) / (b - 1.0) <= t / b) return static_cast<std::int64_t>(x);
  }
}

/** Logarithmic series (0 <= p < 1): Kemp's (1981) second algorithm. */
TESSERA_RNG std::int64_t logseries(Draws& d, double p) {
  if (p <= 0.0) return 1;
  const double r = log1p(-p);
  for (;;) {
    const double v = d.uniform();
    if (v >= p) return 1;
    const double q = -expm1(r * d.uniform());
    if (v <= q * q) {
      const double k = floor(1.0 + log(v) / log(q));
      if (k < 1.0 || !(k < 9.2e18)) continue;
      return static_cast<std::int64_t>(k);
    }
    return v >= q ? 1 : 2;
  }
}

/**
 * Good items in a sample of `sample` drawn without replacement from `good` good and `bad` bad
 * ones (good + bad < 1e9, as NumPy requires). Draws the smaller of the sample and its
 * complement: one item at a time below 10 draws; above, Stadlober's (1989) ratio-of-uniforms
 * method with its squeezes (the algorithm NumPy calls HRUA), on the smaller of the two colours.
 */
TESSERA_RNG std::int64_t hypergeometric(Draws& d, std::int64_t good, std::int64_t bad, std::int64_t sample) {
  const std::int64_t total = good + bad;
  if (sample <= 0 || good <= 0) return 0;
  if (bad <= 0) return sample;
  const std::int64_t m = sample < total - sample ? sample : total - sample;  // draws actually made
  if (m < 10) {
    std::int64_t good_left = good, left = total, got = 0;
    for (std::int64_t k = 0; k < m; ++k) {
      // good with probability good_left / left: an exact integer comparison of 53 random bits
      // scaled into [0, left).
      const auto pick = static_cast<std::int64_t>(d.uniform() * static_cast<double>(left));
      if (pick < good_left) {
        ++got;
        --good_left;
      }
      --left;
    }
    return m == sample ? got : good - got;  // the complement holds the rest of the good ones
  }
  const double a = 1.7155277699214135;  // 2 sqrt(2 / e)
  const double b = 0.8989161620588988;  // 3 - 2 sqrt(3 / e)
  const double few = static_cast<double>(good < bad ? good : bad);
  const double many = static_cast<double>(good < bad ? bad : good);
  const double n = static_cast<double>(total), mm = static_cast<double>(m);
  const double p = few / n, q = 1.0 - p;
  const double mean = mm * p + 0.5;
  // The standard deviation of the count, sqrt(m (n - m) p q / (n - 1)), widened by 0.5 as the method asks.
  const double spread = sqrt((n - mm) * mm * p * q / (n - 1.0) + 0.5);
  const double width = a * spread + b;
  const double mode = floor((mm + 1.0) * (few + 1.0) / (n + 2.0));
  const double log_at_mode =
      lgamma_of(mode + 1.0) + lgamma_of(few - mode + 1.0) + lgamma_of(mm - mode + 1.0) + lgamma_of(many - mm + mode + 1.0);
  const double upper_support = (mm < few ? mm : few) + 1.0;
  const double upper_tail = floor(mean + 16.0 * spread);
  const double upper = upper_support < upper_tail ? upper_support : upper_tail;
  double z;
  for (;;) {
    const double x = d.uniform_pos();
    const double y = d.uniform();
    const double w = mean + width * (y - 0.5) / x;
    if (w < 0.0 || w >= upper) continue;
    z = floor(w);
    const double t = log_at_mode - (lgamma_of(z + 1.0) + lgamma_of(few - z + 1.0) + lgamma_of(mm - z + 1.0) +
                                    lgamma_of(many - mm + z + 1.0));
    if (x * (4.0 - x) - 3.0 <= t) break;  // inside the lower squeeze: accept
    if (x * (x - t) >= 1.0) continue;      // outside the upper squeeze: reject
    if (2.0 * log(x) <= t) break;
  }
  // z counts the smaller colour in m draws; back to good ones in the sample.
  std::int64_t k = static_cast<std::int64_t>(z);
  if (good > bad) k = m - k;
  if (m < sample) k = good - k;
  return k;
}

/** Counts of n trials over k categories (pvals[k - 1] takes what the others leave): conditional binomials. */
TESSERA_RNG void multinomial_row(Draws& d, std::int64_t n, const double* pvals, int k, std::int64_t* out) {
  std::int64_t left = n;
  double mass = 1.0;
  for (int j = 0; j + 1 < k; ++j) {
    double p = mass > 0.0 ? pvals[j] / mass : 1.0;
    p = p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);  // rounding of the running mass
    out[j] = left > 0 ? binomial(d, static_cast<double>(left), p) : 0;
    left -= out[j];
    mass -= pvals[j];
  }
  if (k > 0) out[k - 1] = left;
}

/**
 * Counts of each colour in a sample of `sample` items drawn without replacement from colors[0..k).
 * by_count: one item at a time (NumPy's method "count"); otherwise a hypergeometric per colour
 * on what is left ("marginals"). The same distribution either way.
 */
TESSERA_RNG void multivariate_hypergeometric_row(Draws& d, const std::int64_t* colors, int k, std::int64_t sample,
                                                bool by_count, std::int64_t* out) {
  std::int64_t total = 0;
  for (int j = 0; j < k; ++j) {
    total += colors[j];
    out[j] = 0;
  }
  if (by_count) {
    for (std::int64_t s = 0; s < sample; ++s) {
      // Item number `pick` of those left, found by walking the colours' remaining counts.
      auto pick = static_cast<std::int64_t>(d.uniform() * static_cast<double>(total));
      int j = 0;
      while (j + 1 < k && pick >= colors[j] - out[j]) {
        pick -= colors[j] - out[j];
        ++j;
      }
      ++out[j];
      --total;
    }
    return;
  }
  std::int64_t left = sample;
  for (int j = 0; j + 1 < k && left > 0; ++j) {
    total -= colors[j];
    out[j] = hypergeometric(d, colors[j], total, left);
    left -= out[j];
  }
  if (k > 0 && left > 0) out[k - 1] += left;
}

/** SplitMix64's finaliser: a bijective 64-bit mix (also how mix_key spreads seeds). */
TESSERA_RNG std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr int kFeistelRounds = 12;

/**
 * Element i of a random permutation of [0, n): a keyed Feistel network (12 rounds; round r
 * XORs into one half mix64 of the other half and round key r, itself mix64 of the array's key
 * and r) on the smallest even number of bits that holds n - 1, walked along its
 * cycle until the value falls below n, which keeps it a bijection of [0, n).
 */
TESSERA_RNG std::int64_t permutation_at(std::uint64_t key, std::uint64_t n, std::uint64_t i) {
  if (n <= 1) return 0;
  int bits = 0;
  while (bits < 64 && ((n - 1) >> bits) != 0) ++bits;
  const int half = (bits + 1) / 2;
  const std::uint64_t mask = (std::uint64_t{1} << half) - 1;
  std::uint64_t round_key[kFeistelRounds];
  for (int r = 0; r < kFeistelRounds; ++r)
    round_key[r] = mix64(key ^ ((kStreamBase + kPermutation) * 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(r + 1)));
  std::uint64_t x = i;
  do {
    std::uint64_t left = x >> half, right = x & mask;
    for (int r = 0; r < kFeistelRounds; ++r) {
      const std::uint64_t mixed = left ^ (mix64(right ^ round_key[r]) & mask);
      left = right;
      right = mixed;
    }
    x = (left << half) | right;
  } while (x >= n);
  return static_cast<std::int64_t>(x);
}

/** Element i of a floating-point distribution (code g, parameters p0, p1 and the integer n0). */
TESSERA_RNG_ENTRY double sample_f64(int g, std::uint64_t key, double p0, double p1, std::int64_t n0, std::uint64_t i) {
  Draws d(key, kStreamBase + static_cast<std::uint32_t>(g), i);
  switch (g) {
    case kExponential: return -log1p(-d.uniform()) * p0;
    case kGamma: return standard_gamma(d, p0) * p1;
    case kBeta: return beta(d, p0, p1);
    case kStandardT: {
      const double z = d.normal();
      return sqrt(0.5 * p0) * z / sqrt(standard_gamma(d, 0.5 * p0));
    }
    case kPoisson: return static_cast<double>(poisson(d, p0));
    case kBinomial: return static_cast<double>(binomial(d, p1, p0));
    case kGeometric: return static_cast<double>(geometric(d, p0));
    case kPermutation: return static_cast<double>(permutation_at(key, static_cast<std::uint64_t>(p0), i));
    case kNegativeBinomial: return static_cast<double>(negative_binomial(d, p0, p1));
    case kNoncentralChisquare: return noncentral_chisquare(d, p0, p1);
    case kVonMises: return vonmises(d, p0, p1);
    case kZipf: return static_cast<double>(zipf(d, p0));
    case kLogseries: return static_cast<double>(logseries(d, p0));
    case kHypergeometric:
      return static_cast<double>(hypergeometric(d, static_cast<std::int64_t>(p0), static_cast<std::int64_t>(p1), n0));
    default: return 0.0;
  }
}

/** Element i of an integer distribution; the floating-point ones truncated (as a cast). */
TESSERA_RNG_ENTRY std::int64_t sample_i64(int g, std::uint64_t key, double p0, double p1, std::int64_t n0,
                                          std::uint64_t i) {
  Draws d(key, kStreamBase + static_cast<std::uint32_t>(g), i);
  switch (g) {
    case kPoisson: return poisson(d, p0);
    case kBinomial: return binomial(d, p1, p0);
    case kGeometric: return geometric(d, p0);
    case kPermutation: return permutation_at(key, static_cast<std::uint64_t>(p0), i);
    case kNegativeBinomial: return negative_binomial(d, p0, p1);
    case kZipf: return zipf(d, p0);
    case kLogseries: return logseries(d, p0);
    case kHypergeometric: return hypergeometric(d, static_cast<std::int64_t>(p0), static_cast<std::int64_t>(p1), n0);
    default: {
      const double x = sample_f64(g, key, p0, p1, n0, i);
      // As elem::to_int64: NaN and out of range give INT64_MIN.
      return (x >= -9.223372036854775808e18 && x < 9.223372036854775808e18) ? static_cast<std::int64_t>(x) : INT64_MIN;
    }
  }
}

}  // namespace
}  // namespace tessera::detail::rng

#undef TESSERA_RNG
#undef TESSERA_RNG_ENTRY
