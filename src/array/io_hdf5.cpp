// Arrays from and to HDF5 datasets, through the HDF5 C library (when the build found it).
//
// Reading: each chunk task opens the file, reads its hyperslab and closes it again. Writing: the
// caller creates the dataset (chunked like the array), then each chunk task writes its hyperslab.
// The HDF5 library is not safe to call from several threads (Debian's serial build) and a file
// takes one writer at a time, so every call here holds one process-wide mutex, and a writer also
// holds an exclusive flock on the file's directory (always in that order), which makes writer
// tasks in other processes (cluster workers on one machine or a shared file system with flock)
// wait too.
#include <string>

#include "tessera/array/io.hpp"
#include "tessera/core/error.hpp"

#if defined(TESSERA_HAS_HDF5)
#include <fcntl.h>
#include <hdf5.h>
#include <sys/file.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <vector>

#include "expr.hpp"
#include "generator.hpp"
#include "io_chunks.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"
#endif

namespace tessera {

#if !defined(TESSERA_HAS_HDF5)

bool hdf5_supported() { return false; }
Array from_hdf5(const std::string&, const std::string&, ChunkSpec) {
  throw IoError("from_hdf5: this build of Tessera has no HDF5 (install libhdf5-dev and rebuild)");
}
void to_hdf5(const Array&, const std::string&, const std::string&, Executor&) {
  throw IoError("to_hdf5: this build of Tessera has no HDF5 (install libhdf5-dev and rebuild)");
}

#else

namespace {

using namespace detail;
using namespace detail::io;

constexpr const char* kReadHdf5Op = "tessera.array.read_hdf5";
constexpr const char* kWriteHdf5Op = "tessera.array.write_hdf5";

std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

/** Holds the library for this thread, with HDF5's own error printing off (errors are thrown). */
struct Hdf5Lock {
  std::lock_guard<std::mutex> guard{hdf5_mutex()};
  Hdf5Lock() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};

/** An HDF5 identifier closed with its own close function. */
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Id(Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/** h5py's bool: an enum of int8 with FALSE = 0 and TRUE = 1. */
Id bool_type() {
  Id t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  signed char v = 0;
  H5Tenum_insert(t.get(), "FALSE", &v);
  v = 1;
  H5Tenum_insert(t.get(), "TRUE", &v);
  return t;
}

/** The in-memory HDF5 type of a dtype (bool: made, so it comes back to be closed). */
hid_t memory_type(DType d) {
  switch (d) {
    case DType::Float64: return H5T_NATIVE_DOUBLE;
    case DType::Float32: return H5T_NATIVE_FLOAT;
    case DType::Int64: return H5T_NATIVE_INT64;
    case DType::Int32: return H5T_NATIVE_INT32;
    default: return -1;
  }
}

/** The dtype an HDF5 file type reads as exactly; nullopt when there is none. */
std::optional<DType> hdf5_dtype(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT && size == 8) return DType::Float64;
  if (cls == H5T_FLOAT && size == 4) return DType::Float32;
  if (cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2 && size == 8) return DType::Int64;
  if (cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2 && size == 4) return DType::Int32;
  if (cls == H5T_ENUM && size == 1) return DType::Bool;
  return std::nullopt;
}

std::string describe_type(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned " : "signed ") + std::to_string(8 * size) +
             "-bit integer";
    case H5T_FLOAT: return std::to_string(8 * size) + "-bit float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return std::to_string(8 * size) + "-bit enum";
    default: return "HDF5 type class " + std::to_string(static_cast<int>(H5Tget_class(type)));
  }
}

/** One chunk of a dataset. */
struct Hdf5Chunk {
  std::string path, dataset;
  DType dtype = DType::Float64;
  std::vector<std::int64_t> start;
  Shape extent;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(path, dataset, dtype, start, extent);
  }
};

