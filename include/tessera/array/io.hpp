#pragma once
/**
 * @file
 * Reading and writing arrays in files.
 *
 * The .npy format (NumPy's, version 1.0-3.0 on read, 1.0 or 2.0 on write) for one Block:
 *
 *     save_npy("x.npy", block);
 *     Block b = load_npy("x.npy");
 *
 * Little-endian C-order data only; a big-endian or Fortran-order file, an unknown dtype or a
 * truncated file is refused with IoError naming the file and the reason.
 *
 * Arrays from and to files: raw binary files, HDF5 datasets and stacks of .npy files (Dask's
 * to_npy_stack). Readers are lazy: building the Array checks the file (it exists, its size or
 * its dataset's type and shape), and each chunk is then read by its own task, so a cluster reads
 * in parallel (the path must be one every worker can open: a shared file system). Writers run
 * one task per chunk through the executor and return when every chunk is written. Errors are
 * IoError (DTypeError for an element type Tessera has no dtype for) and name the file.
 */
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/array/array.hpp"
#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera {

/** @brief A file could not be read or written, or its content is not what was expected. */
class IoError : public Error {
 public:
  using Error::Error;
};

/** @brief Reads a .npy file into a host Block. */
Block load_npy(const std::string& path);
/** @brief Writes a host Block (device blocks are refused) as a .npy file, replacing any. */
void save_npy(const std::string& path, const Block& block);

/** @brief NumPy's dtype descriptor ("<f8", "|b1", ...) of a dtype. */
std::string npy_descr(DType dtype);
/** @brief The dtype of a descriptor; throws IoError for one Tessera has no dtype for. */
DType dtype_from_npy_descr(const std::string& descr);

/**
 * @brief Reads a raw binary file (C order, native byte order) as an array, like np.memmap plus
 * da.from_array: chunk by chunk with pread, starting `offset` bytes into the file. The file must
 * hold at least offset + the array's bytes (Error otherwise, when the Array is built).
 */
Array from_raw(const std::string& path, DType dtype, Shape shape, ChunkSpec chunks, std::int64_t offset = 0);
/** @brief Writes the array to a raw binary file (C order, native byte order), one task per chunk. */
void to_raw(const Array& array, const std::string& path, Executor& executor = local_executor());

/** @brief Whether this build has HDF5 (from_hdf5 and to_hdf5 throw Error without it). */
bool hdf5_supported();
/**
 * @brief A dataset of an HDF5 file as an array. Its type must be float64, float32, int64, int32
 * or bool (h5py's enum); anything else is a DTypeError. Each chunk is a hyperslab read.
 */
Array from_hdf5(const std::string& path, const std::string& dataset, ChunkSpec chunks);
/**
 * @brief Writes the array as a new dataset (chunked like the array) of an HDF5 file, created
 * when missing. Each chunk task writes its hyperslab holding a process-wide mutex and a flock
 * on the file's directory, so writers in other processes wait too: HDF5 files take one writer
 * at a time.
 */
void to_hdf5(const Array& array, const std::string& path, const std::string& dataset,
             Executor& executor = local_executor());

/**
 * @brief Writes the array as a stack of .npy files along `axis` (Dask's to_npy_stack): the
 * directory (created when missing) gets "0.npy", "1.npy", ... (one per chunk along the axis,
 * each whole on the other axes: the array is rechunked so when it is not) and "info.json"
 * ({"format": "tessera-npy-stack", "version": 1, "dtype", "shape", "axis", "chunks"}).
 */
void to_npy_stack(const std::string& dirname, const Array& array, int axis = 0,
                  Executor& executor = local_executor());
/** @brief The array a to_npy_stack directory holds, one chunk (and task) per file. */
Array from_npy_stack(const std::string& dirname);

/**
 * @brief Where store() puts each chunk of an array: called once per chunk, on the calling
 * thread, with the chunk's offset in the array (one start per axis) and its values.
 */
using StoreTarget = std::function<void(const std::vector<std::int64_t>& offset, const Block& chunk)>;
/**
 * @brief Computes `source` and writes it into `target`, a host Block, starting at `offset` (one
 * start per axis; empty: the origin), as Dask's store into a NumPy array (with `regions`): values
 * are cast to the target's dtype; a source that does not fit the target there is a ShapeError
 * before anything runs. The chunks are computed on `executor` in batches of about
 * `batch_bytes`, so a source far larger than memory streams through (parts shared between
 * batches are computed once per batch). Any executor works, a cluster included: the chunks come
 * back to this process to be written.
 */
void store(const Array& source, Block& target, const std::vector<std::int64_t>& offset = {},
           Executor& executor = local_executor(), std::size_t batch_bytes = std::size_t{256} << 20);
/** @brief store() into any target (a file format, a socket, a database): `target` gets each chunk. */
void store(const Array& source, const StoreTarget& target, Executor& executor = local_executor(),
           std::size_t batch_bytes = std::size_t{256} << 20);
/** @brief Several sources into several targets (Dask's store of lists), one source at a time. */
void store(const std::vector<Array>& sources, const std::vector<Block*>& targets,
           const std::vector<std::vector<std::int64_t>>& offsets = {}, Executor& executor = local_executor());

}  // namespace tessera
