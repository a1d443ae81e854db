#include "tessera/core/shape.hpp"

#include "tessera/core/error.hpp"

namespace tessera {

std::int64_t shape_size(const Shape& shape) noexcept {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::vector<std::int64_t> row_major_strides(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Chunks regular_chunks(const Shape& shape, const std::vector<std::int64_t>& chunk) {
  if (chunk.size() != shape.size())
    throw ShapeError("chunks " + shape_to_string(chunk) + " do not match the " +
                     std::to_string(shape.size()) + " axes of shape " + shape_to_string(shape));
  Chunks out(shape.size());
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] < 0) throw ShapeError("negative extent in shape " + shape_to_string(shape));
    const std::int64_t c = chunk[a] <= 0 ? std::max<std::int64_t>(shape[a], 1) : chunk[a];
    if (shape[a] == 0) {
      out[a] = {0};
      continue;
    }
    for (std::int64_t off = 0; off < shape[a]; off += c) out[a].push_back(std::min(c, shape[a] - off));
  }
  return out;
}

Shape chunks_shape(const Chunks& chunks) {
  Shape s;
  for (const auto& axis : chunks) {
    std::int64_t n = 0;
    for (auto c : axis) n += c;
    s.push_back(n);
  }
  return s;
}

std::vector<std::int64_t> chunk_counts(const Chunks& chunks) {
  std::vector<std::int64_t> n;
  for (const auto& axis : chunks) n.push_back(static_cast<std::int64_t>(axis.size()));
  return n;
}

std::vector<std::int64_t> chunk_offsets(const std::vector<std::int64_t>& axis_chunks) {
  std::vector<std::int64_t> off(axis_chunks.size() + 1, 0);
  for (std::size_t i = 0; i < axis_chunks.size(); ++i) off[i + 1] = off[i] + axis_chunks[i];
  return off;
}

std::string chunks_to_string(const Chunks& chunks) {
  std::string s = "(";
  for (std::size_t a = 0; a < chunks.size(); ++a) {
    if (a) s += ", ";
    s += shape_to_string(chunks[a]);
  }
  return s + ")";
}

int normalize_axis(int axis, int ndim) {
  if (axis < -ndim || axis >= ndim)
    throw ShapeError("axis " + std::to_string(axis) + " is out of bounds for an array of " +
                     std::to_string(ndim) + " dimensions");
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace tessera
