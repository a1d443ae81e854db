#pragma once
// Internal: what the array readers and writers (io.cpp, io_hdf5.cpp, io_npy_stack.cpp) share:
// an array whose chunks are read by tasks, the tasks that write an array's chunks, and the
// contiguous runs of a chunk inside a C-order file. Chunk boxes also place the chunks that ops
// draw rather than read (generated_take.cpp, scan.cpp, random_vector.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"
#include "tessera/core/value.hpp"

namespace tessera::detail::io {

/** Where chunk f of an array lies: its first element and its extent per axis. */
struct ChunkBox {
  std::vector<std::int64_t> start;
  Shape shape;
};
/** Every chunk's box, row-major chunk order. */
std::vector<ChunkBox> chunk_boxes(const Chunks& chunks);

/** An array whose chunk f is the block that `op` returns for the literal argument chunk_args[f]. */
Array make_reader(const std::string& op, DType dtype, const Shape& shape, Chunks chunks, std::vector<Value> chunk_args,
                  const std::string& name);

/**
 * Runs op(chunk_args[f], chunk f) for every chunk of the array through the executor and waits
 * for all of them. The ops return anything small (their results are dropped).
 */
void write_chunks(const Array& array, const std::string& op, const std::vector<Value>& chunk_args, Executor& executor);

/**
 * Calls fn(file_element, chunk_element, count) for each contiguous run of the box inside a
 * C-order array of `shape`: `count` elements at element `file_element` of the whole array are
 * elements chunk_element.. of the chunk (C order too). Trailing axes the box covers whole are
 * merged into one run.
 */
template <typename F>
void for_each_run(const Shape& shape, const ChunkBox& box, F&& fn) {
  const int nd = static_cast<int>(shape.size());
  for (auto n : box.shape)
    if (n == 0) return;
  int k = nd - 1;
  std::int64_t run = 1;
  while (k >= 0 && box.start[k] == 0 && box.shape[k] == shape[k]) run *= shape[k--];
  if (k >= 0) run *= box.shape[k];
  // Element strides of the whole array.
  std::vector<std::int64_t> stride(nd, 1);
  for (int a = nd - 2; a >= 0; --a) stride[a] = stride[a + 1] * shape[a + 1];
  std::vector<std::int64_t> idx(k > 0 ? k : 0, 0);  // position over the outer axes 0 .. k-1
  std::int64_t chunk_elem = 0;
  for (;;) {
    std::int64_t file_elem = k >= 0 ? box.start[k] * stride[k] : 0;
    for (int a = 0; a < k; ++a) file_elem += (box.start[a] + idx[a]) * stride[a];
    fn(file_elem, chunk_elem, run);
    chunk_elem += run;
    int a = k - 1;
    while (a >= 0 && ++idx[a] == box.shape[a]) idx[a--] = 0;
    if (a < 0) return;
  }
}

/** Throws Error("<what> <path>: <strerror(errno)>"). */
[[noreturn]] void throw_errno(const std::string& what, const std::string& path);

}  // namespace tessera::detail::io
