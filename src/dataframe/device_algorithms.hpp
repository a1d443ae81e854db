#pragma once
/**
 * @file Private: the dataframe partition algorithms of device_algorithms.cuh over DeviceFrames,
 * run by Thrust's host system (device_algorithms_host.cpp): what the tests compare with plain
 * C++ and with the CUDA instantiation (cuda/frame_ops.hpp, the same functions on a GPU). Also
 * the conversions between DeviceFrame and the algorithms' raw form, which both instantiations use.
 */
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataframe/device_algorithms_types.hpp"
#include "dataframe/device_frame.hpp"
#include "dataframe/groupby_spec.hpp"
#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"

namespace tessera::dataframe {

namespace thrust_host {

/** @brief The rows where `mask` (a Bool column as long as the frame) is true; null counts as false. */
DeviceFrame filter(const DeviceFrame& frame, const DeviceColumn& mask);

/**
 * @brief a op b element-wise (equal lengths), NumPy's promotion and rules; the result is valid
 * where both inputs are (a comparison with a null is null). Named as `a`.
 */
DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const DeviceColumn& b);
/** @brief column op scalar. */
DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const ScalarOperand& b);
/** @brief scalar op column. */
DeviceColumn binary(const ScalarOperand& a, BinaryOp op, const DeviceColumn& b);

/** @brief One partition -> per-group partial states (docs/dataframe-gpu.md has the layout). */
DeviceFrame groupby_partial(const DeviceFrame& frame, const GroupbySpec& spec);
/** @brief Partial states -> merged partial states, or the result when spec.finalize. */
DeviceFrame groupby_combine(const std::vector<DeviceFrame>& partials, const GroupbySpec& spec);

/**
 * @brief A hash shuffle's split: the rows ordered by output partition (partition_index.hpp, as on
 * the host) and in `offsets` where each partition's rows begin (parts + 1 numbers).
 */
DeviceFrame hash_split(const DeviceFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                       std::vector<std::int64_t>& offsets);
/** @brief A sort's split by the ranges of `column` between `bounds` (the host's range_bounds). */
DeviceFrame range_split(const DeviceFrame& frame, const std::string& column, const std::vector<double>& bounds,
                        std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets);
/** @brief The frame sorted by the keys, stably; missing values last, or first with nulls_first. */
DeviceFrame sort(const DeviceFrame& frame, const std::vector<detail::SortKeySpec>& keys, bool nulls_first);
/** @brief The frames' rows one after another (one layout; string dictionaries merged). */
DeviceFrame concat(const std::vector<DeviceFrame>& frames);
/** @brief Two frames merged by a host-planned JoinPlan (device_relational.cuh has the row order). */
DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const detail::JoinPlan& plan);

}  // namespace thrust_host

namespace detail {

/** Whether a block's memory is where the running system can read it (checked on every input). */
using MemoryCheck = bool (*)(const Block& block, int device);

inline Memory memory_of(const Block& b) {
  if (b.empty()) return Memory{};
  return Memory{std::static_pointer_cast<void>(b.buffer()), const_cast<void*>(b.raw())};
}

/** A column as raw memory, after checking its shape, dtype and memory. */
inline RawColumn to_raw(const DeviceColumn& c, std::int64_t rows, const char* what, MemoryCheck here, int device,
                        const char* where) {
  auto check_block = [&](const Block& b, const char* part) {
    if (b.ndim() != 1 || b.size() != rows)
      throw ShapeError(std::string(what) + ": column '" + c.name + "' has " + part + " of shape " +
                       shape_to_string(b.shape()) + ", expected (" + std::to_string(rows) + ",)");
    if (b.size() > 0 && !here(b, device))
      throw Error(std::string(what) + ": column '" + c.name + "' has " + part + " in " +
                  std::string(memory_kind_name(b.memory_kind())) + " memory, not " + where);
  };
  if (c.values.empty() && rows > 0) throw Error(std::string(what) + ": column '" + c.name + "' has no values");
  if (!c.values.empty()) check_block(c.values, "values");
  if (!c.valid.empty()) {
    if (c.valid.dtype() != DType::Bool)
      throw DTypeError(std::string(what) + ": the validity of column '" + c.name + "' is " +
                       std::string(dtype_name(c.valid.dtype())) + ", not bool");
    check_block(c.valid, "a validity mask");
  }
  if (c.dictionary && c.values.dtype() != DType::Int32)
    throw DTypeError(std::string(what) + ": string column '" + c.name + "' holds " +
                     std::string(dtype_name(c.values.dtype())) + " codes, not int32");
  RawColumn r;
  r.name = c.name;
  r.dtype = c.values.dtype();
  r.values = memory_of(c.values);
  r.valid = memory_of(c.valid);
  r.dictionary = c.dictionary;
  r.logical_type = c.logical_type;
  return r;
}

inline RawFrame to_raw(const DeviceFrame& f, const char* what, MemoryCheck here, int device, const char* where) {
  RawFrame r;
  r.rows = f.rows;
  for (const auto& c : f.columns) r.columns.push_back(to_raw(c, f.rows, what, here, device, where));
  return r;
}

/** Memory an algorithm returned: its owner is always the Buffer the system's Allocator made. */
inline Block block_of(const Memory& m, DType dtype, std::int64_t rows) {
  return Block(dtype, {rows}, std::static_pointer_cast<Buffer>(m.owner));
}

inline DeviceColumn from_raw(const RawColumn& c, std::int64_t rows) {
  DeviceColumn d;
  d.name = c.name;
  d.values = block_of(c.values, c.dtype, rows);
  if (c.valid.owner) d.valid = block_of(c.valid, DType::Bool, rows);
  d.dictionary = c.dictionary;
  d.logical_type = c.logical_type;
  return d;
}

inline DeviceFrame from_raw(const RawFrame& f) {
  DeviceFrame d;
  d.rows = f.rows;
  for (const auto& c : f.columns) d.columns.push_back(from_raw(c, f.rows));
  return d;
}

}  // namespace detail
}  // namespace tessera::dataframe
