// Counter-based random generation (Philox4x32-10 from Random123).
//
// The element at linear index i of a random array is a pure function of (key, stream, i), so any
// chunk, any slice of it and a GPU kernel produce the same numbers. Definitions (the GPU back
// end implements exactly these):
//   normal:   c = i >> 1, x = philox({c.lo, c.hi, 1, 0}, key)
//             u1 = 2 - as_double(0x3ff0000000000000 | (x1:x0 >> 12)) in (0, 1]
//             u2 = as_double(0x3ff0000000000000 | (x3:x2 >> 12)) - 1 in [0, 1)
//             value = mean + std * sqrt(-2 ln u1) * cos(2 pi u2 - (i & 1) * pi / 2)
//             (even i takes the cosine of the Box-Muller pair, odd i the sine)
//   uniform:  c = i >> 1, x = philox({c.lo, c.hi, 2, 0}, key), w = (i even ? x1:x0 : x3:x2),
//             value = low + (high - low) * u with u = as_double(0x3ff0000000000000 | (w >> 12)) - 1
//             in [0, 1)
// (52-bit uniforms made from the exponent bits: exact, and vectorisable without AVX-512.)
//   integers: x = philox({i.lo, i.hi, 3, 0}, key), value = low + ((x1:x0) * (high - low)) >> 64
//
// This file is compiled once per x86-64 ISA level (see isa.hpp) and with -ffast-math so that GCC vectorises log,
// sqrt and cos through glibc's libmvec; inputs here are always finite. Work is done in blocks of
// kLanes elements: first the counters are hashed into uniforms, then the transforms run over
// whole blocks, which keeps both loops free of branches.
#include <Random123/philox.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "../element_semantics.hpp"
#include "../program.hpp"
#include "isa.hpp"

namespace tessera::detail::TESSERA_ISA {
namespace {

constexpr int kLanes = 256;
constexpr std::uint64_t kOneBits = 0x3ff0000000000000ULL;

/** A double in [1, 2) whose 52 mantissa bits are the top bits of x. */
inline double one_to_two(std::uint64_t x) {
  return std::bit_cast<double>(kOneBits | (x >> 12));
}
constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kHalfPi = 1.5707963267948966192313216916398;

#if defined(__AVX512F__)
// Philox4x32-10 (Random123's constants and rounds, the same outputs) on eight counters per
// register, one 32-bit word per 64-bit lane: vpmuludq multiplies the lanes' low halves into
// full 64-bit products, so the high word is a shift and the low word needs no mask (only the low
// 32 bits of a lane are ever read: by the next multiply, by the three-way XOR, and at the end).
// Four groups of eight run side by side to cover the multiply's latency, and the whole ten
// rounds stay in registers. Measured against the round-at-a-time loop over arrays it replaced
// (which kept every word in memory between rounds): docs/benchmarks-history.md, "Philox in
// registers".
struct PhiloxLanes {
  __m512i a0, a1, a2, a3;
};

inline PhiloxLanes philox_start(__m512i counters, __m512i stream) {
  return {counters, _mm512_srli_epi64(counters, 32), stream, _mm512_setzero_si512()};
}

template <int G>
inline void philox_rounds(PhiloxLanes (&x)[G], const __m512i* k0, const __m512i* k1) {
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53), m1 = _mm512_set1_epi64(0xCD9E8D57);
  for (int round = 0; round < 10; ++round) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m512i p0 = _mm512_mul_epu32(x[g].a0, m0);
      const __m512i p1 = _mm512_mul_epu32(x[g].a2, m1);
      // 0x96: a ^ b ^ c
      x[g].a0 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), x[g].a1, k0[round], 0x96);
      x[g].a2 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), x[g].a3, k1[round], 0x96);
      x[g].a1 = p1;
      x[g].a3 = p0;
    }
  }
}

inline __m512i philox_word_pair(__m512i high, __m512i low) {
  return _mm512_or_si512(_mm512_slli_epi64(high, 32), _mm512_and_si512(low, _mm512_set1_epi64(0xffffffff)));
}

