// Arrays from and to raw binary files, and what every reader and writer shares (io_chunks.hpp):
// a reader is a map_blocks node with no input whose tasks take a literal "which part to read";
// a writer adds one task per chunk to the array's graph and runs them all.
#include "tessera/array/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "expr.hpp"
#include "generator.hpp"
#include "io_chunks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

namespace detail::io {

std::vector<ChunkBox> chunk_boxes(const Chunks& chunks) {
  std::vector<std::vector<std::int64_t>> offsets;
  for (const auto& c : chunks) offsets.push_back(chunk_offsets(c));
  const std::int64_t n = shape_size(chunk_counts(chunks));
  std::vector<ChunkBox> boxes;
  boxes.reserve(static_cast<std::size_t>(n));
  for (std::int64_t f = 0; f < n; ++f) {
    const auto cc = chunk_coords(chunks, f);
    ChunkBox b;
    for (std::size_t a = 0; a < chunks.size(); ++a) {
      b.start.push_back(offsets[a][cc[a]]);
      b.shape.push_back(chunks[a][cc[a]]);
    }
    boxes.push_back(std::move(b));
  }
  return boxes;
}

Array make_reader(const std::string& op, DType dtype, const Shape& shape, Chunks chunks, std::vector<Value> chunk_args,
                  const std::string& name) {
  auto e = make_expr<MapBlocksExpr>(ExprKind::MapBlocks, dtype, shape, std::move(chunks), name);
  e->op = op;
  e->chunk_args = std::move(chunk_args);
  return Array(e);
}

void write_chunks(const Array& array, const std::string& op, const std::vector<Value>& chunk_args, Executor& executor) {
  std::vector<Key> keys;
  Graph g = graph_for(array, &executor, &keys);
  const std::string name = unique_name(op.substr(op.rfind('.') + 1));
  std::vector<Key> outputs;
  for (std::size_t f = 0; f < keys.size(); ++f) {
    Task t;
    t.key = chunk_key(name, {static_cast<std::int64_t>(f)});
    t.op = op;
    t.args.emplace_back(chunk_args[f]);
    t.args.emplace_back(KeyRef{keys[f]});
    outputs.push_back(t.key);
    g.add(std::move(t));
  }
  executor.get(g, outputs);
}

void throw_errno(const std::string& what, const std::string& path) {
  throw IoError(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace detail::io

namespace {

using namespace detail;
using namespace detail::io;

constexpr const char* kReadRawOp = "tessera.array.read_raw";
constexpr const char* kWriteRawOp = "tessera.array.write_raw";

/** One chunk of a raw file: the file, the whole array and the chunk's box. */
struct RawChunk {
  std::string path;
  DType dtype = DType::Float64;
  Shape shape;
  std::vector<std::int64_t> start;
  Shape extent;
  std::int64_t offset = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(path, dtype, shape, start, extent, offset);
  }
};

/** Closes a file descriptor when it goes out of scope. */
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Value read_raw(const OpContext&, std::span<const Value> args) {
  const auto c = from_value<RawChunk>(args[0]);
  Fd f{::open(c.path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw_errno("from_raw: cannot open", c.path);
  Block out(c.dtype, c.extent);
  const auto item = static_cast<std::int64_t>(itemsize(c.dtype));
  auto* dst = static_cast<char*>(out.raw());
  for_each_run(c.shape, ChunkBox{c.start, c.extent}, [&](std::int64_t file_elem, std::int64_t chunk_elem, std::int64_t n) {
    std::int64_t done = 0;
    const std::int64_t bytes = n * item;
    while (done < bytes) {
      const ssize_t r = ::pread(f.fd, dst + chunk_elem * item + done, static_cast<std::size_t>(bytes - done),
                                static_cast<off_t>(c.offset + file_elem * item + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw_errno("from_raw: cannot read", c.path);
      if (r == 0) throw IoError("from_raw: " + c.path + " ends before the array does (truncated since it was opened?)");
      done += r;
    }
  });
  return Value(std::move(out));
}

Value write_raw(const OpContext&, std::span<const Value> args) {
  const auto c = from_value<RawChunk>(args[0]);
  const Block& b = args[1].block();
  if (b.dtype() != c.dtype || b.shape() != c.extent) throw IoError("to_raw: chunk does not match " + c.path);
  Fd f{::open(c.path.c_str(), O_WRONLY | O_CLOEXEC)};
  if (f.fd < 0) throw_errno("to_raw: cannot open", c.path);
  const auto item = static_cast<std::int64_t>(itemsize(c.dtype));
  const auto* src = static_cast<const char*>(b.raw());
  for_each_run(c.shape, ChunkBox{c.start, c.extent}, [&](std::int64_t file_elem, std::int64_t chunk_elem, std::int64_t n) {
    std::int64_t done = 0;
    const std::int64_t bytes = n * item;
    while (done < bytes) {
      const ssize_t r = ::pwrite(f.fd, src + chunk_elem * item + done, static_cast<std::size_t>(bytes - done),
                                 static_cast<off_t>(c.offset + file_elem * item + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw_errno("to_raw: cannot write", c.path);
      done += r;
    }
  });
  return Value(Block::scalar<std::int64_t>(b.size()));
}

const bool io_registered = [] {
  register_op(kReadRawOp, read_raw);
  register_op(kWriteRawOp, write_raw);
  return true;
}();

std::vector<Value> raw_chunk_args(const std::string& path, DType dtype, const Shape& shape, const Chunks& chunks,
                                  std::int64_t offset) {
  std::vector<Value> args;
  for (auto& box : chunk_boxes(chunks))
    args.emplace_back(to_object(RawChunk{path, dtype, shape, box.start, box.shape, offset}, "RawChunk"));
  return args;
}

}  // namespace

Array from_raw(const std::string& path, DType dtype, Shape shape, ChunkSpec chunks, std::int64_t offset) {
  for (auto n : shape)
    if (n < 0) throw ShapeError("from_raw: negative extent in shape " + shape_to_string(shape));
  if (offset < 0) throw IoError("from_raw: offset must be >= 0");
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw_errno("from_raw: cannot open", path);
  if (!S_ISREG(st.st_mode)) throw IoError("from_raw: " + path + " is not a regular file");
  const auto need = static_cast<std::int64_t>(itemsize(dtype)) * shape_size(shape);
  if (st.st_size < offset + need)
    throw IoError("from_raw: " + path + " holds " + std::to_string(st.st_size) + " bytes; a " + std::string(dtype_name(dtype)) +
                " array of shape " + shape_to_string(shape) + " at offset " + std::to_string(offset) + " needs " +
                std::to_string(offset + need));
  Chunks c = normalize_chunks(shape, chunks);
  auto args = raw_chunk_args(path, dtype, shape, c, offset);
  return make_reader(kReadRawOp, dtype, shape, std::move(c), std::move(args), "from_raw");
}

void to_raw(const Array& array, const std::string& path, Executor& executor) {
  {
    // Made (or emptied) at its full size first: the chunk tasks write their parts in place.
    Fd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) throw_errno("to_raw: cannot create", path);
    const auto bytes = static_cast<off_t>(itemsize(array.dtype()) * array.size());
    if (::ftruncate(f.fd, bytes) != 0) throw_errno("to_raw: cannot size", path);
  }
  write_chunks(array, kWriteRawOp, raw_chunk_args(path, array.dtype(), array.shape(), array.chunks(), 0), executor);
}

}  // namespace tessera
