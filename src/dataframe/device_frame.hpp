#pragma once
/**
 * @file Private: a dataframe partition as plain columns of Blocks, the form GPU workers hold
 * (device memory) and the device algorithms (device_algorithms.cuh) work on. It names no Arrow
 * type, so the CUDA back end (nvcc, C++17) can include it; to_device / from_device convert
 * between it and an Arrow table (src/dataframe, which links Arrow).
 */
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/core/block.hpp"

namespace tessera::dataframe {

/** @brief One column: values, an optional validity mask, and a dictionary for strings. */
struct DeviceColumn {
  std::string name;
  /** 1-d: Bool, Int32, Int64, Float32 or Float64; a string column holds Int32 codes into
   * `dictionary`; a timestamp column holds Int64 (its unit is in `logical_type`). */
  Block values;
  /** 1-d Bool of the same length (true: the row has a value); empty: no nulls. */
  Block valid;
  /** The strings of a dictionary-encoded column (encoded on the host before the move). */
  std::shared_ptr<const std::vector<std::string>> dictionary;
  /** The Arrow type to rebuild on the way back ("double", "string", "timestamp[us]", ...). */
  std::string logical_type;
};

/** @brief A partition: equal-length columns. Immutable once a task returns it. */
struct DeviceFrame {
  std::int64_t rows = 0;
  std::vector<DeviceColumn> columns;

  /** @brief The column called `name`, or nullptr. */
  const DeviceColumn* find(const std::string& name) const {
    for (const auto& c : columns)
      if (c.name == name) return &c;
    return nullptr;
  }
};

/** The Native type name (and codec name) of a DeviceFrame. */
inline constexpr const char* kDeviceFrameType = "tessera.device_frame";

}  // namespace tessera::dataframe
