// store(): computes an array in batches of chunks and writes each chunk into a target (io.hpp).
#include <map>
#include <string>
#include <utility>

#include "array_ops.hpp"
#include "expr.hpp"
#include "tessera/core/device.hpp"
#include "tessera/array/io.hpp"

namespace tessera {

void store(const Array& source, const StoreTarget& target, Executor& executor, std::size_t batch_bytes) {
  if (!target) throw Error("store: no target");
  const Chunks& chunks = source.chunks();
  for (const auto& axis : chunks)
    for (std::int64_t c : axis)
      if (c < 0) throw ShapeError("store: the source has chunks of unknown size (compute_chunk_sizes() first)");
  std::vector<Key> keys;  // C order over the grid of chunks; broadcast chunks may share a key
  const Graph graph = detail::graph_for(source, &executor, &keys);
  std::vector<std::vector<std::int64_t>> starts;
  for (const auto& c : chunks) starts.push_back(chunk_offsets(c));
  auto offset_of = [&](std::size_t f) {
    const auto cc = detail::chunk_coords(chunks, static_cast<std::int64_t>(f));
    std::vector<std::int64_t> at(cc.size());
    std::size_t n = 1;
    for (std::size_t a = 0; a < cc.size(); ++a) {
      at[a] = starts[a][cc[a]];
      n *= static_cast<std::size_t>(chunks[a][cc[a]]);
    }
    return std::pair{at, n * itemsize(source.dtype())};
  };
  std::size_t next = 0;
  while (next < keys.size()) {
    const std::size_t first = next;
    std::vector<Key> batch;  // distinct keys of chunks [first, next)
    std::map<Key, std::size_t> slot;
    std::size_t total = 0;
    for (; next < keys.size(); ++next) {
      const std::size_t bytes = offset_of(next).second;
      if (next > first && total + bytes > batch_bytes) break;
      if (slot.try_emplace(keys[next], batch.size()).second) batch.push_back(keys[next]);
      total += bytes;
    }
    const std::vector<Value> values = executor.get(graph, batch);
    for (std::size_t f = first; f < next; ++f) target(offset_of(f).first, to_host(values[slot.at(keys[f])].block()));
  }
}

void store(const Array& source, Block& target, const std::vector<std::int64_t>& offset, Executor& executor,
           std::size_t batch_bytes) {
  const int nd = source.ndim();
  std::vector<std::int64_t> at = offset.empty() ? std::vector<std::int64_t>(static_cast<std::size_t>(nd), 0) : offset;
  if (target.empty()) throw Error("store: the target Block is empty");
  if (static_cast<int>(at.size()) != nd || target.ndim() != nd)
    throw ShapeError("store: a source of shape " + shape_to_string(source.shape()) + " into a target of shape " +
                     shape_to_string(target.shape()) + " with " + std::to_string(at.size()) + " offsets");
  for (int a = 0; a < nd; ++a)
    if (source.shape()[a] < 0 || at[a] < 0 || at[a] + source.shape()[a] > target.shape()[a])
      throw ShapeError("store: a source of shape " + shape_to_string(source.shape()) + " does not fit a target of shape " +
                       shape_to_string(target.shape()) + " at offset " + shape_to_string(Shape(at.begin(), at.end())));
  store(
      source,
      [&](const std::vector<std::int64_t>& chunk_offset, const Block& chunk) {
        std::vector<std::int64_t> where(chunk_offset);
        for (int a = 0; a < nd; ++a) where[a] += at[a];
        const Block values = chunk.dtype() == target.dtype() ? chunk : chunk.astype(target.dtype());
        detail::copy_box(values, std::vector<std::int64_t>(where.size(), 0), target, where, values.shape());
      },
      executor, batch_bytes);
}

void store(const std::vector<Array>& sources, const std::vector<Block*>& targets,
           const std::vector<std::vector<std::int64_t>>& offsets, Executor& executor) {
  if (sources.size() != targets.size())
    throw Error("store: " + std::to_string(sources.size()) + " sources for " + std::to_string(targets.size()) + " targets");
  if (!offsets.empty() && offsets.size() != sources.size())
    throw Error("store: " + std::to_string(offsets.size()) + " regions for " + std::to_string(sources.size()) + " sources");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!targets[i]) throw Error("store: target " + std::to_string(i) + " is null");
    store(sources[i], *targets[i], offsets.empty() ? std::vector<std::int64_t>{} : offsets[i], executor);
  }
}

}  // namespace tessera
