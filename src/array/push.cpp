// push: forward fill of NaN along an axis, at most n in a row (Dask's push, bottleneck's push).
//
// Chunk-parallel in the way cumsum is: each chunk first reports, per row along the axis, its
// carry (the last valid value and how many elements follow it; NaN and the chunk's length when
// it has none); a chain of small tasks folds them into the carry into each chunk; then each
// chunk fills itself starting from that carry. Carries are two numbers per row.
#include <cmath>
#include <cstring>
#include <limits>

#include "chunk_map.hpp"
#include "tessera/array/scan.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

constexpr const char* kPushCarryOp = "tessera.array.push_carry";
constexpr const char* kPushChainOp = "tessera.array.push_chain";
constexpr const char* kPushFillOp = "tessera.array.push_fill";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct PushParams {
  std::int64_t limit = -1;  // at most this many NaN in a row are filled; -1: all
  template <class Ar>
  void serialize(Ar& ar) { ar(limit); }
};

/** The state of a forward fill: the value to fill with (NaN: none yet) and the distance to it. */
struct Carry {
  double value = kNaN;
  std::int64_t gap = 0;
  /** Follows a segment whose own carry is c. */
  void then(const Carry& c) {
    if (!std::isnan(c.value)) *this = c;
    else gap += c.gap;
  }
};

template <typename T>
Carry carry_of(const T* row, std::int64_t length) {
  for (std::int64_t i = length - 1; i >= 0; --i)
    if (!std::isnan(static_cast<double>(row[i]))) return {static_cast<double>(row[i]), length - 1 - i};
  return {kNaN, length};
}

Value push_carry_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 2 || !args[1].is_block()) throw Error("push: expected parameters and one block");
  const Block& in = args[1].block();
  const std::int64_t length = in.shape().back();
  const std::int64_t rows = length ? in.size() / length : shape_size(Shape(in.shape().begin(), in.shape().end() - 1));
  Shape shape = in.shape();
  shape.back() = 2;
  Block out(DType::Float64, shape);
  double* o = out.data<double>();
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* v = static_cast<const T*>(in.raw());
      for (std::int64_t r = 0; r < rows; ++r) {
        const Carry c = carry_of(v + r * length, length);
        o[2 * r] = c.value;
        o[2 * r + 1] = static_cast<double>(c.gap);
      }
    } else {
      throw DTypeError("push: the array must be floating point");
    }
  });
  return Value(std::move(out));
}

/** The carries listed, folded in order into one (the carry into the chunk after them). */
Value push_chain_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("push: expected parameters and carries");
  Block out(DType::Float64, args[1].block().shape());
  const std::int64_t rows = out.size() / 2;
  double* o = out.data<double>();
  for (std::int64_t r = 0; r < rows; ++r) {
    Carry state;
    for (std::size_t k = 1; k < args.size(); ++k) {
      const double* c = args[k].block().data<double>();
      state.then({c[2 * r], static_cast<std::int64_t>(c[2 * r + 1])});
    }
    o[2 * r] = state.value;
    o[2 * r + 1] = static_cast<double>(state.gap);
  }
  return Value(std::move(out));
}

Value push_fill_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2 || !args[1].is_block()) throw Error("push: expected parameters and blocks");
  const auto p = from_value<PushParams>(args[0]);
  const Block& in = args[1].block();
  const std::int64_t length = in.shape().back();
  const std::int64_t rows = length ? in.size() / length : 0;
  Block out(in.dtype(), in.shape());
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* v = static_cast<const T*>(in.raw());
      T* o = out.data<T>();
      for (std::int64_t r = 0; r < rows; ++r) {
        Carry state;
        for (std::size_t k = 2; k < args.size(); ++k) {  // the carry into this chunk
          const double* c = args[k].block().data<double>();
          state.then({c[2 * r], static_cast<std::int64_t>(c[2 * r + 1])});
        }
        for (std::int64_t i = 0; i < length; ++i) {
          const T x = v[r * length + i];
          if (!std::isnan(static_cast<double>(x))) {
            state = {static_cast<double>(x), 0};
            o[r * length + i] = x;
            continue;
          }
          ++state.gap;
          const bool fill = !std::isnan(state.value) && (p.limit < 0 || state.gap <= p.limit);
          o[r * length + i] = fill ? static_cast<T>(state.value) : x;
        }
      }
    } else {
      throw DTypeError("push: the array must be floating point");
    }
  });
  return Value(std::move(out));
}

