// Conformance cases of tessera::fft (numpy.fft / dask.array.fft).
#include <optional>

#include "conformance.hpp"
#include "tessera/array/fft.hpp"

namespace {

using namespace tessera;

std::optional<std::int64_t> opt_n(const tessera_conformance::Params& p) {
  return p.has("n") ? std::optional<std::int64_t>(p.i("n")) : std::nullopt;
}
std::optional<Shape> opt_s(const tessera_conformance::Params& p) {
  return p.has("s") ? std::optional<Shape>(p.ints("s")) : std::nullopt;
}
std::optional<std::vector<int>> opt_axes(const tessera_conformance::Params& p) {
  return p.has("axes") ? std::optional<std::vector<int>>(p.axes("axes")) : std::nullopt;
}

}  // namespace

TESSERA_CONFORMANCE_CASE(fft1) {
  const std::string& op = p.s("op");
  const auto n = opt_n(p);
  const int axis = static_cast<int>(p.i("axis", -1));
  const std::string norm = p.s("norm", "backward");
  if (op == "fft") return {fft::fft(in[0], n, axis, norm)};
  if (op == "ifft") return {fft::ifft(in[0], n, axis, norm)};
  if (op == "rfft") return {fft::rfft(in[0], n, axis, norm)};
  if (op == "irfft") return {fft::irfft(in[0], n, axis, norm)};
  if (op == "hfft") return {fft::hfft(in[0], n, axis, norm)};
  if (op == "ihfft") return {fft::ihfft(in[0], n, axis, norm)};
  throw std::invalid_argument("fft1: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(fftn) {
  const std::string& op = p.s("op");
  const auto s = opt_s(p);
  const auto axes = opt_axes(p);
  const std::string norm = p.s("norm", "backward");
  if (op == "fftn") return {fft::fftn(in[0], s, axes, norm)};
  if (op == "ifftn") return {fft::ifftn(in[0], s, axes, norm)};
  if (op == "rfftn") return {fft::rfftn(in[0], s, axes, norm)};
  if (op == "irfftn") return {fft::irfftn(in[0], s, axes, norm)};
  const std::vector<int> two = axes ? *axes : std::vector<int>{-2, -1};
  if (op == "fft2") return {fft::fft2(in[0], s, two, norm)};
  if (op == "ifft2") return {fft::ifft2(in[0], s, two, norm)};
  if (op == "rfft2") return {fft::rfft2(in[0], s, two, norm)};
  if (op == "irfft2") return {fft::irfft2(in[0], s, two, norm)};
  throw std::invalid_argument("fftn: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(fftfreq) {
  const std::int64_t chunk = p.i("chunk", -1);
  if (p.s("op") == "rfftfreq") return {fft::rfftfreq(p.i("n"), p.d("d", 1.0), chunk)};
  return {fft::fftfreq(p.i("n"), p.d("d", 1.0), chunk)};
}

TESSERA_CONFORMANCE_CASE(fftshift) {
  const auto axes = opt_axes(p);
  if (p.s("op") == "ifftshift") return {fft::ifftshift(in[0], axes)};
  return {fft::fftshift(in[0], axes)};
}
