// numpy.fft / dask.array.fft: transforms along axes held in one chunk, one "tessera.array.fft"
// task per chunk. The host op runs Eigen's FFT (KissFFT, any length) in complex128 and rounds to
// the result dtype; the device op (cuda/fft.cpp) runs cuFFT.
#include "tessera/array/fft.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <unsupported/Eigen/FFT>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>

#include "complex_ops.hpp"
#include "fft_params.hpp"
#include "tessera/array/complex.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

using C = std::complex<double>;

// One step over the working buffer `buf` of shape `shape` (row-major), in place.
void run_step(Eigen::FFT<double>& engine, const FftStep& s, std::vector<C>& buf, Shape& shape) {
  const auto ax = static_cast<std::size_t>(s.axis);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < ax; ++a) outer *= shape[a];
  for (std::size_t a = ax + 1; a < shape.size(); ++a) inner *= shape[a];
  const std::int64_t len = shape[ax], n = s.n;
  const std::int64_t half = n / 2 + 1;
  const std::int64_t keep = s.to_half ? half : n;
  std::vector<C> out(static_cast<std::size_t>(outer * keep * inner));
  std::vector<C> line(static_cast<std::size_t>(n)), result(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto in_at = [&](std::int64_t k) { return buf[static_cast<std::size_t>((o * len + k) * inner + i)]; };
      if (s.from_half) {
        // The half spectrum (padded or truncated to n/2 + 1 values) extended by Hermitian symmetry;
        // the inverse's real part is irfft's result (the imaginary parts of the zero and Nyquist
        // terms drop out there, as pocketfft ignores them).
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t src = k < half ? k : n - k;
          const C v = src < len ? in_at(src) : C(0);
          line[static_cast<std::size_t>(k)] = k < half ? v : std::conj(v);
        }
      } else {
        for (std::int64_t k = 0; k < n; ++k) line[static_cast<std::size_t>(k)] = k < len ? in_at(k) : C(0);
      }
      if (s.inverse) engine.inv(result.data(), line.data(), n);
      else engine.fwd(result.data(), line.data(), n);
      for (std::int64_t k = 0; k < keep; ++k) {
        C v = result[static_cast<std::size_t>(k)] * s.scale;
        if (s.from_half) v = C(v.real(), 0);
        out[static_cast<std::size_t>((o * keep + k) * inner + i)] = v;
      }
    }
  buf = std::move(out);
  shape[ax] = keep;
}

Value fft_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 2) throw Error("fft: expects parameters and one chunk");
  const auto p = from_value<FftParams>(args[0]);
  const Block& in = args[1].block();
  Shape shape = in.shape();
  std::vector<C> buf = complex_values(in);
  Eigen::FFT<double> engine;
  engine.SetFlag(Eigen::FFT<double>::Unscaled);
  for (const FftStep& s : fft_steps(p)) {
    if (s.axis < 0 || s.axis >= static_cast<int>(shape.size())) throw Error("fft: axis out of range");
    run_step(engine, s, buf, shape);
  }
  if (is_complex(p.out)) return Value(complex_block(buf, shape, p.out));
  Block out(DType::Float64, shape);
  double* o = out.data<double>();
  for (std::size_t j = 0; j < buf.size(); ++j) o[j] = buf[j].real();
  return Value(p.out == DType::Float64 ? out : out.astype(p.out));
}

const bool fft_registered = [] {
  register_op(kFftOp, fft_op);
  return true;
}();

FftNorm parse_norm(const std::string& norm) {
  if (norm == "backward" || norm.empty()) return FftNorm::Backward;
  if (norm == "ortho") return FftNorm::Ortho;
  if (norm == "forward") return FftNorm::Forward;
  throw Error("fft: invalid norm '" + norm + "' (expected \"backward\", \"ortho\" or \"forward\")");
}

// NumPy 2's result dtypes: single precision stays single, the rest is double.
DType complex_result(DType t) {
  return (t == DType::Float16 || t == DType::Float32 || t == DType::Complex64) ? DType::Complex64 : DType::Complex128;
}

