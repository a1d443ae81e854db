#pragma once
// Internal: chunk ops that read a generated array (random, arange) by drawing it, not from a
// block. A generator's element is a pure function of its global row-major index (program.hpp's
// generate_f64 / generate_i64, the functions the blockwise programs call), so an op can draw just
// the elements it needs, in the order it needs them: take of a generated array draws only the
// asked rows, and a scan draws a row and scans it while it is in cache.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "expr.hpp"

namespace tessera::detail {

/** A generator as chunk ops receive it. */
struct GeneratorSpec {
  std::uint8_t gen = 0;
  DType dtype = DType::Float64;
  double p0 = 0, p1 = 0;
  std::int64_t i0 = 0, i1 = 0;
  std::uint64_t key = 0;
  Shape shape;  // the whole generated array
  template <class Ar>
  void serialize(Ar& ar) {
    ar(gen, dtype, p0, p1, i0, i1, key, shape);
  }
  /**
   * e as such a generator: a generator on the host of a dtype the kernels draw directly (float64,
   * int64; not Full, whose integers live in i0); nullopt otherwise (read it from blocks then).
   */
  static std::optional<GeneratorSpec> of(const Expr& e);
  /** Elements index, index + 1, ..., index + n - 1 (row-major, global) into out (of dtype). */
  void draw(std::int64_t index, std::int64_t n, void* out) const;
  /**
   * The box [start, start + size) of the generated array in row-major order, drawn a piece of at
   * most kPiece elements at a time (a piece stays in the core's cache): f(data, n) per piece.
   */
  static constexpr std::int64_t kPiece = 4096;
  void draw_box(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& size,
                const std::function<void(const void*, std::int64_t)>& f) const;
  /** Row-major strides of shape, in elements. */
  std::vector<std::int64_t> strides() const;
};

}  // namespace tessera::detail
