// DeviceFrame in and out of the CUDA instantiation of the dataframe algorithms (frame_ops.cu):
// checks that every input column is in device memory of the call's device, and hands the
// algorithms the device pool: results from DeviceRuntime::allocate, scratch from
// allocate_scratch (freed on the call's stream, so it may go while kernels are queued).
#include "frame_ops.hpp"

#include <memory>
#include <string>
#include <vector>

#include "dataframe/device_algorithms.hpp"
#include "frame_ops_raw.hpp"
#include "runtime.hpp"
#include "tessera/core/error.hpp"

namespace tessera::dataframe::thrust_cuda {
namespace {

using dataframe::detail::Memory;
using dataframe::detail::RawColumn;
using dataframe::detail::RawFrame;

class PoolAllocator final : public dataframe::detail::Allocator {
 public:
  PoolAllocator(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  Memory allocate(std::size_t bytes, bool result) override {
    std::shared_ptr<Buffer> b = result ? cuda::runtime().allocate(bytes, device_, cuda::as_view(stream_))
                                       : cuda::allocate_scratch(bytes, device_, stream_);
    void* data = b->data();
    return Memory{std::move(b), data};
  }

 private:
  int device_;
  cudaStream_t stream_;
};

bool on_device(const Block& b, int device) {
  return b.memory_kind() == MemoryKind::Device && b.buffer()->device() == device;
}

/** The call's device (made current) and stream. */
struct Where {
  int device;
  cudaStream_t stream;
  std::string label;
  Where(int d, StreamView s) : device(d < 0 ? 0 : d) {
    cuda::runtime().set_device(device);
    stream = cuda::stream_or_default(s, device);
    label = "device " + std::to_string(device) + " memory";
  }
};

RawFrame raw(const DeviceFrame& f, const char* what, const Where& w) {
  return dataframe::detail::to_raw(f, what, on_device, w.device, w.label.c_str());
}
RawColumn raw(const DeviceColumn& c, std::int64_t rows, const char* what, const Where& w) {
  return dataframe::detail::to_raw(c, rows, what, on_device, w.device, w.label.c_str());
}

DeviceColumn binary_impl(const DeviceColumn* a, const ScalarOperand* sa, BinaryOp op, const DeviceColumn* b,
                         const ScalarOperand* sb, int device, StreamView stream) {
  if (a && b && a->values.size() != b->values.size())
    throw ShapeError("binary: columns '" + a->name + "' and '" + b->name + "' have " +
                     std::to_string(a->values.size()) + " and " + std::to_string(b->values.size()) + " rows");
  const std::int64_t rows = a ? a->values.size() : b->values.size();
  const Where w(device, stream);
  RawColumn ra, rb;
  if (a) ra = raw(*a, rows, "binary", w);
  if (b) rb = raw(*b, rows, "binary", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(
      cuda::frame::binary(rows, a ? &ra : nullptr, sa, b ? &rb : nullptr, sb, op, alloc, w.device, w.stream), rows);
}

}  // namespace

DeviceFrame filter(const DeviceFrame& frame, const DeviceColumn& mask, int device, StreamView stream) {
  const Where w(device, stream);
  const RawFrame f = raw(frame, "filter", w);
  const RawColumn m = raw(mask, frame.rows, "filter", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::filter(f, m, alloc, w.device, w.stream));
}

DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const DeviceColumn& b, int device, StreamView stream) {
  return binary_impl(&a, nullptr, op, &b, nullptr, device, stream);
}
DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const ScalarOperand& b, int device, StreamView stream) {
  return binary_impl(&a, nullptr, op, nullptr, &b, device, stream);
}
DeviceColumn binary(const ScalarOperand& a, BinaryOp op, const DeviceColumn& b, int device, StreamView stream) {
  return binary_impl(nullptr, &a, op, &b, nullptr, device, stream);
}

DeviceFrame groupby_partial(const DeviceFrame& frame, const GroupbySpec& spec, int device, StreamView stream) {
  const Where w(device, stream);
  const RawFrame f = raw(frame, "groupby_partial", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::groupby_partial(f, spec, alloc, w.device, w.stream));
}

DeviceFrame groupby_combine(const std::vector<DeviceFrame>& partials, const GroupbySpec& spec, int device,
                            StreamView stream) {
  const Where w(device, stream);
  std::vector<RawFrame> parts;
  parts.reserve(partials.size());
  for (const auto& p : partials) parts.push_back(raw(p, "groupby_combine", w));
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::groupby_combine(parts, spec, alloc, w.device, w.stream));
}

DeviceFrame hash_split(const DeviceFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                       std::vector<std::int64_t>& offsets, int device, StreamView stream) {
  const Where w(device, stream);
  const RawFrame f = raw(frame, "shuffle", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::hash_split(f, on, parts, offsets, alloc, w.device, w.stream));
}

DeviceFrame range_split(const DeviceFrame& frame, const std::string& column, const std::vector<double>& bounds,
                        std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets,
                        int device, StreamView stream) {
  const Where w(device, stream);
  const RawFrame f = raw(frame, "sort_values", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(
      cuda::frame::range_split(f, column, bounds, parts, ascending, nulls_first, offsets, alloc, w.device, w.stream));
}

DeviceFrame sort(const DeviceFrame& frame, const std::vector<detail::SortKeySpec>& keys, bool nulls_first, int device,
                 StreamView stream) {
  const Where w(device, stream);
  const RawFrame f = raw(frame, "sort_values", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::sort(f, keys, nulls_first, alloc, w.device, w.stream));
}

DeviceFrame concat(const std::vector<DeviceFrame>& frames, int device, StreamView stream) {
  const Where w(device, stream);
  std::vector<RawFrame> parts;
  parts.reserve(frames.size());
  for (const auto& f : frames) parts.push_back(raw(f, "concat", w));
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::concat(parts, alloc, w.device, w.stream));
}

DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const detail::JoinPlan& plan, int device,
                 StreamView stream) {
  const Where w(device, stream);
  const RawFrame l = raw(left, "merge (left)", w), r = raw(right, "merge (right)", w);
  PoolAllocator alloc(w.device, w.stream);
  return dataframe::detail::from_raw(cuda::frame::join(l, r, plan, alloc, w.device, w.stream));
}

}  // namespace tessera::dataframe::thrust_cuda