/** Selects the chunk's hyperslab of the dataset's space; returns the matching memory space. */
Id select(hid_t file_space, const Hdf5Chunk& c) {
  if (c.extent.empty()) {
    H5Sselect_all(file_space);
    return Id(H5Screate(H5S_SCALAR), H5Sclose);
  }
  const std::vector<hsize_t> start(c.start.begin(), c.start.end()), count(c.extent.begin(), c.extent.end());
  if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
    throw IoError("hdf5: cannot select a chunk of " + c.dataset + " in " + c.path);
  return Id(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
}

/** Transfers one chunk between memory and the dataset (read or write). */
void transfer(const Hdf5Chunk& c, void* data, bool write) {
  const char* fn = write ? "to_hdf5" : "from_hdf5";
  Id file(H5Fopen(c.path.c_str(), write ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw IoError(std::string(fn) + ": cannot open " + c.path + " as an HDF5 file");
  Id ds(H5Dopen2(file.get(), c.dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw IoError(std::string(fn) + ": no dataset " + c.dataset + " in " + c.path);
  Id space(H5Dget_space(ds.get()), H5Sclose);
  Id mem = select(space.get(), c);
  Id bools = c.dtype == DType::Bool ? bool_type() : Id(-1, H5Tclose);
  const hid_t type = c.dtype == DType::Bool ? bools.get() : memory_type(c.dtype);
  const herr_t rc = write ? H5Dwrite(ds.get(), type, mem.get(), space.get(), H5P_DEFAULT, data)
                          : H5Dread(ds.get(), type, mem.get(), space.get(), H5P_DEFAULT, data);
  if (rc < 0) throw IoError(std::string(fn) + ": cannot " + (write ? "write" : "read") + " a chunk of " + c.dataset + " in " + c.path);
}

/**
 * An exclusive flock on the directory that holds `path`, for writers in any process: HDF5 opens
 * a file for writing with a non-blocking lock of its own, so a second writer would fail rather
 * than wait. (A lock file beside the data could not be removed safely: a writer waiting on the
 * removed one and a writer locking a new one would both go ahead.)
 */
class WriterLock {
 public:
  explicit WriterLock(const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw_errno("to_hdf5: cannot open the directory of", path);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) {
        ::close(fd_);
        throw_errno("to_hdf5: cannot lock the directory of", path);
      }
  }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock() { ::close(fd_); }  // closing releases the lock

 private:
  int fd_ = -1;
};

Value read_hdf5(const OpContext&, std::span<const Value> args) {
  const auto c = from_value<Hdf5Chunk>(args[0]);
  Block out(c.dtype, c.extent);
  if (out.size() == 0) return Value(std::move(out));
  Hdf5Lock lock;
  transfer(c, out.raw(), false);
  return Value(std::move(out));
}

Value write_hdf5(const OpContext&, std::span<const Value> args) {
  const auto c = from_value<Hdf5Chunk>(args[0]);
  const Block& b = args[1].block();
  if (b.dtype() != c.dtype || b.shape() != c.extent) throw IoError("to_hdf5: chunk does not match " + c.dataset);
  if (b.size() == 0) return Value(Block::scalar<std::int64_t>(0));
  Hdf5Lock lock;
  WriterLock writer(c.path);
  transfer(c, const_cast<void*>(b.raw()), true);
  return Value(Block::scalar<std::int64_t>(b.size()));
}

const bool io_hdf5_registered = [] {
  register_op(kReadHdf5Op, read_hdf5);
  register_op(kWriteHdf5Op, write_hdf5);
  return true;
}();

std::vector<Value> chunk_args(const std::string& path, const std::string& dataset, DType dtype, const Chunks& chunks) {
  std::vector<Value> args;
  for (auto& box : chunk_boxes(chunks))
    args.emplace_back(to_object(Hdf5Chunk{path, dataset, dtype, box.start, box.shape}, "Hdf5Chunk"));
  return args;
}

/** The file type a dtype is stored as (little-endian IEEE and two's complement; bool as h5py). */
Id file_type(DType d) {
  switch (d) {
    case DType::Float64: return Id(H5Tcopy(H5T_IEEE_F64LE), H5Tclose);
    case DType::Float32: return Id(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
    case DType::Int64: return Id(H5Tcopy(H5T_STD_I64LE), H5Tclose);
    case DType::Int32: return Id(H5Tcopy(H5T_STD_I32LE), H5Tclose);
    default: return bool_type();
  }
}

}  // namespace

bool hdf5_supported() { return true; }

Array from_hdf5(const std::string& path, const std::string& dataset, ChunkSpec chunks) {
  DType dtype;
  Shape shape;
  {
    Hdf5Lock lock;
    if (::access(path.c_str(), R_OK) != 0) throw_errno("from_hdf5: cannot open", path);
    if (H5Fis_hdf5(path.c_str()) <= 0) throw IoError("from_hdf5: " + path + " is not an HDF5 file");
    Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) throw IoError("from_hdf5: cannot open " + path + " as an HDF5 file");
    if (H5Lexists(file.get(), dataset.c_str(), H5P_DEFAULT) <= 0)
      throw IoError("from_hdf5: no dataset " + dataset + " in " + path);
    Id ds(H5Dopen2(file.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) throw IoError("from_hdf5: " + dataset + " in " + path + " is not a dataset");
    Id type(H5Dget_type(ds.get()), H5Tclose);
    const auto d = hdf5_dtype(type.get());
    if (!d)
      throw DTypeError("from_hdf5: dataset " + dataset + " in " + path + " holds " + describe_type(type.get()) +
                       " values; Tessera reads float64, float32, int64, int32 and bool");
    dtype = *d;
    Id space(H5Dget_space(ds.get()), H5Sclose);
    const int nd = H5Sget_simple_extent_ndims(space.get());
    if (nd < 0) throw IoError("from_hdf5: cannot read the shape of " + dataset + " in " + path);
    std::vector<hsize_t> dims(static_cast<std::size_t>(nd));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    shape.assign(dims.begin(), dims.end());
  }
  Chunks c = normalize_chunks(shape, chunks);
  auto args = chunk_args(path, dataset, dtype, c);
  return make_reader(kReadHdf5Op, dtype, shape, std::move(c), std::move(args), "from_hdf5");
}

void to_hdf5(const Array& array, const std::string& path, const std::string& dataset, Executor& executor) {
  const Shape& shape = array.shape();
  {
    Hdf5Lock lock;
    WriterLock writer(path);
    const bool exists = ::access(path.c_str(), F_OK) == 0;
    if (exists && H5Fis_hdf5(path.c_str()) <= 0) throw IoError("to_hdf5: " + path + " exists and is not an HDF5 file");
    Id file(exists ? H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                   : H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT),
            H5Fclose);
    if (!file.ok()) throw IoError("to_hdf5: cannot " + std::string(exists ? "open " : "create ") + path);
    if (H5Lexists(file.get(), dataset.c_str(), H5P_DEFAULT) > 0)
      throw IoError("to_hdf5: " + path + " already has a dataset " + dataset);
    const std::vector<hsize_t> dims(shape.begin(), shape.end());
    Id space(shape.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
             H5Sclose);
    Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    // Chunked like the array (HDF5 chunks must be non-empty and under 4 GiB), so that a chunk
    // task's hyperslab is whole HDF5 chunks.
    std::vector<hsize_t> chunk;
    std::uint64_t chunk_bytes = itemsize(array.dtype());
    for (const auto& axis : array.chunks()) {
      chunk.push_back(axis.empty() ? 0 : static_cast<hsize_t>(axis[0]));
      chunk_bytes *= chunk.back();
    }
    if (!chunk.empty() && chunk_bytes > 0 && chunk_bytes < (std::uint64_t{1} << 32))
      H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
    Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);  // "group/name" makes the group
    Id type = file_type(array.dtype());
    Id ds(H5Dcreate2(file.get(), dataset.c_str(), type.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) throw IoError("to_hdf5: cannot create dataset " + dataset + " in " + path);
  }
  write_chunks(array, kWriteHdf5Op, chunk_args(path, dataset, array.dtype(), array.chunks()), executor);
}

#endif

}  // namespace tessera