const bool push_registered = [] {
  register_op(kPushCarryOp, push_carry_op);
  register_op(kPushChainOp, push_chain_op);
  register_op(kPushFillOp, push_fill_op);
  return true;
}();

}  // namespace

Array push(const Array& x, std::optional<std::int64_t> n, int axis) {
  const int nd = x.ndim();
  if (nd == 0) throw ShapeError("push: the array must have at least one dimension");
  if (axis < -nd || axis >= nd)
    throw ShapeError("push: axis " + std::to_string(axis) + " is out of bounds for an array of dimension " +
                     std::to_string(nd));
  if (axis < 0) axis += nd;
  if (n && *n < 1) throw Error("push: n must be >= 1 (None fills every NaN)");
  if (!is_floating(x.dtype())) return x;  // nothing to fill: integers and bools have no NaN
  if (is_complex(x.dtype())) throw DTypeError("push: complex arrays are not supported");
  const Array moved = move_axes_last(x, {axis});
  const Chunks& chunks = moved.chunks();
  const auto counts = chunk_counts(chunks);
  PushParams p;
  p.limit = n ? *n : -1;
  const Value params(to_object(p, "PushParams"));
  // Each chunk's carry: the same grid, two numbers per row.
  Chunks carry_chunks = chunks;
  carry_chunks.back().assign(chunks.back().size(), 2);
  const Array carries = chunk_map(kPushCarryOp, DType::Float64, carry_chunks, {moved}, {params},
                                  same_grid_reads(chunks), "push-carry");
  // The carry into chunk j along the axis, as a chain: into[j] = into[j - 1] then carries[j - 1],
  // one small task per row of chunks and step, so chunk j reads one carry, not j of them.
  const std::int64_t along = counts.back();
  const std::int64_t others = shape_size(counts) / along;
  Chunks into_chunks(chunks.begin(), chunks.end() - 1);
  into_chunks.push_back({2});
  std::vector<Array> into(static_cast<std::size_t>(along));
  for (std::int64_t j = 1; j < along; ++j) {
    std::vector<std::vector<ChunkRead>> reads(static_cast<std::size_t>(others));
    std::vector<Array> inputs{carries};
    if (j > 1) inputs.push_back(into[static_cast<std::size_t>(j - 1)]);
    for (std::int64_t o = 0; o < others; ++o) {
      auto& r = reads[static_cast<std::size_t>(o)];
      if (j > 1) r.push_back({1, o});
      r.push_back({0, o * along + j - 1});
    }
    into[static_cast<std::size_t>(j)] = chunk_map(kPushChainOp, DType::Float64, into_chunks, inputs, {params},
                                                  std::move(reads), "push-chain");
  }
  // Chunk (o, j) reads itself and into[j].
  std::vector<Array> inputs{moved};
  for (std::int64_t j = 1; j < along; ++j) inputs.push_back(into[static_cast<std::size_t>(j)]);
  std::vector<std::vector<ChunkRead>> reads(static_cast<std::size_t>(others * along));
  for (std::int64_t f = 0; f < others * along; ++f) {
    const std::int64_t o = f / along, j = f % along;
    auto& r = reads[static_cast<std::size_t>(f)];
    r.push_back({0, f});
    if (j > 0) r.push_back({static_cast<int>(j), o});
  }
  const Array filled = chunk_map(kPushFillOp, x.dtype(), chunks, inputs, {params}, std::move(reads), "push");
  return move_last_axes_back(filled, {axis});
}

}  // namespace tessera
