#pragma once
/** @file
 * Discrete Fourier transforms of arrays, as numpy.fft and dask.array.fft define them.
 *
 * Like Dask, a transform runs along axes that are each held in ONE chunk (rechunk them to -1
 * first, or a ShapeError says so), one task per chunk; the other axes keep their chunks.
 * `n` / `s` pad with zeros or truncate the input along the transformed axes; `norm` is
 * "backward" (the default: no scaling forward, 1/n inverse), "ortho" (1/sqrt(n) both ways) or
 * "forward" (1/n forward, none inverse). Results are complex64 for float16, float32 and
 * complex64 inputs and complex128 otherwise (irfft*: float32 or float64 alike), as in NumPy 2.
 * The host computes with Eigen's FFT module (KissFFT), the device with cuFFT.
 */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"

namespace tessera::fft {

/** @brief One-dimensional FFT along `axis` (numpy.fft.fft). */
Array fft(const Array& a, std::optional<std::int64_t> n = std::nullopt, int axis = -1,
          const std::string& norm = "backward");
/** @brief Inverse of fft (numpy.fft.ifft). */
Array ifft(const Array& a, std::optional<std::int64_t> n = std::nullopt, int axis = -1,
           const std::string& norm = "backward");
/** @brief FFT of real input: the n/2 + 1 non-negative frequencies (numpy.fft.rfft). */
Array rfft(const Array& a, std::optional<std::int64_t> n = std::nullopt, int axis = -1,
           const std::string& norm = "backward");
/** @brief Inverse of rfft: a real result of length n (default 2 * (m - 1)) (numpy.fft.irfft). */
Array irfft(const Array& a, std::optional<std::int64_t> n = std::nullopt, int axis = -1,
            const std::string& norm = "backward");
/**
 * @brief FFT of a Hermitian-symmetric signal given by its non-negative half: a real result of
 * length n (default 2 * (m - 1)) (numpy.fft.hfft).
 */
Array hfft(const Array& a, std::optional<std::int64_t> n = std::nullopt, int axis = -1,
           const std::string& norm = "backward");
/** @brief Inverse of hfft: the n/2 + 1 non-negative frequencies of a real signal (numpy.fft.ihfft). */
Array ihfft(const Array& a, std::optional<std::int64_t> n = std::nullopt, int axis = -1,
            const std::string& norm = "backward");

/** @brief N-dimensional FFT over `axes` (default: the last len(s) axes, or all) (numpy.fft.fftn). */
Array fftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<std::vector<int>> axes = std::nullopt,
           const std::string& norm = "backward");
Array ifftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<std::vector<int>> axes = std::nullopt,
            const std::string& norm = "backward");
/** @brief rfft over the last of `axes`, then fft over the others (numpy.fft.rfftn). */
Array rfftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<std::vector<int>> axes = std::nullopt,
            const std::string& norm = "backward");
/** @brief Inverse of rfftn: ifft over all but the last of `axes`, then irfft over it. */
Array irfftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<std::vector<int>> axes = std::nullopt,
             const std::string& norm = "backward");
/** @brief fftn over two axes (default the last two). */
Array fft2(const Array& a, std::optional<Shape> s = std::nullopt, std::vector<int> axes = {-2, -1},
           const std::string& norm = "backward");
Array ifft2(const Array& a, std::optional<Shape> s = std::nullopt, std::vector<int> axes = {-2, -1},
            const std::string& norm = "backward");
Array rfft2(const Array& a, std::optional<Shape> s = std::nullopt, std::vector<int> axes = {-2, -1},
            const std::string& norm = "backward");
Array irfft2(const Array& a, std::optional<Shape> s = std::nullopt, std::vector<int> axes = {-2, -1},
             const std::string& norm = "backward");

/** @brief Sample frequencies of an n-point fft, spacing d: [0, 1, ..., -1] / (d n) (float64). */
Array fftfreq(std::int64_t n, double d = 1.0, std::int64_t chunk = -1);
/** @brief The non-negative frequencies of an n-point rfft: [0, 1, ..., n/2] / (d n) (float64). */
Array rfftfreq(std::int64_t n, double d = 1.0, std::int64_t chunk = -1);
/** @brief Moves the zero frequency to the centre: rolls each axis (default all) by n/2. */
Array fftshift(const Array& x, std::optional<std::vector<int>> axes = std::nullopt);
/** @brief Inverse of fftshift: rolls each axis by -(n/2). */
Array ifftshift(const Array& x, std::optional<std::vector<int>> axes = std::nullopt);

}  // namespace tessera::fft
