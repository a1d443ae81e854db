#include "generator_reads.hpp"

#include <algorithm>
#include <cstddef>

#include "program.hpp"

namespace tessera::detail {

std::optional<GeneratorSpec> GeneratorSpec::of(const Expr& e) {
  if (e.kind != ExprKind::Generator || e.target != Target::Host) return std::nullopt;
  const auto& g = static_cast<const GeneratorExpr&>(e);
  // Full keeps integer values in i0 and float32 and narrower dtypes are rounded by the programs:
  // those are read from blocks.
  if (g.gen == GenKind::Full || (g.dtype != DType::Float64 && g.dtype != DType::Int64)) return std::nullopt;
  GeneratorSpec s;
  s.gen = static_cast<std::uint8_t>(g.gen);
  s.dtype = g.dtype;
  s.p0 = g.p0;
  s.p1 = g.p1;
  s.i0 = g.i0;
  s.i1 = g.i1;
  s.key = g.key;
  s.shape = e.shape;
  return s;
}

void GeneratorSpec::draw(std::int64_t index, std::int64_t n, void* out) const {
  if (dtype == DType::Float64) generate_f64(gen, key, p0, p1, index, 1, n, static_cast<double*>(out));
  else generate_i64(gen, key, i0, i1, p0, p1, index, 1, n, static_cast<std::int64_t*>(out));
}

void GeneratorSpec::draw_box(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& size,
                             const std::function<void(const void*, std::int64_t)>& f) const {
  const std::size_t nd = size.size();
  if (nd == 0 || nd != start.size()) return;
  for (auto s : size)
    if (s <= 0) return;
  const auto stride = strides();
  // Bytes for either dtype (both 8 bytes); the draw creates the doubles or int64s in them.
  alignas(64) std::byte piece[kPiece * 8];
  std::vector<std::int64_t> at(nd, 0);  // box-local coordinates of the current row
  while (true) {
    std::int64_t index = 0;
    for (std::size_t a = 0; a < nd; ++a) index += stride[a] * (start[a] + at[a]);
    for (std::int64_t done = 0; done < size[nd - 1]; done += kPiece) {
      const std::int64_t n = std::min(kPiece, size[nd - 1] - done);
      draw(index + done, n, piece);
      f(piece, n);
    }
    std::size_t a = nd - 1;
    while (a-- > 0) {
      if (++at[a] < size[a]) break;
      at[a] = 0;
    }
    if (a == static_cast<std::size_t>(-1)) return;
  }
}

std::vector<std::int64_t> GeneratorSpec::strides() const {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t a = shape.size(); a-- > 1;) s[a - 1] = s[a] * shape[a];
  return s;
}

}  // namespace tessera::detail
