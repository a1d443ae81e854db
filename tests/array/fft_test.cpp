// numpy.fft / dask.array.fft: every transform against a plain DFT written here, round trips,
// NumPy's result dtypes, the one-chunk-per-axis rule, and fftfreq/fftshift against numpy's values.
#include <cmath>
#include <complex>

#include "array_test_util.hpp"
#include "tessera/array/complex.hpp"
#include "tessera/array/fft.hpp"

using namespace tessera_test;

namespace {

using Z = std::complex<double>;

// Naive DFT of a line: sum_j x[j] exp(sign 2 pi i j k / n), x padded or truncated to n.
std::vector<Z> dft(const std::vector<Z>& x, std::int64_t n, bool inverse, double scale) {
  std::vector<Z> out(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    Z s = 0;
    for (std::int64_t j = 0; j < n && j < static_cast<std::int64_t>(x.size()); ++j)
      s += x[static_cast<std::size_t>(j)] * std::polar(1.0, (inverse ? 2 : -2) * M_PI * static_cast<double>(j * k) / static_cast<double>(n));
    out[static_cast<std::size_t>(k)] = s * scale;
  }
  return out;
}

std::vector<Z> test_signal(std::size_t n, int salt = 0) {
  std::vector<Z> v;
  for (std::size_t i = 0; i < n; ++i) v.emplace_back(std::sin(0.7 * i + salt) + 0.1 * i, std::cos(1.3 * i * (salt + 1)) - 0.2);
  return v;
}

std::vector<Z> complex_of(const Block& b) {
  std::vector<Z> out;
  if (b.dtype() == DType::Complex128)
    for (const Z& z : b.values<Z>()) out.push_back(z);
  else
    for (const auto& z : b.values<std::complex<float>>()) out.emplace_back(z.real(), z.imag());
  return out;
}

void expect_fft_close(const std::vector<Z>& got, const std::vector<Z>& want, double tol = 1e-10) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i]))) << "element " << i << ": " << got[i] << " vs " << want[i];
}

Array complex_array(const std::vector<Z>& v, Shape shape, ChunkSpec chunks) {
  return from_block(Block::from_values<Z>(v, std::move(shape)), std::move(chunks));
}

TEST(Fft, OneDimensionalMatchesTheDftForEveryNAndNorm) {
  const auto x = test_signal(12);
  const Array a = complex_array(x, {12}, {-1});
  for (std::int64_t n : {12, 8, 17}) {
    for (const char* norm : {"backward", "ortho", "forward"}) {
      SCOPED_TRACE(std::string(norm) + " n=" + std::to_string(n));
      const double nn = static_cast<double>(n);
      const std::string nm = norm;
      const double fscale = nm == "backward" ? 1.0 : nm == "ortho" ? 1 / std::sqrt(nn) : 1 / nn;
      const double iscale = nm == "backward" ? 1 / nn : nm == "ortho" ? 1 / std::sqrt(nn) : 1.0;
      const Array f = fft::fft(a, n, -1, norm);
      EXPECT_EQ(f.dtype(), DType::Complex128);
      EXPECT_EQ(f.shape(), (Shape{n}));
      expect_fft_close(complex_of(f.compute()), dft(x, n, false, fscale));
      expect_fft_close(complex_of(fft::ifft(a, n, 0, norm).compute()), dft(x, n, true, iscale));
    }
  }
  expect_fft_close(complex_of(fft::ifft(fft::fft(a)).compute()), x);
}

TEST(Fft, AlongEitherAxisOfChunked2dArrays) {
  const auto x = test_signal(6 * 5, 1);
  for (ChunkSpec other : {ChunkSpec{1}, ChunkSpec{2}, ChunkSpec{-1}}) {
    // Axis 1 transformed: axis 1 in one chunk, axis 0 chunked.
    const Array a = complex_array(x, {6, 5}, {other[0], -1});
    const Array f = fft::fft(a, std::nullopt, 1);
    EXPECT_EQ(f.chunks()[0], a.chunks()[0]);
    for (const auto& e : executors()) {
      const auto got = complex_of(f.compute(*e.ex));
      for (int r = 0; r < 6; ++r) {
        std::vector<Z> row(x.begin() + r * 5, x.begin() + r * 5 + 5);
        expect_fft_close(std::vector<Z>(got.begin() + r * 5, got.begin() + r * 5 + 5), dft(row, 5, false, 1));
      }
    }
    // Axis 0 transformed (a strided line), padded to 8.
    const Array b = complex_array(x, {6, 5}, {-1, other[0]});
    const auto got = complex_of(fft::fft(b, 8, 0).compute());
    ASSERT_EQ(got.size(), 8u * 5u);
    for (int c = 0; c < 5; ++c) {
      std::vector<Z> col;
      for (int r = 0; r < 6; ++r) col.push_back(x[r * 5 + c]);
      const auto want = dft(col, 8, false, 1);
      for (int k = 0; k < 8; ++k) EXPECT_LE(std::abs(got[k * 5 + c] - want[k]), 1e-10 * (1 + std::abs(want[k])));
    }
  }
}

