// A stack of .npy files (Dask's to_npy_stack / from_npy_stack): a directory holding one .npy
// file per chunk along one axis, "0.npy", "1.npy", ..., each whole on every other axis, and
// "info.json" describing the stack:
//
//     {"format": "tessera-npy-stack", "version": 1, "dtype": "<f8", "shape": [10, 4],
//      "axis": 0, "chunks": [3, 3, 3, 1]}
//
// (Dask keeps the same facts in a pickled "info"; JSON is readable by any language.) Each chunk
// is read or written by its own task with load_npy / save_npy.
#include <sys/stat.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "expr.hpp"
#include "generator.hpp"
#include "io_chunks.hpp"
#include "tessera/array/io.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

namespace {

using namespace detail;
using namespace detail::io;
namespace fs = std::filesystem;

constexpr const char* kReadStackOp = "tessera.array.read_npy_stack";
constexpr const char* kWriteStackOp = "tessera.array.write_npy_stack";
constexpr const char* kFormat = "tessera-npy-stack";

/** One file of a stack and what it must hold. */
struct StackChunk {
  std::string path;
  DType dtype = DType::Float64;
  Shape shape;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(path, dtype, shape);
  }
};

Value read_chunk(const OpContext&, std::span<const Value> args) {
  const auto c = from_value<StackChunk>(args[0]);
  Block b = load_npy(c.path);
  if (b.dtype() != c.dtype || b.shape() != c.shape)
    throw IoError("from_npy_stack: " + c.path + " holds " + std::string(dtype_name(b.dtype())) + " " +
                  shape_to_string(b.shape()) + ", the stack's info.json says " + std::string(dtype_name(c.dtype)) +
                  " " + shape_to_string(c.shape));
  return Value(std::move(b));
}

Value write_chunk(const OpContext&, std::span<const Value> args) {
  const auto c = from_value<StackChunk>(args[0]);
  save_npy(c.path, args[1].block());
  return Value(Block::scalar<std::int64_t>(args[1].block().size()));
}

const bool io_npy_stack_registered = [] {
  register_op(kReadStackOp, read_chunk);
  register_op(kWriteStackOp, write_chunk);
  return true;
}();

std::string chunk_path(const std::string& dir, std::size_t i) {
  return (fs::path(dir) / (std::to_string(i) + ".npy")).string();
}

std::vector<Value> chunk_args(const std::string& dir, DType dtype, const Chunks& chunks) {
  std::vector<Value> args;
  const auto boxes = chunk_boxes(chunks);
  for (std::size_t i = 0; i < boxes.size(); ++i)
    args.emplace_back(to_object(StackChunk{chunk_path(dir, i), dtype, boxes[i].shape}, "StackChunk"));
  return args;
}

std::string json_list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<std::int64_t> int_list(const boost::property_tree::ptree& t, const std::string& key) {
  std::vector<std::int64_t> v;
  for (const auto& [k, child] : t.get_child(key)) v.push_back(child.get_value<std::int64_t>());
  return v;
}

}  // namespace

void to_npy_stack(const std::string& dirname, const Array& array, int axis, Executor& executor) {
  const int nd = array.ndim();
  if (nd == 0) throw ShapeError("to_npy_stack: a 0-d array has no axis to stack along");
  if (axis < -nd || axis >= nd) throw IndexError("to_npy_stack: axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += nd;
  // Whole on every other axis, as the files of a stack are.
  Array a = array;
  bool whole = true;
  for (int k = 0; k < nd; ++k)
    if (k != axis && array.chunks()[k].size() > 1) whole = false;
  if (!whole) {
    std::vector<std::int64_t> c(nd, -1);
    c[axis] = array.chunks()[axis].empty() ? -1 : array.chunks()[axis][0];
    a = array.rechunk(c);
  }
  std::error_code ec;
  fs::create_directories(dirname, ec);
  if (ec) throw IoError("to_npy_stack: cannot create the directory " + dirname + ": " + ec.message());
  const std::string info = (fs::path(dirname) / "info.json").string();
  {
    std::ofstream out(info, std::ios::trunc);
    out << "{\"format\": \"" << kFormat << "\", \"version\": 1, \"dtype\": \"" << npy_descr(a.dtype())
        << "\", \"shape\": " << json_list(a.shape()) << ", \"axis\": " << axis
        << ", \"chunks\": " << json_list(a.chunks()[axis]) << "}\n";
    if (!out) throw IoError("to_npy_stack: cannot write " + info);
  }
  write_chunks(a, kWriteStackOp, chunk_args(dirname, a.dtype(), a.chunks()), executor);
}

Array from_npy_stack(const std::string& dirname) {
  const std::string info = (fs::path(dirname) / "info.json").string();
  std::ifstream in(info);
  if (!in) throw IoError("from_npy_stack: cannot open " + info + " (not a stack written by to_npy_stack?)");
  boost::property_tree::ptree t;
  DType dtype;
  Shape shape;
  int axis = 0;
  std::vector<std::int64_t> along;
  try {
    boost::property_tree::read_json(in, t);
    if (t.get<std::string>("format") != kFormat) throw IoError("from_npy_stack: " + info + " is not a " + kFormat + " description");
    if (t.get<int>("version") != 1) throw IoError("from_npy_stack: " + info + ": unknown version " + t.get<std::string>("version"));
    dtype = dtype_from_npy_descr(t.get<std::string>("dtype"));
    shape = int_list(t, "shape");
    axis = t.get<int>("axis");
    along = int_list(t, "chunks");
  } catch (const boost::property_tree::ptree_error& e) {
    throw IoError("from_npy_stack: " + info + " is malformed: " + e.what());
  }
  const int nd = static_cast<int>(shape.size());
  std::int64_t total = 0;
  for (auto n : along) total += n < 0 ? -1 : n;
  for (auto n : shape)
    if (n < 0) throw IoError("from_npy_stack: " + info + ": negative extent in the shape");
  if (axis < 0 || axis >= nd || total != shape[axis])
    throw IoError("from_npy_stack: " + info + ": chunks " + json_list(along) + " along axis " + std::to_string(axis) +
                  " do not make the shape " + shape_to_string(shape));
  Chunks chunks(nd);
  for (int k = 0; k < nd; ++k) chunks[k] = k == axis ? along : std::vector<std::int64_t>{shape[k]};
  for (std::size_t i = 0; i < along.size(); ++i) {
    struct stat st{};
    if (::stat(chunk_path(dirname, i).c_str(), &st) != 0)
      throw IoError("from_npy_stack: " + chunk_path(dirname, i) + " is missing");
  }
  auto args = chunk_args(dirname, dtype, chunks);
  return make_reader(kReadStackOp, dtype, shape, std::move(chunks), std::move(args), "from_npy_stack");
}

}  // namespace tessera