Array transform(const Array& a, FftKind kind, std::vector<int> axes, std::vector<std::int64_t> lengths,
                const std::string& norm, const char* name) {
  const FftNorm nm = parse_norm(norm);
  const int nd = a.ndim();
  if (axes.empty()) throw ShapeError(std::string(name) + ": no axes to transform");
  for (auto& ax : axes) ax = normalize_axis(ax, nd);
  if (kind == FftKind::Real && is_complex(a.dtype()))
    throw DTypeError(std::string(name) + ": the input must be real (it is " + std::string(dtype_name(a.dtype())) + ")");
  Chunks chunks = a.chunks();
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int ax = axes[i];
    if (chunks[ax].size() != 1) {
      std::string cs;
      for (auto c : chunks[ax]) cs += (cs.empty() ? "" : ", ") + std::to_string(c);
      throw ShapeError(std::string(name) + ": an FFT runs only along an axis held in a single chunk; axis " +
                       std::to_string(ax) + " has chunks (" + cs + "). Rechunk it first, e.g. x.rechunk with -1 on that axis");
    }
    if (lengths[i] < 1)
      throw Error(std::string(name) + ": invalid number of FFT data points (" + std::to_string(lengths[i]) + ") specified");
  }
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const bool half = kind == FftKind::Real && i + 1 == axes.size();
    chunks[axes[i]] = {half ? lengths[i] / 2 + 1 : lengths[i]};
  }
  const DType cplx = complex_result(a.dtype());
  const DType out = kind == FftKind::InverseReal ? real_dtype(cplx) : cplx;
  // The op reads complex input, or real input of the result's precision (cuFFT needs one of them).
  const Array input = (is_complex(a.dtype()) || a.dtype() == real_dtype(cplx)) ? a : a.astype(real_dtype(cplx));
  FftParams p;
  p.kind = static_cast<std::uint8_t>(kind);
  p.norm = static_cast<std::uint8_t>(nm);
  p.axes.assign(axes.begin(), axes.end());
  p.lengths = std::move(lengths);
  p.out = out;
  return map_blocks_with(kFftOp, Value(to_object(p, "FftParams")), {input}, out, std::move(chunks), name);
}

Array transform_1d(const Array& a, FftKind kind, std::optional<std::int64_t> n, int axis, const std::string& norm,
                   const char* name) {
  const int ax = normalize_axis(axis, a.ndim());
  const std::int64_t m = a.shape()[ax];
  const std::int64_t len = n ? *n : (kind == FftKind::InverseReal ? 2 * (m - 1) : m);
  return transform(a, kind, {ax}, {len}, norm, name);
}

Array transform_nd(const Array& a, FftKind kind, const std::optional<Shape>& s, std::optional<std::vector<int>> axes,
                   const std::string& norm, const char* name) {
  const int nd = a.ndim();
  std::vector<int> ax;
  if (axes) {
    ax = *axes;
  } else {
    const int k = s ? static_cast<int>(s->size()) : nd;
    if (k > nd) throw ShapeError(std::string(name) + ": s has more entries than the array has axes");
    for (int i = nd - k; i < nd; ++i) ax.push_back(i);
  }
  if (s && s->size() != ax.size()) throw ShapeError(std::string(name) + ": s and axes must have the same length");
  std::vector<std::int64_t> lengths;
  for (std::size_t i = 0; i < ax.size(); ++i) {
    const std::int64_t m = a.shape()[normalize_axis(ax[i], nd)];
    const bool last_real = kind == FftKind::InverseReal && i + 1 == ax.size();
    lengths.push_back(s ? (*s)[i] : (last_real ? 2 * (m - 1) : m));
  }
  return transform(a, kind, std::move(ax), std::move(lengths), norm, name);
}

// np.roll of every listed axis by shift(n) (fftshift: n/2, ifftshift: -(n/2)).
Array roll_axes(const Array& x, std::optional<std::vector<int>> axes, bool inverse) {
  std::vector<int> ax;
  if (axes) ax = *axes;
  else
    for (int i = 0; i < x.ndim(); ++i) ax.push_back(i);
  Array out = x;
  for (int a : ax) {
    a = normalize_axis(a, x.ndim());
    const std::int64_t n = x.shape()[a];
    if (n < 2) continue;
    // Rolling by r puts the last r elements first: split at n - r.
    const std::int64_t r = inverse ? n - n / 2 : n / 2;
    const std::int64_t cut = n - r;
    std::vector<Index> head(x.ndim(), Index(all())), tail(x.ndim(), Index(all()));
    tail[a] = Index(slice(cut, std::nullopt));
    head[a] = Index(slice(std::nullopt, cut));
    out = concatenate({out[tail], out[head]}, a);
  }
  return out;
}

}  // namespace

