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
 */
#include <string>

#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"

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

}  // namespace tessera