inline void philox_block(std::uint64_t key, std::uint32_t stream, const std::uint64_t* counters, int n,
                         std::uint64_t* lo_bits, std::uint64_t* hi_bits) {
  constexpr std::uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  __m512i k0[10], k1[10];
  std::uint32_t r0 = static_cast<std::uint32_t>(key), r1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round, r0 += kW0, r1 += kW1) {
    k0[round] = _mm512_set1_epi64(r0);
    k1[round] = _mm512_set1_epi64(r1);
  }
  const __m512i st = _mm512_set1_epi64(stream);
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    PhiloxLanes x[4];
    for (int g = 0; g < 4; ++g) x[g] = philox_start(_mm512_loadu_si512(counters + j + 8 * g), st);
    philox_rounds<4>(x, k0, k1);
    for (int g = 0; g < 4; ++g) {
      _mm512_storeu_si512(lo_bits + j + 8 * g, philox_word_pair(x[g].a1, x[g].a0));
      _mm512_storeu_si512(hi_bits + j + 8 * g, philox_word_pair(x[g].a3, x[g].a2));
    }
  }
  for (; j < n; j += 8) {
    const __mmask8 m = n - j >= 8 ? __mmask8{0xff} : static_cast<__mmask8>((1u << (n - j)) - 1);
    PhiloxLanes x[1] = {philox_start(_mm512_maskz_loadu_epi64(m, counters + j), st)};
    philox_rounds<1>(x, k0, k1);
    _mm512_mask_storeu_epi64(lo_bits + j, m, philox_word_pair(x[0].a1, x[0].a0));
    _mm512_mask_storeu_epi64(hi_bits + j, m, philox_word_pair(x[0].a3, x[0].a2));
  }
}
#else
inline void philox_block(std::uint64_t key, std::uint32_t stream, const std::uint64_t* counters, int n,
                         std::uint64_t* lo_bits, std::uint64_t* hi_bits) {
  const philox4x32_key_t k = {{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)}};
#pragma GCC ivdep
  for (int j = 0; j < n; ++j) {
    const std::uint64_t c = counters[j];
    philox4x32_ctr_t ctr = {{static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32), stream, 0u}};
    const philox4x32_ctr_t x = philox4x32_R(10, ctr, k);
    lo_bits[j] = (static_cast<std::uint64_t>(x.v[1]) << 32) | x.v[0];
    hi_bits[j] = (static_cast<std::uint64_t>(x.v[3]) << 32) | x.v[2];
  }
}
#endif

// Contiguous elements (delta 1) share Box-Muller pairs: one Philox call, log and sqrt per pair
// instead of per element. Both halves use the same expression as normal_block, so values are
// identical whichever path computed them.
void normal_pairs(std::uint64_t key, double mean, double stddev, std::int64_t start, int n, double* out) {
  alignas(64) std::uint64_t counters[kLanes / 2 + 1];
  alignas(64) std::uint64_t lo[kLanes / 2 + 1];
  alignas(64) std::uint64_t hi[kLanes / 2 + 1];
  alignas(64) double both[kLanes + 2];
  const std::uint64_t first = static_cast<std::uint64_t>(start) >> 1;
  const int pairs = static_cast<int>(((static_cast<std::uint64_t>(start) + n - 1) >> 1) - first + 1);
  for (int k = 0; k < pairs; ++k) counters[k] = first + k;
  philox_block(key, 1u, counters, pairs, lo, hi);
  for (int k = 0; k < pairs; ++k) {
    const double u1 = 2.0 - one_to_two(lo[k]);
    const double u2 = one_to_two(hi[k]) - 1.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    both[2 * k] = mean + stddev * (r * std::cos(kTwoPi * u2 - 0.0));
    both[2 * k + 1] = mean + stddev * (r * std::cos(kTwoPi * u2 - kHalfPi));
  }
  const int skip = static_cast<int>(start & 1);
  for (int j = 0; j < n; ++j) out[j] = both[skip + j];
}

void normal_block(std::uint64_t key, double mean, double stddev, std::int64_t start, std::int64_t delta, int n,
                  double* out) {
  if (delta == 1) return normal_pairs(key, mean, stddev, start, n, out);
  alignas(64) std::uint64_t counters[kLanes];
  alignas(64) std::uint64_t lo[kLanes];
  alignas(64) std::uint64_t hi[kLanes];
  alignas(64) double shift[kLanes];
  for (int j = 0; j < n; ++j) {
    const std::uint64_t i = static_cast<std::uint64_t>(start + delta * j);
    counters[j] = i >> 1;
    shift[j] = (i & 1u) ? kHalfPi : 0.0;
  }
  philox_block(key, 1u, counters, n, lo, hi);
  for (int j = 0; j < n; ++j) {
    const double u1 = 2.0 - one_to_two(lo[j]);
    const double u2 = one_to_two(hi[j]) - 1.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[j] = mean + stddev * (r * std::cos(kTwoPi * u2 - shift[j]));
  }
}

