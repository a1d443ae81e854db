// The device variant of "tessera.array.fft" (cuda/fft.cpp, cuFFT) against the host one (Eigen):
// every kind of transform, padding and truncation, every norm, both precisions, a transformed
// axis before others (strided lines). cuFFT sums in its own order, so values agree to rounding.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <complex>
#include <random>
#include <string>
#include <vector>

#include "array/fft_params.hpp"
#include "gpu_test_util.hpp"
#include "tessera/core/device.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace {

using namespace tessera;
using detail::FftKind;
using detail::FftNorm;
using detail::FftParams;

Value run_on(Target target, const std::vector<Value>& args) {
  static const Key key = "cuda-fft-test";
  return run_op(detail::kFftOp, OpContext{&key, target, target == Target::Device ? 0 : -1},
                std::span<const Value>(args));
}

Block random_block(DType dtype, const Shape& shape, std::mt19937_64& gen) {
  std::normal_distribution<double> normal;
  Block b(dtype, shape);
  for (std::int64_t i = 0; i < b.size(); ++i) {
    switch (dtype) {
      case DType::Float64: b.data<double>()[i] = normal(gen); break;
      case DType::Float32: b.data<float>()[i] = static_cast<float>(normal(gen)); break;
      case DType::Complex128: b.data<std::complex<double>>()[i] = {normal(gen), normal(gen)}; break;
      default: b.data<std::complex<float>>()[i] = {static_cast<float>(normal(gen)), static_cast<float>(normal(gen))}; break;
    }
  }
  return b;
}

std::vector<std::complex<double>> as_complex(const Block& b) {
  std::vector<std::complex<double>> v;
  for (std::int64_t i = 0; i < b.size(); ++i) {
    switch (b.dtype()) {
      case DType::Float64: v.emplace_back(b.data<double>()[i], 0); break;
      case DType::Float32: v.emplace_back(b.data<float>()[i], 0); break;
      case DType::Complex128: v.push_back(b.data<std::complex<double>>()[i]); break;
      default: v.emplace_back(b.data<std::complex<float>>()[i]); break;
    }
  }
  return v;
}

void expect_device_matches_host(FftKind kind, FftNorm norm, std::vector<std::int32_t> axes, std::vector<std::int64_t> n,
                                DType in_dtype, DType out, const Shape& shape, std::mt19937_64& gen) {
  FftParams p;
  p.kind = static_cast<std::uint8_t>(kind);
  p.norm = static_cast<std::uint8_t>(norm);
  p.axes = std::move(axes);
  p.lengths = std::move(n);
  p.out = out;
  const std::vector<Value> args{Value(to_object(p, "FftParams")), Value(random_block(in_dtype, shape, gen))};
  const Block host = run_on(Target::Host, args).block();
  const Block device = to_host(run_on(Target::Device, args).block());
  ASSERT_EQ(device.dtype(), host.dtype());
  ASSERT_EQ(device.shape(), host.shape());
  const auto h = as_complex(host), d = as_complex(device);
  const double tol = (out == DType::Complex64 || out == DType::Float32) ? 1e-4 : 1e-11;
  for (std::size_t i = 0; i < h.size(); ++i)
    ASSERT_LE(std::abs(h[i] - d[i]), tol * (1 + std::abs(h[i]))) << "element " << i << ": host " << h[i] << " device " << d[i];
}

TEST(CudaFft, DeviceMatchesHostForEveryKindNormAndPrecision) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(17);
  for (FftNorm norm : {FftNorm::Backward, FftNorm::Ortho, FftNorm::Forward}) {
    SCOPED_TRACE(static_cast<int>(norm));
    // complex to complex along the last axis, padded and truncated; along the first (strided).
    expect_device_matches_host(FftKind::Forward, norm, {1}, {8}, DType::Complex128, DType::Complex128, {3, 8}, gen);
    expect_device_matches_host(FftKind::Forward, norm, {1}, {11}, DType::Complex128, DType::Complex128, {3, 8}, gen);
    expect_device_matches_host(FftKind::Inverse, norm, {0}, {5}, DType::Complex128, DType::Complex128, {7, 4}, gen);
    expect_device_matches_host(FftKind::Forward, norm, {0, 1}, {4, 6}, DType::Complex64, DType::Complex64, {4, 6}, gen);
    // real input to a complex transform, rfftn, irfftn.
    expect_device_matches_host(FftKind::Forward, norm, {1}, {6}, DType::Float64, DType::Complex128, {2, 6}, gen);
    expect_device_matches_host(FftKind::Real, norm, {0, 1}, {5, 9}, DType::Float64, DType::Complex128, {5, 9}, gen);
    expect_device_matches_host(FftKind::Real, norm, {1}, {8}, DType::Float32, DType::Complex64, {3, 8}, gen);
  }
  // irfft of the spectrum of a real signal (zero imaginary parts at 0 and n/2, where cuFFT and
  // pocketfft could differ).
  FftParams r;
  r.kind = static_cast<std::uint8_t>(FftKind::Real);
  r.axes = {1};
  r.lengths = {10};
  r.out = DType::Complex128;
  const Value spectrum = run_on(Target::Host, {Value(to_object(r, "FftParams")), Value(random_block(DType::Float64, {2, 10}, gen))});
  FftParams ir;
  ir.kind = static_cast<std::uint8_t>(FftKind::InverseReal);
  ir.axes = {1};
  ir.lengths = {10};
  ir.out = DType::Float64;
  const std::vector<Value> args{Value(to_object(ir, "FftParams")), Value(spectrum.block())};
  const Block host = run_on(Target::Host, args).block();
  const Block device = to_host(run_on(Target::Device, args).block());
  ASSERT_EQ(device.dtype(), DType::Float64);
  ASSERT_EQ(device.shape(), host.shape());
  for (std::int64_t i = 0; i < host.size(); ++i) EXPECT_NEAR(device.data<double>()[i], host.data<double>()[i], 1e-11);
}

}  // namespace
