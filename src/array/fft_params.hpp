#pragma once
// Internal: the parameters of one "tessera.array.fft" task, shared by the host op (fft.cpp,
// Eigen) and the device op (cuda/fft.cpp, cuFFT).
#include <cstdint>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera::detail {

inline constexpr const char* kFftOp = "tessera.array.fft";

enum class FftKind : std::uint8_t {
  Forward,  // complex to complex over every axis
  Inverse,
  Real,         // numpy rfftn: real to half spectrum over the last axis, then forward over the others
  InverseReal,  // numpy irfftn: inverse over all but the last axis, then half spectrum to real over it
};
enum class FftNorm : std::uint8_t { Backward, Ortho, Forward };

struct FftParams {
  std::uint8_t kind = 0;               // FftKind
  std::uint8_t norm = 0;               // FftNorm
  std::vector<std::int32_t> axes;      // in the order NumPy applies them (see fft_steps)
  std::vector<std::int64_t> lengths;   // transform length n per axis (InverseReal: the real output length)
  DType out = DType::Complex128;       // the chunk's dtype
  template <class Ar>
  void serialize(Ar& ar) {
    ar(kind, norm, axes, lengths, out);
  }
};

/** One 1-d transform along an axis: its length, direction and whether it ends or starts real. */
struct FftStep {
  int axis = 0;
  std::int64_t n = 0;     // transform length
  bool inverse = false;
  bool to_half = false;   // keep n/2 + 1 outputs (rfft)
  bool from_half = false; // input is a half spectrum of n/2 + 1 values, output real (irfft)
  double scale = 1;       // applied to the outputs (norm)
};

/** The 1-d steps of a task, in order: rfftn's real axis first, irfftn's last. */
inline std::vector<FftStep> fft_steps(const FftParams& p) {
  const auto kind = static_cast<FftKind>(p.kind);
  const bool inverse = kind == FftKind::Inverse || kind == FftKind::InverseReal;
  std::vector<FftStep> steps;
  const std::size_t k = p.axes.size();
  for (std::size_t i = 0; i < k; ++i) {
    FftStep s;
    s.axis = p.axes[i];
    s.n = p.lengths[i];
    s.inverse = inverse;
    const double n = static_cast<double>(s.n);
    switch (static_cast<FftNorm>(p.norm)) {
      case FftNorm::Backward: s.scale = inverse ? 1.0 / n : 1.0; break;
      case FftNorm::Ortho: s.scale = 1.0 / __builtin_sqrt(n); break;
      case FftNorm::Forward: s.scale = inverse ? 1.0 : 1.0 / n; break;
    }
    steps.push_back(s);
  }
  if (kind == FftKind::Real && k) {  // the last axis first, real to half spectrum
    FftStep last = steps.back();
    last.to_half = true;
    steps.pop_back();
    steps.insert(steps.begin(), last);
  }
  if (kind == FftKind::InverseReal && k) steps.back().from_half = true;
  return steps;
}

}  // namespace tessera::detail