// Each Philox call gives 128 bits: two uniforms, elements 2c and 2c + 1 (low and high words).
void uniform_block(std::uint64_t key, double low, double high, std::int64_t start, std::int64_t delta, int n,
                   double* out) {
  alignas(64) std::uint64_t counters[kLanes + 1];
  alignas(64) std::uint64_t lo[kLanes + 1];
  alignas(64) std::uint64_t hi[kLanes + 1];
  const double span = high - low;
  if (delta == 1) {
    // Contiguous: one call per pair of elements.
    const std::uint64_t first = static_cast<std::uint64_t>(start) >> 1;
    const int pairs = static_cast<int>(((static_cast<std::uint64_t>(start) + n - 1) >> 1) - first + 1);
    for (int k = 0; k < pairs; ++k) counters[k] = first + k;
    philox_block(key, 2u, counters, pairs, lo, hi);
    alignas(64) std::uint64_t both[2 * kLanes + 2];
    for (int k = 0; k < pairs; ++k) {
      both[2 * k] = lo[k];
      both[2 * k + 1] = hi[k];
    }
    const std::uint64_t* bits = both + (start & 1);
    for (int j = 0; j < n; ++j) out[j] = low + span * (one_to_two(bits[j]) - 1.0);
    return;
  }
  for (int j = 0; j < n; ++j) counters[j] = static_cast<std::uint64_t>(start + delta * j) >> 1;
  philox_block(key, 2u, counters, n, lo, hi);
  for (int j = 0; j < n; ++j) {
    const bool odd = (static_cast<std::uint64_t>(start + delta * j) & 1u) != 0;
    out[j] = low + span * (one_to_two(odd ? hi[j] : lo[j]) - 1.0);
  }
}

// Element i of integers(low, high) is the low (even i) or high (odd i) word of Philox call i >> 1
// (as uniforms): one call per pair of contiguous elements, as the device's integers_at.
void integers_block(std::uint64_t key, std::int64_t low, std::int64_t high, std::int64_t start, std::int64_t delta,
                    int n, std::int64_t* out) {
  alignas(64) std::uint64_t counters[kLanes + 1];
  alignas(64) std::uint64_t lo[kLanes + 1];
  alignas(64) std::uint64_t hi[kLanes + 1];
  alignas(64) std::uint64_t bits[2 * kLanes + 2];
  const std::uint64_t* word = bits;
  if (delta == 1) {
    const std::uint64_t first = static_cast<std::uint64_t>(start) >> 1;
    const int pairs = static_cast<int>(((static_cast<std::uint64_t>(start) + n - 1) >> 1) - first + 1);
    for (int k = 0; k < pairs; ++k) counters[k] = first + k;
    philox_block(key, 3u, counters, pairs, lo, hi);
    for (int k = 0; k < pairs; ++k) {
      bits[2 * k] = lo[k];
      bits[2 * k + 1] = hi[k];
    }
    word = bits + (start & 1);
  } else {
    for (int j = 0; j < n; ++j) counters[j] = static_cast<std::uint64_t>(start + delta * j) >> 1;
    philox_block(key, 3u, counters, n, lo, hi);
    for (int j = 0; j < n; ++j) bits[j] = (static_cast<std::uint64_t>(start + delta * j) & 1u) != 0 ? hi[j] : lo[j];
  }
  // In unsigned arithmetic (as the device's integers_at): the range of the whole int64 span
  // (endpoint=true up to INT64_MAX) does not fit a signed difference.
  const auto range = static_cast<unsigned __int128>(static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low));
  for (int j = 0; j < n; ++j)
    out[j] = static_cast<std::int64_t>(static_cast<std::uint64_t>(low) +
                                       static_cast<std::uint64_t>((static_cast<unsigned __int128>(word[j]) * range) >> 64));
}

}  // namespace

void generate_f64(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t start, std::int64_t delta,
                  std::int64_t n, double* out) {
  for (std::int64_t done = 0; done < n; done += kLanes) {
    const int m = static_cast<int>(std::min<std::int64_t>(kLanes, n - done));
    const std::int64_t s = start + delta * done;
    switch (static_cast<GenKind>(gen)) {
      case GenKind::Normal: normal_block(key, p0, p1, s, delta, m, out + done); break;
      case GenKind::Uniform: uniform_block(key, p0, p1, s, delta, m, out + done); break;
      case GenKind::Full:
        for (int j = 0; j < m; ++j) out[done + j] = p0;
        break;
      case GenKind::Arange:
        for (int j = 0; j < m; ++j) out[done + j] = p0 + p1 * static_cast<double>(s + delta * j);
        break;
      case GenKind::Integers: {
        alignas(64) std::int64_t tmp[kLanes];
        integers_block(key, static_cast<std::int64_t>(p0), static_cast<std::int64_t>(p1), s, delta, m, tmp);
        for (int j = 0; j < m; ++j) out[done + j] = static_cast<double>(tmp[j]);
        break;
      }
      // Distributions read as floats: none of those takes an integer parameter (hypergeometric,
      // the one that does, is int64 and comes through generate_i64).
      default: sample_distribution_f64(gen, key, p0, p1, 0, s, delta, m, out + done); break;
    }
  }
}

