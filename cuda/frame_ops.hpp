#pragma once
// Internal to the CUDA back end (C++20, no CUDA types, so tests include it): the dataframe
// algorithms of src/dataframe/device_algorithms.hpp on a GPU. Inputs must be in device memory of
// `device`; results are in that device's pool. Work is queued on `stream` (the default StreamView: this
// thread's stream on `device`) and is complete once the stream has reached it, as for a device op variant
// (run_op synchronises the task's stream once, after the op).
#include <cstdint>
#include <string>
#include <vector>

#include "dataframe/device_algorithms_types.hpp"
#include "dataframe/device_frame.hpp"
#include "dataframe/groupby_spec.hpp"
#include "tessera/core/stream.hpp"

namespace tessera::dataframe::thrust_cuda {

DeviceFrame filter(const DeviceFrame& frame, const DeviceColumn& mask, int device, StreamView stream = {});

DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const DeviceColumn& b, int device, StreamView stream = {});
DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const ScalarOperand& b, int device, StreamView stream = {});
DeviceColumn binary(const ScalarOperand& a, BinaryOp op, const DeviceColumn& b, int device, StreamView stream = {});

DeviceFrame groupby_partial(const DeviceFrame& frame, const GroupbySpec& spec, int device, StreamView stream = {});
DeviceFrame groupby_combine(const std::vector<DeviceFrame>& partials, const GroupbySpec& spec, int device,
                            StreamView stream = {});

DeviceFrame hash_split(const DeviceFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                       std::vector<std::int64_t>& offsets, int device, StreamView stream = {});
DeviceFrame range_split(const DeviceFrame& frame, const std::string& column, const std::vector<double>& bounds,
                        std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets,
                        int device, StreamView stream = {});
DeviceFrame sort(const DeviceFrame& frame, const std::vector<detail::SortKeySpec>& keys, bool nulls_first, int device,
                 StreamView stream = {});
DeviceFrame concat(const std::vector<DeviceFrame>& frames, int device, StreamView stream = {});
DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const detail::JoinPlan& plan, int device,
                 StreamView stream = {});

}  // namespace tessera::dataframe::thrust_cuda
