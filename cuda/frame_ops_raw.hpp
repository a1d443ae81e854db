#pragma once
// Internal to the CUDA back end: the dataframe algorithms (src/dataframe/device_algorithms.cuh)
// instantiated for the CUDA system (frame_ops.cu), over raw frames. Plain C++17, no Block or
// DeviceFrame, as array_kernels.hpp: frame_ops.cpp converts. Every function queues its work on
// `stream` (it waits for the stream only where a size must be read back: compactions, group
// counts), takes its memory from `alloc`, and throws DeviceError (check.hpp) when CUDA fails.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataframe/device_algorithms_types.hpp"
#include "dataframe/groupby_spec.hpp"

namespace tessera::cuda::frame {

using dataframe::detail::Allocator;
using dataframe::detail::RawColumn;
using dataframe::detail::RawFrame;

RawFrame filter(const RawFrame& frame, const RawColumn& mask, Allocator& alloc, int device, cudaStream_t stream);

/** a op b over `rows` rows; a column pointer is null where that side is the scalar. */
RawColumn binary(std::int64_t rows, const RawColumn* a, const dataframe::ScalarOperand* sa, const RawColumn* b,
                 const dataframe::ScalarOperand* sb, dataframe::BinaryOp op, Allocator& alloc, int device,
                 cudaStream_t stream);

RawFrame groupby_partial(const RawFrame& frame, const dataframe::GroupbySpec& spec, Allocator& alloc, int device,
                         cudaStream_t stream);

RawFrame groupby_combine(const std::vector<RawFrame>& partials, const dataframe::GroupbySpec& spec, Allocator& alloc,
                         int device, cudaStream_t stream);

// The relational algorithms (src/dataframe/device_relational.cuh); `offsets` come back to the host.
RawFrame hash_split(const RawFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                    std::vector<std::int64_t>& offsets, Allocator& alloc, int device, cudaStream_t stream);
RawFrame range_split(const RawFrame& frame, const std::string& column, const std::vector<double>& bounds,
                     std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets,
                     Allocator& alloc, int device, cudaStream_t stream);
RawFrame sort(const RawFrame& frame, const std::vector<dataframe::detail::SortKeySpec>& keys, bool nulls_first,
              Allocator& alloc, int device, cudaStream_t stream);
RawFrame concat(const std::vector<RawFrame>& frames, Allocator& alloc, int device, cudaStream_t stream);
RawFrame join(const RawFrame& left, const RawFrame& right, const dataframe::detail::JoinPlan& plan, Allocator& alloc,
              int device, cudaStream_t stream);

}  // namespace tessera::cuda::frame