// Two rows whose elements are neighbours in the counter space: row 0 holds indices start +
// delta * j, row 1 the next index of each. That is how a transposed read (x.T) walks x: along its
// rows x's index moves by delta, from one row to the next by 1. With start and delta even, each
// Philox call serves both rows (its low word row 0, its high word row 1), where the strided path
// alone makes one call per element. The values are those of the element-by-element formulas
// above (normal_pairs' expressions), so the paths agree.
bool generate_f64_row_pair(std::uint8_t gen, std::uint64_t key, double p0, double p1, std::int64_t start,
                           std::int64_t delta, std::int64_t n, double* row0, double* row1) {
  const auto kind = static_cast<GenKind>(gen);
  if ((kind != GenKind::Uniform && kind != GenKind::Normal) || (start & 1) != 0 || (delta & 1) != 0) return false;
  alignas(64) std::uint64_t counters[kLanes];
  alignas(64) std::uint64_t lo[kLanes];
  alignas(64) std::uint64_t hi[kLanes];
  for (std::int64_t done = 0; done < n; done += kLanes) {
    const int m = static_cast<int>(std::min<std::int64_t>(kLanes, n - done));
    const std::int64_t s = start + delta * done;
    for (int j = 0; j < m; ++j) counters[j] = static_cast<std::uint64_t>(s + delta * j) >> 1;
    double* o0 = row0 + done;
    double* o1 = row1 + done;
    if (kind == GenKind::Uniform) {
      philox_block(key, 2u, counters, m, lo, hi);
      const double span = p1 - p0;
      for (int j = 0; j < m; ++j) {
        o0[j] = p0 + span * (one_to_two(lo[j]) - 1.0);
        o1[j] = p0 + span * (one_to_two(hi[j]) - 1.0);
      }
    } else {
      philox_block(key, 1u, counters, m, lo, hi);
      for (int j = 0; j < m; ++j) {
        const double u1 = 2.0 - one_to_two(lo[j]);
        const double u2 = one_to_two(hi[j]) - 1.0;
        const double r = std::sqrt(-2.0 * std::log(u1));
        o0[j] = p0 + p1 * (r * std::cos(kTwoPi * u2 - 0.0));
        o1[j] = p0 + p1 * (r * std::cos(kTwoPi * u2 - kHalfPi));
      }
    }
  }
  return true;
}

void generate_i64(std::uint8_t gen, std::uint64_t key, std::int64_t lo, std::int64_t hi, double p0, double p1,
                  std::int64_t start, std::int64_t delta, std::int64_t n, std::int64_t* out) {
  for (std::int64_t done = 0; done < n; done += kLanes) {
    const int m = static_cast<int>(std::min<std::int64_t>(kLanes, n - done));
    const std::int64_t s = start + delta * done;
    switch (static_cast<GenKind>(gen)) {
      case GenKind::Integers: integers_block(key, lo, hi, s, delta, m, out + done); break;
      case GenKind::Full:
        for (int j = 0; j < m; ++j) out[done + j] = elem::to_int64(p0);
        break;
      case GenKind::Arange:
        // Integer aranges stay exact: start + step * i in integer arithmetic.
        for (int j = 0; j < m; ++j)
          out[done + j] = static_cast<std::int64_t>(p0) + static_cast<std::int64_t>(p1) * (s + delta * j);
        break;
      case GenKind::Poisson:
      case GenKind::Binomial:
      case GenKind::Geometric:
      case GenKind::Permutation:
      case GenKind::NegativeBinomial:
      case GenKind::Zipf:
      case GenKind::Logseries:
      case GenKind::Hypergeometric: sample_distribution_i64(gen, key, p0, p1, lo, s, delta, m, out + done); break;
      default: {
        alignas(64) double tmp[kLanes];
        generate_f64(gen, key, p0, p1, s, delta, m, tmp);
        for (int j = 0; j < m; ++j) out[done + j] = static_cast<std::int64_t>(tmp[j]);
      }
    }
  }
}

}  // namespace tessera::detail::TESSERA_ISA
