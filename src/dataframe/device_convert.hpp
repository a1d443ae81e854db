#pragma once
/** @file Private: host partitions (Arrow tables) to device frames and back, and where a device
 * frame's columns live. */
#include <memory>

#include <arrow/api.h>

#include "device_frame.hpp"
#include "tessera/core/stream.hpp"
#include "tessera/core/value.hpp"

namespace tessera::dataframe::detail {

/**
 * @brief The table as columns of host Blocks: numbers as they are (int8/int16/uint8 widened to
 * int32, bool as one byte per row), timestamps as int64, strings dictionary-encoded (int32 codes
 * plus the dictionary), validity as a Bool block when there are nulls.
 * @throw Error naming a column whose type has no device form (lists, structs, decimals).
 */
DeviceFrame frame_from_table(const arrow::Table& table);
/**
 * @brief The dtype a column of Arrow type `t` has in a device frame (frame_from_table's mapping;
 * strings are Int32 codes). Throws Error naming `what` for a type with no device form.
 */
DType device_dtype_of(const arrow::DataType& t, const std::string& what);
/** @brief The Arrow schema of the table a device frame holds (table_from_frame's types). */
std::shared_ptr<arrow::Schema> schema_of(const DeviceFrame& frame);
/** @brief Rows [begin, begin + count) of a frame, as views of its buffers (no copy). */
DeviceFrame frame_slice(const DeviceFrame& frame, std::int64_t begin, std::int64_t count);
/** @brief The table a device frame holds (its columns copied to host first when on a device). */
std::shared_ptr<arrow::Table> table_from_frame(const DeviceFrame& frame);
/**
 * @brief The table a partition holds, host or device: a device frame given to a host operation
 * (head, sort, a partition function) is read back. Throws Error naming `what` and what it holds
 * when it is neither.
 */
std::shared_ptr<arrow::Table> table_of(const Value& value, const std::string& what);
/** @brief The frame with every column in device memory of `device` (copies queued on `stream`). */
DeviceFrame frame_to_device(const DeviceFrame& frame, int device, StreamView stream);
/** @brief The frame with every column in host memory. */
DeviceFrame frame_to_host(const DeviceFrame& frame);
/** @brief Bytes its columns hold. */
std::size_t frame_bytes(const DeviceFrame& frame);
/** @brief A device frame as a Value (a Native "tessera.device_frame"). */
Value frame_value(DeviceFrame frame);

}  // namespace tessera::dataframe::detail