TEST(Fft, RealTransformsAndRoundTrips) {
  std::vector<double> xr;
  for (int i = 0; i < 4 * 9; ++i) xr.push_back(std::sin(0.3 * i) + 0.05 * i * i);
  const Array x = from_block(Block::from_values(xr, {4, 9}), {2, -1});
  const Array r = fft::rfft(x);
  EXPECT_EQ(r.shape(), (Shape{4, 5}));
  EXPECT_EQ(r.dtype(), DType::Complex128);
  const auto got = complex_of(r.compute());
  for (int row = 0; row < 4; ++row) {
    std::vector<Z> line(xr.begin() + row * 9, xr.begin() + row * 9 + 9);
    const auto want = dft(line, 9, false, 1);
    expect_fft_close(std::vector<Z>(got.begin() + row * 5, got.begin() + row * 5 + 5), std::vector<Z>(want.begin(), want.begin() + 5));
  }
  // irfft: the odd length must be given; the default is 2 (m - 1) = 8.
  const Array back = fft::irfft(r, 9);
  EXPECT_EQ(back.dtype(), DType::Float64);
  const auto b = back.compute().to_doubles();
  for (std::size_t i = 0; i < xr.size(); ++i) EXPECT_NEAR(b[i], xr[i], 1e-10);
  EXPECT_EQ(fft::irfft(r).shape(), (Shape{4, 8}));
  // irfft of even length against the DFT of the Hermitian extension.
  const std::vector<Z> half{{1, 0}, {2, -1}, {0.5, 3}, {-1, 0}};
  const auto ir = fft::irfft(complex_array(half, {4}, {-1}), 6, -1, "ortho").compute().to_doubles();
  std::vector<Z> full(half.begin(), half.end());
  full.push_back(std::conj(half[2]));
  full.push_back(std::conj(half[1]));
  const auto want = dft(full, 6, true, 1 / std::sqrt(6.0));
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(ir[i], want[i].real(), 1e-12);
}

TEST(Fft, NdTransformsAreSeparable) {
  const auto x = test_signal(3 * 4 * 5, 2);
  const Array a = complex_array(x, {3, 4, 5}, {1, -1, -1});
  // fft2 over the last two axes == fft(fft(a, axis 2), axis 1).
  const auto want = complex_of(fft::fft(fft::fft(a, std::nullopt, 2), std::nullopt, 1).compute());
  expect_fft_close(complex_of(fft::fft2(a).compute()), want);
  expect_fft_close(complex_of(fft::fftn(a, std::nullopt, std::vector<int>{1, 2}).compute()), want);
  // s pads: fftn with s over the last two axes.
  const Array padded = fft::fftn(a, Shape{6, 7});
  EXPECT_EQ(padded.shape(), (Shape{3, 6, 7}));
  expect_fft_close(complex_of(padded.compute()), complex_of(fft::fft(fft::fft(a, 7, 2), 6, 1).compute()));
  // Round trips over every axis (one chunk each).
  const Array whole = a.rechunk({-1});
  expect_fft_close(complex_of(fft::ifftn(fft::fftn(whole)).compute()), x);
  expect_fft_close(complex_of(fft::ifft2(fft::fft2(a, std::nullopt, {-1, -2}, "ortho"), std::nullopt, {-1, -2}, "ortho").compute()), x);
  // rfftn / irfftn: real axis last.
  const Array re = real(a);
  const Array rf = fft::rfft2(re);
  EXPECT_EQ(rf.shape(), (Shape{3, 4, 3}));
  expect_fft_close(complex_of(rf.compute()), complex_of(fft::fft(fft::rfft(re), std::nullopt, 1).compute()));
  const auto rt = fft::irfft2(rf, Shape{4, 5}).compute().to_doubles();
  const auto orig = re.compute().to_doubles();
  for (std::size_t i = 0; i < orig.size(); ++i) EXPECT_NEAR(rt[i], orig[i], 1e-10);
  const Array rn = fft::rfftn(re.rechunk({-1}));
  EXPECT_EQ(rn.shape(), (Shape{3, 4, 3}));
  const auto rtn = fft::irfftn(rn, Shape{3, 4, 5}).compute().to_doubles();
  for (std::size_t i = 0; i < orig.size(); ++i) EXPECT_NEAR(rtn[i], orig[i], 1e-10);
}

