// Creating arrays: constants, ranges, 0-d scalars and host blocks split into chunks.
#include "tessera/array/creation.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "element_semantics.hpp"
#include "generator.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

using namespace detail;

namespace detail {

Chunks normalize_chunks(const Shape& shape, const ChunkSpec& spec, DType dtype) {
  return tessera::normalize_chunks(spec, shape, dtype);
}

std::uint64_t mix_key(std::uint64_t seed, std::uint64_t stream) {
  // SplitMix64 finaliser: distinct, well-spread Philox keys for (seed, RandomState call).
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Array make_generator(GenKind gen, DType dtype, Shape shape, const ChunkSpec& chunks, double p0, double p1,
                     std::int64_t i0, std::int64_t i1, std::uint64_t key, const char* prefix) {
  for (auto n : shape)
    if (n < 0) throw ShapeError(std::string(prefix) + ": negative extent in shape " + shape_to_string(shape));
  auto c = normalize_chunks(shape, chunks, dtype);
  auto e = make_expr<GeneratorExpr>(ExprKind::Generator, dtype, shape, std::move(c), prefix);
  e->gen = gen;
  e->p0 = p0;
  e->p1 = p1;
  e->i0 = i0;
  e->i1 = i1;
  e->key = key;
  return Array(e);
}


}  // namespace detail

Array full(Shape shape, double value, ChunkSpec chunks, DType dtype) {
  // Generators are real: a complex constant is the real one converted.
  if (is_complex(dtype)) return full(std::move(shape), value, std::move(chunks), real_dtype(dtype)).astype(dtype);
  // A constant of an integer dtype keeps its exact value in i0 (lowering reads it there).
  const std::int64_t exact = is_floating(dtype) ? 0 : elem::float_to_int(value, dtype);
  return make_generator(GenKind::Full, dtype, std::move(shape), chunks, value, 0, exact, 0, 0, "full");
}
Array zeros(Shape shape, ChunkSpec chunks, DType dtype) { return full(std::move(shape), 0.0, std::move(chunks), dtype); }
Array ones(Shape shape, ChunkSpec chunks, DType dtype) { return full(std::move(shape), 1.0, std::move(chunks), dtype); }

Array arange(Scalar start, Scalar stop, Scalar step, std::int64_t chunk, std::optional<DType> dtype) {
  if (step.as_double() == 0) throw Error("arange: step must not be zero");
  const bool any_float = start.is_float() || stop.is_float() || step.is_float();
  const DType t = dtype ? *dtype : (any_float ? DType::Float64 : DType::Int64);
  const double len = std::ceil((stop.as_double() - start.as_double()) / step.as_double());
  const auto n = static_cast<std::int64_t>(len > 0 ? len : 0.0);  // NaN: empty
  return make_generator(GenKind::Arange, t, Shape{n}, ChunkSpec{chunk}, start.as_double(), step.as_double(), 0, 0, 0,
                        "arange");
}

Array scalar(Scalar value, std::optional<DType> dtype) {
  DType t = DType::Float64;
  if (dtype) t = *dtype;
  else if (value.kind() == Scalar::Kind::Bool) t = DType::Bool;
  else if (value.kind() == Scalar::Kind::Int) t = DType::Int64;
  if (is_complex(t)) return scalar(value, real_dtype(t)).astype(t);
  std::int64_t exact = 0;
  if (!is_floating(t)) {
    if (value.is_float()) {
      exact = elem::float_to_int(value.as_double(), t);
    } else if (t == DType::Bool) {
      exact = value.above_int64() || value.as_int() != 0;
    } else {
      if (value.above_int64() || !elem::int_fits(value.as_int(), t))
        throw DTypeError("scalar: " + value.to_string() + " is out of bounds for " + std::string(dtype_name(t)));
      exact = value.as_int();
    }
  }
  return make_generator(GenKind::Full, t, {}, {}, value.as_double(), 0, exact, 0, 0, "scalar");
}

Array from_block(const Block& block, ChunkSpec chunks) {
  if (block.empty()) throw Error("from_block: empty block");
  if (block.memory_kind() != MemoryKind::Host) throw Error("from_block: the block must be in host memory");
  auto c = normalize_chunks(block.shape(), chunks, block.dtype());
  auto e = make_expr<SourceExpr>(ExprKind::Source, block.dtype(), block.shape(), c, "array");
  const std::int64_t nchunks = shape_size(chunk_counts(c));
  const int d = block.ndim();
  const auto strides = row_major_strides(block.shape());
  std::vector<std::vector<std::int64_t>> offs;
  for (auto& a : c) offs.push_back(chunk_offsets(a));
  const std::size_t isz = itemsize(block.dtype());
  for (std::int64_t f = 0; f < nchunks; ++f) {
    auto cc = chunk_coords(c, f);
    Shape cs(d);
    for (int a = 0; a < d; ++a) cs[a] = c[a][cc[a]];
    Block piece(block.dtype(), cs);
    // Copy row by row (last axis contiguous).
    const std::int64_t L = d ? cs[d - 1] : 1;
    const std::int64_t rows = L ? shape_size(cs) / std::max<std::int64_t>(L, 1) : 0;
    std::vector<std::int64_t> coord(std::max(d - 1, 0), 0);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t src = 0;
      for (int a = 0; a + 1 < d; ++a) src += (offs[a][cc[a]] + coord[a]) * strides[a];
      if (d) src += offs[d - 1][cc[d - 1]];
      std::memcpy(static_cast<char*>(piece.raw()) + r * L * isz, static_cast<const char*>(block.raw()) + src * isz, L * isz);
      for (int a = d - 2; a >= 0; --a) {
        if (++coord[a] < cs[a]) break;
        coord[a] = 0;
      }
    }
    e->blocks.emplace_back(std::move(piece));
  }
  return Array(e);
}

}  // namespace tessera