namespace fft {

Array fft(const Array& a, std::optional<std::int64_t> n, int axis, const std::string& norm) {
  return transform_1d(a, FftKind::Forward, n, axis, norm, "fft");
}
Array ifft(const Array& a, std::optional<std::int64_t> n, int axis, const std::string& norm) {
  return transform_1d(a, FftKind::Inverse, n, axis, norm, "ifft");
}
Array rfft(const Array& a, std::optional<std::int64_t> n, int axis, const std::string& norm) {
  return transform_1d(a, FftKind::Real, n, axis, norm, "rfft");
}
Array irfft(const Array& a, std::optional<std::int64_t> n, int axis, const std::string& norm) {
  return transform_1d(a, FftKind::InverseReal, n, axis, norm, "irfft");
}
// The Hermitian pair, as NumPy writes them: hfft is irfft of the conjugate and ihfft the
// conjugate of rfft, each with the scaling of the other direction ("backward" <-> "forward").
namespace {
std::string swapped_direction(const std::string& norm) {
  if (norm == "backward" || norm.empty()) return "forward";
  if (norm == "forward") return "backward";
  return norm;  // "ortho", and anything else for transform_1d to refuse by name
}
}  // namespace
Array hfft(const Array& a, std::optional<std::int64_t> n, int axis, const std::string& norm) {
  return transform_1d(conj(a), FftKind::InverseReal, n, axis, swapped_direction(norm), "hfft");
}
Array ihfft(const Array& a, std::optional<std::int64_t> n, int axis, const std::string& norm) {
  return conj(transform_1d(a, FftKind::Real, n, axis, swapped_direction(norm), "ihfft"));
}
Array fftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes, const std::string& norm) {
  return transform_nd(a, FftKind::Forward, s, std::move(axes), norm, "fftn");
}
Array ifftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes, const std::string& norm) {
  return transform_nd(a, FftKind::Inverse, s, std::move(axes), norm, "ifftn");
}
Array rfftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes, const std::string& norm) {
  return transform_nd(a, FftKind::Real, s, std::move(axes), norm, "rfftn");
}
Array irfftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes, const std::string& norm) {
  return transform_nd(a, FftKind::InverseReal, s, std::move(axes), norm, "irfftn");
}
Array fft2(const Array& a, std::optional<Shape> s, std::vector<int> axes, const std::string& norm) {
  return transform_nd(a, FftKind::Forward, s, std::move(axes), norm, "fft2");
}
Array ifft2(const Array& a, std::optional<Shape> s, std::vector<int> axes, const std::string& norm) {
  return transform_nd(a, FftKind::Inverse, s, std::move(axes), norm, "ifft2");
}
Array rfft2(const Array& a, std::optional<Shape> s, std::vector<int> axes, const std::string& norm) {
  return transform_nd(a, FftKind::Real, s, std::move(axes), norm, "rfft2");
}
Array irfft2(const Array& a, std::optional<Shape> s, std::vector<int> axes, const std::string& norm) {
  return transform_nd(a, FftKind::InverseReal, s, std::move(axes), norm, "irfft2");
}

Array fftfreq(std::int64_t n, double d, std::int64_t chunk) {
  if (n < 1) throw Error("fftfreq: n must be positive");
  // NumPy: the integers [0, ..., (n-1)/2, -(n/2), ..., -1] times 1 / (n d).
  const Array k = arange(0, n, 1, chunk);
  const double val = 1.0 / (static_cast<double>(n) * d);
  return where(k < (n + 1) / 2, k, k - n) * val;
}

Array rfftfreq(std::int64_t n, double d, std::int64_t chunk) {
  if (n < 1) throw Error("rfftfreq: n must be positive");
  const double val = 1.0 / (static_cast<double>(n) * d);
  return arange(0, n / 2 + 1, 1, chunk) * val;
}

Array fftshift(const Array& x, std::optional<std::vector<int>> axes) { return roll_axes(x, std::move(axes), false); }
Array ifftshift(const Array& x, std::optional<std::vector<int>> axes) { return roll_axes(x, std::move(axes), true); }

}  // namespace fft
}  // namespace tessera