TEST(Fft, ResultDtypesAreNumpy2s) {
  const Array f32 = from_block(Block::from_values<float>({1, 2, 3, 4}, {4}), {-1});
  EXPECT_EQ(fft::fft(f32).dtype(), DType::Complex64);
  EXPECT_EQ(fft::rfft(f32).dtype(), DType::Complex64);
  EXPECT_EQ(fft::irfft(fft::rfft(f32)).dtype(), DType::Float32);
  const auto c = fft::fft(f32).compute();
  EXPECT_EQ(c.dtype(), DType::Complex64);
  expect_fft_close(complex_of(c), {{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}}, 1e-6);
  const Array ints = from_block(Block::from_values<std::int8_t>({1, 2, 3, 4}, {4}), {-1});
  EXPECT_EQ(fft::fft(ints).dtype(), DType::Complex128);
  expect_fft_close(complex_of(fft::fft(ints).compute()), {{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}});
  EXPECT_EQ(fft::fft(f32.astype(DType::Float16)).dtype(), DType::Complex64);
}

TEST(Fft, ChunkedTransformAxisAndBadArgumentsAreErrors) {
  const Array a = complex_array(test_signal(8), {8}, {4});
  EXPECT_THROW(fft::fft(a), ShapeError);
  try {
    fft::fft(a);
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("single chunk"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(fft::fft(a.rechunk({-1})));
  const Array one = a.rechunk({-1});
  EXPECT_THROW(fft::fft(one, 0), Error);
  EXPECT_THROW(fft::fft(one, std::nullopt, -1, "sideways"), Error);
  EXPECT_THROW(fft::fft(one, std::nullopt, 1), ShapeError);
  EXPECT_THROW(fft::rfft(one), DTypeError);
}

TEST(Fft, FrequenciesAndShiftsAreNumpys) {
  EXPECT_EQ(fft::fftfreq(5, 0.1).compute().to_doubles(), (std::vector<double>{0.0, 2.0, 4.0, -4.0, -2.0}));
  EXPECT_EQ(fft::fftfreq(6, 1.0, 4).compute().to_doubles(),
            (std::vector<double>{0.0, 0.16666666666666666, 0.3333333333333333, -0.5, -0.3333333333333333,
                                 -0.16666666666666666}));
  EXPECT_EQ(fft::rfftfreq(7, 2.0).compute().to_doubles(),
            (std::vector<double>{0.0, 0.07142857142857142, 0.14285714285714285, 0.21428571428571427}));
  for (ChunkSpec c : {ChunkSpec{1}, ChunkSpec{2}, ChunkSpec{-1}}) {
    const Array x = arange(0, 10, 1, -1).reshape({2, 5}).rechunk(c);
    EXPECT_EQ(fft::fftshift(x).compute().to_doubles(), (std::vector<double>{8, 9, 5, 6, 7, 3, 4, 0, 1, 2}));
    EXPECT_EQ(fft::ifftshift(x).compute().to_doubles(), (std::vector<double>{7, 8, 9, 5, 6, 2, 3, 4, 0, 1}));
    EXPECT_EQ(fft::fftshift(x, std::vector<int>{1}).compute().to_doubles(), (std::vector<double>{3, 4, 0, 1, 2, 8, 9, 5, 6, 7}));
    EXPECT_EQ(fft::ifftshift(fft::fftshift(x)).compute().to_doubles(), x.compute().to_doubles());
  }
  // Shifts of complex spectra.
  const Array z = fft::fft(complex_array(test_signal(5), {5}, {-1}));
  const auto zs = complex_of(fft::fftshift(z).compute()), zz = complex_of(z.compute());
  expect_fft_close(zs, {zz[3], zz[4], zz[0], zz[1], zz[2]});
}

}  // namespace
