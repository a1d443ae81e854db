#pragma once
/** @file
 * How an array is split into chunks: ChunkSpec (Dask's `chunks=` argument) and normalize_chunks. */
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/core/shape.hpp"

namespace tessera {

/**
 * @brief Dask's chunks="auto" for one axis (or, alone, for every axis): the size is chosen so
 * that a chunk holds about auto_chunk_bytes() bytes (see normalize_chunks).
 */
inline constexpr std::int64_t auto_chunk = std::numeric_limits<std::int64_t>::min();

/**
 * @brief The chunks= argument, as Dask takes it.
 *
 * - one size for every axis: `5`, `{5}`, `-1` (or 0: the whole axis), `auto_chunk`;
 * - one size per axis: `{5, -1}`, `{auto_chunk, 100}` (the last chunk of an axis may be smaller);
 * - explicit, possibly irregular chunks per axis: `Chunks{{2, 3, 1}, {4}}` (they must add up to
 *   the shape). Written inline, `{{2, 3, 1}, {4}}` works too; an axis given as a single element
 *   (`{{2}, {4}}`) reads as a size per axis, as a braced number is one;
 * - ChunkSpec::automatic(bytes): "auto" on every axis with its own target size.
 */
class ChunkSpec {
 public:
  ChunkSpec() = default;
  /** @brief One size for every axis (chunks=5). */
  template <std::signed_integral T>
  ChunkSpec(T size) : sizes_{static_cast<std::int64_t>(size)} {}  // NOLINT(google-explicit-constructor)
  /** @brief `count` axes of size 0 (the whole axis), to be set with [] (as the vector it once was). */
  explicit ChunkSpec(std::size_t count) : sizes_(count, 0) {}
  ChunkSpec(std::initializer_list<std::int64_t> sizes) : sizes_(sizes) {}
  ChunkSpec(std::vector<std::int64_t> sizes) : sizes_(std::move(sizes)) {}  // NOLINT
  ChunkSpec(Chunks chunks) : chunks_(std::move(chunks)), explicit_(true) {}  // NOLINT
  ChunkSpec(std::initializer_list<std::vector<std::int64_t>> chunks) : chunks_(chunks), explicit_(true) {}
  /** @brief "auto" on every axis, aiming at `target_bytes` per chunk (0: auto_chunk_bytes()). */
  static ChunkSpec automatic(std::int64_t target_bytes = 0) {
    ChunkSpec s(auto_chunk);
    s.limit_ = target_bytes;
    return s;
  }

  /** @brief Appends the size of one more axis (to a spec of sizes, as to the vector it once was). */
  void push_back(std::int64_t size) {
    if (explicit_) throw std::logic_error("ChunkSpec::push_back on explicit chunks");
    sizes_.push_back(size);
  }

  /** @brief Explicit chunks per axis were given (chunks()), not sizes. */
  bool is_explicit() const noexcept { return explicit_; }
  /** @brief Number of axes given (1 may stand for every axis). */
  std::size_t size() const noexcept { return explicit_ ? chunks_.size() : sizes_.size(); }
  bool empty() const noexcept { return size() == 0; }
  /** @brief The size given for axis i (explicit chunks: the first chunk of the axis). */
  std::int64_t operator[](std::size_t i) const {
    if (!explicit_) return sizes_[i];
    return chunks_[i].empty() ? 0 : chunks_[i][0];
  }
  /** @brief The size given for axis i, to set (a spec of sizes only). */
  std::int64_t& operator[](std::size_t i) {
    if (explicit_) throw std::logic_error("ChunkSpec: setting a size of explicit chunks");
    return sizes_[i];
  }
  const std::vector<std::int64_t>& sizes() const noexcept { return sizes_; }
  /** @brief The sizes, where a ChunkSpec is read as the plain list of sizes it once was. */
  operator const std::vector<std::int64_t>&() const noexcept { return sizes_; }  // NOLINT
  const Chunks& chunks() const noexcept { return chunks_; }
  /** @brief Target bytes per chunk for auto axes (0: auto_chunk_bytes()). */
  std::int64_t limit() const noexcept { return limit_; }

 private:
  std::vector<std::int64_t> sizes_;
  Chunks chunks_;
  bool explicit_ = false;
  std::int64_t limit_ = 0;
};

/**
 * @brief The chunk grid a ChunkSpec gives an array of `shape` and `dtype` (Dask's
 * normalize_chunks). Sizes larger than an axis give one chunk; -1 or 0 is the whole axis; explicit
 * chunks must add up to the shape (ShapeError otherwise). "auto" axes follow Dask's rule: they
 * share the byte budget `limit` (0: auto_chunk_bytes()) left after the other axes, all taking the
 * same size, so a chunk keeps the proportions of a cube, and an axis shorter than that size is
 * taken whole.
 */
Chunks normalize_chunks(const ChunkSpec& spec, const Shape& shape, DType dtype = DType::Float64,
                        std::int64_t limit = 0);

/** @brief Target bytes per chunk of chunks="auto" (Dask's array.chunk-size): 128 MiB unless set. */
std::int64_t auto_chunk_bytes();
/** @brief Sets the target bytes per chunk of chunks="auto" for this process (0: back to 128 MiB). */
void set_auto_chunk_bytes(std::int64_t bytes);

}  // namespace tessera
