#pragma once
/** @file
 * Arrays from and to files: raw binary files, HDF5 datasets and stacks of .npy files.
 *
 * Readers are lazy: building the Array checks the file (it exists, its size or its dataset's
 * type and shape), and each chunk is then read by its own task, so a cluster reads in parallel
 * (the path must be one every worker can open: a shared file system). Writers run one task per
 * chunk through the executor and return when every chunk is written. Errors name the file.
 */
#include <cstdint>
#include <string>

#include "tessera/array/array.hpp"
#include "tessera/exec/executor.hpp"

namespace tessera {

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
 * when missing. Each chunk task writes its hyperslab holding a lock on the file (`path`.lock, a
 * file lock, so writers in other processes wait too): HDF5 files take one writer at a time.
 */
void to_hdf5(const Array& array, const std::string& path, const std::string& dataset,
             Executor& executor = local_executor());

}  // namespace tessera
