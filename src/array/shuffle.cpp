// Dask's shuffle: see indexing.hpp. A take followed by a rechunk that keeps groups whole.
#include <algorithm>
#include <string>

#include "tessera/array/array.hpp"
#include "tessera/array/indexing.hpp"
#include "tessera/core/error.hpp"

namespace tessera {

Array shuffle(const Array& x, const std::vector<std::vector<std::int64_t>>& indexer, int axis, std::int64_t chunk_size) {
  const int nd = x.ndim();
  if (axis < -nd || axis >= nd)
    throw ShapeError("shuffle: axis " + std::to_string(axis) + " is out of range for " + std::to_string(nd) + " dimensions");
  if (axis < 0) axis += nd;
  if (chunk_size < 0) throw Error("shuffle: chunk_size must not be negative");
  const std::int64_t len = x.shape()[axis];
  if (len < 0) throw ShapeError("shuffle: the axis has an unknown length (compute_chunk_sizes() first)");
  if (chunk_size == 0) {
    const auto& c = x.chunks()[axis];
    chunk_size = c.empty() ? 1 : std::max<std::int64_t>(1, *std::max_element(c.begin(), c.end()));
  }
  std::vector<std::int64_t> order;
  std::vector<std::int64_t> sizes;  // the result's chunks along the axis
  std::int64_t open = 0;            // elements in the chunk being packed
  for (const auto& group : indexer) {
    for (std::int64_t i : group)
      if (i < -len || i >= len)
        throw IndexError("shuffle: index " + std::to_string(i) + " is out of bounds for an axis of length " +
                         std::to_string(len));
    order.insert(order.end(), group.begin(), group.end());
    const auto g = static_cast<std::int64_t>(group.size());
    if (g == 0) continue;
    if (open > 0 && open + g > chunk_size) {
      sizes.push_back(open);
      open = 0;
    }
    open += g;
  }
  if (open > 0) sizes.push_back(open);
  Array taken = take(x, order, axis);
  if (order.empty()) return taken;
  Chunks chunks = taken.chunks();
  chunks[axis] = sizes;
  return taken.rechunk(ChunkSpec(chunks));
}

}  // namespace tessera
